package app

// Commands run through the fixture: their sequencing, rollback and
// confirmations, without a VM.

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/vm"
	"sigs.k8s.io/yaml"
)

var errBoom = errors.New("boom")

// createFixture is a fixture where kind creates cluster c1.
func createFixture(t *testing.T, change func(*config.Config)) *sessiontest.World {
	f := sessiontest.New(t)
	f.Config(change)
	f.DNSWarm()
	f.Scripts["kind create cluster c1"] = vm.Result{Stdout: []byte(f.Export("c1"))}
	// kind's nodes appear once it ran.
	f.Before = func(call string) {
		if call == "guest.run kind create cluster c1" {
			f.Mu.Lock()
			f.NodeContainers = append(f.NodeContainers, docker.Node{Container: docker.Container{ID: "c1-cp", Name: "c1-control-plane", State: "running"}, Cluster: "c1", Role: "control-plane", APIPorts: []int{7001}})
			f.Mu.Unlock()
		}
	}
	return f
}

func create(f *sessiontest.World, opts kindcluster.CreateOptions) error {
	if opts.Name == "" {
		opts.Name = "c1"
	}
	return kindcluster.Create(context.Background(), f.Env, opts)
}

func TestCreateSucceeds(t *testing.T) {
	f := createFixture(t, nil)
	if err := create(f, kindcluster.CreateOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	want := []string{
		"kube c1 apply-metallb",
		"kube c1 wait 2 CRDs Established",
		"kube c1 wait deployment metallb-system/controller available",
		"kube c1 wait daemonset metallb-system/speaker ready",
		"kube c1 pool marina",
		"kube c1 apply-external-dns",
		"kube c1 wait deployment external-dns/external-dns available",
		"kube c1 coredns",
		"kube c1 wait deployment kube-system/coredns available",
	}
	if got := f.Called("kube "); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("addon calls:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f.Addons["c1"].DNS != "demo.internal" {
		t.Errorf("kind create wrote the addons record %+v", f.Addons["c1"])
	}
	path, _ := f.Env.Paths.Kubeconfig("c1")
	if _, err := os.Stat(path); err != nil || !f.HasContext("c1") {
		t.Errorf("kubeconfig not written and merged: %v", err)
	}
	if ents, _ := os.ReadDir(f.Env.Paths.Slots()); len(ents) != 0 {
		t.Errorf("the slot reservation is still held: %v", ents)
	}
	// It says what remains true of the Mac's DNS cache, and the way out.
	if out := f.Stdout.String(); !strings.Contains(out, "SERVICE.NAMESPACE.c1.demo.internal within seconds; a name the Mac looked up before it existed may stay missing on the Mac for about a minute (`marina dns flush`") {
		t.Errorf("output:\n%s", out)
	}
}

// A signal ends the command's context mid-create: the rollback still runs
// in the guest, on a context of its own (the fake guest, as limactl, runs
// nothing on an ended one), whether kind itself or a later step failed.
func TestCreateRollsBackAfterASignal(t *testing.T) {
	for _, c := range []struct{ at, rollback string }{
		{"guest.run kind create cluster c1", "guest.run remove cluster c1"},
		{"kube c1 apply-metallb", "guest.run kind delete cluster c1"},
	} {
		t.Run(c.at, func(t *testing.T) {
			f := createFixture(t, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			kind := f.Before
			f.Before = func(call string) {
				kind(call)
				if call == c.at {
					cancel()
					f.Mu.Lock()
					f.Fail[c.at] = context.Canceled
					f.Mu.Unlock()
				}
			}
			err := kindcluster.Create(ctx, f.Env, kindcluster.CreateOptions{Name: "c1"})
			if err == nil || !errors.Is(err, context.Canceled) {
				t.Fatalf("error = %v", err)
			}
			if got := f.Called(c.rollback); len(got) != 1 || len(f.Called("guest.cancelled")) != 0 {
				t.Errorf("the rollback did not run in the guest: %v\n%s", got, f.Log())
			}
			if strings.Contains(err.Error(), "failed too") || f.Env.Leftover() != "" {
				t.Errorf("error = %v, leftover %q", err, f.Env.Leftover())
			}
		})
	}
}

// A failure at any step after kind removes the cluster, its kubeconfig file
// and nothing of the user's, and names the step.
func TestCreateRollsBackAtEachStep(t *testing.T) {
	withDNS := func(c *config.Config) {
		c.Kind.CustomDNSResolvers = []config.DNSResolver{{Domain: "corp.example.com", Resolvers: []string{"10.0.0.53"}}}
	}
	cases := []struct {
		fail, step string
	}{
		{"kube c1 apply-metallb", "installing MetalLB"},
		{"kube c1 wait 2 CRDs", "installing MetalLB"},
		{"kube c1 wait deployment", "installing MetalLB"},
		{"kube c1 wait daemonset", "installing MetalLB"},
		{"kube c1 pool", "adding the MetalLB pool"},
		{"kube c1 coredns", "configuring CoreDNS"},
		{"merge", "writing its kubeconfig"},
	}
	for _, c := range cases {
		t.Run(c.fail, func(t *testing.T) {
			f := createFixture(t, withDNS)
			// The user's kubeconfig, with an entry of marina's from an
			// earlier c1 that this run did not write.
			old := f.MustKubeconfig("c1", "https://127.0.0.1:7009")
			if err := kubeconfig.Merge(f.KubeconfigFile(), "c1", old, f.Env.KubeOwner(true)); err != nil {
				t.Fatal(err)
			}
			if c.fail == "merge" {
				// The merge fails: ~/.kube/config turns unreadable while kind runs.
				kind := f.Before
				f.Before = func(call string) {
					kind(call)
					if call == "guest.run kind create cluster c1" {
						if err := os.WriteFile(f.KubeconfigFile(), []byte("{not: [yaml"), 0o600); err != nil {
							t.Fatal(err)
						}
					}
				}
			} else {
				f.Fail[c.fail] = errBoom
			}
			before, _ := os.ReadFile(f.KubeconfigFile())
			if c.fail == "merge" {
				before = []byte("{not: [yaml")
			}
			err := create(f, kindcluster.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), "cluster c1: "+c.step+" failed: ") || !strings.Contains(err.Error(), "the cluster was removed") {
				t.Fatalf("error = %v, want the step %q named and the cluster removed", err, c.step)
			}
			if c.fail != "merge" && !strings.Contains(err.Error(), "boom") {
				t.Errorf("error = %v, want the cause", err)
			}
			if got := f.Called("guest.run kind delete cluster c1"); len(got) != 1 {
				t.Errorf("the cluster was not removed once: %v\n%s", got, f.Log())
			}
			path, _ := f.Env.Paths.Kubeconfig("c1")
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the cluster's kubeconfig file is left: %v", err)
			}
			// Only what this run merged is removed: nothing, here.
			if after, _ := os.ReadFile(f.KubeconfigFile()); string(after) != string(before) {
				t.Errorf("~/.kube/config changed:\n%s\nwas\n%s", after, before)
			}
			if ents, _ := os.ReadDir(f.Env.Paths.Slots()); len(ents) != 0 {
				t.Errorf("the slot reservation is still held: %v", ents)
			}
			if f.Env.Leftover() != "" {
				t.Errorf("leftover after a finished rollback: %q", f.Env.Leftover())
			}
		})
	}
}

func TestCreateRetainKeepsAFailedCluster(t *testing.T) {
	f := createFixture(t, nil)
	f.Fail["kube c1 pool"] = errBoom
	err := create(f, kindcluster.CreateOptions{Retain: true})
	if err == nil || !strings.Contains(err.Error(), "cluster c1: adding the MetalLB pool failed: boom") {
		t.Fatalf("error = %v", err)
	}
	if got := f.Called("guest.run kind delete"); len(got) != 0 {
		t.Errorf("--retain removed the cluster: %v", got)
	}
	if !strings.Contains(f.Stderr.String(), "--retain: cluster c1 is kept") {
		t.Errorf("no word about the kept cluster:\n%s", f.Stderr.String())
	}
}

// A failed kind removes what kind left, and no addon step runs.
func TestCreateKindFails(t *testing.T) {
	f := createFixture(t, nil)
	f.Fail["guest.run kind create cluster c1"] = errBoom
	err := create(f, kindcluster.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "cluster c1: kind could not create it: boom") {
		t.Fatalf("error = %v", err)
	}
	if len(f.Called("guest.run remove cluster c1")) != 1 || len(f.Called("kube ")) != 0 {
		t.Errorf("calls:\n%s", f.Log())
	}
}

func deleteFixture(t *testing.T) *sessiontest.World {
	f := sessiontest.New(t)
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

// deleted is the clusters the delete script named.
func deleted(f *sessiontest.World) []string {
	var out []string
	body := f.Bodies["kind delete cluster"]
	for _, n := range []string{"a", "b"} {
		if strings.Contains(body, "\nkind_delete "+n+"\n") {
			out = append(out, n)
		}
	}
	return out
}

func TestDeleteConfirmation(t *testing.T) {
	region := cluster.RegionLabel + "=r"
	cases := []struct {
		name  string
		opts  kindcluster.DeleteOptions
		tty   bool
		stdin string
		want  []string // deleted
		err   string
	}{
		{name: "no name, no terminal", err: "name the clusters to delete, or select them with -l"},
		{name: "no name, a pick", tty: true, stdin: "2\n", want: []string{"b"}},
		{name: "no name, all", tty: true, stdin: "all\n", want: []string{"a", "b"}},
		{name: "no name, nothing picked", tty: true, stdin: "\n", err: "nothing was deleted"},
		{name: "no name, a wrong number", tty: true, stdin: "3\n", err: `"3" is not one of the numbers 1 to 2; nothing was deleted`},
		{name: "-l without a terminal", opts: kindcluster.DeleteOptions{Selector: region}, err: "needs a confirmation: run it in a terminal, or pass -y"},
		{name: "-l answered no", opts: kindcluster.DeleteOptions{Selector: region}, tty: true, stdin: "n\n", err: "nothing was deleted"},
		{name: "-l answered yes", opts: kindcluster.DeleteOptions{Selector: region}, tty: true, stdin: "y\n", want: []string{"a", "b"}},
		{name: "-l -y", opts: kindcluster.DeleteOptions{Selector: region, Yes: true}, want: []string{"a", "b"}},
		{name: "-l matching nothing", opts: kindcluster.DeleteOptions{Selector: cluster.RegionLabel + "=elsewhere"}},
		{name: "named", opts: kindcluster.DeleteOptions{Names: []string{"a"}}, want: []string{"a"}},
		{name: "named, one unknown", opts: kindcluster.DeleteOptions{Names: []string{"a", "zz"}}, err: "there is no cluster zz"},
		{name: "named, one invalid", opts: kindcluster.DeleteOptions{Names: []string{"a", "B_"}}, err: "B_"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := deleteFixture(t)
			f.Env.TTY = c.tty
			f.Env.Stdin = strings.NewReader(c.stdin)
			err := kindcluster.Delete(context.Background(), f.Env, c.opts)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want %q", err, c.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := deleted(f); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("deleted %v, want %v\n%s", got, c.want, f.Log())
			}
			for _, n := range []string{"a", "b"} {
				gone := strings.Contains(","+strings.Join(c.want, ",")+",", ","+n+",")
				path, _ := f.Env.Paths.Kubeconfig(n)
				_, statErr := os.Stat(path)
				if gone != errors.Is(statErr, os.ErrNotExist) || gone == f.HasContext(n) {
					t.Errorf("cluster %s (deleted %v): kubeconfig file %v, entry %v", n, gone, statErr, f.HasContext(n))
				}
			}
		})
	}
}

// clean-cache stops the mirrors, empties their caches in one round trip and
// starts them again, in that order, even when emptying fails.
func TestCleanCacheOrder(t *testing.T) {
	for _, failEmpty := range []bool{false, true} {
		name := "emptied"
		if failEmpty {
			name = "emptying fails"
		}
		t.Run(name, func(t *testing.T) {
			f := sessiontest.New(t)
			f.Config(func(c *config.Config) { c.Registries.CacheStorage = config.CacheGuest })
			for _, m := range config.Default().Registries.Mirrors {
				f.Mirrors = append(f.Mirrors, docker.Container{ID: m.Name + "-id", Name: m.Name, State: "running", Labels: map[string]string{registry.LabelMirror: m.Name}})
			}
			if failEmpty {
				f.Fail["guest.run empty the mirror caches"] = errBoom
			}
			err := machine.CleanCache(context.Background(), f.Env, nil, machine.CleanCacheOptions{Yes: true})
			if failEmpty != (err != nil) || (failEmpty && !strings.Contains(err.Error(), "boom")) {
				t.Fatalf("error = %v", err)
			}
			var order []string
			for _, c := range strings.Split(f.Log(), "\n") {
				switch {
				case strings.HasPrefix(c, "docker.remove"):
					order = append(order, "stop")
				case strings.HasPrefix(c, "guest.run empty"):
					order = append(order, "empty")
				case strings.HasPrefix(c, "docker.run"):
					order = append(order, "start")
				}
			}
			n := len(config.Default().Registries.Mirrors)
			want := strings.Repeat("stop ", n) + "empty " + strings.Repeat("start ", n)
			if got := strings.Join(order, " ") + " "; got != want {
				t.Errorf("order %q, want %q\n%s", got, want, f.Log())
			}
			for _, m := range config.Default().Registries.Mirrors {
				if !strings.Contains(f.Bodies["empty the mirror caches"], "rm -rf -- /var/lib/marina/registry-cache/"+m.Name+"\n") {
					t.Errorf("the cache of %s was not emptied:\n%s", m.Name, f.Bodies["empty the mirror caches"])
				}
			}
			// The mirrors run again: nothing is left to say.
			if f.Env.Leftover() != "" {
				t.Errorf("leftover %q after %s", f.Env.Leftover(), name)
			}
		})
	}
}

// up after lima0 moved re-exports exactly the kubeconfigs that name the
// old address, merges them again where they were merged, and moves the
// route marina made.
func TestUpFollowsALima0Move(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = true })
	f.Cluster("old", 1, "https://192.168.64.3:7001")
	f.Cluster("cur", 2, "https://192.168.64.7:7002")
	if err := kubeconfig.Merge(f.KubeconfigFile(), "old", f.MustKubeconfig("old", "https://192.168.64.3:7001"), f.Env.KubeOwner(true)); err != nil {
		t.Fatal(err)
	}
	cidr := f.Network.Subnet
	made := f.MustMade()
	if err := made.Add(cidr, f.Lima0.Addr()); err != nil {
		t.Fatal(err)
	}
	f.Route = &hostRoute{Dest: cidr, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	curPath, _ := f.Env.Paths.Kubeconfig("cur")
	curBefore, _ := os.ReadFile(curPath)

	f.Lima0 = mustPrefix("192.168.64.7/24")
	f.Scripts["export kubeconfigs"] = vm.Result{Stdout: []byte(f.Export("old"))}
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	body := f.Bodies["export kubeconfigs"]
	if !strings.Contains(body, "--name old\n") || strings.Contains(body, "cur") {
		t.Errorf("exported:\n%s", body)
	}
	oldPath, _ := f.Env.Paths.Kubeconfig("old")
	kc, _ := os.ReadFile(oldPath)
	if s, _ := kubeconfig.Server(kc); s != "https://192.168.64.7:7001" {
		t.Errorf("old's kubeconfig names %s", s)
	}
	if after, _ := os.ReadFile(curPath); string(after) != string(curBefore) {
		t.Errorf("cur's current kubeconfig was rewritten")
	}
	target, _ := os.ReadFile(f.KubeconfigFile())
	if !strings.Contains(string(target), "https://192.168.64.7:7001") || strings.Contains(string(target), "192.168.64.3") {
		t.Errorf("~/.kube/config:\n%s", target)
	}
	if got := f.Called("host.privileged ip route"); len(got) != 1 || !strings.Contains(got[0], "192.168.64.7") {
		t.Errorf("route change: %v", got)
	}
	// A second up finds nothing stale and changes nothing.
	f.Calls = nil
	f.Route.Gateway = f.Lima0.Addr()
	f.RegistrySums = f.MirrorSums()
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := append(f.Called("guest.run"), f.Called("host.privileged")...); len(got) != 0 {
		t.Errorf("a warm up changed: %v", got)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("a warm up made %d guest round trips, want 1: %v", len(got), got)
	}
}

// The recovery after an interrupted up: the config files in the VM are
// current already, but a mirror container still carries the old config's
// digest, and is recreated.
func TestUpRecreatesAMirrorWithAStaleDigest(t *testing.T) {
	f := sessiontest.New(t)
	specs := f.DefaultMirrorsRunning()
	f.Mirrors[0].Labels[registry.LabelConfig] = "sha256:from-before"
	f.DNSWarm()
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if got := f.Called("docker.run"); len(got) != 1 || got[0] != "docker.run "+specs[0].Name {
		t.Errorf("recreated %v, want only %s\n%s", got, specs[0].Name, f.Log())
	}
	if got := f.Called("guest.run"); len(got) != 0 {
		t.Errorf("current config files written again: %v", got)
	}
}

// A mirror taken out of the config goes before its config file does: one
// that restarts after the file is gone (its upstream unreachable, so it
// restarts until it can) would have Docker make a folder at the file's
// path (the lab saw it happen).
func TestUpRemovesAGoneMirrorBeforeItsConfigFile(t *testing.T) {
	f := sessiontest.New(t)
	f.DefaultMirrorsRunning()
	f.Mirrors = append(f.Mirrors, docker.Container{ID: "registry-gone-id", Name: "registry-gone", State: "restarting", Labels: map[string]string{registry.LabelMirror: "registry-gone", registry.LabelConfig: "sha256:old"}})
	f.RegistrySums[registry.ConfigDir+"/registry-gone.yml"] = "0123"
	f.DNSWarm()
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	removed, wrote := -1, -1
	for i, c := range f.Called("") {
		switch {
		case c == "docker.remove registry-gone-id":
			removed = i
		case strings.HasPrefix(c, "guest.run install the VM's") && strings.Contains(c, "mirror configs"):
			wrote = i
		}
	}
	if removed < 0 || wrote < 0 || removed > wrote {
		t.Errorf("registry-gone removed at call %d, its config file at %d: the container must go first\n%s", removed, wrote, f.Log())
	}
}

// The first up writes the default config and creates the VM from a
// template that carries the guest's provisioning script, then brings the
// VM's networking up.
func TestUpCreatesTheVM(t *testing.T) {
	f := sessiontest.New(t)
	f.Instance = nil
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if _, err := os.Stat(f.Env.Paths.Config); err != nil {
		t.Errorf("no default config: %v", err)
	}
	if got := f.Called("vm.create"); len(got) != 1 {
		t.Fatalf("vm.create calls: %v\n%s", got, f.Log())
	}
	var y struct {
		Provision []struct{ Mode, Script string }
	}
	if err := yaml.Unmarshal(f.Template, &y); err != nil {
		t.Fatal(err)
	}
	if len(y.Provision) != 1 || y.Provision[0].Mode != "system" || y.Provision[0].Script != guest.Provision() {
		t.Errorf("the template does not carry guest.Provision():\n%s", f.Template)
	}
	if len(f.Called("guest.run install the VM's")) != 1 || len(f.Called("host.privileged ip route")) != 1 {
		t.Errorf("the VM's networking was not brought up:\n%s", f.Log())
	}
}

// Only marina's own config file is written with the defaults: up with a
// --config that names no file stops before it looks at anything, and
// writes neither that file nor marina's own.
func TestUpRefusesAMissingNamedConfig(t *testing.T) {
	for _, dry := range []bool{true, false} {
		f := sessiontest.New(t)
		f.Instance = nil
		own := f.Env.Paths.Config
		f.Env.Paths.Config, f.Env.Paths.Named = filepath.Join(t.TempDir(), "typo.yaml"), true
		err := machine.Up(context.Background(), f.Env, machine.UpOptions{DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), "--config names "+f.Env.Paths.Config+", which does not exist") {
			t.Errorf("up (dry run %v) with a missing --config: %v", dry, err)
		}
		for _, p := range []string{f.Env.Paths.Config, own} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("up (dry run %v) wrote %s: %v", dry, p, err)
			}
		}
		if log := f.Log(); log != "" || strings.Contains(f.Stdout.String(), "write the default config") {
			t.Errorf("up (dry run %v) went on:\n%s\n%s", dry, log, f.Stdout.String())
		}
	}
}

// destroy without a terminal and without -y changes nothing.
func TestDestroyNeedsAConfirmation(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	made := f.MustMade()
	if err := made.Add(f.Network.Subnet, f.Lima0.Addr()); err != nil {
		t.Fatal(err)
	}
	f.Route = &hostRoute{Dest: f.Network.Subnet, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	err := machine.Destroy(context.Background(), f.Env, machine.DestroyOptions{})
	if err == nil || !strings.Contains(err.Error(), "needs a confirmation: run it in a terminal, or pass -y") {
		t.Fatalf("error = %v", err)
	}
	for _, c := range strings.Split(f.Log(), "\n") {
		if !strings.HasPrefix(c, "vm.get") && !strings.HasPrefix(c, "host.lookup") && c != "docker.kind-nodes" {
			t.Errorf("destroy did %q before its confirmation", c)
		}
	}
	if f.Instance == nil {
		t.Error("the VM is gone")
	}
	// With -y it goes, route and all.
	if err := machine.Destroy(context.Background(), f.Env, machine.DestroyOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if f.Instance != nil || len(f.Called("host.privileged")) != 1 {
		t.Errorf("destroy -y:\n%s", f.Log())
	}
}

// The session reads what a command needs and no more.
func TestOpenReadsOnlyWhatIsNeeded(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	s, err := session.Open(context.Background(), f.Env, session.Needs{Config: session.VMOnly})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := f.Log(); got != "vm.get marina" {
		t.Errorf("calls:\n%s", got)
	}
	f.Calls = nil
	f.Instance.Status = vm.StatusStopped
	if _, err := session.Open(context.Background(), f.Env, session.Needs{Config: session.Strict, Running: true, Lima0: true, Clusters: true}); err == nil || !strings.Contains(err.Error(), "VM marina is Stopped: start it with `marina up`") {
		t.Errorf("error = %v", err)
	}
	if got := f.Log(); got != "vm.get marina" {
		t.Errorf("calls for a stopped VM:\n%s", got)
	}
	// A config marina up refuses: vm.name still opens the session.
	if err := os.WriteFile(f.Env.Paths.Config, []byte("vm:\n  cpus: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := session.Open(context.Background(), f.Env, session.Needs{Config: session.Strict}); err == nil {
		t.Error("strict open of an invalid config")
	}
	s, err = session.Open(context.Background(), f.Env, session.Needs{Config: session.VMOnlyQuiet})
	if err != nil || s.File.Err == nil || s.Name != "marina" {
		t.Errorf("lenient open: %v, %+v", err, s)
	}
}

// up --dry-run plans everything and changes nothing, not even marina's own
// label key.
func TestUpDryRunChangesNothing(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Route = nil // no route yet
	if err := machine.Up(context.Background(), f.Env, machine.UpOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"run the mirror registry-dockerio", "route 172.30.0.0/16 to the VM"} {
		if !strings.Contains(f.Stdout.String(), step) {
			t.Errorf("plan lacks %q:\n%s", step, f.Stdout.String())
		}
	}
	// Only looks: no call that changes anything.
	looks := []string{"vm.get ", "host.lookup ", "guest.observe", "docker.version", "docker.wait-ready", "docker.inspect-network ", "docker.list ", "docker.kind-nodes"}
	for _, c := range strings.Split(f.Log(), "\n") {
		if !slices.ContainsFunc(looks, func(p string) bool { return strings.HasPrefix(c, p) }) {
			t.Errorf("dry run did %q", c)
		}
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("dry run made %d guest round trips, want 1: %v", len(got), got)
	}
	if _, err := os.Stat(f.Env.Paths.LabelKey()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run wrote the label key: %v", err)
	}
}

// status reads everything in one guest round trip and changes nothing.
func TestStatusIsOneRoundTrip(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Route = &hostRoute{Dest: f.Network.Subnet, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	st, err := status.Get(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	if st.Guest == nil || !st.Guest.OK || st.Route.State != "present" || st.VM.Lima0 != f.Lima0.String() {
		t.Errorf("status: %+v, guest %+v", st, st.Guest)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("status made %d guest round trips, want 1: %v", len(got), got)
	}
	if got := append(f.Called("host.privileged"), f.Called("docker.run")...); len(got) != 0 {
		t.Errorf("status changed: %v", got)
	}
}

// verify fails when the echo server saw another address than the Mac's
// (something translated it on the way), and removes its workload whatever
// happened.
func TestVerify(t *testing.T) {
	for _, c := range []struct {
		name, seen, fail, echo, err string
	}{
		{name: "seen as itself"},
		{name: "translated", seen: "192.168.64.2:40000", err: "saw 192.168.64.2, not this machine's address 192.168.64.1: something on the way translates addresses"},
		{name: "no address", fail: "kube c1 echo-address", err: "boom"},
		{name: "no answer", fail: "host.client-ip", err: "boom"},
		// S7: a hostile API server names any address in the Service's
		// status; the Mac calls none but the cluster's own pool's.
		{name: "another cluster's pool", echo: "172.30.2.20", err: "172.30.2.20, outside the cluster's LoadBalancer pool 172.30.1.1-172.30.1.7, 172.30.1.16-172.30.1.254 (slot 1)"},
		{name: "the Mac's metadata address", echo: "169.254.169.254", err: "outside the cluster's LoadBalancer pool"},
		{name: "the gateway", echo: "172.30.1.8", err: "outside the cluster's LoadBalancer pool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.New(t)
			f.Cluster("c1", 1, "https://127.0.0.1:7001")
			f.Seen = c.seen
			if c.echo != "" {
				f.Echo = netip.MustParseAddr(c.echo)
			}
			if c.fail != "" {
				f.Fail[c.fail] = errBoom
			}
			err := kindcluster.Verify(context.Background(), f.Env, kindcluster.VerifyOptions{Name: "c1"})
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("error = %v, want %q", err, c.err)
			}
			if c.err == "" && !strings.Contains(f.Stdout.String(), "answered this machine directly: it saw 192.168.64.1:50000") {
				t.Errorf("output:\n%s", f.Stdout.String())
			}
			if got := f.Called("kube c1 delete-namespace"); len(got) != 1 {
				t.Errorf("the workload was not removed:\n%s", f.Log())
			}
			if got := f.Called("host.client-ip"); c.echo != "" && len(got) != 0 {
				t.Errorf("called %s, outside the pool: %v", c.echo, got)
			}
		})
	}
}
