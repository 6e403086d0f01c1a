package registry

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DirSize is the bytes of regular files under a cache folder on the Mac;
// -1 when dir is missing.
func DirSize(dir string) int64 {
	if _, err := os.Stat(dir); err != nil {
		return -1
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Empty removes what a cache folder on the Mac holds and keeps the folder.
func Empty(dir string) error {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("empty %s: %w", dir, err)
	}
	for _, ent := range ents {
		if err := os.RemoveAll(filepath.Join(dir, ent.Name())); err != nil {
			return fmt.Errorf("empty %s: %w (files written by the VM may need `sudo rm -rf`)", dir, err)
		}
	}
	return nil
}
