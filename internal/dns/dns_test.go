package dns

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/golden"
)

func TestGolden(t *testing.T) {
	cfg := config.Default()
	specs, err := Specs(cfg, []byte("golden key, 32 bytes long ......"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "Corefile.golden", []byte(specs[1].File))
	m, err := ExternalDNS("dev", cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "external-dns.yaml.golden", m)
}

func TestAddrsFollowTheNetwork(t *testing.T) {
	etcd, server := Addrs(netip.MustParsePrefix("10.77.0.0/16"))
	if etcd.String() != "10.77.255.52" || server.String() != "10.77.255.53" {
		t.Errorf("Addrs = %s, %s", etcd, server)
	}
}

// A changed setting changes the label digest of the container it goes
// into, and the key changes every digest: a label cannot be made current
// without the key.
func TestSpecDigests(t *testing.T) {
	base, _ := Specs(config.Default(), []byte("key one, at least 16 bytes"))
	other, _ := Specs(config.Default(), []byte("key two, at least 16 bytes"))
	cfg := config.Default()
	cfg.DNS.Domain = "lab.internal"
	domain, _ := Specs(cfg, []byte("key one, at least 16 bytes"))
	cfg = config.Default()
	cfg.DNS.Images.Etcd = "etcd:x@sha256:" + strings.Repeat("a", 64)
	image, _ := Specs(cfg, []byte("key one, at least 16 bytes"))
	for i := range base {
		if base[i].Digest == other[i].Digest {
			t.Errorf("%s: the key does not change the digest", base[i].Name)
		}
	}
	if base[1].Digest == domain[1].Digest || base[0].Digest != domain[0].Digest {
		t.Errorf("dns.domain changes the server's digest only: etcd %v, server %v", base[0].Digest != domain[0].Digest, base[1].Digest != domain[1].Digest)
	}
	if base[0].Digest == image[0].Digest || base[1].Digest != image[1].Digest {
		t.Errorf("dns.images.etcd changes etcd's digest only")
	}
	if image[0].Image != cfg.DNS.Images.Etcd {
		t.Errorf("etcd image %s", image[0].Image)
	}
}

func TestKeyPrefixAndRangeEnd(t *testing.T) {
	p := KeyPrefix("dev.demo.internal")
	if p != "/skydns/internal/demo/dev/" || RangeEnd(p) != "/skydns/internal/demo/dev0" {
		t.Errorf("prefix %q, end %q", p, RangeEnd(p))
	}
	// Another cluster whose name starts the same is outside the range.
	if k := KeyPrefix("dev2.demo.internal"); k >= p && k < RangeEnd(p) {
		t.Errorf("%s falls in dev's range", k)
	}
}

// What ExternalDNS's coredns provider writes for two clusters, with its
// TXT registry records, and things that are not marina's records.
func TestParseRange(t *testing.T) {
	kv := func(k, v string) string {
		return fmt.Sprintf(`{"key":%q,"value":%q}`, base64.StdEncoding.EncodeToString([]byte(k)), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	js := `{"kvs":[` + strings.Join([]string{
		kv("/skydns/internal/demo/dev/shop/web/1a2b3c4d", `{"host":"172.30.1.1","targetstrip":1}`),
		kv("/skydns/internal/demo/dev/shop/a-web/5e6f7a8b", `{"text":"\"heritage=external-dns,external-dns/owner=dev,external-dns/resource=service/shop/web\"","targetstrip":1}`),
		kv("/skydns/internal/demo/east/shop/web/0a0b0c0d", `{"host":"172.30.2.1","targetstrip":1}`),
		kv("/skydns/internal/demo/east/x/cname/0a0b0c0e", `{"host":"web.example.com"}`),
		kv("/skydns/com/example/evil/00000000", `{"host":"1.2.3.4"}`),
		kv("/other/key", `{"host":"1.2.3.4"}`),
		kv("/skydns/internal/demo/dev/bad/0", `not json`),
	}, ",") + `]}`
	recs, malformed, err := ParseRange([]byte(js), "demo.internal")
	if err != nil {
		t.Fatal(err)
	}
	// The value that is no JSON is reported; the CNAME, the names outside
	// the domain and the other prefix are not marina's records, and no
	// harm: skipped quietly.
	if want := []string{`"/skydns/internal/demo/dev/bad/0"`}; fmt.Sprint(malformed) != fmt.Sprint(want) {
		t.Errorf("malformed = %v, want %v", malformed, want)
	}
	want := []Record{
		{Name: "web.shop.dev.demo.internal", Address: "172.30.1.1", Cluster: "dev", Owner: "dev"},
		{Name: "web.shop.east.demo.internal", Address: "172.30.2.1", Cluster: "east"},
	}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Errorf("records:\n%v\nwant\n%v", recs, want)
	}
	if _, _, err := ParseRange([]byte("<html>"), "demo.internal"); err == nil {
		t.Error("junk accepted")
	}
}

// The manifest: exactly the flags the issue pins, read-only RBAC, and no
// way for a hostile cluster name into it.
func TestExternalDNSManifest(t *testing.T) {
	m, err := ExternalDNS("dev", config.Default())
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(m), "---\n")
	type doc struct {
		Kind  string `json:"kind"`
		Rules []struct{ Resources, Verbs []string }
	}
	var role doc
	roles := 0
	for _, d := range docs {
		var o doc
		if err := yaml.Unmarshal([]byte(d), &o); err != nil {
			t.Fatal(err)
		}
		if o.Kind == "ClusterRole" {
			roles++
			role = o
		}
	}
	// The role must be there and grant what ExternalDNS reads: a missing
	// or empty role would pass the verb check below by granting nothing.
	var granted []string
	for _, r := range role.Rules {
		granted = append(granted, r.Resources...)
	}
	slices.Sort(granted)
	if roles != 1 || strings.Join(granted, ",") != "endpointslices,nodes,pods,services" {
		t.Errorf("%d ClusterRoles, granting %v", roles, granted)
	}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("the ClusterRole grants %q", v)
			}
		}
	}
	// Its own zone's prefix alone, names relative to it, no names from
	// annotations, and its etcd user from the Secret, not the manifest.
	for _, want := range []string{"--policy=sync", "--txt-owner-id=dev", "--coredns-prefix=/skydns/internal/demo/dev/\n",
		"--fqdn-template={{.Name}}.{{.Namespace}}\n", "--ignore-hostname-annotation\n", "value: http://172.30.255.52:2379",
		"name: ETCD_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              key: ETCD_PASSWORD\n              name: external-dns-etcd\n"} {
		if !strings.Contains(string(m), want) {
			t.Errorf("manifest lacks %s", want)
		}
	}
	if strings.Contains(string(m), "kind: Secret") {
		t.Error("the manifest carries a Secret: dry runs print it")
	}
	for _, bad := range []string{"dev\n--policy=upsert-only", "Dev", "a.b", "x y"} {
		if _, err := ExternalDNS(bad, config.Default()); err == nil {
			t.Errorf("cluster name %q accepted", bad)
		}
	}
}

// Passwords come from the key alone: the same key gives the same ones (up
// and create agree without storing any), each user its own, another key
// others; and a short key is refused.
func TestPasswords(t *testing.T) {
	k1, _ := NewPasswords([]byte("key one, at least 16 bytes"))
	again, _ := NewPasswords([]byte("key one, at least 16 bytes"))
	k2, _ := NewPasswords([]byte("key two, at least 16 bytes"))
	dev, _ := k1.Cluster("dev")
	east, _ := k1.Cluster("east")
	devAgain, _ := again.Cluster("dev")
	dev2, _ := k2.Cluster("dev")
	seen := map[string]string{}
	for who, c := range map[string]Creds{"root": k1.Root(), "reader": k1.Reader(), "dev": dev, "east": east} {
		if len(c.Password) < 40 || strings.ContainsAny(c.Password, "'\"\\\n$`") {
			t.Errorf("%s's password %q is short or holds quoting characters", who, c.Password)
		}
		if other, dup := seen[c.Password]; dup {
			t.Errorf("%s and %s share a password", who, other)
		}
		seen[c.Password] = who
	}
	if dev != devAgain || dev.Password == dev2.Password {
		t.Errorf("passwords do not follow the key: %v %v %v", dev, devAgain, dev2)
	}
	if dev.User != "externaldns-dev" || k1.Root().User != "root" || k1.Reader().User != "marina-dns-read" {
		t.Errorf("users: %s %s %s", dev.User, k1.Root().User, k1.Reader().User)
	}
	if _, err := NewPasswords([]byte("short")); err == nil {
		t.Error("a 5-byte key made passwords")
	}
	if _, err := k1.Cluster("../x"); err == nil {
		t.Error("a hostile cluster name got a user")
	}
	// The grant of a cluster is its own zone; a cluster whose name starts
	// the same is outside it.
	g := ClusterGrant("dev", "demo.internal")
	if g.Prefix != "/skydns/internal/demo/dev/" || !g.Write || g.Role != "externaldns-dev" {
		t.Errorf("grant %+v", g)
	}
	if r := ReaderGrant(); r.Write || r.Prefix != Prefix {
		t.Errorf("reader grant %+v", r)
	}
}

// The Corefile holds marina-dns's etcd user; the container runs as the
// user the Corefile is given to.
func TestServerReadsAsItsUser(t *testing.T) {
	pw, _ := NewPasswords([]byte("golden key, 32 bytes long ......"))
	specs, err := Specs(config.Default(), []byte("golden key, 32 bytes long ......"))
	if err != nil {
		t.Fatal(err)
	}
	s := specs[1]
	if !strings.Contains(s.File, "credentials marina-dns-read "+pw.Reader().Password+"\n") || s.User != ServerUser {
		t.Errorf("server spec: user %q, Corefile:\n%s", s.User, s.File)
	}
	if specs[0].File != "" || strings.Contains(strings.Join(specs[0].Cmd, " "), pw.Root().Password) {
		t.Error("etcd's spec carries a password")
	}
}
