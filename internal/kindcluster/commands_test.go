package kindcluster

// Commands run through the fake world: their sequencing, rollback and
// confirmations, without a VM.

import (
	"context"
	"encoding/base64"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

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

func create(f *sessiontest.World, opts CreateOptions) (*Created, error) {
	if opts.Name == "" {
		opts.Name = "c1"
	}
	return Create(context.Background(), f.Env, opts)
}

func TestCreateSucceeds(t *testing.T) {
	f := createFixture(t, nil)
	created, err := create(f, CreateOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	// Each add-on's calls in its order; the add-ons side by side.
	chains := [][]string{
		{"kube c1 apply-metallb", "kube c1 wait 2 CRDs Established", "kube c1 wait deployment metallb-system/controller available", "kube c1 pool marina", "kube c1 wait daemonset metallb-system/speaker ready"},
		{"kube c1 apply-external-dns", "kube c1 wait deployment external-dns/external-dns available"},
		{"kube c1 coredns", "kube c1 wait deployment kube-system/coredns available"},
		{"kube c1 apply-registry-hosting"},
	}
	got, n := f.Called("kube "), 0
	for _, want := range chains {
		n += len(want)
		if !inOrder(got, want) {
			t.Errorf("addon calls:\n%s\nwant in this order:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if len(got) != n {
		t.Errorf("%d addon calls, want %d:\n%s", len(got), n, strings.Join(got, "\n"))
	}
	// Every step is timed, kind's and the add-ons' among them.
	steps := map[string]bool{}
	for _, ph := range created.Phases {
		steps[strings.SplitN(ph.Step, ":", 2)[0]] = true
	}
	for _, part := range []string{"manifests", "kind", "MetalLB", "ExternalDNS", "CoreDNS", "kubeconfig"} {
		if !steps[part] {
			t.Errorf("no phase of %s in %+v", part, created.Phases)
		}
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
	// What the CLI says of it: how to reach it and its Services.
	if c := created; c.Name != "c1" || c.Server != "https://192.168.64.3:7001" || !c.Merged || c.Zone != "c1.demo.internal" || strings.Join(c.Pool, ", ") != "172.30.1.1-172.30.1.7, 172.30.1.16-172.30.1.254" || c.Plan != nil {
		t.Errorf("created %+v", c)
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
			_, err := Create(ctx, f.Env, CreateOptions{Name: "c1"})
			if err == nil || !errors.Is(err, context.Canceled) {
				t.Fatalf("error = %v", err)
			}
			if got := f.Called(c.rollback); len(got) != 1 || len(f.Called("guest.cancelled "+strings.TrimPrefix(c.rollback, "guest.run "))) != 0 {
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
		{"kube c1 wait deployment metallb-system", "installing MetalLB"},
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
			_, err := create(f, CreateOptions{})
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
	_, err := create(f, CreateOptions{Retain: true})
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
	_, err := create(f, CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "cluster c1: kind could not create it: boom") {
		t.Fatalf("error = %v", err)
	}
	if len(f.Called("guest.run remove cluster c1")) != 1 || len(f.Called("kube ")) != 0 {
		t.Errorf("calls:\n%s", f.Log())
	}
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
		opts  DeleteOptions
		tty   bool
		stdin string
		pick  []int    // what the picker returns; none: cancelled
		want  []string // deleted
		err   string
	}{
		{name: "no name, no terminal", err: "name the clusters to delete, or select them with -l"},
		{name: "no name, a pick", tty: true, pick: []int{1}, want: []string{"b"}},
		{name: "no name, all", tty: true, pick: []int{0, 1}, want: []string{"a", "b"}},
		{name: "no name, nothing picked", tty: true, err: "cancelled"},
		{name: "-l without a terminal", opts: DeleteOptions{Selector: region}, err: "needs a confirmation: run it in a terminal, or pass -y"},
		{name: "-l answered no", opts: DeleteOptions{Selector: region}, tty: true, stdin: "n\n", err: "cancelled"},
		{name: "-l answered yes", opts: DeleteOptions{Selector: region}, tty: true, stdin: "y\n", want: []string{"a", "b"}},
		{name: "-l -y", opts: DeleteOptions{Selector: region, Yes: true}, want: []string{"a", "b"}},
		{name: "-l matching nothing", opts: DeleteOptions{Selector: cluster.RegionLabel + "=elsewhere"}},
		{name: "named", opts: DeleteOptions{Names: []string{"a"}}, want: []string{"a"}},
		{name: "named, one unknown", opts: DeleteOptions{Names: []string{"a", "zz"}}, err: "there is no cluster zz"},
		{name: "named, one invalid", opts: DeleteOptions{Names: []string{"a", "B_"}}, err: "B_"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.TwoClusters(t)
			f.Env.TTY = c.tty
			f.Env.Stdin = strings.NewReader(c.stdin)
			var asked []string
			f.Env.Deps.Pick = func(q string, items []string) ([]int, error) {
				asked = items
				if c.pick == nil {
					return nil, ui.ErrCancelled
				}
				return c.pick, nil
			}
			_, err := Delete(context.Background(), f.Env, c.opts)
			if c.pick != nil && strings.Join(asked, "|") != "a (slot 1, port 7001, running)|b (slot 2, port 7002, running)" {
				t.Errorf("the picker listed %q", asked)
			}
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
			res, err := Verify(context.Background(), f.Env, VerifyOptions{Name: "c1"})
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("error = %v, want %q", err, c.err)
			}
			if c.err == "" && !strings.Contains(sessiontest.Said(res), "answered this machine directly: it saw 192.168.64.1:50000") {
				t.Errorf("output:\n%s", sessiontest.Said(res))
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

// A create's --dry-run lists the add-ons from the list the create installs:
// metrics-server last, after CoreDNS's forwarding.
func TestCreateDryRunListsTheAddonsInTheirOrder(t *testing.T) {
	ms := &addons.MetricsServer{Version: "v0.8.0", InsecureTLS: true}
	f := createFixture(t, nil)
	created, err := create(f, CreateOptions{DryRun: true, MetricsServer: ms})
	if err != nil || created.Plan == nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	plan := sessiontest.Said(session.Result{Plan: created.Plan})
	metallb, coredns, metrics := strings.Index(plan, "install MetalLB"), strings.Index(plan, "forward from CoreDNS"), strings.Index(plan, "install metrics-server")
	if metallb < 0 || coredns < metallb || metrics < coredns {
		t.Errorf("the plan does not list the add-ons as they install:\n%s", plan)
	}
	f = createFixture(t, nil)
	if _, err := create(f, CreateOptions{MetricsServer: ms}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	calls := f.Called("kube c1 ")
	if !slices.Contains(calls, "kube c1 apply-metrics-server insecure=true") || !inOrder(calls, []string{"kube c1 apply-metrics-server insecure=true", "kube c1 wait deployment kube-system/metrics-server available"}) {
		t.Errorf("metrics-server was not installed:\n%s", strings.Join(calls, "\n"))
	}
}

// A new cluster becomes kubectl's current context, as kind makes it;
// --no-switch-context and kind.switchContext: false leave it.
func TestCreateSwitchesContext(t *testing.T) {
	current := func(f *sessiontest.World) string {
		cfg, err := clientcmd.LoadFromFile(f.KubeconfigFile())
		if err != nil {
			t.Fatal(err)
		}
		return cfg.CurrentContext
	}
	f := createFixture(t, nil)
	created, err := create(f, CreateOptions{})
	if err != nil || !created.Current || current(f) != "c1" {
		t.Fatalf("create: %v, current context %q", err, current(f))
	}
	for name, o := range map[string]struct {
		opts CreateOptions
		cfg  func(*config.Config)
	}{
		"--no-switch-context":       {CreateOptions{NoSwitch: true}, nil},
		"kind.switchContext: false": {CreateOptions{}, func(c *config.Config) { c.Kind.SwitchContext = false }},
	} {
		f := createFixture(t, o.cfg)
		created, err := create(f, o.opts)
		if err != nil || created.Current || !f.HasContext("c1") || current(f) == "c1" {
			t.Errorf("%s: %v, current context %q", name, err, current(f))
		}
	}
}

// inOrder reports whether want appear in got in their order.
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// The add-ons that need only the API server start while kind still runs,
// from kubeadm's admin kubeconfig; those that need every node (the
// speakers, CoreDNS) wait for kind to end.
func TestCreateOverlapsTheAddonsWithKind(t *testing.T) {
	f := createFixture(t, nil)
	f.Scripts["admin kubeconfig of c1"] = vm.Result{Stdout: []byte(f.Export("c1"))}
	kind := f.Before
	f.Before = func(call string) {
		kind(call)
		if call != "guest.run kind create cluster c1" {
			return
		}
		// kind ends only once ExternalDNS was waited for and the pool
		// applied (they run side by side; both are in the log), or after
		// a while when the add-ons wait for kind.
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			log := f.Log()
			if strings.Contains(log, "kube c1 wait deployment external-dns/external-dns available") && strings.Contains(log, "kube c1 pool marina") {
				return
			}
		}
	}
	if _, err := create(f, CreateOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	calls := strings.Split(f.Log(), "\n")
	at := func(call string) int { return slices.Index(calls, call) }
	kindEnd := at("guest.run kind create cluster c1")
	if at("kube c1 wait deployment external-dns/external-dns available") > kindEnd || at("kube c1 pool marina") > kindEnd {
		t.Errorf("the API server's add-ons waited for kind:\n%s", f.Log())
	}
	if at("kube c1 wait daemonset metallb-system/speaker ready") < kindEnd || at("kube c1 coredns") < kindEnd {
		t.Errorf("a step that needs every node ran before kind ended:\n%s", f.Log())
	}
}

// metrics-server comes with --metrics-server, or with kind.metricsServer
// unless --metrics-server=false says otherwise (a Fleet's member says so).
func TestCreateMetricsServer(t *testing.T) {
	latest := addons.MetricsServerVersions()[len(addons.MetricsServerVersions())-1]
	for _, c := range []struct {
		name   string
		config bool
		flag   *bool
		want   bool
	}{
		{"no flag, no default", false, nil, false},
		{"--metrics-server", false, new(true), true},
		{"kind.metricsServer", true, nil, true},
		{"kind.metricsServer, --metrics-server=false", true, new(false), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := createFixture(t, func(cfg *config.Config) { cfg.Kind.MetricsServer = c.config })
			if _, err := create(f, CreateOptions{Metrics: c.flag}); err != nil {
				t.Fatalf("%v\n%s", err, f.Stderr.String())
			}
			got := f.Called("net." + addons.MetricsServerSource + "-manifest " + latest)
			if (len(got) > 0) != c.want {
				t.Errorf("metrics-server manifest fetched: %v, want %v\n%s", got, c.want, f.Log())
			}
		})
	}
}

// --cni none: kind gets networking.disableDefaultCNI; the kubeconfig is
// written and merged before the wait for the user's CNI (they need it to
// install one), and the add-ons start only once every node is Ready
// (without a CNI none of their pods runs).
func TestCreateWithoutCNI(t *testing.T) {
	cniReadyPoll = time.Millisecond
	f := createFixture(t, nil)
	f.NotReady = map[string]int{"c1": 3}
	f.Scripts["admin kubeconfig of c1"] = vm.Result{Stdout: []byte(f.Export("c1"))}
	path, _ := f.Env.Paths.Kubeconfig("c1")
	var unwritten []string
	kind := f.Before
	f.Before = func(call string) {
		kind(call)
		if call == "kube c1 nodes" {
			if _, err := os.Stat(path); err != nil || !f.HasContext("c1") {
				unwritten = append(unwritten, call)
			}
		}
	}
	created, err := create(f, CreateOptions{CNI: cluster.CNINone})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	m := regexp.MustCompile(`printf '%s' (\S+) \| base64 -d \| kind create cluster`).FindStringSubmatch(f.Bodies["kind create cluster c1"])
	if m == nil {
		t.Fatalf("no kind config in:\n%s", f.Bodies["kind create cluster c1"])
	}
	if config, _ := base64.StdEncoding.DecodeString(m[1]); !strings.Contains(string(config), "disableDefaultCNI: true") {
		t.Errorf("kind was not told to install no CNI:\n%s", config)
	}
	calls := strings.Split(f.Log(), "\n")
	asked := f.Called("kube c1 nodes")
	if len(asked) != 4 || len(unwritten) > 0 {
		t.Errorf("the nodes were asked %d times (want 4: three NotReady), %d of them before the kubeconfig was written", len(asked), len(unwritten))
	}
	lastWait := slices.Index(calls, "kube c1 nodes") + len(asked) - 1
	for i, c := range calls {
		if strings.HasPrefix(c, "kube c1 ") && c != "kube c1 nodes" && i < lastWait {
			t.Errorf("%s ran before every node was Ready:\n%s", c, f.Log())
		}
	}
	if got := f.Called("guest.run admin kubeconfig of c1"); len(got) > 0 {
		t.Errorf("the add-ons were started early: %v", got)
	}
	steps := map[string]bool{}
	for _, ph := range created.Phases {
		steps[ph.Step] = true
	}
	if !steps["CNI: Writing its kubeconfig"] || len(f.Called("kube c1 apply-metallb")) != 1 {
		t.Errorf("phases %+v\n%s", created.Phases, f.Log())
	}
	// Current once the create succeeded (kind.switchContext), as without
	// --cni none.
	if cfg, err := clientcmd.LoadFromFile(f.KubeconfigFile()); err != nil || cfg.CurrentContext != "c1" || !created.Current {
		t.Errorf("current context %v, %v", cfg, err)
	}
}

// A CNI that never comes: the create says so, names what to do, and
// removes the cluster and the kubeconfig entries it wrote.
func TestCreateWithoutCNIGivesUp(t *testing.T) {
	cniReadyPoll = time.Millisecond
	f := createFixture(t, nil)
	f.NotReady = map[string]int{"c1": -1}
	current := func() string {
		cfg, err := clientcmd.LoadFromFile(f.KubeconfigFile())
		if err != nil {
			t.Fatal(err)
		}
		return cfg.CurrentContext
	}
	mine := clientcmdapi.NewConfig()
	mine.Clusters["mine"] = &clientcmdapi.Cluster{Server: "https://10.99.0.1:6443"}
	mine.AuthInfos["mine"] = &clientcmdapi.AuthInfo{Token: "t"}
	mine.Contexts["mine"] = &clientcmdapi.Context{Cluster: "mine", AuthInfo: "mine"}
	mine.CurrentContext = "mine"
	if err := os.MkdirAll(filepath.Dir(f.KubeconfigFile()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*mine, f.KubeconfigFile()); err != nil {
		t.Fatal(err)
	}
	before := current()
	_, err := create(f, CreateOptions{CNI: cluster.CNINone, Wait: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "waiting for a CNI failed: 0 of 1 nodes Ready after 50ms: no CNI runs on them") ||
		!strings.Contains(err.Error(), "kubectl --context c1") || !strings.Contains(err.Error(), "longer --wait") {
		t.Fatalf("error = %v", err)
	}
	if got := current(); got != before || before == "" {
		t.Errorf("the current context is %q after the failed create, was %q", got, before)
	}
	path, _ := f.Env.Paths.Kubeconfig("c1")
	if _, serr := os.Stat(path); !errors.Is(serr, os.ErrNotExist) || f.HasContext("c1") {
		t.Errorf("the kubeconfig is left: %v, context %v", serr, f.HasContext("c1"))
	}
	if len(f.Called("guest.run kind delete cluster c1")) != 1 || len(f.Called("kube c1 apply-")) > 0 {
		t.Errorf("not rolled back, or add-ons applied:\n%s", f.Log())
	}
}

// A --cni the create does not offer changes nothing.
func TestCreateRefusesAnUnknownCNI(t *testing.T) {
	f := createFixture(t, nil)
	_, err := create(f, CreateOptions{CNI: "calico"})
	if err == nil || !strings.Contains(err.Error(), `--cni "calico": choose kindnet`) || len(f.Called("guest.")) > 0 {
		t.Fatalf("error = %v\n%s", err, f.Log())
	}
}

// --cni none's plan says kind installs no CNI, and puts the kubeconfig and
// the wait for the user's CNI before the add-ons, as the create does.
func TestCreateDryRunWithoutCNI(t *testing.T) {
	f := createFixture(t, nil)
	created, err := create(f, CreateOptions{CNI: cluster.CNINone, DryRun: true, Wait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	plan := sessiontest.Said(session.Result{Plan: created.Plan})
	at := func(s string) int { return strings.Index(plan, s) }
	if at("without a CNI (networking.disableDefaultCNI)") < 0 || at("write ") > at("wait up to 1m0s for your CNI") || at("wait up to 1m0s for your CNI") > at("install MetalLB") || at("write ") < 0 {
		t.Errorf("plan:\n%s", plan)
	}
	if len(f.Called("guest.run kind")) > 0 {
		t.Errorf("a dry run ran kind:\n%s", f.Log())
	}
}
