package app

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/vm"
)

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
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
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
	if err := machine.Destroy(context.Background(), f.Env, machine.DestroyOptions{Yes: true}); err != nil {
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
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	old := f.ResolverFile("demo.internal")
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("up wrote no resolver file: %v", err)
	}
	f.Config(func(c *config.Config) { c.DNS.Domain = "lab.internal" })
	f.Calls = nil
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"recreate the local DNS's marina-dns", "/bin/rm -f " + old, "lab.internal"} {
		if !strings.Contains(f.Stdout.String(), want) {
			t.Errorf("the dry run lacks %q:\n%s", want, f.Stdout.String())
		}
	}
	if got := f.Called("host.privileged"); len(got) != 0 {
		t.Errorf("the dry run changed the host: %v", got)
	}
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
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
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
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
	if err := machine.Destroy(context.Background(), f.Env, machine.DestroyOptions{Yes: true}); err != nil {
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
	f.Addons["cur"] = guestAddons("demo.internal")
	f.DNSWarm()
	f.RegistrySums = f.MirrorSums()
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	want := "kube old ready,kube old apply-external-dns,kube old wait deployment external-dns/external-dns available,kube old coredns,kube old wait deployment kube-system/coredns available"
	if got := strings.Join(f.Called("kube "), ","); got != want {
		t.Errorf("kube calls %s, want %s", got, want)
	}
	if body := f.Bodies["record the clusters' addons"]; !strings.Contains(body, "/etc/marina/clusters/old ]") || strings.Contains(body, "clusters/cur") {
		t.Errorf("records written:\n%s", body)
	}
	f.Calls = nil
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
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

// cluster delete removes the cluster's names from etcd in the same round
// trip, and says so when it could not.
func TestDeleteForgetsTheNames(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.DNSWarm()
	f.Cluster("dev", 1, "https://127.0.0.1:7001")
	f.Scripts["kind delete cluster"] = vm.Result{Stdout: []byte("@@ dns-forget dev.demo.internal failed\n")}
	if err := kindcluster.Delete(context.Background(), f.Env, kindcluster.DeleteOptions{Names: []string{"dev"}}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	body := f.Bodies["kind delete cluster"]
	if !strings.Contains(body, "etcd_call kv/deleterange") || strings.Index(body, "kind_delete dev") > strings.Index(body, "deleterange") {
		t.Errorf("the delete script does not remove the names after the cluster:\n%s", body)
	}
	// Its etcd user and role go with it, after its names.
	if i := strings.Index(body, `{"name":"externaldns-dev"}`); i < strings.Index(body, "deleterange") || !strings.Contains(body, "auth/user/delete") || !strings.Contains(body, "auth/role/delete") {
		t.Errorf("the delete script does not remove dev's etcd user after its names:\n%s", body)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("%d guest round trips: %v", len(got), got)
	}
	if !strings.Contains(f.Stderr.String(), "dev.demo.internal could not be removed from the local DNS") {
		t.Errorf("no warning:\n%s", f.Stderr.String())
	}
}

func guestAddons(domain string) guest.Addons { return guest.Addons{DNS: domain, Auth: true} }

// A create before up ran the local DNS fails before kind runs: its
// ExternalDNS would never become available, and the cluster be rolled back.
func TestCreateNeedsTheLocalDNS(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	err := create(f, kindcluster.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "run `marina up` first") {
		t.Fatalf("create without the local DNS: %v", err)
	}
	if got := f.Called("guest.run"); len(got) != 0 {
		t.Errorf("it ran %v", got)
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
	f.Addons["dev"] = guestAddons("demo.internal")
	f.RegistrySums = f.MirrorSums()
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
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
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("the warm up made %d guest round trips: %v", len(got), got)
	}
	// etcd recreated behind marina's back: its users are set up again.
	f.EtcdAuth = "another-container"
	f.Calls = nil
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
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
	f.Addons["old"] = guest.Addons{DNS: "demo.internal"}
	f.DNSWarm()
	f.RegistrySums = f.MirrorSums()
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
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

// A create gives the cluster its etcd user in kind's round trip, before
// kind runs (its ExternalDNS could not start without), and applies
// ExternalDNS with it.
func TestCreateGivesTheClusterItsEtcdUser(t *testing.T) {
	f := createFixture(t, nil)
	if err := create(f, kindcluster.CreateOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	var body string
	for name, b := range f.Bodies {
		if strings.HasPrefix(name, "kind create cluster") {
			body = b
		}
	}
	user, kind := strings.Index(body, `{"name":"externaldns-c1"}`), strings.Index(body, "kind create cluster --name c1")
	if user < 0 || kind < user {
		t.Errorf("c1's etcd user at %d, kind at %d in:\n%s", user, kind, body)
	}
	if got := f.Called("kube c1 apply-external-dns"); len(got) != 1 {
		t.Errorf("ExternalDNS applied %d times", len(got))
	}
}

// dns flush runs Apple's two commands as root, in order, each said before
// sudo runs (host.Privileged); a failure stops it; --dry-run runs nothing;
// off a Mac it says why and runs nothing.
func TestFlushDNS(t *testing.T) {
	f := sessiontest.New(t)
	if err := status.FlushDNS(context.Background(), f.Env, status.FlushDNSOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "host.privileged /usr/bin/dscacheutil -flushcache,host.privileged /usr/bin/killall -HUP mDNSResponder"
	if got := strings.Join(f.Called("host."), ","); got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
	if len(f.Called("guest.")) != 0 || len(f.Called("vm.")) != 0 {
		t.Errorf("flush reached for the VM:\n%s", f.Log())
	}

	f = sessiontest.New(t)
	f.Fail["host.privileged /usr/bin/dscacheutil"] = errBoom
	if err := status.FlushDNS(context.Background(), f.Env, status.FlushDNSOptions{}); !errors.Is(err, errBoom) {
		t.Errorf("error = %v", err)
	}
	if got := f.Called("host.privileged /usr/bin/killall"); len(got) != 0 {
		t.Errorf("went on after a failure: %v", got)
	}

	f = sessiontest.New(t)
	if err := status.FlushDNS(context.Background(), f.Env, status.FlushDNSOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("host."); len(got) != 0 || !strings.Contains(f.Stdout.String(), "run `sudo /usr/bin/killall -HUP mDNSResponder`") {
		t.Errorf("dry run ran %v, printed:\n%s", got, f.Stdout.String())
	}

	f = sessiontest.New(t)
	f.HostStyle = host.Linux
	if err := status.FlushDNS(context.Background(), f.Env, status.FlushDNSOptions{}); err == nil || !strings.Contains(err.Error(), "this host is not a Mac") {
		t.Errorf("on Linux: %v", err)
	}
	if got := f.Called("host."); len(got) != 0 {
		t.Errorf("on Linux ran %v", got)
	}
}
