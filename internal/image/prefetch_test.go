package image

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

// upstream is a real registry (go-containerregistry's, in memory) standing
// in for the Docker Hub mirror, with the blob reads it served.
type upstream struct {
	port  int
	mu    sync.Mutex
	blobs []string // digests of the blobs GET
	any   int      // requests of any kind
}

func (u *upstream) read() (blobs []string, any int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.blobs), u.any
}

// prefetchWorld is a running lab whose Docker Hub mirror is the upstream,
// holding app:1 (a config and three layers); the mirror caches on the Mac.
func prefetchWorld(t *testing.T) (*sessiontest.World, *upstream, v1.Image) {
	t.Helper()
	u := &upstream{}
	h := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.any++
		if _, d, ok := strings.Cut(r.URL.Path, "/blobs/"); ok && r.Method == http.MethodGet {
			u.blobs = append(u.blobs, d)
		}
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	addr, _ := url.Parse(srv.URL)
	u.port, _ = strconv.Atoi(addr.Port())
	img, err := random.Image(2000, 3)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(addr.Host+"/library/app:1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	u.blobs, u.any = nil, 0

	f := sessiontest.New(t)
	f.Config(func(c *config.Config) {
		for i, m := range c.Registries.Mirrors {
			if m.Name == "registry-dockerio" {
				c.Registries.Mirrors[i].Port = u.port
			}
		}
	})
	f.Mirrors = append(f.Mirrors, docker.Container{ID: "m", Name: "registry-dockerio", State: "running", IP: "127.0.0.1",
		Labels: map[string]string{registry.LabelMirror: "registry-dockerio"}})
	return f, u, img
}

// digests are img's config's and layers' digests, in manifest order.
func digests(t *testing.T, img v1.Image) []string {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{m.Config.Digest.String()}
	for _, l := range m.Layers {
		out = append(out, l.Digest.String())
	}
	return out
}

// cache puts blob digest of library/app into the mirror's cache on the
// Mac, as distribution keeps it: the blob, and the repository's link.
func cache(t *testing.T, f *sessiontest.World, digest string) {
	t.Helper()
	link, data, err := registry.BlobFiles("library/app", digest)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, data} {
		full := filepath.Join(f.Env.Paths.RegistryCache(), "registry-dockerio", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(digest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var fetchedOne = regexp.MustCompile(`^1 image: 1 fetched \(6\.[0-9]+KiB\), 0 already cached\.$`)

// Prefetch reads the manifest through the mirror and fetches only the
// blobs its cache lacks; once the cache holds them all, a second run
// fetches nothing.
func TestPrefetchFetchesWhatTheCacheLacks(t *testing.T) {
	f, u, img := prefetchWorld(t)
	all := digests(t, img)
	cache(t, f, all[0]) // the config
	res, err := Prefetch(context.Background(), f.Env, PrefetchOptions{Images: []string{"app:1"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	got, _ := u.read()
	slices.Sort(got)
	want := slices.Sorted(slices.Values(all[1:]))
	if !slices.Equal(got, want) {
		t.Errorf("blobs fetched %v\nwant the three layers %v", got, want)
	}
	out := f.Stderr.String()
	if !strings.Contains(out, "app:1: fetched 3 of 4 blobs into registry-dockerio") || len(res.Lines) != 1 || !fetchedOne.MatchString(res.Lines[0]) {
		t.Errorf("first run said\n%s%q", out, res.Lines)
	}
	if guest := f.Called("guest."); len(guest) != 0 {
		t.Errorf("a cache on the Mac is read on the Mac, yet the guest ran %v", guest)
	}

	for _, d := range all[1:] {
		cache(t, f, d)
	}
	f.Stderr.Reset()
	u.mu.Lock()
	u.blobs = nil
	u.mu.Unlock()
	res, err = Prefetch(context.Background(), f.Env, PrefetchOptions{Images: []string{"docker.io/library/app:1"}})
	if got, _ := u.read(); err != nil || len(got) != 0 {
		t.Errorf("second run fetched %v: %v", got, err)
	}
	if out := f.Stderr.String(); !strings.Contains(out, "app:1: already cached by registry-dockerio (4 blobs)") || !slices.Equal(res.Lines, []string{"1 image: 0 fetched (0B), 1 already cached."}) {
		t.Errorf("second run said\n%s%q", out, res.Lines)
	}
}

// With the caches in the VM, which blobs they hold is one guest round
// trip for every image, and only the missing ones are fetched.
func TestPrefetchAsksTheGuestCacheOnce(t *testing.T) {
	f, u, img := prefetchWorld(t)
	f.Config(func(c *config.Config) {
		c.Registries.CacheStorage = config.CacheGuest
		for i, m := range c.Registries.Mirrors {
			if m.Name == "registry-dockerio" {
				c.Registries.Mirrors[i].Port = u.port
			}
		}
	})
	all := digests(t, img)
	link, data, _ := registry.BlobFiles("library/app", all[2])
	dir, _ := registry.CacheDir(vm.GuestCacheDir, "registry-dockerio")
	f.Scripts["look for blobs"] = vm.Result{Stdout: []byte(dir + "/" + link + "\n" + dir + "/" + data + "\n")}
	if _, err := Prefetch(context.Background(), f.Env, PrefetchOptions{Images: []string{"app:1"}}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if runs := f.Called("guest.run"); len(runs) != 1 {
		t.Errorf("guest round trips %v, want one", runs)
	}
	got, _ := u.read()
	if slices.Contains(got, all[2]) || len(got) != 3 {
		t.Errorf("fetched %v; the VM's cache holds %s", got, all[2])
	}
}

// What cannot be prefetched is refused before anything is read: an image
// no mirror serves, a mirror that is not running, a name that is none.
func TestPrefetchRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		images []string
		stop   bool
		want   string
	}{
		{"no mirror", []string{"app:1", "ghcr.io/me/app:1"}, false, "no mirror serves ghcr.io, so ghcr.io/me/app:1 cannot be prefetched"},
		{"not an image", []string{"App:1"}, false, `"App:1" is not an image name`},
		{"mirror stopped", []string{"app:1"}, true, "the mirror registry-dockerio is not running"},
		{"nothing", nil, false, "say what to prefetch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, u, _ := prefetchWorld(t)
			if c.stop {
				f.Mirrors[len(f.Mirrors)-1].State = "exited"
			}
			_, err := Prefetch(context.Background(), f.Env, PrefetchOptions{Images: c.images})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
			if _, n := u.read(); n != 0 {
				t.Errorf("%d requests reached the mirror", n)
			}
		})
	}
}

// A Fleet's prefetch plans each node image its clusters use, once, and
// the add-ons' images; those no mirror serves are named in a warning.
func TestPrefetchFleetPlan(t *testing.T) {
	f, u, _ := prefetchWorld(t)
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	manifest := "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata: {name: demo}\nspec:\n  clusters:\n    - a\n    - b\n    - {name: c, nodeVersion: v1.35.8, addons: {metricsServer: {enabled: true}}}\n"
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Prefetch(context.Background(), f.Env, PrefetchOptions{Fleet: file, DryRun: true})
	if err != nil || res.Plan == nil {
		t.Fatalf("%v %+v\n%s", err, res, f.Stderr.String())
	}
	var steps []string
	for _, s := range res.Plan.Steps {
		steps = append(steps, s.Do)
	}
	plan := strings.Join(steps, "\n")
	def, _ := config.Default().Kind.NodeImage(config.Default().Kind.NodeVersion)
	old, _ := config.Default().Kind.NodeImage("v1.35.8")
	for _, want := range []string{
		"fetch " + def + " into the cache of registry-dockerio",
		"fetch " + old + " into the cache of registry-dockerio",
		"fetch quay.io/metallb/controller:v0.16.2 into the cache of registry-quayio",
	} {
		if strings.Count(plan, want) != 1 {
			t.Errorf("plan has %q %d times:\n%s", want, strings.Count(plan, want), plan)
		}
	}
	if out := f.Stderr.String(); !strings.Contains(out, "registry.k8s.io/metrics-server/metrics-server:") || !strings.Contains(out, "no mirror serves registry.k8s.io") {
		t.Errorf("no warning for the metrics-server image no default mirror serves:\n%s", out)
	}
	if _, n := u.read(); n != 0 {
		t.Errorf("a dry run sent %d requests", n)
	}
}

// --addons plans metrics-server's image only when kind.metricsServer
// makes every new cluster run it.
func TestPrefetchAddonsFollowsMetricsServer(t *testing.T) {
	for _, on := range []bool{false, true} {
		f, _, _ := prefetchWorld(t)
		f.Config(func(c *config.Config) { c.Kind.MetricsServer = on })
		if _, err := Prefetch(context.Background(), f.Env, PrefetchOptions{Addons: true, DryRun: true}); err != nil {
			t.Fatalf("metricsServer %v: %v\n%s", on, err, f.Stderr.String())
		}
		// No default mirror serves registry.k8s.io: the image is named in
		// a warning when it is planned.
		if got := strings.Contains(f.Stderr.String(), "registry.k8s.io/metrics-server/metrics-server:"); got != on {
			t.Errorf("kind.metricsServer %v: metrics-server's image planned %v:\n%s", on, got, f.Stderr.String())
		}
	}
}
