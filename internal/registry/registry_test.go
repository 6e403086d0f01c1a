package registry

import (
	"context"
	credclient "github.com/docker/docker-credential-helpers/client"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	hostcfg "github.com/containerd/containerd/v2/core/remotes/docker/config"
	distconfig "github.com/distribution/distribution/v3/configuration"
	"github.com/pelletier/go-toml/v2"

	"github.com/bcollard/marina/internal/config"
)

// writeCertsD writes the hosts.toml files for selected into a folder laid
// out like /etc/containerd/certs.d.
func writeCertsD(t *testing.T, selected []config.Mirror) string {
	t.Helper()
	files, err := CertsD(selected)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// hostsFor asks containerd's own host resolution which endpoints it tries
// for registry, in order.
func hostsFor(t *testing.T, root, registry string) []docker.RegistryHost {
	t.Helper()
	hosts, err := hostcfg.ConfigureHosts(context.Background(), hostcfg.HostOptions{HostDir: hostcfg.HostDirFromRoot(root)})(registry)
	if err != nil {
		t.Fatalf("ConfigureHosts(%s): %v", registry, err)
	}
	return hosts
}

const pullResolve = docker.HostCapabilityPull | docker.HostCapabilityResolve

// Every default mirror: containerd goes to the mirror over plain HTTP first
// (pull and resolve only), then to the upstream.
func TestCertsDForEveryDefaultMirror(t *testing.T) {
	root := writeCertsD(t, config.DefaultMirrors())
	cases := []struct {
		registry, mirror, upstream string
	}{
		{"docker.io", "registry-dockerio:5030", "registry-1.docker.io"},
		{"registry-1.docker.io", "registry-dockerio:5030", "registry-1.docker.io"},
		{"quay.io", "registry-quayio:5010", "quay.io"},
		{"gcr.io", "registry-gcrio:5020", "gcr.io"},
		{"us-docker.pkg.dev", "registry-us-docker-pkgdev:5040", "us-docker.pkg.dev"},
		{"us-central1-docker.pkg.dev", "registry-us-central1-docker-pkgdev:5050", "us-central1-docker.pkg.dev"},
	}
	for _, c := range cases {
		t.Run(c.registry, func(t *testing.T) {
			hosts := hostsFor(t, root, c.registry)
			if len(hosts) != 2 {
				t.Fatalf("%d hosts: %+v", len(hosts), hosts)
			}
			m, u := hosts[0], hosts[1]
			if m.Scheme != "http" || m.Host != c.mirror || m.Path != "/v2" || m.Capabilities != pullResolve {
				t.Errorf("first host = %s://%s%s caps %b, want http://%s/v2 pull|resolve", m.Scheme, m.Host, m.Path, m.Capabilities, c.mirror)
			}
			if u.Scheme != "https" || u.Host != c.upstream || u.Path != "/v2" {
				t.Errorf("fallback = %s://%s%s, want https://%s/v2", u.Scheme, u.Host, u.Path, c.upstream)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join(root, "quay.io", "hosts.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "skip_verify") {
		t.Error("hosts.toml sets skip_verify: containerd would try HTTPS first")
	}
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		t.Errorf("hosts.toml is not TOML: %v", err)
	}
}

func TestSelection(t *testing.T) {
	all := config.DefaultMirrors()
	cases := []struct {
		name    string
		sel     []string
		want    []string // mirrored registries
		without []string // registries left to their upstream
		err     string
	}{
		{"nil inherits every mirror", nil, []string{"docker.io", "quay.io", "gcr.io"}, nil, ""},
		{"star is every mirror", []string{"*"}, []string{"docker.io", "quay.io", "us-central1-docker.pkg.dev"}, nil, ""},
		{"empty is none", []string{}, nil, []string{"docker.io", "quay.io", "gcr.io"}, ""},
		{"a subset", []string{"registry-quayio", "registry-gcrio"}, []string{"quay.io", "gcr.io"}, []string{"docker.io", "us-docker.pkg.dev"}, ""},
		{"a name twice", []string{"registry-quayio", "registry-quayio"}, []string{"quay.io"}, []string{"docker.io"}, ""},
		{"unknown name", []string{"registry-ghcr"}, nil, nil, `no mirror is named "registry-ghcr"`},
		{"star with names", []string{"*", "registry-quayio"}, nil, nil, "cannot be combined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sel, err := Select(all, c.sel)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			root := writeCertsD(t, sel)
			for _, r := range c.want {
				if h := hostsFor(t, root, r); len(h) != 2 || h[0].Scheme != "http" {
					t.Errorf("%s is not mirrored: %+v", r, h)
				}
			}
			for _, r := range c.without {
				if h := hostsFor(t, root, r); len(h) != 1 || h[0].Scheme != "https" || h[0].Host != strings.Replace(r, "docker.io", "registry-1.docker.io", 1) {
					t.Errorf("%s is mirrored though not selected: %+v", r, h)
				}
			}
		})
	}
}

func TestTwoMirrorsForOneRegistry(t *testing.T) {
	ms := []config.Mirror{
		{Name: "a", Port: 5001, RemoteURL: "https://registry-1.docker.io"},
		{Name: "b", Port: 5002, RemoteURL: "https://registry-1.docker.io"},
	}
	if _, err := CertsD(ms); err == nil || !strings.Contains(err.Error(), "two mirrors serve docker.io") {
		t.Errorf("CertsD = %v", err)
	}
}

// The rendered config is one distribution's own parser accepts, with the
// values marina meant.
func TestConfigParsesWithDistribution(t *testing.T) {
	m := config.Mirror{Name: "registry-quayio", Port: 5010, RemoteURL: "https://quay.io", Username: "robot$ci", Password: "p@ss: 'w\"ord\n#"}
	b, err := Config(m)
	if err != nil {
		t.Fatal(err)
	}
	c, err := distconfig.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("distribution rejects the config: %v\n%s", err, b)
	}
	if c.Proxy.RemoteURL != "https://quay.io" || c.Proxy.Exec == nil || c.Proxy.Exec.Command != "/etc/distribution/auth" || c.Proxy.Username != "" || c.Proxy.Password != "" {
		t.Errorf("proxy = %+v: want the credentials from the helper only", c.Proxy)
	}
	if strings.Contains(string(b), "p@ss") || strings.Contains(string(b), "robot") {
		t.Errorf("the config holds the credentials:\n%s", b)
	}
	if c.HTTP.Addr != ":5010" || c.HTTP.Debug.Addr != ":5001" || c.Storage.Type() != "filesystem" {
		t.Errorf("http = %q debug %q storage %s", c.HTTP.Addr, c.HTTP.Debug.Addr, c.Storage.Type())
	}
	if c.Storage["filesystem"]["rootdirectory"] != "/var/lib/registry" {
		t.Errorf("storage = %v", c.Storage)
	}
	if d, ok := c.Storage["delete"]; !ok || d["enabled"] != true {
		t.Errorf("delete not enabled: the proxy's expiry could not remove anything (%v)", c.Storage)
	}
}

func TestSpecsDigest(t *testing.T) {
	ms := []config.Mirror{{Name: "registry-quayio", Port: 5010, RemoteURL: "https://quay.io", Username: "u", Password: "secret-one"}}
	key := []byte("0123456789abcdef0123456789abcdef")
	r := config.Registries{Image: config.DefaultRegistryImage, Mirrors: ms}
	a, _ := Specs(r, "/var/lib/marina/registry-cache", key)
	ms[0].Password = "secret-two"
	b, _ := Specs(r, "/var/lib/marina/registry-cache", key)
	c, _ := Specs(r, "/var/lib/marina/registry-cache", []byte("another key, another digest....."))
	r.Image = "registry:3.0.1@sha256:" + strings.Repeat("0", 64)
	d, _ := Specs(r, "/var/lib/marina/registry-cache", []byte("another key, another digest....."))
	if c[0].Digest == d[0].Digest {
		t.Error("a new image does not change the digest: the container would keep the old one")
	}
	if a[0].Digest == b[0].Digest {
		t.Error("a new password does not change the digest: the container would keep the old one")
	}
	if b[0].Digest == c[0].Digest {
		t.Error("the digest does not depend on the key")
	}
	if strings.Contains(a[0].Digest, "secret") {
		t.Error("the digest holds the password")
	}
	if got := strings.Join(a[0].Binds(), " "); got != "/etc/marina/registry/registry-quayio.yml:/etc/distribution/config.yml:ro /etc/marina/registry/registry-quayio.auth:/etc/distribution/auth:ro /var/lib/marina/registry-cache/registry-quayio:/var/lib/registry" {
		t.Errorf("binds = %s", got)
	}
}

func TestContainerdPatchIsTOML(t *testing.T) {
	var doc map[string]any
	if err := toml.Unmarshal([]byte(ContainerdPatch), &doc); err != nil {
		t.Fatal(err)
	}
	plugins := doc["plugins"].(map[string]any)
	reg := plugins["io.containerd.grpc.v1.cri"].(map[string]any)["registry"].(map[string]any)
	if reg["config_path"] != "/etc/containerd/certs.d" {
		t.Errorf("patch = %v", doc)
	}
}

// A name read back from anywhere cannot reach outside the mirrors' folders.
func TestPathsOnlyUnderTheirRoots(t *testing.T) {
	for _, name := range []string{"..", "../..", "a/b", "", ".", "x\x00", "quay.io"} {
		if p, err := ConfigFile(name); err == nil {
			t.Errorf("ConfigFile(%q) = %s", name, p)
		}
		if p, err := CacheDir("/var/lib/marina/registry-cache", name); err == nil {
			t.Errorf("CacheDir(%q) = %s", name, p)
		}
	}
	r := config.Registries{Image: config.DefaultRegistryImage, Mirrors: []config.Mirror{{Name: "../..", Port: 5000, RemoteURL: "https://quay.io"}}}
	if s, err := Specs(r, "/var/lib/marina/registry-cache", make([]byte, 32)); err == nil {
		t.Errorf("Specs accepted ../..: %+v", s)
	}
}

// The upstream's host becomes a folder in the VM: only a host may.
func TestHostsRefusesAnythingButAHost(t *testing.T) {
	for _, u := range []string{"https://x&(touch$IFS'PWNED';id>&2)&x", "https://a b", "https://bot:pw@quay.io", "https://quay.io:0", "https://quay.io:99999"} {
		if h, err := Hosts(config.Mirror{Name: "m", RemoteURL: u}); err == nil {
			t.Errorf("Hosts(%q) = %v", u, h)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// The credential helper, run as distribution runs it (the Docker
// credential helpers' client, "get" with the server on stdin), gives back
// exactly the configured username and password, whatever they hold, and
// runs nothing in them; an anonymous mirror's gives empty ones.
func TestAuthGivesTheCredentials(t *testing.T) {
	dir := t.TempDir()
	for _, m := range []config.Mirror{
		{Name: "registry-quayio", Port: 5010, RemoteURL: "https://quay.io", Username: "robot$ci", Password: "p@ss: 'w\"ord\n#$(touch " + dir + "/PWNED)`id`\\%s"},
		{Name: "registry-dockerio", Port: 5030, RemoteURL: "https://registry-1.docker.io"},
	} {
		b, err := Auth(m)
		if err != nil {
			t.Fatal(err)
		}
		helper := filepath.Join(dir, m.Name)
		if err := os.WriteFile(helper, b, 0o700); err != nil {
			t.Fatal(err)
		}
		got, err := credclient.Get(credclient.NewShellProgramFunc(helper), "quay.io")
		if err != nil {
			t.Fatalf("%s: %v\n%s", m.Name, err, b)
		}
		if got.Username != m.Username || got.Secret != m.Password {
			t.Errorf("%s: the helper gave %q / %q", m.Name, got.Username, got.Secret)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Error("a password ran as shell code")
	}
}
