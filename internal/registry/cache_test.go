package registry

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Every kind of thing the VM can leave where a mirror's folder belongs is
// refused by name and left as it is; a missing folder or cache is empty.
func TestHostCacheRefusesWhatIsNoFolder(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside, filepath.Join(root, "abs-link")))
	must(os.Symlink("../"+filepath.Base(outside), filepath.Join(root, "rel-link")))
	must(os.Mkdir(filepath.Join(root, "real"), 0o755))
	must(os.Symlink("real", filepath.Join(root, "inner-link"))) // to another mirror's folder
	must(os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o600))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	c := HostCache{Root: root}
	for _, name := range []string{"abs-link", "rel-link", "inner-link", "file", "fifo"} {
		var nf *NotAFolderError
		if err := c.Empty(name); !errors.As(err, &nf) || nf.Path != filepath.Join(root, name) {
			t.Errorf("Empty(%s): %v", name, err)
		}
		if n, err := c.Size(name); n != -1 || !errors.As(err, &nf) {
			t.Errorf("Size(%s) = %d, %v", name, n, err)
		}
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			t.Errorf("%s was changed: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("the folder behind the links lost its file: %v", err)
	}
	if n, err := c.Size("absent"); n != -1 || err != nil {
		t.Errorf("Size(absent) = %d, %v", n, err)
	}
	if err := (HostCache{Root: filepath.Join(root, "no-cache")}).Empty("real"); err != nil {
		t.Errorf("Empty with no cache: %v", err)
	}
	for _, bad := range []string{"..", "a/b", "", "."} {
		if err := c.Empty(bad); err == nil {
			t.Errorf("Empty(%q) accepted", bad)
		}
	}
}

// Emptying removes files, folders, links (not what they point at) and
// FIFOs, and keeps the folder; measuring counts regular files only.
func TestHostCacheEmptiesInside(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, make([]byte, 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(root, "m", "docker", "registry", "v2", "blobs")
	if err := os.MkdirAll(m, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m, "data"), make([]byte, 300), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{filepath.Join(m, "to-outside"), filepath.Join(root, "m", "docker", "up")} {
		if err := os.Symlink(outside, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(keep, filepath.Join(m, "to-file")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(m, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := HostCache{Root: root}
	if n, err := c.Size("m"); n != 300 || err != nil {
		t.Errorf("Size = %d, %v; want 300", n, err)
	}
	if err := c.Empty("m"); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(filepath.Join(root, "m")); err != nil || len(ents) != 0 {
		t.Errorf("after Empty: %v, %v", ents, err)
	}
	if st, err := os.Stat(keep); err != nil || st.Size() != 5000 {
		t.Errorf("the file behind a link: %v", err)
	}
}
