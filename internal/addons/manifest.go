package addons

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/fileutil"
)

// metalLBDigests pins the sha256 of metallb-native.yaml for every MetalLB
// version marina knows. A version missing here is refused rather than
// trusted on first use: the manifest runs privileged pods on every node.
//
// The digests were computed from config/manifests/metallb-native.yaml in the
// Go module go.universe.tf/metallb at the same version (`go mod download
// -json go.universe.tf/metallb@<version>` gives its folder). The module zip
// stores every file of the tagged tree with its bytes unchanged, so the file
// there is the file GitHub serves at the tag; it was not possible to compare
// against raw.githubusercontent.com from the machine that computed them.
var metalLBDigests = map[string]string{
	"v0.16.2": "e5f7c268f114c446dc60aaad71b7cabf861f637743e033e354d7d48592807c6d",
}

// MetalLBVersions lists the MetalLB versions marina has a pinned manifest
// for, sorted.
func MetalLBVersions() []string {
	vs := make([]string, 0, len(metalLBDigests))
	for v := range metalLBDigests {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

const (
	metalLBBaseURL = "https://raw.githubusercontent.com/metallb/metallb"
	// The real manifest is about 90 KiB; anything far larger is not it, and
	// reading it all would only waste memory before the digest check fails.
	maxManifestBytes = 8 << 20
	downloadTimeout  = 2 * time.Minute
)

// manifestSource is where an addon's pinned manifests come from. Tests
// point it at an httptest server with their own pins.
type manifestSource struct {
	what    string // the addon, in messages
	dir     string // its folder in the cache
	file    string
	urlPath func(version string) string // after baseURL
	fix     string                      // where another version is chosen
	baseURL string
	client  *http.Client
	pins    map[string]string
}

// defaultSource is MetalLB's.
var defaultSource = manifestSource{
	what: "MetalLB", dir: "metallb", file: "metallb-native.yaml",
	urlPath: func(v string) string { return "/" + v + "/config/manifests/metallb-native.yaml" },
	fix:     "set kind.metalLBVersion in the marina config to one of those",
	baseURL: metalLBBaseURL,
	client:  &http.Client{Timeout: downloadTimeout},
	pins:    metalLBDigests,
}

// Manifest returns MetalLB's metallb-native.yaml for version, verified
// against marina's pinned sha256. It is read from
// <cacheDir>/metallb/<version>/metallb-native.yaml when that file is there
// and intact; otherwise it is downloaded from GitHub, checked, and cached
// (atomically, 0644) for the next cluster. Bytes that do not match the pin
// are never cached.
func Manifest(ctx context.Context, cacheDir, version string) ([]byte, error) {
	return defaultSource.manifest(ctx, cacheDir, version)
}

func (s manifestSource) manifest(ctx context.Context, cacheDir, version string) ([]byte, error) {
	// The version is checked against the pin table first: it becomes part
	// of a path and a URL, and only known values may get there.
	want, ok := s.pins[version]
	if !ok {
		known := make([]string, 0, len(s.pins))
		for v := range s.pins {
			known = append(known, v)
		}
		slices.Sort(known)
		return nil, fmt.Errorf("%s %q has no pinned manifest digest in this marina (it knows %s): %s, or update marina",
			s.what, version, strings.Join(known, ", "), s.fix)
	}
	path := filepath.Join(cacheDir, s.dir, version, s.file)

	cached, err := fileutil.ReadRegular(path, maxManifestBytes)
	switch {
	case err == nil && digest(cached) == want:
		return cached, nil
	case err == nil:
		// A damaged or tampered cache file: fetch a good copy, which
		// replaces it below.
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read cached %s manifest: %w: fix the file's permissions or delete it, and marina downloads it again", s.what, err)
	}

	url := s.baseURL + s.urlPath(version)
	body, err := s.download(ctx, url)
	if err != nil {
		return nil, err
	}
	if got := digest(body); got != want {
		return nil, fmt.Errorf("%s %s manifest from %s has sha256 %s, but marina pins %s: the file was changed upstream or in transit, so it was not used or cached; retry later, and report it if it persists",
			s.what, version, url, got, want)
	}
	if err := fileutil.WriteAtomic(path, body, 0o644); err != nil {
		return nil, fmt.Errorf("cache %s manifest: %w: check that %s is writable", s.what, err, cacheDir)
	}
	return body, nil
}

func (s manifestSource) download(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("download %s manifest: %w", s.what, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download %s manifest from %s: %w: check the Mac's internet connection (and HTTPS_PROXY, if you need one), then run marina again", s.what, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download %s manifest from %s: HTTP %s: check that the %s version exists and that GitHub is reachable, then run marina again", s.what, url, resp.Status, s.what)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("download %s manifest from %s: %w: the connection broke; run marina again", s.what, url, err)
	}
	if len(body) > maxManifestBytes {
		return nil, fmt.Errorf("download %s manifest from %s: larger than %d bytes, which no %s manifest is: check for a proxy rewriting the response", s.what, url, maxManifestBytes, s.what)
	}
	return body, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
