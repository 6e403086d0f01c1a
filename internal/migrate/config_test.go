package migrate

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/golden"
)

var testMarina = config.Paths{Home: "/Users/me", Dir: "/Users/me/.marina", Config: "/Users/me/.marina/config.yaml"}

// configCases are the klimax files under testdata/config (<in>.klimax.yaml)
// and the golden marina file and notes each gives (<name>.marina.yaml,
// <name>.notes).
var configCases = []struct {
	name, in string
	keepVM   bool
}{
	{"default", "default", false},                 // (a) klimax's default file
	{"default-keepvm", "default", true},           // (a) with klimax's VM adopted
	{"default-noblank", "default-noblank", false}, // (a) its header right above vm:
	{"commented", "commented", false},             // (b) every key, comments everywhere
	{"commented-keepvm", "commented", true},       // (b) a VM name of the user's own
	{"removed", "removed", false},                 // (c) coreDNSDomains, localRegistry
	{"removed-keepvm", "removed", true},           // (c)
	{"coredns-string", "coredns-string", false},   // (c) coreDNSDomains as one string
	{"old-node", "old-node", false},               // (d) v1.33.2: no v1.33 pinned
	{"guest", "guest", false},                     // (e) cacheStorage: guest, cpus: 0
	{"no-resolvers", "no-resolvers", false},       // (f) resolvers omitted, empty, null
	{"dotted-mirror", "dotted-mirror", false},     // (g) mirror names with '.' and ':'
	{"empty", "empty", false},                     // (h) an empty file
	{"empty-keepvm", "empty", true},               // (h)
	{"comments-only", "comments-only", false},     // (h) comments and nothing else
	{"comments-only-keepvm", "comments-only", true},
	{"typo", "typo", false}, // (i) keys klimax ignored
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "config", name+".klimax.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loads checks data as marina's own loader will: strictly, then validated.
func loads(t testing.TB, data []byte) config.Config {
	t.Helper()
	cfg, _, err := config.Parse("config.yaml", data)
	if err != nil {
		t.Fatalf("marina's loader refuses the output: %v\n%s", err, data)
	}
	if probs := config.Validate(cfg, testMarina); len(probs) > 0 {
		t.Fatalf("marina's validator refuses the output: %v\n%s", probs, data)
	}
	return cfg
}

func TestGoldenConfig(t *testing.T) {
	for _, tc := range configCases {
		t.Run(tc.name, func(t *testing.T) {
			o := ConfigOptions{KeepVM: tc.keepVM, Paths: testMarina}
			got, err := Config(readFixture(t, tc.in), o)
			if err != nil {
				t.Fatal(err)
			}
			cfg := loads(t, got.Data)
			if !reflect.DeepEqual(cfg, got.Config) {
				t.Errorf("Converted.Config is not what marina reads from Data:\n%+v\n%+v", got.Config, cfg)
			}
			golden.Check(t, filepath.Join("config", tc.name+".marina.yaml"), got.Data)
			golden.Check(t, filepath.Join("config", tc.name+".notes"), []byte(strings.Join(got.Notes, "\n")+"\n"))
			for _, n := range got.Notes {
				if n == "" || strings.Contains(n, "\n") {
					t.Errorf("a note is not one line: %q", n)
				}
			}
			// A second pass over marina's file, read as klimax's, changes
			// nothing.
			again, err := Config(got.Data, o)
			if err != nil {
				t.Fatalf("second pass: %v", err)
			}
			if !bytes.Equal(again.Data, got.Data) {
				t.Errorf("a second pass changes the file:\n%s", golden.Diff(string(got.Data), string(again.Data)))
			}
			if !reflect.DeepEqual(again.Config, got.Config) {
				t.Errorf("a second pass changes the config:\n%+v\n%+v", got.Config, again.Config)
			}
		})
	}
}

// What the conversion reports besides the file.
func TestConfigReports(t *testing.T) {
	defaults := map[string]string{}
	for _, m := range config.DefaultMirrors() {
		defaults[m.Name] = m.Name
	}
	cases := []struct {
		in           string
		keepVM       bool
		vmName       string // klimax's
		marinaVM     string
		cidr         string
		cacheStorage string
		mirrors      map[string]string
	}{
		{"default", false, "klimax", "marina", "172.30.0.0/16", "host", defaults},
		{"default", true, "klimax", "klimax", "172.30.0.0/16", "host", defaults},
		{"empty", false, "klimax", "marina", "172.30.0.0/16", "host", defaults},
		{"empty", true, "klimax", "klimax", "172.30.0.0/16", "host", defaults},
		{"commented", false, "lab", "lab", "172.28.0.0/16", "host", map[string]string{"registry-dockerio": "registry-dockerio", "registry-quayio": "registry-quayio"}},
		{"guest", false, "klimax", "marina", "172.30.0.0/16", "guest", defaults},
		{"typo", false, "klimax", "marina", "172.30.0.0/16", "host", map[string]string{"registry-quayio": "registry-quayio"}},
		{"dotted-mirror", true, "klimax", "klimax", "172.30.0.0/16", "host", map[string]string{
			"registry-dockerio":       "registry-dockerio",
			"Harbor.Corp.example:443": "registry-harbor-corp-example-443",
			"ghcr.io":                 "registry-ghcr-io",
		}},
	}
	for _, c := range cases {
		got, err := Config(readFixture(t, c.in), ConfigOptions{KeepVM: c.keepVM, Paths: testMarina})
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got.VMName != c.vmName || got.Config.VM.Name != c.marinaVM {
			t.Errorf("%s (keepVM %v): VM %q → %q, want %q → %q", c.in, c.keepVM, got.VMName, got.Config.VM.Name, c.vmName, c.marinaVM)
		}
		if got.CIDR != netip.MustParsePrefix(c.cidr) || got.CacheStorage != c.cacheStorage {
			t.Errorf("%s: CIDR %v, cache %q", c.in, got.CIDR, got.CacheStorage)
		}
		if !reflect.DeepEqual(got.Mirrors, c.mirrors) {
			t.Errorf("%s: mirrors %v, want %v", c.in, got.Mirrors, c.mirrors)
		}
	}
}

// lineAfter is the line of text that follows the first line that is want
// (spaces trimmed), or "" when want is not there.
func lineAfter(text, want string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == want && i+1 < len(lines) {
			return lines[i+1]
		}
	}
	return ""
}

// (b) The user's comments stay where they were: above, beside and after
// the keys that survive, the renamed one included.
func TestConfigKeepsComments(t *testing.T) {
	got, err := Config(readFixture(t, "commented"), ConfigOptions{Paths: testMarina})
	if err != nil {
		t.Fatal(err)
	}
	out := string(got.Data)
	if !strings.HasPrefix(out, Header+"\n\n# Settings I keep between laptops.\nvm:\n") {
		t.Errorf("the header is not marina's, followed by the user's paragraph:\n%s", out)
	}
	if strings.Contains(out, "https://github.com/bcollard/klimax") {
		t.Error("klimax's header stayed")
	}
	above := map[string]string{ // comment → the line right after it
		"# The VM klimax runs. Keep the name, klimax scripts use it.":          "  name: lab # short, for the socket",
		"# More cores since the demo runs Istio.":                              "  cpus: 6 # was 4",
		"# Routed from the Mac; keep it clear of the office VPN.":              "  cidr: 172.28.0.0/16 # the office uses 172.30",
		"# Pinned because the demo needs 1.36.":                                "  nodeVersion: v1.36.4 # pinned",
		"# the office resolvers":                                               "    - domain: corp.example.com # corp",
		"# klimax used to remove the kubeconfig entries on delete; keep that.": "  autoRemoveKubeconfig: false",
		"# a read-only token":                                                  "      username: demo-bot",
		"# Only the two I use.":                                                "  mirrors:",
		"# Networking.":                                                        "network:",
	}
	for c, next := range above {
		if got := lineAfter(out, c); got != next {
			t.Errorf("after %q comes %q, want %q", c, got, next)
		}
	}
	for _, l := range []string{
		"  memory: 16GiB # klimax's default was 10GiB",
		"  rosetta: true # amd64 images",
		"  disablePortMirroring: false # I want 127.0.0.1 kubeconfigs",
		"  metalLBVersion: v0.16.2 # latest",
		"  autoMergeKubeconfig: true # merge into ~/.kube/config",
		"  cacheStorage: host # keeps the cache across destroy",
		"    - name: registry-dockerio # Docker Hub",
		"  # (end of the VM settings)",
	} {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("line %q is gone:\n%s", l, out)
		}
	}
	if !strings.HasSuffix(out, "# end of file\n") {
		t.Errorf("the file's last comment moved:\n%s", out)
	}
	if !strings.Contains(out, "      password: s3cr3t-Hub-t0ken\n") {
		t.Error("the mirror's credentials are not kept as they were")
	}
}

// (a) klimax's generated warning above nodeVersion goes, a user's comment
// next to it stays.
func TestConfigDropsKlimaxWarning(t *testing.T) {
	in := "kind:\n  # mine: keep it on 1.35\n\n  # nodeVersion is matched to the bundled kind CLI; anything else is UNSUPPORTED.\n  nodeVersion: v1.35.0\n"
	got, err := Config([]byte(in), ConfigOptions{Paths: testMarina})
	if err != nil {
		t.Fatal(err)
	}
	out := string(got.Data)
	if strings.Contains(out, "UNSUPPORTED") || !strings.Contains(out, "  # mine: keep it on 1.35\n  nodeVersion: v1.35.8\n") {
		t.Errorf("unexpected output:\n%s", out)
	}
}

// A value marina refuses stops the conversion with the klimax key and
// line, and marina's reason.
func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // in order
	}{
		{"not a /16", "vm:\n  cpus: 2\nnetwork:\n  kindBridgeCIDR: 172.30.0.0/20\n",
			[]string{"nothing was written", "line 4: network.kindBridgeCIDR: 172.30.0.0/20 must be a /16"}},
		{"not a private range", "network:\n  kindBridgeCIDR: 8.8.0.0/16 # hm\n",
			[]string{"line 2: network.kindBridgeCIDR: 8.8.0.0/16 is not a private (RFC 1918) range"}},
		{"not a CIDR", "network:\n  kindBridgeCIDR: nope\n",
			[]string{"line 2: network.kindBridgeCIDR: \"nope\" is not a CIDR"}},
		{"several", "vm:\n  cpus: -1\n  memory: 1GiB\nregistries:\n  cacheStorage: ssd\n",
			[]string{"line 2: vm.cpus: must be at least 1", "line 3: vm.memory: 1GiB is too small", "line 5: registries.cacheStorage: \"ssd\" is not a cache storage"}},
		{"a type klimax refused too", "vm:\n  cpus: four\n",
			[]string{`line 2: vm.cpus: "four" is not a whole number (int)`}},
		{"bad VM name", "vm:\n  name: My_VM\n", []string{"line 2: vm.name: \"My_VM\" is not a valid VM name"}},
		{"bad mirror name", "registries:\n  mirrors:\n    - name: Quay\n      port: 5010\n      remoteURL: https://quay.io\n",
			[]string{"line 3: registries.mirrors[0].name: \"Quay\" is not a valid mirror name"}},
		{"resolver", "kind:\n  coreDNSDomains: [cluster.local]\n",
			[]string{"line 2 (kind.coreDNSDomains[0]): kind.customDnsResolvers[0].domain: cluster.local is answered by the cluster's own DNS"}},
		{"alias", "vm: &v\n  cpus: 2\nnetwork: *v\n", []string{"line 1: vm: klimax's config uses a YAML anchor (&v)"}},
		{"merge key", "vm:\n  <<: {cpus: 2}\n", []string{"line 2: vm: klimax's config uses a YAML merge key"}},
		{"two documents", "vm:\n  cpus: 2\n---\nvm:\n  cpus: 3\n", []string{"more than one YAML document (the second, after ---, starts on line 4)"}},
		{"a list", "- vm\n", []string{"line 1: klimax's config is a list, not a mapping"}},
		{"a scalar", "klimax\n", []string{"line 1: klimax's config is a single value, not a mapping"}},
		{"duplicate key", "vm:\n  cpus: 2\n  cpus: 3\n", []string{"line 3: vm.cpus is set twice (first on line 2)"}},
		{"not YAML", "vm:\n\tcpus: 2\n", []string{"not YAML that klimax could read either"}},
		{"complex key", "? [a, b]\n: c\n", []string{"line 1: the file: a key that is a list"}},
		{"coreDNSDomains mapping", "kind:\n  coreDNSDomains: {a: b}\n", []string{"line 2: kind.coreDNSDomains is a mapping"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Config([]byte(c.in), ConfigOptions{Paths: testMarina})
			if err == nil {
				t.Fatalf("converted without error:\n%s", got.Data)
			}
			if got.Data != nil {
				t.Error("an error came with data")
			}
			msg, at := err.Error(), 0
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

// A registry password shows in no note and no error.
func TestConfigNeverShowsPasswords(t *testing.T) {
	for _, in := range []string{
		"registries:\n  mirrors:\n    - name: quay.io\n      port: 5010\n      remoteURL: https://quay.io\n      username: bot\n      password: hunter2-sekrit\n      extra: 1\n",
		"registries:\n  mirrors:\n    - name: quay.io\n      port: 5010\n      remoteURL: https://bot:hunter2-sekrit@quay.io\n",
		"registries:\n  mirrors:\n    - name: quay.io\n      port: 5010\n      remoteURL: https://quay.io\n      password: hunter2-sekrit\n",
		"registries:\n  mirrors:\n    - name: quay.io\n      port: 0\n      remoteURL: https://quay.io\n      username: bot\n      password: [hunter2-sekrit]\n",
	} {
		got, err := Config([]byte(in), ConfigOptions{Paths: testMarina})
		text := strings.Join(got.Notes, "\n")
		if err != nil {
			text += err.Error()
		}
		if strings.Contains(text, "hunter2") {
			t.Errorf("the password shows:\n%s", text)
		}
	}
}

func TestNearest(t *testing.T) {
	pins := []string{"v1.37.0", "v1.36.4", "v1.35.8", "v1.34.11"}
	cases := []struct{ v, want string }{
		{"v1.35.0", "v1.35.8"},
		{"v1.35.9", "v1.35.8"},
		{"v1.33.2", "v1.34.11"},
		{"v1.30.0", "v1.34.11"},
		{"v1.38.1", "v1.37.0"},
		{"v2.0.0", "v1.37.0"},
		{"latest", ""},
		{"1.35.0", ""},
	}
	for _, c := range cases {
		if got, _ := nearest(c.v, pins); got != c.want {
			t.Errorf("nearest(%s) = %q, want %q", c.v, got, c.want)
		}
	}
	// A tie goes to the newer one.
	if got, how := nearest("v1.35.0", []string{"v1.34.1", "v1.36.1"}); got != "v1.36.1" || !strings.Contains(how, "1 minor newer") {
		t.Errorf("tie: %q%s", got, how)
	}
	if got, _ := nearest("v1.35.5", []string{"v1.35.3", "v1.35.7"}); got != "v1.35.7" {
		t.Errorf("patch tie: %q", got)
	}
	if got, _ := nearest("v1.35.4", []string{"v1.35.3", "v1.35.7"}); got != "v1.35.3" {
		t.Errorf("closest patch: %q", got)
	}
}

// A version marina does not pin but the file pins under kind.nodeImages
// is kept.
func TestConfigNodeImagesPin(t *testing.T) {
	in := "kind:\n  nodeVersion: v1.35.0\n  nodeImages:\n    v1.35.0: kindest/node:v1.35.0@sha256:" + strings.Repeat("a", 64) + "\n"
	got, err := Config([]byte(in), ConfigOptions{Paths: testMarina})
	if err != nil {
		t.Fatal(err)
	}
	if got.Config.Kind.NodeVersion != "v1.35.0" {
		t.Errorf("node version %s", got.Config.Kind.NodeVersion)
	}
}

func TestMirrorName(t *testing.T) {
	cases := []struct {
		name  string
		taken []string
		want  string
	}{
		{"quay.io", nil, "registry-quay-io"},
		{"Harbor.Corp:443", nil, "registry-harbor-corp-443"},
		{"quay.io.", nil, "registry-quay-io"},
		{"ü.io", nil, "registry---io"},
		{"quay.io", []string{"registry-quay-io"}, "registry-quay-io-2"},
		{strings.Repeat("a", 70) + ".io", nil, "registry-" + strings.Repeat("a", 54)},
	}
	for _, c := range cases {
		taken := map[string]bool{}
		for _, n := range c.taken {
			taken[n] = true
		}
		if got := mirrorName(c.name, taken); got != c.want || config.CheckMirrorName(got) != nil {
			t.Errorf("mirrorName(%q) = %q (%v), want %q", c.name, got, config.CheckMirrorName(got), c.want)
		}
	}
}

// passwords are the registry passwords of a klimax file, as a map from
// each to a stand-in of the same length that appears nowhere else.
func passwords(data []byte) map[string]string {
	var doc struct {
		Registries struct {
			Mirrors []struct {
				Password string `yaml:"password"`
			} `yaml:"mirrors"`
		} `yaml:"registries"`
	}
	out := map[string]string{}
	if yaml.Unmarshal(data, &doc) != nil {
		return out
	}
	for _, m := range doc.Registries.Mirrors {
		if m.Password != "" {
			out[m.Password] = ""
		}
	}
	return out
}

// FuzzConfig: whatever klimax's file holds, the conversion returns an
// error or a file marina's strict loader and validator accept, which a
// second pass leaves as it is; no note or error shows a registry password.
func FuzzConfig(f *testing.F) {
	for _, c := range configCases {
		b, err := os.ReadFile(filepath.Join("testdata", "config", c.in+".klimax.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, c.keepVM)
	}
	f.Add([]byte("network:\n  kindBridgeCIDR: 172.30.0.0/20\n"), false)
	f.Add([]byte("vm: &a\n  name: x\nnetwork: *a\n"), true)
	f.Add([]byte("registries:\n  mirrors:\n    - name: a.b:1\n      port: 5000\n      remoteURL: https://a.b\n      username: u\n      password: pa55word\n"), false)
	f.Add([]byte("kind:\n  coreDNSDomains: x.dev\n  customDnsResolvers: [{domain: x.dev}]\n"), false)
	f.Add([]byte("~\n# c\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, keepVM bool) {
		o := ConfigOptions{KeepVM: keepVM, Paths: testMarina}
		got, err := Config(data, o)
		text := strings.Join(got.Notes, "\n")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			text = err.Error()
		}
		for p := range passwords(data) {
			// A password that is also text of the file's own elsewhere,
			// or of the notes' wording, may show for that reason.
			if len(p) >= 6 && strings.Contains(text, p) && strings.Count(string(data), p) == 1 && !strings.Contains(strings.Join(configWords, " "), p) {
				t.Fatalf("password %q shows:\n%s", p, text)
			}
		}
		if err != nil {
			return
		}
		loads(t, got.Data)
		again, err := Config(got.Data, o)
		if err != nil {
			t.Fatalf("second pass: %v\n%s", err, got.Data)
		}
		// A second pass keeps every value and comment line. Blank lines
		// and a comment's indent are not compared: yaml.v3 may set a blank
		// line before a foot comment it reads back, or indent it as it
		// belongs to another node (a key with no value, then a comment),
		// and neither means anything in marina's config.
		if cosmetic(again.Data) != cosmetic(got.Data) {
			t.Fatalf("a second pass changes the file:\n%s", golden.Diff(string(got.Data), string(again.Data)))
		}
	})
}

// configWords is wording the notes and errors use on their own.
var configWords = []string{
	"marina cannot take klimax's config as it is, so nothing was written; choose other values in klimax's file (or write marina's config yourself) and run marina migrate again",
	"registry-dockerio registry-quayio registry-gcrio registry-us-docker-pkgdev registry-us-central1-docker-pkgdev",
	"https://registry-1.docker.io https://quay.io https://gcr.io https://us-docker.pkg.dev https://us-central1-docker.pkg.dev",
}

// cosmetic is b without its blank lines, its comments unindented.
func cosmetic(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		switch t := strings.TrimSpace(l); {
		case t == "":
		case strings.HasPrefix(t, "#"):
			out = append(out, t)
		default:
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
