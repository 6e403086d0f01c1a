package fileutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
