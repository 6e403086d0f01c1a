package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	mirrors := map[string]string{"registry-dockerio": "registry-dockerio", "registry-quayio": "registry-quayio", "registry-gcrio": "registry-gcrio"}
	if n, notes, err := k.CacheDirs(mirrors); err != nil || !slices.Equal(n, []string{"registry-dockerio", "registry-quayio"}) || len(notes) != 0 {
		t.Errorf("CacheDirs = %v, %v, %v", n, notes, err)
	}
}

// S2: in klimax's cache only real folders of klimax's mirrors move; a link
// (to the user's files, or to marina's own cache), a file or a folder of
// no mirror is left alone and said; a linked cache folder or ~/.klimax
// itself leaves everything alone.
func TestKlimaxCacheFollowsNoLink(t *testing.T) {
	home := t.TempDir()
	k := Locate(home)
	docs := filepath.Join(home, "Documents")
	for _, d := range []string{filepath.Join(k.Cache(), "registry-quayio"), filepath.Join(k.Cache(), "photos"), filepath.Join(docs, "Work")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(docs, filepath.Join(k.Cache(), "registry-dockerio")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(k.Cache(), "registry-gcrio"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mirrors := map[string]string{"registry-dockerio": "registry-dockerio", "registry-quayio": "registry-quayio", "registry-gcrio": "registry-gcrio"}
	dirs, notes, err := k.CacheDirs(mirrors)
	if err != nil || !slices.Equal(dirs, []string{"registry-quayio"}) {
		t.Fatalf("CacheDirs = %v, %v", dirs, err)
	}
	said := strings.Join(notes, "\n")
	for _, want := range []string{"registry-dockerio is a link to " + docs, "registry-gcrio is not a folder", "photos is no mirror"} {
		if !strings.Contains(said, want) {
			t.Errorf("notes lack %q:\n%s", want, said)
		}
	}
	// The cache folder itself a link: nothing in it is listed.
	if err := os.Rename(k.Cache(), filepath.Join(home, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(docs, k.Cache()); err != nil {
		t.Fatal(err)
	}
	if dirs, notes, err := k.CacheDirs(map[string]string{"Work": "Work"}); err != nil || len(dirs) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "is a link to") {
		t.Errorf("a linked cache: %v %v %v", dirs, notes, err)
	}
	// ~/.klimax itself a link: found, and refused.
	other := t.TempDir()
	if err := os.Symlink(home, filepath.Join(other, ".klimax")); err != nil {
		t.Fatal(err)
	}
	if !Found(other) {
		t.Error("a linked ~/.klimax is not found (it must be, to be refused)")
	}
	if err := Locate(other).Check(); err == nil || !strings.Contains(err.Error(), "is a link to") {
		t.Errorf("Check of a linked ~/.klimax: %v", err)
	}
}
