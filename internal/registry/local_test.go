package registry

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/config"
)

func TestLocalSpec(t *testing.T) {
	r := config.Default().Registries
	s, err := LocalSpec(r, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil || s == nil {
		t.Fatalf("%v %v", s, err)
	}
	// A registry of its own: no proxy section, so distribution stores
	// what is pushed instead of fetching from an upstream.
	var c map[string]any
	if err := yaml.Unmarshal(s.Config, &c); err != nil {
		t.Fatal(err)
	}
	if _, ok := c["proxy"]; ok {
		t.Errorf("the push registry's config has a proxy section:\n%s", s.Config)
	}
	if s.Name != "marina-registry" || s.Port != 5000 || s.Publish.Port() != 5001 || s.CacheDir != "/var/lib/marina/registry/local" || s.ConfigFile != "/etc/marina/registry/marina-registry.yml" {
		t.Errorf("spec %+v", s)
	}
	// Another port is another container.
	r.Local.Port = 5002
	s2, _ := LocalSpec(r, []byte("0123456789abcdef0123456789abcdef"))
	if s2.Digest == s.Digest {
		t.Error("a port change keeps the container's digest: up would not publish the new port")
	}
	r.Local.Enabled = false
	if s, err := LocalSpec(r, nil); s != nil || err != nil {
		t.Errorf("off: %v %v", s, err)
	}
	// A mirror's config keeps its proxy section.
	m, err := Config(config.DefaultMirrors()[0])
	if err != nil || !strings.Contains(string(m), "remoteurl: https://registry-1.docker.io") {
		t.Errorf("a mirror's config:\n%s %v", m, err)
	}
}

func TestLocalCertsDAndHosting(t *testing.T) {
	l := config.Local{Enabled: true, Port: 5001}
	files := LocalCertsD(l)
	got := files["localhost:5001/hosts.toml"]
	if len(files) != 1 || !strings.Contains(got, `server = "http://localhost:5001"`) || !strings.Contains(got, `[host."http://marina-registry:5000"]`) || strings.Contains(got, "skip_verify") {
		t.Errorf("hosts.toml files %v", files)
	}
	if LocalCertsD(config.Local{Port: 5001}) != nil {
		t.Error("an off registry has a hosts.toml")
	}
	h, err := Hosting(l)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := yaml.Unmarshal([]byte(h), &v); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"host": "localhost:5001", "hostFromContainerRuntime": "localhost:5001", "hostFromClusterNetwork": "marina-registry:5000", "help": HostingHelp}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s = %q, want %q", k, v[k], w)
		}
	}
}
