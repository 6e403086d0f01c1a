package machine

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

func TestPlanDNS(t *testing.T) {
	specs, err := dns.Specs(config.Default(), []byte("a key of at least 16 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	sum := specs[1].FileSum()
	ct := func(id, name, role, digest, state string) docker.Container {
		return docker.Container{ID: id, Name: name, State: state, Labels: map[string]string{dns.LabelRole: role, dns.LabelConfig: digest}}
	}
	etcd := ct("e", dns.EtcdName, dns.RoleEtcd, specs[0].Digest, "running")
	server := ct("s", dns.ServerName, dns.RoleServer, specs[1].Digest, "running")
	names := func(ss []dns.Spec) (out []string) {
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	ids := func(cs []docker.Container) (out []string) {
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, c := range []struct {
		what         string
		have         []docker.Container
		sum          string
		create, gone []string
		writes       bool
	}{
		{"current", []docker.Container{etcd, server}, sum, nil, nil, false},
		{"nothing yet", nil, "", []string{dns.EtcdName, dns.ServerName}, nil, true},
		{"Corefile changed in the VM", []docker.Container{etcd, server}, "other", []string{dns.ServerName}, []string{"s"}, true},
		{"stale digest", []docker.Container{etcd, ct("s", dns.ServerName, dns.RoleServer, "old", "running")}, sum, []string{dns.ServerName}, []string{"s"}, false},
		{"exited", []docker.Container{ct("e", dns.EtcdName, dns.RoleEtcd, specs[0].Digest, "exited"), server}, sum, []string{dns.EtcdName}, []string{"e"}, false},
		{"renamed", []docker.Container{ct("e", "etcd-old", dns.RoleEtcd, specs[0].Digest, "running"), server}, sum, []string{dns.EtcdName}, []string{"e"}, false},
		{"unknown role", []docker.Container{etcd, server, ct("x", "marina-dns-x", "cache", "", "running")}, sum, nil, []string{"x"}, false},
		{"two for one role", []docker.Container{etcd, server, ct("e2", dns.EtcdName+"-2", dns.RoleEtcd, specs[0].Digest, "running")}, sum, nil, []string{"e2"}, false},
	} {
		p := planDNS(specs, c.have, c.sum, "e")
		if !slices.Equal(names(p.create), c.create) || !slices.Equal(ids(p.remove), c.gone) || p.writes != c.writes {
			t.Errorf("%s: create %v remove %v writes %v; want %v %v %v", c.what, names(p.create), ids(p.remove), p.writes, c.create, c.gone, c.writes)
		}
		// etcd's users are set up again whenever its container is new.
		if want := slices.Contains(c.create, dns.EtcdName); p.auth != want {
			t.Errorf("%s: auth %v, want %v", c.what, p.auth, want)
		}
	}
	// The container the users were set up in is kept: none to set up;
	// another one, or none recorded: set up.
	have := []docker.Container{etcd, server}
	for authed, want := range map[string]bool{"e": false, "other": true, "": true} {
		if p := planDNS(specs, have, sum, authed); p.auth != want {
			t.Errorf("set up in %q: auth %v, want %v", authed, p.auth, want)
		}
	}
}

// Emptying a cluster's zone under an earlier domain must never empty the
// current zone or another cluster's names.
func TestOldZone(t *testing.T) {
	for _, c := range []struct{ name, was, now, want string }{
		{"dev", "demo.internal", "lab.internal", "dev.demo.internal"},
		{"dev", "", "lab.internal", ""},
		{"dev", "lab.internal", "lab.internal", ""},
		{"demo", "internal", "demo.internal", ""},     // the whole current zone
		{"x", "internal", "a.x.internal", ""},         // above the current zone
		{"c", "x.demo.internal", "demo.internal", ""}, // inside it: cluster x's namespace c
		{"dev", "old.example", "demo.internal", "dev.old.example"},
	} {
		if got := oldZone(c.name, c.was, c.now); got != c.want {
			t.Errorf("oldZone(%q, %q, %q) = %q, want %q", c.name, c.was, c.now, got, c.want)
		}
	}
}

// A resolver file for the zone that marina did not write is left alone,
// and said so; everything else goes on.
func TestUpLeavesAForeignResolverFileAlone(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	if err := os.MkdirAll(f.ResolverDir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := "nameserver 10.9.9.9\n"
	if err := os.WriteFile(f.ResolverFile("demo.internal"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if b, _ := os.ReadFile(f.ResolverFile("demo.internal")); string(b) != mine {
		t.Errorf("the user's resolver file was changed:\n%s", b)
	}
	if !strings.Contains(f.Stderr.String(), "marina did not write it") {
		t.Errorf("no warning:\n%s", f.Stderr.String())
	}
	for _, c := range f.Called("host.privileged") {
		if strings.Contains(c, f.ResolverDir) {
			t.Errorf("ran %s", c)
		}
	}
	// destroy does not remove it either.
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.ResolverFile("demo.internal")); err != nil {
		t.Errorf("destroy removed the user's resolver file: %v", err)
	}
}

// A new dns.domain: the resolver file of the old one goes, the new one is
// written, and the server's Corefile and container are recreated.
func TestUpFollowsADNSDomainChange(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	old := f.ResolverFile("demo.internal")
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("up wrote no resolver file: %v", err)
	}
	f.Config(func(c *config.Config) { c.DNS.Domain = "lab.internal" })
	f.Calls = nil
	r, err := Up(context.Background(), f.Env, UpOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"recreate the local DNS's marina-dns", "/bin/rm -f " + old, "lab.internal"} {
		if !strings.Contains(planned(r), want) {
			t.Errorf("the dry run lacks %q:\n%s", want, planned(r))
		}
	}
	if got := f.Called("host.privileged"); len(got) != 0 {
		t.Errorf("the dry run changed the host: %v", got)
	}
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old domain's resolver file is still there: %v", err)
	}
	if b, _ := os.ReadFile(f.ResolverFile("lab.internal")); !strings.HasSuffix(string(b), "nameserver 172.30.255.53\n") {
		t.Errorf("lab.internal's resolver file:\n%s", b)
	}
	if got := f.Called("docker.run marina-dns"); len(got) != 1 || got[0] != "docker.run marina-dns" {
		t.Errorf("recreated %v", f.Called("docker.run"))
	}
	if len(f.Called("docker.run marina-dns-etcd")) != 0 {
		t.Error("etcd was recreated for a new domain: its records would be lost for nothing")
	}
	// The next up finds the new domain in place.
	f.Calls = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	// (The fixture does not keep mirrors or routes: the DNS's parts only.)
	var again []string
	for _, c := range f.Calls {
		if strings.HasPrefix(c, "docker.run marina-dns") || strings.Contains(c, "Corefile") || strings.Contains(c, f.ResolverDir) {
			again = append(again, c)
		}
	}
	if len(again) != 0 {
		t.Errorf("the up after the change changed the local DNS again: %v", again)
	}
	// destroy removes what marina wrote.
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.ResolverFile("lab.internal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("destroy left the resolver file: %v", err)
	}
	if _, err := os.Stat(f.Env.Paths.ResolverCopy("lab.internal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("destroy left marina's copy of it: %v", err)
	}
}

// A cluster made before local DNS gets ExternalDNS and the CoreDNS block
// from up, once; one that has it gets nothing.
func TestUpPutsOlderClustersOnTheDNSOnce(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Cluster("old", 1, "https://192.168.64.3:7001")
	f.Cluster("cur", 2, "https://192.168.64.3:7002")
	f.Addons["cur"] = guest.Addons{DNS: "demo.internal", Auth: true, Registry: "localhost:5001"}
	f.DNSWarm()
	f.RegistrySums = f.MirrorSums()
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	// It knows the push registry neither: that comes first.
	want := "kube old ready,kube old apply-registry-hosting,kube old ready,kube old apply-external-dns,kube old wait deployment external-dns/external-dns available,kube old coredns,kube old wait deployment kube-system/coredns available"
	if got := strings.Join(f.Called("kube "), ","); got != want {
		t.Errorf("kube calls %s, want %s", got, want)
	}
	// The local DNS's record, written last, keeps the push registry's.
	if body := f.Bodies["record the clusters' addons"]; !strings.Contains(body, "/etc/marina/clusters/old ]") || strings.Contains(body, "clusters/cur") || !strings.Contains(body, "registry=localhost:5001") {
		t.Errorf("records written:\n%s", body)
	}
	f.Calls = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("kube "); len(got) != 0 {
		t.Errorf("the second up did it again: %v", got)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("the second up made %d guest round trips: %v", len(got), got)
	}
	// (Docker is asked for the clusters all the same in direct mode: the
	// lima0 check of their kubeconfigs needs them; once, not twice.)
	if got := f.Called("docker.kind-nodes"); len(got) > 1 {
		t.Errorf("the second up asked Docker for the clusters %d times", len(got))
	}
}

// The local DNS's etcd users: a first up sets them up once the DNS
// containers run, with a user for every cluster the VM has and none for a
// cluster kind made without marina; the next up finds the container it set
// up and does nothing; a recreated etcd is set up again.
func TestUpSetsUpTheEtcdUsers(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Cluster("dev", 1, "https://192.168.64.3:7001")
	f.Addons["dev"] = guest.Addons{DNS: "demo.internal", Auth: true, Registry: "localhost:5001"}
	f.RegistrySums = f.MirrorSums()
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	calls := strings.Join(f.Calls, "\n")
	run, users := strings.Index(calls, "docker.run "+dns.EtcdName), strings.Index(calls, "guest.run set up the local DNS's etcd users")
	if run < 0 || users < run {
		t.Fatalf("the users were not set up after etcd ran:\n%s", calls)
	}
	body := f.Bodies["set up the local DNS's etcd users"]
	for _, want := range []string{`{"name":"externaldns-dev"}`, `"name":"marina-dns-read"`, "auth/enable"} {
		if !strings.Contains(body, want) {
			t.Errorf("the set-up lacks %s", want)
		}
	}
	f.Calls = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("the warm up made %d guest round trips: %v", len(got), got)
	}
	// etcd recreated behind marina's back: its users are set up again.
	f.EtcdAuth = "another-container"
	f.Calls = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("guest.run set up the local DNS's etcd users"); len(got) != 1 {
		t.Errorf("an etcd marina did not set up: %v", f.Calls)
	}
}

// A cluster whose ExternalDNS predates the etcd users gets its user first,
// then its ExternalDNS again (with the user's Secret: the fake Kube checks
// the user and its password), then the record that says so.
func TestUpGivesOlderClustersTheirEtcdUser(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Cluster("old", 1, "https://192.168.64.3:7001")
	f.Addons["old"] = guest.Addons{DNS: "demo.internal", Registry: "localhost:5001"}
	f.DNSWarm()
	f.RegistrySums = f.MirrorSums()
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	calls := strings.Join(f.Calls, "\n")
	user, apply, record := strings.Index(calls, "guest.run add the clusters' etcd users"), strings.Index(calls, "kube old apply-external-dns"), strings.Index(calls, "guest.run record the clusters' addons")
	if user < 0 || apply < user || record < apply {
		t.Fatalf("user %d, apply %d, record %d:\n%s", user, apply, record, calls)
	}
	if !strings.Contains(f.Bodies["add the clusters' etcd users"], `{"name":"externaldns-old"}`) {
		t.Errorf("no user for old:\n%s", f.Bodies["add the clusters' etcd users"])
	}
	if !f.Addons["old"].Auth {
		t.Errorf("old's record: %+v", f.Addons["old"])
	}
}

// A cluster made before the push registry gets its hosts.toml and its
// local-registry-hosting ConfigMap from up, once; after a port change,
// again, with the old port's file removed.
func TestUpGivesOlderClustersThePushRegistryOnce(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Cluster("old", 1, "https://192.168.64.3:7001")
	f.Addons["old"] = guest.Addons{DNS: "demo.internal", Auth: true}
	f.DNSWarm()
	f.RegistrySums = f.MirrorSums()
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if got := strings.Join(f.Called("kube "), ","); got != "kube old ready,kube old apply-registry-hosting" {
		t.Errorf("kube calls %s", got)
	}
	body := f.Bodies["write the push registry's hosts.toml"]
	for _, want := range []string{"/etc/marina/clusters/old/certs.d/localhost:5001/hosts.toml", `"http://marina-registry:5000"`, "dns=demo.internal dnsauth=1 registry=localhost:5001"} {
		if !strings.Contains(body, want) {
			t.Errorf("the script says no %q:\n%s", want, body)
		}
	}
	if f.Addons["old"].Registry != "localhost:5001" || f.Addons["old"].DNS != "demo.internal" {
		t.Errorf("old's record: %+v", f.Addons["old"])
	}
	f.Calls = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("kube "); len(got) > 0 {
		t.Errorf("the second up did it again: %v", got)
	}
	f.Config(func(c *config.Config) { c.Registries.Local.Port = 5002 })
	f.Calls = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Called("kube "), ","); got != "kube old ready,kube old apply-registry-hosting" || f.Addons["old"].Registry != "localhost:5002" {
		t.Errorf("after the port changed: kube calls %s, record %+v", got, f.Addons["old"])
	}
	if body := f.Bodies["write the push registry's hosts.toml"]; !strings.Contains(body, "certs.d/localhost:5002/hosts.toml") || !strings.Contains(body, "in localhost:5002) continue") {
		t.Errorf("the port's change keeps localhost:5002 and removes the rest:\n%s", body)
	}
}
