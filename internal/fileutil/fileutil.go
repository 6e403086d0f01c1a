// Package fileutil reads and writes files the way marina needs: atomically,
// with tight permissions, bounded, and only under the folders marina owns.
package fileutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// WriteAtomic replaces path with data in one rename, so a reader sees the old
// file or the new one and never a half-written one. The folder is created
// with mode 0700 if it is missing; the file gets perm.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadRegular reads path, which must be a regular file of at most max
// bytes (following symlinks): a device, a FIFO or a huge file is refused
// instead of exhausting memory or waiting forever. A missing file is an
// error that wraps fs.ErrNotExist.
func ReadRegular(path string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading otherwise waits in open(2)
	// for a writer, where no signal ends the wait. On a regular file it
	// changes nothing; what is not one is refused below, unread.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d marina reads: is it the right file?", path, st.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is more than the %d bytes marina reads: is it the right file?", path, max)
	}
	return b, nil
}

// Child is root/name when name is one plain path element, and an error
// otherwise: every path marina builds from a name (a mirror, a cluster,
// the VM), on the Mac or in the guest, goes through it, so that no name
// can reach outside its root ("..", "a/b", "/etc").
func Child(root, name string) (string, error) {
	if err := CheckElement(name); err != nil {
		return "", err
	}
	return filepath.Join(root, name), nil
}

// CheckElement reports why name is not one plain path element.
func CheckElement(name string) error {
	switch {
	case name == "":
		return errors.New("an empty name cannot name a file")
	case name == "." || name == "..":
		return fmt.Errorf("%q cannot name a file: it is a folder's own link", name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("%q cannot name a file: it holds a path separator or NUL", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q cannot name a file: it holds a control character", name)
		}
	}
	return nil
}
