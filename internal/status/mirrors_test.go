package status

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

// S1, measuring: registry list counts the real blob and nothing behind
// either link, and shows a replaced folder as unmeasured.
func TestRegistryListFollowsNoLink(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	docs, _ := f.HostileCache()
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
