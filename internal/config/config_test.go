package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func testPaths(t *testing.T) Paths {
	t.Helper()
	// The home is a short made-up one, as on a Mac, so that the socket path
	// limits do not depend on where the test's temporary folder is.
	return Paths{Home: "/Users/me", Dir: "/Users/me/.marina", Config: filepath.Join(t.TempDir(), "config.yaml")}
}

func load(t *testing.T, body string) (Config, error) {
	t.Helper()
	p := testPaths(t)
	if err := os.WriteFile(p.Config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

func TestDefaults(t *testing.T) {
	for _, body := range []string{"", "# only a comment\n", "---\n", "vm: {}\n", "vm:\n"} {
		got, err := load(t, body)
		if err != nil {
			t.Fatalf("load(%q): %v", body, err)
		}
		if !reflect.DeepEqual(got, Default()) {
			t.Errorf("load(%q) = %+v, want the defaults", body, got)
		}
	}
	d := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"vm.name", d.VM.Name, "marina"},
		{"vm.cpus", d.VM.CPUs, 4},
		{"vm.memory", d.VM.Memory, "10GiB"},
		{"vm.disk", d.VM.Disk, "40GiB"},
		{"vm.rosetta", d.VM.Rosetta, false},
		{"network.cidr", d.Network.CIDR, "172.30.0.0/16"},
		{"network.disablePortMirroring", d.Network.DisablePortMirroring, true},
		{"kind.nodeVersion", d.Kind.NodeVersion, "v1.36.4"},
		{"kind.metalLBVersion", d.Kind.MetalLBVersion, "v0.16.2"},
		{"kind.customDnsResolvers", len(d.Kind.CustomDNSResolvers), 0},
		{"kind.autoMergeKubeconfig", d.Kind.AutoMergeKubeconfig, true},
		{"kind.autoRemoveKubeconfig", d.Kind.AutoRemoveKubeconfig, true},
		{"registries.cacheStorage", d.Registries.CacheStorage, "host"},
		{"dns.domain", d.DNS.Domain, "demo.internal"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("default %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	wantMirrors := map[string]string{
		"registry-dockerio:5030":                  "https://registry-1.docker.io",
		"registry-quayio:5010":                    "https://quay.io",
		"registry-gcrio:5020":                     "https://gcr.io",
		"registry-us-docker-pkgdev:5040":          "https://us-docker.pkg.dev",
		"registry-us-central1-docker-pkgdev:5050": "https://us-central1-docker.pkg.dev",
	}
	if len(d.Registries.Mirrors) != len(wantMirrors) {
		t.Fatalf("%d default mirrors, want %d", len(d.Registries.Mirrors), len(wantMirrors))
	}
	for _, m := range d.Registries.Mirrors {
		key := m.Name + ":" + strconv.Itoa(m.Port)
		if wantMirrors[key] != m.RemoteURL {
			t.Errorf("default mirror %s → %s, not in the contract", key, m.RemoteURL)
		}
	}
	if probs := Validate(d, testPaths(t)); len(probs) != 0 {
		t.Errorf("the defaults do not validate: %v", probs)
	}
}

func TestOverridesKeepOtherDefaults(t *testing.T) {
	got, err := load(t, `
vm:
  cpus: 8
network:
  disablePortMirroring: false
registries:
  mirrors:
    - name: ghcr
      port: 5060
      remoteURL: https://ghcr.io
      username: me
      password: s3cret
`)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.VM.CPUs = 8
	want.Network.DisablePortMirroring = false
	want.Registries.Mirrors = []Mirror{{Name: "ghcr", Port: 5060, RemoteURL: "https://ghcr.io", Username: "me", Password: "s3cret"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestMirrorsNullMeansDefaultsEmptyMeansNone(t *testing.T) {
	got, err := load(t, "registries:\n  mirrors:\n")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Registries.Mirrors, DefaultMirrors()) {
		t.Errorf("mirrors: (null) gave %v, want the defaults", got.Registries.Mirrors)
	}
	got, err = load(t, "registries:\n  mirrors: []\n")
	if err != nil {
		t.Fatal(err)
	}
	if got.Registries.Mirrors == nil || len(got.Registries.Mirrors) != 0 {
		t.Errorf("mirrors: [] gave %v, want none", got.Registries.Mirrors)
	}
}

func TestDefaultFileLoadsBackToDefaults(t *testing.T) {
	p := testPaths(t)
	wrote, err := WriteDefault(p.Config)
	if err != nil || !wrote {
		t.Fatalf("WriteDefault = %v, %v", wrote, err)
	}
	st, err := os.Stat(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("config mode %o, want 0600", st.Mode().Perm())
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Errorf("default file loads as %+v, want %+v", got, Default())
	}
	// A second call leaves an edited file alone.
	if err := os.WriteFile(p.Config, []byte("vm:\n  cpus: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if wrote, err := WriteDefault(p.Config); err != nil || wrote {
		t.Fatalf("WriteDefault over an existing file = %v, %v", wrote, err)
	}
	if got, err := Load(p); err != nil || got.VM.CPUs != 2 {
		t.Errorf("existing file was changed: %+v, %v", got.VM, err)
	}
}

func TestMarshalLoadsBack(t *testing.T) {
	c := Default()
	c.Kind.CustomDNSResolvers = []DNSResolver{{Domain: "corp.example.com", Resolvers: []string{"10.0.0.53", "10.0.0.54:5353"}}}
	c.Registries.Mirrors[0].Username, c.Registries.Mirrors[0].Password = "u", "p"
	b, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := Parse("x.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip:\n%s\ngave %+v", b, got)
	}
}

func TestRedactedHidesPasswords(t *testing.T) {
	c := Default()
	c.Registries.Mirrors[1].Username, c.Registries.Mirrors[1].Password = "robot", "hunter2"
	b, err := Marshal(c.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("redacted config shows the password:\n%s", b)
	}
	if c.Registries.Mirrors[1].Password != "hunter2" {
		t.Error("Redacted changed the original")
	}
}

// Every problem carries the file and the line that caused it.
func TestStrictLoading(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []string // substrings of the error, in order
	}{
		{"unknown top-level key", "vm:\n  cpus: 2\nnetwrok:\n  cidr: 10.0.0.0/8\n",
			[]string{"config.yaml:3: netwrok: unknown key \"netwrok\" (did you mean \"network\"?)"}},
		{"unknown nested key", "vm:\n  name: marina\n  cpu: 2\n",
			[]string{"config.yaml:3: vm.cpu: unknown key \"cpu\" (did you mean \"cpus\"?)"}},
		{"unknown key far from any", "dns:\n  zzzzzzzz: 1\n",
			[]string{"config.yaml:2: dns.zzzzzzzz: unknown key \"zzzzzzzz\" (known keys: domain, images)"}},
		{"unknown key in a list item", "registries:\n  mirrors:\n    - name: a\n      port: 5000\n      remoteURL: https://a.io\n      pasword: x\n",
			[]string{"config.yaml:6: registries.mirrors[0].pasword: unknown key \"pasword\" (did you mean \"password\"?)"}},
		{"several unknown keys at once", "vm:\n  foo: 1\nbar: 2\n",
			[]string{":2: vm.foo", ":3: bar"}},
		{"text for a number", "vm:\n  name: lab\n  cpus: four\n",
			[]string{`config.yaml:3: vm.cpus: "four" is not a whole number (int)`}},
		{"a fraction for a number", "vm:\n  cpus: 4.5\n",
			[]string{`config.yaml:2: vm.cpus: 4.5 is not a whole number (int)`}},
		{"a number too large", "vm:\n  cpus: 99999999999999999999\n",
			[]string{`config.yaml:2: vm.cpus: 99999999999999999999 is out of range for a whole number (int)`}},
		{"a quoted port", "registries:\n  mirrors:\n    - name: a\n      port: \"5000\"\n",
			[]string{`config.yaml:4: registries.mirrors[0].port: "5000" is in quotes, which makes it text, not a whole number (int): remove the quotes`}},
		{"words for a bool", "network:\n  disablePortMirroring: sometimes\n",
			[]string{`config.yaml:2: network.disablePortMirroring: "sometimes" is not true or false (bool)`}},
		{"a list for text", "dns:\n  domain: [a, b]\n",
			[]string{`config.yaml:2: dns.domain: expected text (string), got a list`}},
		{"text for a list", "kind:\n  customDnsResolvers:\n    - domain: corp.example.com\n      resolvers: 10.0.0.53\n",
			[]string{`config.yaml:4: kind.customDnsResolvers[0].resolvers: expected a list, got "10.0.0.53": write [10.0.0.53]`}},
		{"a list for a mapping", "kind:\n  nodeImages: [kindest/node:v1.36.4]\n",
			[]string{`config.yaml:2: kind.nodeImages: expected a mapping of keys to text (string), got a list`}},
		{"a list in a mapping", "kind:\n  nodeImages:\n    v1.36.4: [a]\n",
			[]string{`config.yaml:3: kind.nodeImages.v1.36.4: expected text (string), got a list`}},
		{"type mistakes and unknown keys at once", "vm:\n  cpus: four\n  rosetta: 2\n  disc: 40GiB\n",
			[]string{`:2: vm.cpus: "four" is not a whole number`, `:3: vm.rosetta: "2" is not true or false`, `:4: vm.disc: unknown key "disc" (did you mean "disk"?)`}},
		{"tab before a key", "vm:\n  name: lab\n\tcpus: 4\n",
			[]string{"config.yaml:3: indented with a tab: YAML allows spaces only; replace the tab with spaces"}},
		{"tab as the only indentation", "vm:\n\tname: lab\n",
			[]string{"config.yaml:2: indented with a tab: YAML allows spaces only; replace the tab with spaces"}},
		{"a character that cannot start a token, a tab after it", "vm:\n  name: `lab`\n\tcpus: 4\n",
			[]string{"config.yaml:2: found character that cannot start any token"}},
		{"tab after spaces, further down", "vm:\n  name: lab\n  cpus: 4\nnetwork:\n  \tcidr: 172.30.0.0/16\n",
			[]string{"config.yaml:5: indented with a tab: YAML allows spaces only"}},
		{"section is a scalar", "vm: big\n",
			[]string{"config.yaml:1: vm: expected a mapping of keys"}},
		{"duplicate key", "vm:\n  cpus: 2\n  cpus: 3\n",
			[]string{"config.yaml:3:", "already defined"}},
		{"syntax error", "vm:\n  cpus: [2\n",
			[]string{"config.yaml:"}},
		{"alias", "a: &x 1\n", []string{"unknown key \"a\""}},
		{"alias use", "vm: &v\n  cpus: 2\nnetwork: *v\n", []string{"config.yaml:3: network: YAML aliases"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, c.body)
			if err == nil {
				t.Fatal("loaded without error")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, not *config.Error: %v", err, err)
			}
			msg := err.Error()
			at := 0
			for _, w := range c.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error does not contain %q (in order):\n%s", w, msg)
				}
				at += i + len(w)
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	p := testPaths(t)
	_, err := Load(p)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load of a missing file = %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "marina up") {
		t.Errorf("error does not say how to create the file: %v", err)
	}
}

// A file --config names must exist: missing, it is an error that names
// it and the way out, and never ErrNotFound, which commands read as "use
// the defaults" (up writes them, doctor and config show use them).
func TestMissingNamedFile(t *testing.T) {
	env := map[string]string{"HOME": "/Users/me"}
	named := filepath.Join(t.TempDir(), "typo.yaml")
	p, err := ResolvePaths(func(k string) string { return env[k] }, named)
	if err != nil || !p.Named || p.Config != named {
		t.Fatalf("ResolvePaths(--config %s) = %+v, %v", named, p, err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: %v, want an error that is not ErrNotFound", what, err)
		}
		for _, w := range []string{"--config names " + named + ", which does not exist", "check the path", "/Users/me/.marina/config.yaml, which marina up writes"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", what, err, w)
			}
		}
	}
	check("CheckNamed", p.CheckNamed())
	_, err = Load(p)
	check("Load", err)
	_, err = LoadVMName(p)
	check("LoadVMName", err)
	// Relative: the error says where marina looked.
	rel, _ := ResolvePaths(func(k string) string { return env[k] }, "typo.yaml")
	if err := rel.CheckNamed(); err == nil || !strings.Contains(err.Error(), "typo.yaml (/") {
		t.Errorf("relative --config: %v", err)
	}
	// Once the file is there (empty: the defaults), all is well.
	if err := os.WriteFile(named, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckNamed(); err != nil {
		t.Errorf("CheckNamed of an existing file: %v", err)
	}
	if cfg, err := Load(p); err != nil || cfg.VM.Name != DefaultVMName {
		t.Errorf("Load of an empty named file = %+v, %v", cfg.VM, err)
	}
	// Without --config, a missing file is still ErrNotFound.
	d, _ := ResolvePaths(func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] }, "")
	if err := d.CheckNamed(); err != nil || d.Named {
		t.Errorf("the default path: Named %v, CheckNamed %v", d.Named, err)
	}
	if _, err := Load(d); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of the missing default file = %v, want ErrNotFound", err)
	}
}

// Each validation rule, table-driven: a config change and the problems it
// must produce (path and a piece of the message).
func TestValidation(t *testing.T) {
	type prob struct{ path, msg string }
	cases := []struct {
		name   string
		change func(*Config)
		want   []prob
	}{
		{"vm name with capitals", func(c *Config) { c.VM.Name = "Marina" }, []prob{{"vm.name", "not a valid VM name"}}},
		{"vm name with a dot", func(c *Config) { c.VM.Name = "my.vm" }, []prob{{"vm.name", "not a valid VM name"}}},
		{"vm name empty", func(c *Config) { c.VM.Name = "" }, []prob{{"vm.name", "not a valid VM name"}}},
		{"vm name too long for sockets", func(c *Config) { c.VM.Name = strings.Repeat("a", 60) }, []prob{{"vm.name", "over macOS's limit"}}},
		{"zero cpus", func(c *Config) { c.VM.CPUs = 0 }, []prob{{"vm.cpus", "at least 1"}}},
		{"memory without unit sense", func(c *Config) { c.VM.Memory = "lots" }, []prob{{"vm.memory", "not a size"}}},
		{"memory too small", func(c *Config) { c.VM.Memory = "1GiB" }, []prob{{"vm.memory", "too small"}}},
		{"negative disk", func(c *Config) { c.VM.Disk = "-5GiB" }, []prob{{"vm.disk", "not a size"}}},
		{"disk too small", func(c *Config) { c.VM.Disk = "10GiB" }, []prob{{"vm.disk", "too small"}}},
		{"cidr not a cidr", func(c *Config) { c.Network.CIDR = "172.30.0.0" }, []prob{{"network.cidr", "not a CIDR"}}},
		{"cidr ipv6", func(c *Config) { c.Network.CIDR = "fd00::/16" }, []prob{{"network.cidr", "not IPv4"}}},
		{"cidr host bits", func(c *Config) { c.Network.CIDR = "172.30.1.0/16" }, []prob{{"network.cidr", "did you mean 172.30.0.0/16"}}},
		{"cidr /24", func(c *Config) { c.Network.CIDR = "172.30.0.0/24" }, []prob{{"network.cidr", "must be a /16"}}},
		{"cidr /12", func(c *Config) { c.Network.CIDR = "172.16.0.0/12" }, []prob{{"network.cidr", "must be a /16"}}},
		{"cidr public", func(c *Config) { c.Network.CIDR = "8.8.0.0/16" }, []prob{{"network.cidr", "not a private"}}},
		{"cidr on vzNAT", func(c *Config) { c.Network.CIDR = "192.168.0.0/16" }, []prob{{"network.cidr", "vzNAT"}, {"network.cidr", "Lima's user-mode network"}}},
		{"cidr on docker0", func(c *Config) { c.Network.CIDR = "172.17.0.0/16" }, []prob{{"network.cidr", "docker0"}}},
		{"cidr on a service range", func(c *Config) { c.Network.CIDR = "10.3.0.0/16" }, []prob{{"network.cidr", "10.3.0.0/16, the service or pod range of cluster slot 3"}}},
		{"cidr on a high pod range", func(c *Config) { c.Network.CIDR = "10.150.0.0/16" }, []prob{{"network.cidr", "cluster slot 50"}}},
		{"node version", func(c *Config) { c.Kind.NodeVersion = "1.36" }, []prob{{"kind.nodeVersion", `"1.36" has no node image for kind v0.33.0 (the kind in the VM): use one of v1.37.0, v1.36.4, v1.35.8, v1.34.11, or pin an image for it under kind.nodeImages`}}},
		{"node version with a pinned image of its own", func(c *Config) {
			c.Kind.NodeVersion = "v1.36.1"
			c.Kind.NodeImages = map[string]string{"v1.36.1": "registry.example/kindest/node:v1.36.1@sha256:" + strings.Repeat("a", 64)}
		}, nil},
		{"node image without a digest", func(c *Config) {
			c.Kind.NodeImages = map[string]string{"v1.36.4": "kindest/node:v1.36.4"}
		}, []prob{{"kind.nodeImages.v1.36.4", "not pinned by digest"}}},
		{"node image under a bad version", func(c *Config) {
			c.Kind.NodeImages = map[string]string{"latest": "kindest/node@sha256:" + strings.Repeat("b", 64)}
		}, []prob{{"kind.nodeImages", `"latest" is not a Kubernetes version`}}},
		{"node version without an image", func(c *Config) { c.Kind.NodeVersion = "v1.36.1" }, []prob{{"kind.nodeVersion", "has no node image"}}},
		{"metallb version", func(c *Config) { c.Kind.MetalLBVersion = "latest" }, []prob{{"kind.metalLBVersion", "not a MetalLB version"}}},
		{"metallb version without a pin (klimax's)", func(c *Config) { c.Kind.MetalLBVersion = "v0.16.1" }, []prob{{"kind.metalLBVersion", "MetalLB v0.16.1 has no manifest digest pinned in this marina, which installs only what it can check: use one of v0.16.2"}}},
		{"resolver domain", func(c *Config) {
			c.Kind.CustomDNSResolvers = []DNSResolver{{Domain: "bad_domain", Resolvers: []string{"1.1.1.1"}}}
		}, []prob{{"kind.customDnsResolvers[0].domain", "not a domain name"}}},
		{"resolver without addresses", func(c *Config) {
			c.Kind.CustomDNSResolvers = []DNSResolver{{Domain: "corp.example.com"}}
		}, []prob{{"kind.customDnsResolvers[0].resolvers", "at least one resolver"}}},
		{"resolver address", func(c *Config) {
			c.Kind.CustomDNSResolvers = []DNSResolver{{Domain: "corp.example.com", Resolvers: []string{"dns.google", "1.1.1.1:53"}}}
		}, []prob{{"kind.customDnsResolvers[0].resolvers[0]", "not an IP address"}}},
		{"resolver domain twice", func(c *Config) {
			c.Kind.CustomDNSResolvers = []DNSResolver{{Domain: "a.com", Resolvers: []string{"1.1.1.1"}}, {Domain: "a.com.", Resolvers: []string{"1.1.1.1"}}}
		}, []prob{{"kind.customDnsResolvers[1].domain", "listed twice"}}},
		{"resolver inside own zone", func(c *Config) {
			c.Kind.CustomDNSResolvers = []DNSResolver{{Domain: "x.demo.internal", Resolvers: []string{"1.1.1.1"}}}
		}, []prob{{"kind.customDnsResolvers[0].domain", "inside marina's own zone"}}},
		{"cache storage", func(c *Config) { c.Registries.CacheStorage = "nfs" }, []prob{{"registries.cacheStorage", "not a cache storage"}}},
		{"mirror named like a host", func(c *Config) { c.Registries.Mirrors[1].Name = "quay.io" }, []prob{{"registries.mirrors[1].name", "looks like a hostname"}}},
		{"mirror named with a port", func(c *Config) { c.Registries.Mirrors[1].Name = "localhost:5000" }, []prob{{"registries.mirrors[1].name", "looks like a hostname"}}},
		{"mirror name charset", func(c *Config) { c.Registries.Mirrors[0].Name = "Docker_Hub" }, []prob{{"registries.mirrors[0].name", "not a valid mirror name"}}},
		{"mirror name reserved", func(c *Config) { c.Registries.Mirrors[0].Name = "marina-dns" }, []prob{{"registries.mirrors[0].name", "kept for marina"}}},
		{"duplicate mirror name", func(c *Config) { c.Registries.Mirrors[2].Name = c.Registries.Mirrors[0].Name }, []prob{{"registries.mirrors[2].name", "also the name of registries.mirrors[0]"}}},
		{"duplicate mirror port", func(c *Config) { c.Registries.Mirrors[3].Port = 5010 }, []prob{{"registries.mirrors[3].port", "also the port of registries.mirrors[1]"}}},
		{"mirror port zero", func(c *Config) { c.Registries.Mirrors[0].Port = 0 }, []prob{{"registries.mirrors[0].port", "not a port"}}},
		{"mirror port on an API port", func(c *Config) { c.Registries.Mirrors[0].Port = 7005 }, []prob{{"registries.mirrors[0].port", "cluster API server ports"}}},
		{"push registry on a privileged port", func(c *Config) { c.Registries.Local.Port = 443 }, []prob{{"registries.local.port", "1024–65535"}}},
		{"push registry on an API port", func(c *Config) { c.Registries.Local.Port = 7001 }, []prob{{"registries.local.port", "cluster API server ports"}}},
		{"mirror port ssh", func(c *Config) { c.Registries.Mirrors[0].Port = 22 }, []prob{{"registries.mirrors[0].port", "used by the VM"}}},
		{"mirror url http", func(c *Config) { c.Registries.Mirrors[0].RemoteURL = "http://quay.io" }, []prob{{"registries.mirrors[0].remoteURL", "must use https"}}},
		{"mirror url path", func(c *Config) { c.Registries.Mirrors[0].RemoteURL = "https://quay.io/v2/" }, []prob{{"registries.mirrors[0].remoteURL", "no path"}}},
		{"mirror url garbage", func(c *Config) { c.Registries.Mirrors[0].RemoteURL = "quay" }, []prob{{"registries.mirrors[0].remoteURL", "not a URL"}}},
		{"mirror url credentials", func(c *Config) { c.Registries.Mirrors[0].RemoteURL = "https://u:pw@quay.io" }, []prob{{"registries.mirrors[0].remoteURL", "carries credentials"}}},
		{"mirror half credentials", func(c *Config) { c.Registries.Mirrors[0].Username = "u" }, []prob{{"registries.mirrors[0]", "both username and password"}}},
		{"dns domain", func(c *Config) { c.DNS.Domain = "Demo..internal" }, []prob{{"dns.domain", "not a domain name"}}},
		{"dns domain under .local", func(c *Config) { c.DNS.Domain = "demo.local" }, []prob{{"dns.domain", "multicast DNS"}}},
		{"dns domain cluster.local", func(c *Config) { c.DNS.Domain = "cluster.local" }, []prob{{"dns.domain", "clusters' own DNS"}}},
		{"all at once", func(c *Config) {
			c.VM.CPUs = -1
			c.Network.CIDR = "nope"
			c.Registries.CacheStorage = ""
		}, []prob{{"vm.cpus", ""}, {"network.cidr", ""}, {"registries.cacheStorage", ""}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			c.change(&cfg)
			got := Validate(cfg, testPaths(t))
			if len(got) != len(c.want) {
				t.Fatalf("got %d problems, want %d: %+v", len(got), len(c.want), got)
			}
			for i, w := range c.want {
				if got[i].Path != w.path || !strings.Contains(got[i].Msg, w.msg) {
					t.Errorf("problem %d = %s: %s\nwant %s: …%s…", i, got[i].Path, got[i].Msg, w.path, w.msg)
				}
			}
		})
	}
}

// Problems found by validation point at the line that set the value.
func TestValidationErrorsCarryLines(t *testing.T) {
	_, err := load(t, "vm:\n  cpus: 2\nregistries:\n  mirrors:\n    - name: quay.io\n      port: 5010\n      remoteURL: https://quay.io\n")
	if err == nil {
		t.Fatal("accepted a hostname-like mirror name")
	}
	if !strings.Contains(err.Error(), "config.yaml:5: registries.mirrors[0].name:") {
		t.Errorf("error lacks file:line:\n%v", err)
	}
}

func TestSocketLimitCountsMarinaHome(t *testing.T) {
	c := Default()
	p := Paths{Home: "/Users/me", Dir: "/Users/me/" + strings.Repeat("d", 70), Config: "x"}
	got := Validate(c, p)
	if len(got) != 1 || !strings.Contains(got[0].Msg, "Lima's socket path") {
		t.Errorf("long MARINA_HOME: %+v", got)
	}
}

// A mistake outside vm.name, even one that stops the file parsing, must
// not stop status, down or destroy; and nothing but vm.name comes back.
func TestLoadVMName(t *testing.T) {
	p := testPaths(t)
	write := func(body string) {
		if err := os.WriteFile(p.Config, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("vm:\n  name: lab\nregistries:\n  cacheStorage: nfs\n")
	l, err := LoadVMName(p)
	name, warnings := l.Name, l.Warnings()
	if err != nil || name != "lab" || len(warnings) != 1 || !strings.Contains(warnings[0], ":4: registries.cacheStorage:") {
		t.Errorf("LoadVMName = %q, %q, %v", name, warnings, err)
	}
	if _, err := Load(p); err == nil {
		t.Error("Load accepted what LoadVMName warned about")
	}
	for body, want := range map[string]string{
		"vm:\n  name: lab\n  cpu: 4\n":                                  "lab", // typo
		"vm:\n  name: lab\n\tcpus: 4\n":                                 "lab", // a tab
		"vm:\n\tname: lab\n":                                            "lab",
		"vm:\n  name: lab\n  cpus: 4\n  cpus: 5\n":                      "lab", // duplicate key
		"vm:\n  name: \"lab\"  # mine\nnetwork:\n  kindBridgeCIDR: x\n": "lab", // klimax key
		"network:\n  cidr: 10.0.0.0/8\n":                                DefaultVMName,
		"network:\n\tcidr: x\n":                                         DefaultVMName,
		"vm:\n  cpus: 4\n\tdisk: 1\n":                                   DefaultVMName,
		"":                                                              DefaultVMName,
		"vm:\n  name: lab\n---\nfoo: 1\n":                               "lab",
		"vm:\n  name: !!binary ai0w\n":                                  "j-0", // as the strict loader reads it
	} {
		write(body)
		if l, err := LoadVMName(p); err != nil || l.Name != want {
			got := l.Name
			t.Errorf("%q: LoadVMName = %q, %v; want %q", body, got, err, want)
		}
	}
	for _, body := range []string{
		"vm:\n  name: Bad_Name\n",
		"vm:\n  name: ../..\n",
		"vm:\n  name: a\n  name: b\n", // which one?
		"vm:\n  name: a\nvm:\n  name: b\n",
		"vm:\n  name: a\n\tcpus: 1\nvm:\n  name: b\n", // the same, not parsing
		"vm: {name: lab}\n\tcpus: 4\n",
		"{vm: {name: lab}, \tx: [}\n",
		"base: &b\n  name: lab\nvm: *b\n",
		"vm:\n  <<: {name: lab}\n",
		"vm: [a]\n",
		"- a\n",
		"vm:\n  notes: |\n    name: evil\n\tx: 1\n", // a block scalar, not a name
		"vm:\n  extra:\n    name: other\n\tx: 1\n",  // deeper: not vm.name
		"x: \"start\nvm:\n  name: evil\"\n\tq: 1\n", // inside a string
		"x: [a,\nvm:\n  name: evil]\n\tq: 1\n",      // inside a flow list
	} {
		write(body)
		if l, err := LoadVMName(p); err == nil {
			got := l.Name
			t.Errorf("%q: LoadVMName = %q, want an error", body, got)
		}
	}
	write("vm:\n  name: lab\n---\nvm:\n  name: other\n")
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "second YAML document") {
		t.Errorf("Load of two documents: %v", err)
	}
}

func TestNodeImagesArePinned(t *testing.T) {
	for v, img := range NodeImages {
		if !strings.HasPrefix(img, "kindest/node:"+v+"@sha256:") || len(img) != len("kindest/node:"+v+"@sha256:")+64 {
			t.Errorf("%s: %s is not pinned by a sha256 digest", v, img)
		}
	}
	if got := strings.Join(Kind{}.NodeVersions(), " "); got != "v1.37.0 v1.36.4 v1.35.8 v1.34.11" {
		t.Errorf("NodeVersions = %s", got)
	}
	if _, ok := NodeImages[DefaultNodeVersion]; !ok {
		t.Error("the default node version has no image")
	}
}

// A kind Cluster file or a Fleet manifest given as marina's config is
// named for what it is, with what to do instead, not refused key by key;
// so is it when only vm.name is read.
func TestConfigThatIsAnotherKindOfFile(t *testing.T) {
	for body, want := range map[string]string{
		"kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n- role: worker\n": "is a kind Cluster config, not marina's config: marina writes each cluster's kind config itself",
		"apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: demo\n":                            "is a Fleet manifest, not marina's config: apply it with `marina fleet apply ",
	} {
		_, err := load(t, body)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "unknown") {
			t.Errorf("Load:\n%v\nwant %q", err, want)
		}
		p := testPaths(t)
		if err := os.WriteFile(p.Config, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadVMName(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadVMName: %v", err)
		}
	}
}
