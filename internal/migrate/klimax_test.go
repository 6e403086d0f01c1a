package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestKlimaxPaths(t *testing.T) {
	k := Locate("/Users/ann")
	for got, want := range map[string]string{
		k.Dir:       "/Users/ann/.klimax",
		k.Config():  "/Users/ann/.klimax/config.yaml",
		k.Cache():   "/Users/ann/.klimax/registry-cache",
		k.KubeDir(): "/Users/ann/.kube/klimax",
		k.Skill():   "/Users/ann/.claude/skills/klimax",
		k.Key():     "/Users/ann/.klimax/_config/user",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	if d, err := k.Instance("klimax"); err != nil || d != "/Users/ann/.klimax/klimax" {
		t.Errorf("Instance(klimax) = %s, %v", d, err)
	}
	// A VM name read from klimax's config is untrusted: it must not name
	// the folders beside the instances, nor reach out of ~/.klimax.
	for _, bad := range []string{"", "..", "../x", "a/b", "_config", "share", "registry-cache", "migrated", ".hidden", "x\x00"} {
		if d, err := k.Instance(bad); err == nil {
			t.Errorf("Instance(%q) = %s, want an error", bad, d)
		}
	}
}

func TestKlimaxListings(t *testing.T) {
	home := t.TempDir()
	k := Locate(home)
	if Found(home) {
		t.Fatal("Found with no ~/.klimax")
	}
	if n, err := k.Kubeconfigs(); err != nil || n != nil {
		t.Fatalf("Kubeconfigs with no folder = %v, %v", n, err)
	}
	if b, err := k.ReadConfig(); err != nil || b != nil {
		t.Fatalf("ReadConfig with no file = %q, %v", b, err)
	}
	for _, d := range []string{filepath.Join(k.Cache(), "registry-quayio"), filepath.Join(k.Cache(), "registry-dockerio"), filepath.Join(k.Cache(), ".tmp"), k.KubeDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"dev.kubeconfig", "b.kubeconfig", ".x.kubeconfig", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(k.KubeDir(), f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(k.KubeDir(), "dir.kubeconfig"), 0o700); err != nil {
		t.Fatal(err)
	}
	if !Found(home) {
		t.Fatal("~/.klimax is there")
	}
	if n, err := k.Kubeconfigs(); err != nil || !slices.Equal(n, []string{"b", "dev"}) {
		t.Errorf("Kubeconfigs = %v, %v; want [b dev]", n, err)
	}
	if n, err := k.CacheDirs(); err != nil || !slices.Equal(n, []string{"registry-dockerio", "registry-quayio"}) {
		t.Errorf("CacheDirs = %v, %v", n, err)
	}
}
