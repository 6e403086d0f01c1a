package addons

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/config"
)

const testVersion = "v9.9.9"

var goodManifest = []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: metallb-system\n")

// manifestServer serves body at the path Manifest asks for and counts the
// requests it gets.
func manifestServer(t *testing.T, version string, body []byte) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	return manifestServerAt(t, "/"+version+"/config/manifests/metallb-native.yaml", body)
}

// manifestServerAt serves body at path.
func manifestServerAt(t *testing.T, path string, body []byte) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func testSource(srv *httptest.Server, pins map[string]string) manifestSource {
	src := defaultSource
	src.baseURL, src.client, src.pins = srv.URL, &http.Client{Timeout: 10 * time.Second}, pins
	return src
}

func cachePath(dir, version string) string {
	return filepath.Join(dir, "metallb", version, "metallb-native.yaml")
}

func TestManifestDownloadsChecksAndCaches(t *testing.T) {
	srv, hits := manifestServer(t, testVersion, goodManifest)
	src := testSource(srv, map[string]string{testVersion: digest(goodManifest)})
	dir := t.TempDir()

	got, err := src.manifest(context.Background(), dir, testVersion)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, goodManifest) {
		t.Fatalf("manifest = %q, want %q", got, goodManifest)
	}
	fi, err := os.Stat(cachePath(dir, testVersion))
	if err != nil {
		t.Fatalf("manifest not cached: %v", err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("cache file mode = %v, want 0644", fi.Mode().Perm())
	}
	cached, _ := os.ReadFile(cachePath(dir, testVersion))
	if !bytes.Equal(cached, goodManifest) {
		t.Errorf("cache holds %q, want %q", cached, goodManifest)
	}
	// No temporary file is left next to it.
	entries, _ := os.ReadDir(filepath.Dir(cachePath(dir, testVersion)))
	if len(entries) != 1 {
		t.Errorf("cache folder holds %d entries, want only the manifest", len(entries))
	}

	// The second call is served from the cache: the server is gone.
	srv.Close()
	again, err := src.manifest(context.Background(), dir, testVersion)
	if err != nil {
		t.Fatalf("second call did not use the cache: %v", err)
	}
	if !bytes.Equal(again, goodManifest) {
		t.Errorf("cached manifest = %q", again)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

func TestManifestRejectsWrongDigest(t *testing.T) {
	bad := append(bytes.Clone(goodManifest), []byte("---\nkind: Evil\n")...)
	srv, _ := manifestServer(t, testVersion, bad)
	src := testSource(srv, map[string]string{testVersion: digest(goodManifest)})
	dir := t.TempDir()

	_, err := src.manifest(context.Background(), dir, testVersion)
	if err == nil {
		t.Fatal("a manifest with the wrong digest was accepted")
	}
	for _, want := range []string{"sha256 " + digest(bad), "pins " + digest(goodManifest), "not used or cached", srv.URL} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(cachePath(dir, testVersion)); !os.IsNotExist(err) {
		t.Errorf("a manifest with the wrong digest was cached (stat: %v)", err)
	}
}

func TestManifestReplacesDamagedCache(t *testing.T) {
	srv, hits := manifestServer(t, testVersion, goodManifest)
	src := testSource(srv, map[string]string{testVersion: digest(goodManifest)})
	dir := t.TempDir()
	path := cachePath(dir, testVersion)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("truncat"), 0o644); err != nil {
		t.Fatal(err)
	}

	got, err := src.manifest(context.Background(), dir, testVersion)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, goodManifest) || hits.Load() != 1 {
		t.Fatalf("damaged cache not replaced by a download: got %q after %d requests", got, hits.Load())
	}
	if cached, _ := os.ReadFile(path); !bytes.Equal(cached, goodManifest) {
		t.Errorf("cache still holds %q", cached)
	}
}

func TestManifestKeepsBadBytesOutOfADamagedCache(t *testing.T) {
	srv, _ := manifestServer(t, testVersion, []byte("not it"))
	src := testSource(srv, map[string]string{testVersion: digest(goodManifest)})
	dir := t.TempDir()
	path := cachePath(dir, testVersion)
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("damaged"), 0o644)

	if _, err := src.manifest(context.Background(), dir, testVersion); err == nil {
		t.Fatal("bad download accepted")
	}
	if cached, _ := os.ReadFile(path); string(cached) != "damaged" {
		t.Errorf("the bad download reached the cache: %q", cached)
	}
}

func TestManifestUnpinnedVersion(t *testing.T) {
	srv, hits := manifestServer(t, "v0.1.0", goodManifest)
	src := testSource(srv, map[string]string{"v0.16.2": "x", "v0.15.3": "y"})
	dir := t.TempDir()

	for _, v := range []string{"v0.1.0", "../../etc", ""} {
		_, err := src.manifest(context.Background(), dir, v)
		if err == nil {
			t.Fatalf("version %q without a pin was accepted", v)
		}
		if !strings.Contains(err.Error(), "v0.15.3, v0.16.2") || !strings.Contains(err.Error(), "kind.metalLBVersion") {
			t.Errorf("error %q does not list the known versions and the setting to change", err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("an unpinned version was downloaded (%d requests)", hits.Load())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an unpinned version created %d entries in the cache", len(entries))
	}
}

func TestManifestHTTPFailure(t *testing.T) {
	srv, _ := manifestServer(t, "v1.0.0", goodManifest) // serves another path: 404 for ours
	src := testSource(srv, map[string]string{testVersion: digest(goodManifest)})
	_, err := src.manifest(context.Background(), t.TempDir(), testVersion)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want one naming HTTP 404", err)
	}
}

func TestManifestTooLarge(t *testing.T) {
	huge := bytes.Repeat([]byte("#"), maxManifestBytes+1)
	srv, _ := manifestServer(t, testVersion, huge)
	src := testSource(srv, map[string]string{testVersion: digest(huge)})
	_, err := src.manifest(context.Background(), t.TempDir(), testVersion)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v, want a size error", err)
	}
}

func TestManifestContextCancelled(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(block) })
	src := testSource(srv, map[string]string{testVersion: digest(goodManifest)})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := src.manifest(ctx, t.TempDir(), testVersion)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v, want the deadline", err)
	}
}

// The version marina's config uses by default must have a pin, or every
// new cluster would fail.
// The config accepts exactly the versions a digest is pinned for here.
func TestConfigKnowsTheMetalLBPins(t *testing.T) {
	if !slices.Equal(MetalLBVersions(), config.MetalLBVersions) {
		t.Fatalf("pinned MetalLB manifests %v, config.MetalLBVersions %v: keep them the same", MetalLBVersions(), config.MetalLBVersions)
	}
}

func TestDefaultMetalLBVersionIsPinned(t *testing.T) {
	if !slices.Contains(MetalLBVersions(), config.DefaultMetalLBVersion) {
		t.Fatalf("config default MetalLB %s has no pinned digest (pinned: %v)", config.DefaultMetalLBVersion, MetalLBVersions())
	}
}

// metalLBModuleManifest returns metallb-native.yaml from the Go module
// go.universe.tf/metallb at version, fetched through the module proxy or the
// local module cache.
func metalLBModuleManifest(t *testing.T, version string) []byte {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "go.universe.tf/metallb@"+version)
	cmd.Dir = t.TempDir() // outside any module: nothing's go.mod or go.sum changes
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("cannot get go.universe.tf/metallb@%s from the module proxy or cache (%v): run `go mod download go.universe.tf/metallb@%s` with network access once", version, err, version)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json: %v (%s)", err, out)
	}
	b, err := os.ReadFile(filepath.Join(mod.Dir, "config", "manifests", "metallb-native.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The pins are the digests of the files MetalLB publishes: checked against
// the module's copy, through the real pin table and the download path.
func TestPinnedDigestsMatchMetalLB(t *testing.T) {
	for _, v := range MetalLBVersions() {
		t.Run(v, func(t *testing.T) {
			real := metalLBModuleManifest(t, v)
			srv, _ := manifestServer(t, v, real)
			src := defaultSource
			src.baseURL = srv.URL
			got, err := src.manifest(context.Background(), t.TempDir(), v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, real) {
				t.Error("returned bytes differ from MetalLB's file")
			}
		})
	}
}
