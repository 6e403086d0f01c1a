package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bcollard/marina/internal/fileutil"
)

// HostCache is the mirrors' cache on the Mac (registries.cacheStorage:
// host): one folder per mirror under Root, which Lima mounts writable into
// the VM so that the registries there keep their blobs on the Mac. Root in
// the VM (and so any privileged pod) can put anything in it, a symlink to
// the user's home included: every operation here works inside an os.Root
// opened on Root, never follows a link out of it, never follows a link at
// a mirror's own folder, and refuses a mirror folder that is not a real
// directory.
type HostCache struct{ Root string }

// NotAFolderError is a mirror's cache folder that is something else (a
// symlink, a file): nothing in it or behind it was touched.
type NotAFolderError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotAFolderError) Error() string {
	what := "a " + e.Mode.Type().String()
	switch {
	case e.Mode&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case e.Mode.IsRegular():
		what = "a file"
	}
	return fmt.Sprintf("%s is %s, not the folder marina made: something in the VM (which can write the cache) may have replaced it, and marina follows no link out of the cache; nothing was changed. Look at it (ls -la %s), remove it by hand (rm %s), and run marina up", e.Path, what, e.Path, e.Path)
}

// mirror opens mirror name's folder as a root of its own; nil when the
// cache or the folder is not there.
func (c HostCache) mirror(name string) (*os.Root, error) {
	if err := fileutil.CheckElement(name); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(c.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	path := filepath.Join(c.Root, name)
	st, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &NotAFolderError{Path: path, Mode: st.Mode()}
	}
	sub, err := root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	// What was opened is what was looked at: the VM may swap the folder
	// for a link in between, and a link inside the cache to another of
	// its folders would still open.
	now, err := sub.Stat(".")
	if err != nil || !os.SameFile(st, now) {
		sub.Close()
		return nil, fmt.Errorf("%s changed while marina opened it (something in the VM is writing the cache): nothing was changed; run the command again", path)
	}
	return sub, nil
}

// Check refuses mirror name's folder when it is not a real folder, before
// anything is stopped or planned around it (Empty checks again).
func (c HostCache) Check(name string) error {
	sub, err := c.mirror(name)
	if sub != nil {
		sub.Close()
	}
	return err
}

// Size is the bytes of the regular files in mirror name's folder, -1 when
// it is not there. Links are counted as nothing and never followed.
func (c HostCache) Size(name string) (int64, error) {
	sub, err := c.mirror(name)
	if err != nil || sub == nil {
		return -1, err
	}
	defer sub.Close()
	var n int64
	err = fs.WalkDir(sub.FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file the VM removed meanwhile
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n, err
}

// Empty removes everything mirror name's folder holds and keeps the
// folder. A link in it is removed, never followed.
func (c HostCache) Empty(name string) error {
	sub, err := c.mirror(name)
	if err != nil || sub == nil {
		return err
	}
	defer sub.Close()
	path := filepath.Join(c.Root, name)
	dir, err := sub.Open(".")
	if err != nil {
		return fmt.Errorf("empty %s: %w", path, err)
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return fmt.Errorf("empty %s: %w", path, err)
	}
	for _, n := range names {
		if err := sub.RemoveAll(n); err != nil {
			return fmt.Errorf("empty %s: %w (files written by the VM may need `sudo rm -rf %s`)", path, err, filepath.Join(path, n))
		}
	}
	return nil
}

// Has says which of files (paths relative to mirror name's folder, as
// BlobFiles gives them) are regular files there; links are not followed.
func (c HostCache) Has(name string, files []string) (map[string]bool, error) {
	sub, err := c.mirror(name)
	if err != nil || sub == nil {
		return map[string]bool{}, err
	}
	defer sub.Close()
	out := map[string]bool{}
	for _, f := range files {
		if st, err := sub.Lstat(filepath.FromSlash(f)); err == nil && st.Mode().IsRegular() {
			out[f] = true
		}
	}
	return out, nil
}

// RepoBytes is the bytes of the blobs mirror name's folder keeps for repos
// (paths in its registry, as NodeRepos gives them): each blob the
// repositories link, once, whatever number of them link it. A blob that is
// a link counts nothing, and every path stays inside the mirror's folder
// (os.Root); a repository that is not there counts nothing.
func (c HostCache) RepoBytes(name string, repos []string) (int64, error) {
	sub, err := c.mirror(name)
	if err != nil || sub == nil {
		return 0, err
	}
	defer sub.Close()
	seen := map[string]bool{}
	var n int64
	for _, repo := range repos {
		for _, dir := range RepoLinkDirs(repo) {
			entries, err := fs.ReadDir(sub.FS(), dir)
			if err != nil {
				continue // no such repository, or none of that kind of link
			}
			for _, e := range entries {
				hex := e.Name()
				if seen[hex] || !sha256Digest.MatchString("sha256:"+hex) {
					continue
				}
				seen[hex] = true
				if st, err := sub.Lstat(filepath.FromSlash(blobData(hex))); err == nil && st.Mode().IsRegular() {
					n += st.Size()
				}
			}
		}
	}
	return n, nil
}
