package registry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bcollard/marina/internal/config"
)

func TestRoute(t *testing.T) {
	mirrors := append(config.DefaultMirrors(), config.Mirror{Name: "k8s", Port: 5070, RemoteURL: "https://registry.k8s.io"})
	const dg = "sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5"
	for in, want := range map[string]Pull{
		"nginx":                           {Image: "docker.io/library/nginx:latest", Mirror: "registry-dockerio", Port: 5030, Registry: "docker.io", Repo: "library/nginx", Ref: "latest"},
		"kindest/node:v1.37.0@" + dg:      {Image: "docker.io/kindest/node:v1.37.0@" + dg, Mirror: "registry-dockerio", Port: 5030, Registry: "docker.io", Repo: "kindest/node", Ref: dg},
		"quay.io/metallb/speaker:v0.16.2": {Image: "quay.io/metallb/speaker:v0.16.2", Mirror: "registry-quayio", Port: 5010, Registry: "quay.io", Repo: "metallb/speaker", Ref: "v0.16.2"},
		"registry.k8s.io/pause:3.10":      {Image: "registry.k8s.io/pause:3.10", Mirror: "k8s", Port: 5070, Registry: "registry.k8s.io", Repo: "pause", Ref: "3.10"},
		"ghcr.io/me/app:1":                {Image: "ghcr.io/me/app:1", Registry: "ghcr.io", Repo: "me/app", Ref: "1"},
		"localhost:5001/app@" + dg:        {Image: "localhost:5001/app@" + dg, Registry: "localhost:5001", Repo: "app", Ref: dg},
	} {
		got, err := Route(mirrors, in)
		if err != nil || got != want {
			t.Errorf("Route(%q) = %+v, %v\nwant %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Nginx", "nginx:1;id", "a b", "quay.io/../x"} {
		if got, err := Route(mirrors, bad); err == nil {
			t.Errorf("Route(%q) = %+v", bad, got)
		}
	}
}

func TestBlobFiles(t *testing.T) {
	const hex = "a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5"
	link, data, err := BlobFiles("library/nginx", "sha256:"+hex)
	if err != nil ||
		link != "docker/registry/v2/repositories/library/nginx/_layers/sha256/"+hex+"/link" ||
		data != "docker/registry/v2/blobs/sha256/a1/"+hex+"/data" {
		t.Errorf("BlobFiles = %q %q %v", link, data, err)
	}
	for _, c := range [][2]string{
		{"library/nginx", "sha256:../../x"},
		{"library/nginx", "sha512:" + hex},
		{"library/nginx", "sha256:" + hex + "\n"},
		{"../etc", "sha256:" + hex},
		{"/etc", "sha256:" + hex},
		{"a/../../b", "sha256:" + hex},
		{"A/b", "sha256:" + hex},
	} {
		if l, d, err := BlobFiles(c[0], c[1]); err == nil {
			t.Errorf("BlobFiles(%q, %q) = %q %q", c[0], c[1], l, d)
		}
	}
}

// Has counts regular files only: a link, even to a real blob, is not
// a cached blob, and nothing outside the mirror's folder is looked at.
func TestHostCacheHas(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "registry-dockerio")
	outside := filepath.Join(t.TempDir(), "blob")
	for _, f := range []string{"a/data", "b/real"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "b", "data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	got, err := HostCache{Root: root}.Has("registry-dockerio", []string{"a/data", "b/data", "c/blob", "d/data", "../" + filepath.Base(dir) + "/a/data"})
	if err != nil || len(got) != 1 || !got["a/data"] {
		t.Errorf("Has = %v, %v; want a/data only", got, err)
	}
	if got, err := (HostCache{Root: root}).Has("registry-quayio", []string{"a/data"}); err != nil || len(got) != 0 {
		t.Errorf("a mirror without a folder: %v, %v", got, err)
	}
}
