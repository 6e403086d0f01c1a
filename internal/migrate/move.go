package migrate

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/bcollard/marina/internal/fileutil"
)

// How a folder came over.
const (
	Renamed  = "moved"             // one rename: the same file system
	Copied   = "copied, verified"  // another file system: copied, compared, then the source removed
	Finished = "finished the move" // an earlier run had copied it: compared, then the source removed
)

// Mover moves folders. Its rename is os.Rename and its copy copyTree;
// tests replace them to stand for another file system and for a copy that
// came out wrong.
type Mover struct {
	Rename func(from, to string) error
	Copy   func(from, to string) error
}

func (m Mover) copy(from, to string) error {
	if m.Copy != nil {
		return m.Copy(from, to)
	}
	return copyTree(from, to)
}

func (m Mover) rename(from, to string) error {
	if m.Rename != nil {
		return m.Rename(from, to)
	}
	return os.Rename(from, to)
}

// Move brings the folder src to dst, which must not exist yet, so that
// nothing is lost at any point: one rename on the same file system;
// otherwise a copy into a sibling of dst, compared file by file with the
// source, renamed into place, and only then is the source removed. A run
// interrupted at any point can run again: a partial copy is started over,
// a complete one (dst there, src still there) is compared again before the
// source goes. Only folders, regular files and symlinks are copied; any
// other kind of file stops the move with the source untouched. src must be
// a folder, not a link to one, and never the folder dst is (through a link
// above either): then nothing is moved or deleted.
func (m Mover) Move(src, dst string) (string, error) {
	sst, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Lstat(dst); err == nil {
			return Finished, nil // an earlier run moved it
		}
		return "", fmt.Errorf("%s is not there: nothing to move", src)
	}
	if err != nil {
		return "", err
	}
	if !sst.IsDir() {
		return "", fmt.Errorf("%s is not a folder (%s): migrate moves folders and follows no link; nothing was moved", src, sst.Mode().Type())
	}
	if dstInfo, err := os.Stat(dst); err == nil && os.SameFile(sst, dstInfo) {
		return "", fmt.Errorf("%s is the folder %s is (a link leads from one to the other): nothing was moved or deleted; remove the link and run marina migrate again", src, dst)
	}
	// An empty folder at dst holds nothing to lose (a mount point Lima
	// made, a folder marina made before the migration): it is taken
	// away, and the move goes on as if it had never been there. os.Remove
	// removes only an empty folder, so nothing in it can go.
	if st, err := os.Lstat(dst); err == nil && st.IsDir() {
		_ = os.Remove(dst)
	}
	if _, err := os.Lstat(dst); err == nil {
		if err := same(src, dst); err != nil {
			return "", fmt.Errorf("%s and %s are both there and differ (%w): nothing was changed; keep the one you want and remove the other", src, dst, err)
		}
		if err := os.RemoveAll(src); err != nil {
			return "", fmt.Errorf("remove %s after comparing it with %s: %w", src, dst, err)
		}
		return Finished, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", err
	}
	err = m.rename(src, dst)
	if err == nil {
		return Renamed, nil
	}
	if !errors.Is(err, syscall.EXDEV) {
		return "", fmt.Errorf("move %s to %s: %w", src, dst, err)
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".migrating")
	if err := os.RemoveAll(tmp); err != nil { // an interrupted copy
		return "", err
	}
	if err := m.copy(src, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("copy %s to %s: %w (the source is untouched)", src, dst, err)
	}
	if err := same(src, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("the copy of %s differs from it (%w): the copy was removed, the source is untouched", src, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	if err := os.RemoveAll(src); err != nil {
		return "", fmt.Errorf("remove %s after copying it: %w", src, err)
	}
	return Copied, nil
}

// copyTree copies the folder src to dst (which must not exist), keeping
// modes.
func copyTree(src, dst string) error {
	type dir struct {
		path string
		perm fs.FileMode
	}
	var dirs []dir
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, dir{to, info.Mode().Perm()})
			return os.Mkdir(to, 0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			return copyFile(p, to, info.Mode().Perm())
		}
		return fmt.Errorf("%s is a %s, which migrate does not copy", p, d.Type())
	})
	if err != nil {
		return err
	}
	// Each folder's own mode, not the umask's, once its files are in.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].perm); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil { // not the umask's
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// same compares two trees: the same names, kinds, modes, symlink targets
// and file contents.
func same(a, b string) error {
	ta, err := tree(a)
	if err != nil {
		return err
	}
	tb, err := tree(b)
	if err != nil {
		return err
	}
	for p, ea := range ta {
		eb, ok := tb[p]
		switch {
		case !ok:
			return fmt.Errorf("%s is missing", filepath.Join(b, p))
		case ea != eb:
			return fmt.Errorf("%s differs", filepath.Join(b, p))
		}
	}
	for p := range tb {
		if _, ok := ta[p]; !ok {
			return fmt.Errorf("%s is extra", filepath.Join(b, p))
		}
	}
	return nil
}

// entry is what same compares of one file.
type entry struct {
	mode fs.FileMode
	sum  [sha256.Size]byte
	link string
}

func tree(root string) (map[string]entry, error) {
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{mode: info.Mode()}
		if rel == "." {
			e.mode &^= fs.ModePerm // the top folder's own mode is not compared
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if e.sum, err = sum(p); err != nil {
				return err
			}
		}
		out[rel] = e
		return nil
	})
	return out, err
}

func sum(p string) ([sha256.Size]byte, error) {
	var s [sha256.Size]byte
	f, err := os.Open(p)
	if err != nil {
		return s, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return s, err
	}
	copy(s[:], h.Sum(nil))
	return s, nil
}

// SameFile reports whether the regular files a and b hold the same bytes
// (of at most 1 MiB each: they are keys; a device or a FIFO is not read).
func SameFile(a, b string) bool {
	x, err := fileutil.ReadRegular(a, 1<<20)
	if err != nil {
		return false
	}
	y, err := fileutil.ReadRegular(b, 1<<20)
	return err == nil && bytes.Equal(x, y)
}
