package fileutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestChild(t *testing.T) {
	for _, ok := range []string{"registry-quayio", "dev.kubeconfig", ".marina.docker.sock", "a..b"} {
		if p, err := Child("/root", ok); err != nil || p != "/root/"+ok {
			t.Errorf("Child(%q) = %q, %v", ok, p, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../..", "a/b", "/etc", "a\\b", "a\x00b", "a\nb", "\x7f"} {
		if p, err := Child("/root", bad); err == nil {
			t.Errorf("Child(%q) = %q, want an error", bad, p)
		}
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(small, 5); err != nil || string(b) != "hello" {
		t.Errorf("ReadRegular = %q, %v", b, err)
	}
	if _, err := ReadRegular(small, 4); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a file over the limit: %v", err)
	}
	if _, err := ReadRegular("/dev/zero", 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadRegular(dir, 1<<20); err == nil {
		t.Error("a folder was read")
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing"), 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// S9: a FIFO where a file is expected is refused at once (it used to hang
// in open(2), where the first Ctrl-C could not end it), as are a device
// and a link to either; a regular file behind a link reads.
func TestReadRegularRefusesAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileLink := filepath.Join(dir, "file-link")
	if err := os.Symlink(file, fileLink); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, link, "/dev/zero", "/dev/null"} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadRegular(p, 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "is not a regular file") {
				t.Errorf("ReadRegular(%s): %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadRegular(%s) still waits after 5 s", p)
		}
	}
	if b, err := ReadRegular(fileLink, 10); err != nil || string(b) != "ok" {
		t.Errorf("a file behind a link: %q, %v", b, err)
	}
}
