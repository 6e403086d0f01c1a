package sessiontest

import (
	"bytes"
	"errors"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
)

// HasContext reports whether ~/.kube/config holds marina's context name.
func (f *World) HasContext(name string) bool {
	f.T.Helper()
	ok, err := kubeconfig.Has(f.KubeconfigFile(), name, f.Env.KubeOwner(true))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		f.T.Fatal(err)
	}
	return ok
}

// HasOldContext reports whether ~/.kube/config holds a context name an
// older marina marked, naming no home.
func (f *World) HasOldContext(name string) bool {
	f.T.Helper()
	ok, err := kubeconfig.Has(f.KubeconfigFile(), name, kubeconfig.Owner{Home: "/no/such/home", Legacy: true})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		f.T.Fatal(err)
	}
	return ok
}

// MustKubeconfig is marina's kubeconfig for name at server.
func (f *World) MustKubeconfig(name, server string) []byte {
	t := f.T
	t.Helper()
	kc, err := KubeconfigFromKind(f, name, server)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// DNSWarm puts the local DNS in the world as up leaves it: both
// containers current, the Corefile in the VM, the resolver file written.
func (f *World) DNSWarm() {
	f.T.Helper()
	key, err := session.LoadLabelKey(f.Env.Paths)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := key.Save(f.Env.Paths); err != nil {
		f.T.Fatal(err)
	}
	specs, err := dns.Specs(config.Default(), key.Key)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, s := range specs {
		f.Mirrors = append(f.Mirrors, docker.Container{ID: s.Name + "-id", Name: s.Name, State: "running", Labels: map[string]string{dns.LabelRole: s.Role, dns.LabelConfig: s.Digest}})
	}
	f.DNSSum = DefaultCorefileSum(f.T, key.Key)
	f.EtcdAuth = dns.EtcdName + "-id"
	_, server := dns.Addrs(netip.MustParsePrefix(config.DefaultCIDR))
	path := filepath.Join(f.ResolverDir, config.DefaultDNSDomain)
	if err := os.MkdirAll(f.ResolverDir, 0o755); err != nil {
		f.T.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(dns.ResolverFile(server)), 0o644); err != nil {
		f.T.Fatal(err)
	}
	if err := f.MustMade().Wrote(path, dns.ResolverFile(server)); err != nil {
		f.T.Fatal(err)
	}
}

// DefaultMirrorsRunning configures the defaults and puts the default
// mirrors' containers, current, and their config files in the VM; it
// returns their specs, in the order of f.mirrors.
func (f *World) DefaultMirrorsRunning() []registry.Spec {
	f.T.Helper()
	f.Config(nil)
	specs, err := session.MirrorSpecs(f.Env.Paths, config.Default().Registries)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, s := range specs {
		f.Mirrors = append(f.Mirrors, docker.Container{ID: s.Name + "-id", Name: s.Name, State: "running", Labels: map[string]string{registry.LabelMirror: s.Name, registry.LabelConfig: s.Digest}})
	}
	f.RegistrySums = f.MirrorSums()
	return specs
}

// MirrorSums are the sums of the default mirrors' config files, as up
// writes them into the VM.
func (f *World) MirrorSums() map[string]string {
	f.T.Helper()
	specs, err := session.MirrorSpecs(f.Env.Paths, config.Default().Registries)
	if err != nil {
		f.T.Fatal(err)
	}
	sums := map[string]string{}
	for _, s := range specs {
		maps.Copy(sums, s.Files())
	}
	return sums
}

// MustMade is marina's record of the routes it made, in the fixture's home.
func (f *World) MustMade() *host.Made {
	t := f.T
	t.Helper()
	m, err := host.LoadMade(f.Env.Paths.Routes(), session.HostOwn(config.Default(), true))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// DefaultCorefileSum is the sum of marina-dns's Corefile for the default
// config and label key, as the VM has it once marina wrote it.
func DefaultCorefileSum(t *testing.T, key []byte) string {
	specs, err := dns.Specs(config.Default(), key)
	if err != nil {
		t.Fatal(err)
	}
	return specs[1].FileSum()
}

// Warm is a world as a finished up leaves it: the default mirrors and the
// local DNS running, the route there and recorded.
func Warm(t *testing.T) *World {
	t.Helper()
	f := New(t)
	f.DefaultMirrorsRunning()
	f.DNSWarm()
	f.Route = &host.Route{Dest: f.Network.Subnet, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	if err := f.MustMade().Add(f.Network.Subnet, f.Lima0.Addr()); err != nil {
		t.Fatal(err)
	}
	return f
}

// Healthy is a healthy lab on an Apple silicon Mac: the default
// config, its mirrors and local DNS running and current, marina's route
// through lima0, Rosetta installed, and cluster dev in slot 1 (direct
// mode) with its kubeconfig.
func Healthy(t *testing.T) *World {
	t.Helper()
	f := New(t)
	f.DefaultMirrorsRunning()
	f.DNSWarm()
	cidr := f.Network.Subnet
	if err := f.MustMade().Add(cidr, f.Lima0.Addr()); err != nil {
		t.Fatal(err)
	}
	f.Route = &host.Route{Dest: cidr, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	f.Doctor.Rosetta = true
	f.Cluster("dev", 1, "https://192.168.64.3:7001")
	return f
}

// ResolverFile is the Mac's resolver file for domain in the world.
func (f *World) ResolverFile(domain string) string {
	return filepath.Join(f.ResolverDir, domain)
}

const DemoFleet = `apiVersion: marina.dev/v1alpha1
kind: Fleet
metadata:
  name: demo
spec:
  maxParallel: 2
  strategy: %s
  defaults:
    labels: {env: demo}
  clusters:
    - east
    - name: west
      num: 5
      registries: {mirrors: [registry-quayio]}
    - name: mesh
      dependsOn: [east, west]
      labels: {role: hub}
      addons: {metricsServer: {enabled: true}}
`

// TwoClusters is a world with clusters a (slot 1) and b (slot 2), both
// merged into ~/.kube/config.
func TwoClusters(t *testing.T) *World {
	f := New(t)
	f.Config(nil)
	f.Cluster("a", 1, "https://127.0.0.1:7001")
	f.Cluster("b", 2, "https://127.0.0.1:7002")
	for _, n := range []string{"a", "b"} {
		if err := kubeconfig.Merge(f.KubeconfigFile(), n, f.MustKubeconfig(n, "https://127.0.0.1:700"+map[string]string{"a": "1", "b": "2"}[n]), f.Env.KubeOwner(true)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// CachedBlob puts a blob of size bytes, named by hex repeated, into
// mirror's cache on the Mac, linked from repo as links says
// ("_layers" or "_manifests/revisions"), as distribution's storage keeps it.
func (f *World) CachedBlob(mirror, repo, links string, c byte, size int) {
	f.T.Helper()
	h := string(bytes.Repeat([]byte{c}, 64))
	v2 := filepath.Join(f.Env.Paths.RegistryCache(), mirror, "docker", "registry", "v2")
	for file, n := range map[string]int{
		filepath.Join(v2, "blobs", "sha256", h[:2], h, "data"):                                  size,
		filepath.Join(v2, "repositories", filepath.FromSlash(repo), links, "sha256", h, "link"): 71,
	} {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			f.T.Fatal(err)
		}
		if err := os.WriteFile(file, make([]byte, n), 0o644); err != nil {
			f.T.Fatal(err)
		}
	}
}

// HostileCache lays out the host registry cache as root in the VM can
// leave it (the folder is mounted writable there): mirrors' folders
// replaced by links out of the cache, and a link deep inside one. It
// returns the user's folder the links point at, holding a file that must
// survive, and that file's bytes.
func (f *World) HostileCache() (docs string, secret []byte) {
	t := f.T
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
