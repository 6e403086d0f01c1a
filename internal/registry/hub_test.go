package registry

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
)

func TestHubMirror(t *testing.T) {
	quay := config.Mirror{Name: "registry-quayio", Port: 5010, RemoteURL: "https://quay.io"}
	hub := config.Mirror{Name: "registry-dockerio", Port: 5030, RemoteURL: "https://registry-1.docker.io"}
	hub2 := config.Mirror{Name: "hub-two", Port: 5031, RemoteURL: "https://docker.io"}
	for _, c := range []struct {
		mirrors []config.Mirror
		want    string
	}{
		{nil, ""},
		{[]config.Mirror{quay}, ""},
		{[]config.Mirror{quay, hub}, "registry-dockerio"},
		{[]config.Mirror{hub2, hub}, "hub-two"}, // the first, as containerd's hosts.toml
	} {
		if got := HubMirror(c.mirrors); got != c.want {
			t.Errorf("HubMirror(%v) = %q, want %q", c.mirrors, got, c.want)
		}
	}
	// Only the Docker Hub mirror is published, at the one address
	// daemon.json names; the others are not, and keep their digests.
	key := []byte("0123456789abcdef0123456789abcdef")
	with, err := Specs(config.Registries{Image: config.DefaultRegistryImage, Mirrors: []config.Mirror{quay, hub}}, "/c", key)
	if err != nil {
		t.Fatal(err)
	}
	without, _ := Specs(config.Registries{Image: config.DefaultRegistryImage, Mirrors: []config.Mirror{quay}}, "/c", key)
	if with[0].Publish.IsValid() || with[1].Publish != HubAddr || "http://"+HubAddr.String() != HubURL {
		t.Errorf("published: %v %v, want none and %v (%s)", with[0].Publish, with[1].Publish, HubAddr, HubURL)
	}
	if with[0].Digest != without[0].Digest {
		t.Error("a Docker Hub mirror in the config changed another mirror's digest: up would recreate it")
	}
	alone, _ := Specs(config.Registries{Image: config.DefaultRegistryImage, Mirrors: []config.Mirror{hub2, hub}}, "/c", key)
	if alone[1].Publish.IsValid() || alone[1].Digest == with[1].Digest {
		t.Errorf("a second Docker Hub mirror is published too (%v), or its digest does not say it is not", alone[1].Publish)
	}
}

func TestNodeRepos(t *testing.T) {
	if got := NodeRepos(config.Kind{}); !slices.Equal(got, []string{"kindest/node"}) {
		t.Errorf("marina's pins: %v", got)
	}
	k := config.Kind{NodeImages: map[string]string{
		"v1.36.1": "myorg/kind-node:v1.36.1@sha256:" + strings.Repeat("1", 64),
		"v1.35.0": "ghcr.io/me/node:v1.35.0@sha256:" + strings.Repeat("2", 64), // not Docker Hub's: pulled directly
		"v1.34.0": "docker.io/kindest/node:v1.34.0@sha256:" + strings.Repeat("3", 64),
	}}
	if got := NodeRepos(k); !slices.Equal(got, []string{"kindest/node", "myorg/kind-node"}) {
		t.Errorf("with kind.nodeImages: %v", got)
	}
}

// The node images' share of a cache is the blobs their repositories link,
// each once; another repository's blob, a link to outside the cache and
// an entry that names no digest count nothing.
func TestRepoBytes(t *testing.T) {
	root := t.TempDir()
	v2 := filepath.Join(root, "registry-dockerio", "docker", "registry", "v2")
	hexOf := func(c byte) string { return strings.Repeat(string(c), 64) }
	blob := func(c byte, size int) {
		t.Helper()
		d := filepath.Join(v2, "blobs", "sha256", hexOf(c)[:2], hexOf(c))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "data"), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(repo, kind, name string) {
		t.Helper()
		d := filepath.Join(v2, "repositories", repo, kind, "sha256", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "link"), []byte("sha256:"+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	blob('a', 1000) // the layer
	blob('b', 10)   // the config
	blob('c', 7)    // the manifest
	blob('d', 500)  // nginx's layer
	outside := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(outside, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	e := filepath.Join(v2, "blobs", "sha256", "ee", hexOf('e'))
	if err := os.MkdirAll(e, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e, "data")); err != nil {
		t.Fatal(err)
	}
	link("kindest/node", "_layers", hexOf('a'))
	link("kindest/node", "_layers", hexOf('b'))
	link("kindest/node", "_layers", hexOf('e'))
	link("kindest/node", "_layers", "not-a-digest")
	link("kindest/node", "_manifests/revisions", hexOf('c'))
	link("myorg/kind-node", "_layers", hexOf('a')) // the same layer
	link("library/nginx", "_layers", hexOf('d'))

	c := HostCache{Root: root}
	if n, err := c.RepoBytes("registry-dockerio", []string{"kindest/node", "myorg/kind-node", "never/pulled"}); err != nil || n != 1017 {
		t.Errorf("RepoBytes = %d, %v; want 1017", n, err)
	}
	if n, err := c.RepoBytes("registry-quayio", []string{"kindest/node"}); err != nil || n != 0 {
		t.Errorf("a mirror with no folder: %d, %v", n, err)
	}
	if RepoLinkDirs("../../etc") != nil || RepoLinkDirs("/abs") != nil || RepoLinkDirs("UPPER/case") != nil {
		t.Error("RepoLinkDirs takes what is no repository path")
	}
}
