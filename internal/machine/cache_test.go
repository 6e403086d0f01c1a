package machine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

// hostileCache lays out the host registry cache as root in the VM can
// leave it (the folder is mounted writable there): mirrors' folders
// replaced by links out of the cache, and a link deep inside one. It
// returns the user's folder the links point at, holding a file that must
// survive, and that file's bytes.
func hostileCache(t *testing.T, f *sessiontest.World) (docs string, secret []byte) {
	t.Helper()
	cache := f.Env.Paths.RegistryCache()
	home := filepath.Dir(filepath.Dir(cache)) // the cache is <home>/.marina/registry-cache
	docs = filepath.Join(home, "Documents")
	secret = []byte("the user's thesis\n")
	for _, d := range []string{docs, filepath.Join(cache, "registry-gcrio", "docker", "registry")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(docs, "thesis.txt"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cache, docs)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		filepath.Join(cache, "registry-quayio"):                            rel,     // ../../Documents
		filepath.Join(cache, "registry-dockerio"):                          "../..", // the home itself
		filepath.Join(cache, "registry-gcrio", "docker", "registry", "v2"): docs,    // deep inside a real folder
	}
	for at, to := range links {
		if err := os.Symlink(to, at); err != nil {
			t.Fatal(err)
		}
	}
	// A real blob beside the deep link: emptying goes on around the link.
	if err := os.WriteFile(filepath.Join(cache, "registry-gcrio", "docker", "blob"), bytes.Repeat([]byte("x"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	return docs, secret
}

func intact(t *testing.T, docs string, secret []byte) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(docs, "thesis.txt")); err != nil || !bytes.Equal(b, secret) {
		t.Fatalf("the user's file behind the link is gone or changed: %v", err)
	}
}

// S1: a mirror's folder the VM replaced with a link out of the cache is
// refused, naming it, and nothing behind it is touched; a link deep in a
// real mirror folder is removed as a link, its target untouched.
func TestCleanCacheFollowsNoLink(t *testing.T) {
	for _, mirror := range []string{"registry-quayio", "registry-dockerio"} {
		t.Run(mirror, func(t *testing.T) {
			f := sessiontest.New(t)
			f.Config(nil)
			docs, secret := hostileCache(t, f)
			for _, m := range config.Default().Registries.Mirrors {
				f.Mirrors = append(f.Mirrors, docker.Container{ID: m.Name + "-id", Name: m.Name, State: "running", Labels: map[string]string{registry.LabelMirror: m.Name}})
			}
			_, err := CleanCache(context.Background(), f.Env, []string{mirror}, CleanCacheOptions{Yes: true})
			path := filepath.Join(f.Env.Paths.RegistryCache(), mirror)
			if err == nil || !strings.Contains(err.Error(), path+" is a symbolic link") {
				t.Errorf("clean-cache %s: %v", mirror, err)
			}
			intact(t, docs, secret)
			if _, err := os.Lstat(filepath.Join(filepath.Dir(filepath.Dir(f.Env.Paths.RegistryCache())), ".marina", "config.yaml")); err != nil {
				t.Errorf("marina's own config went: %v", err)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link itself was changed: %v", err)
			}
			// Refused before anything happened: no mirror was stopped.
			if got := f.Called("docker.remove"); len(got) != 0 {
				t.Errorf("mirrors stopped before the refusal: %v", got)
			}
		})
	}
	t.Run("a link inside a mirror's folder", func(t *testing.T) {
		f := sessiontest.New(t)
		f.Config(nil)
		docs, secret := hostileCache(t, f)
		if _, err := CleanCache(context.Background(), f.Env, []string{"registry-gcrio"}, CleanCacheOptions{Yes: true}); err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		intact(t, docs, secret)
		ents, err := os.ReadDir(filepath.Join(f.Env.Paths.RegistryCache(), "registry-gcrio"))
		if err != nil || len(ents) != 0 {
			t.Errorf("registry-gcrio after emptying: %v %v", ents, err)
		}
	})
}

// S1, measuring: registry list counts the real blob and nothing behind
// either link, and shows a replaced folder as unmeasured.
func TestRegistryListFollowsNoLink(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	docs, _ := hostileCache(t, f)
	if err := os.WriteFile(filepath.Join(docs, "big.iso"), bytes.Repeat([]byte("y"), 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := ListMirrors(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, r := range rows {
		sizes[r.Name] = r.CacheBytes
	}
	if sizes["registry-gcrio"] != 1000 || sizes["registry-quayio"] != -1 || sizes["registry-dockerio"] != -1 {
		t.Errorf("sizes %v, want registry-gcrio 1000 and the links unmeasured", sizes)
	}
	_ = config.CacheHost
}

// registry list says how much of the Docker Hub mirror's cache is node
// images: read on the Mac for host storage, in the measuring round trip
// for guest storage; no other mirror has a share.
func TestRegistryListNodeImages(t *testing.T) {
	t.Run("host", func(t *testing.T) {
		f := sessiontest.New(t)
		f.Config(nil)
		f.CachedBlob("registry-dockerio", "kindest/node", "_layers", 'a', 4096)
		rows, err := ListMirrors(context.Background(), f.Env)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			want := int64(0)
			if r.Name == "registry-dockerio" {
				want = 4096
				if cell := r.Cells()[4]; cell != "4.069KiB (node images 4KiB)" {
					t.Errorf("cache cell %q", cell)
				}
			}
			if r.NodeImageBytes != want {
				t.Errorf("%s: node images %d, want %d", r.Name, r.NodeImageBytes, want)
			}
		}
	})
	t.Run("guest", func(t *testing.T) {
		f := sessiontest.New(t)
		f.Config(func(c *config.Config) { c.Registries.CacheStorage = config.CacheGuest })
		dir := "/var/lib/marina/registry-cache/registry-dockerio"
		f.Scripts["measure the mirror caches"] = vm.Result{Stdout: []byte("1500\t" + dir + "\n1200\trepos:" + dir + "\n")}
		rows, err := ListMirrors(context.Background(), f.Env)
		if err != nil {
			t.Fatal(err)
		}
		if body := f.Bodies["measure the mirror caches"]; strings.Count(body, "repos:") != 1 || !strings.Contains(body, dir+"/docker/registry/v2/repositories/kindest/node/_layers/sha256/*") {
			t.Errorf("the measure does not count the Docker Hub mirror's node images once:\n%s", body)
		}
		for _, r := range rows {
			if r.Name == "registry-dockerio" && (r.CacheBytes != 1500 || r.NodeImageBytes != 1200) {
				t.Errorf("registry-dockerio: cache %d, node images %d", r.CacheBytes, r.NodeImageBytes)
			}
			if r.Name != "registry-dockerio" && r.NodeImageBytes != 0 {
				t.Errorf("%s has node images %d", r.Name, r.NodeImageBytes)
			}
		}
	})
}
