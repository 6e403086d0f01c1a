package app

// The fixture: an Env whose outside world is scripted fakes that record
// every call in one log and can fail at any of them. Everything marina keeps
// on the Mac (config, kubeconfigs, routes.json, the slot lock) is real, in a
// temporary home.

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
	"github.com/bcollard/marina/lab/pki"
	"github.com/lima-vm/lima/v2/pkg/yqutil"
	sigyaml "sigs.k8s.io/yaml"
)

// world is the fakes' shared state and the log of calls.
type world struct {
	t  *testing.T
	mu sync.Mutex
	// calls is every call to the outside world, in order, as "part.what".
	calls []string
	// fail makes the first call whose text starts with a key fail with its
	// error (and removes the key: a rollback's own calls then succeed).
	fail map[string]error
	// before runs before a call is logged (to change the world meanwhile);
	// calls come from several goroutines at once, so it takes mu itself to
	// touch the fields below.
	before func(call string)

	// The fields below are read and written under mu.

	instance *vm.Instance // nil: no VM
	template []byte       // the Lima template the VM was created with
	lima0    netip.Prefix
	mac      netip.Addr
	network  *docker.NetworkState
	mirrors  []docker.Container
	nodes    []docker.Node
	route    *host.Route
	// lima0Route is the host's route to lima0's address (nil: directly
	// on bridge100).
	lima0Route *host.Route
	// detached are the containers not on the kind network (a conversion
	// stopped halfway); readdress: a VM start gives containers other
	// addresses (a dynamic range).
	detached  map[string]bool
	readdress bool
	seen      string     // what the echo server of verify saw ("": the Mac)
	echo      netip.Addr // its Service's address (zero: 172.30.1.1)
	hostStyle host.Style // the host's routing style ("": a Mac's)
	// registrySums are the mirror config files in the VM (path → sha256).
	registrySums map[string]string
	scripts      map[string]vm.Result // guest.Run output by script name prefix
	bodies       map[string]string    // the last body run under each script name
	ca           *pki.CA
	// The local DNS: its Corefile's sum in the VM, the clusters' addons
	// records, and the host's resolver folder.
	dnsSum      string
	etcdAuth    string // the etcd container whose users were set up
	addons      map[string]guest.Addons
	resolverDir string
	// labels are the clusters' node labels, set by label-nodes (a cluster
	// missing here shows only a region).
	labels map[string]map[string]string
	// doctor is what doctor's own questions get (doctor_test.go).
	doctor doctorWorld
	// dockerHangs makes Docker's WaitReady wait as for a socket nobody
	// answers on: until its ctx ends (then "docker.wait-ready cancelled"
	// is logged) or, at most, dockerHang.
	dockerHangs bool
}

// dockerHang is the longest a hanging Docker keeps a test waiting.
const dockerHang = 3 * time.Second

// call logs what and returns the error it was told to fail with.
func (w *world) call(what string) error {
	if w.before != nil {
		w.before(what)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, what)
	for k, err := range w.fail {
		if strings.HasPrefix(what, k) {
			delete(w.fail, k)
			return err
		}
	}
	return nil
}

// log is the calls so far, one per line.
func (w *world) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.calls, "\n")
}

// called reports the calls starting with prefix.
func (w *world) called(prefix string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// fixture is a marina Env over a world, with its output captured.
type fixture struct {
	*world
	e        *session.Env
	env      map[string]string
	out, err bytes.Buffer
}

// newFixture is a running VM with the default config, the kind network in
// place and no clusters.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	// Short: Lima's socket paths under it must fit macOS's limit.
	home, err := os.MkdirTemp("", "m")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	f := &fixture{world: &world{
		t: t, fail: map[string]error{}, scripts: map[string]vm.Result{}, bodies: map[string]string{},
		lima0: netip.MustParsePrefix("192.168.64.3/24"), mac: netip.MustParseAddr("192.168.64.1"),
		addons: map[string]guest.Addons{}, resolverDir: filepath.Join(t.TempDir(), "resolver"),
	}}
	// The host's resolver folder, as marina's record of what it wrote
	// checks it.
	t.Setenv(host.ResolverDirEnv, f.resolverDir)
	f.env = map[string]string{"HOME": home}
	paths, err := config.ResolvePaths(func(k string) string { return f.env[k] }, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f.instance = &vm.Instance{Name: "marina", Status: vm.StatusRunning, CPUs: 4, Memory: 10 << 30, Disk: 40 << 30}
	cfg := config.Default()
	spec := docker.KindNetworkSpec(netip.MustParsePrefix(cfg.Network.CIDR), guest.HostIf)
	f.network = &docker.NetworkState{Driver: "bridge", Subnet: spec.Subnet, Gateway: spec.Gateway, IPRange: spec.IPRange, Options: spec.Options, Managed: true}
	if f.ca, err = pki.LoadOrMakeCA(t.TempDir(), "ca", "kubernetes"); err != nil {
		t.Fatal(err)
	}
	f.e = &session.Env{
		Paths: paths, UI: ui.New(&f.err, false, false), Getenv: func(k string) string { return f.env[k] },
		Stdin: strings.NewReader(""), Stdout: &f.out, Stderr: &f.err, HostArch: "arm64",
	}
	f.e.Deps = session.Deps{
		VM:     func() (session.VM, error) { return fakeVM{f.world}, nil },
		Guest:  func(string) session.Guest { return fakeGuest{f.world} },
		Docker: func(string) (session.Docker, error) { return fakeDocker{f.world}, nil },
		Host:   func() session.Host { return fakeHost{f.world, host.New(run.Runner{}, false, nil, io.Discard)} },
		Kube:   f.kube,
		MetalLB: func(context.Context, string) ([]byte, error) {
			return []byte(fakeMetalLB), f.call("net.metallb-manifest")
		},
		MetricsServer: func(_ context.Context, v string) ([]byte, error) {
			return []byte(fakeMetricsServer(v)), f.call("net.metrics-server-manifest " + v)
		},
		Calls: func() int64 { return int64(len(f.called("guest."))) },
	}
	return f
}

// config writes the config file, changed by change.
func (f *fixture) config(change func(*config.Config)) {
	f.t.Helper()
	cfg := config.Default()
	if change != nil {
		change(&cfg)
	}
	b, err := config.Marshal(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.e.Paths.Config, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// kubeconfigFile is ~/.kube/config.
func (f *fixture) kubeconfigFile() string { return filepath.Join(f.env["HOME"], ".kube", "config") }

// cluster adds a running cluster of workers+1 nodes in slot n to Docker,
// with its kubeconfig written as marina writes it.
func (f *fixture) cluster(name string, n int, server string) {
	f.t.Helper()
	f.nodes = append(f.nodes, docker.Node{
		Container: docker.Container{ID: name + "-cp", Name: name + "-control-plane", State: "running"},
		Cluster:   name, Role: "control-plane", APIPorts: []int{slot.APIPort(n)},
	})
	if server == "" {
		return
	}
	path, err := f.e.Paths.Kubeconfig(name)
	if err != nil {
		f.t.Fatal(err)
	}
	kc, err := kubeconfigFromKind(f, name, server)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// export is what kind prints in the VM for cluster name: its kubeconfig
// and the API server's certificate, valid for loopback and lima0.
func (f *fixture) export(name string) string {
	f.t.Helper()
	crt, key, err := f.ca.Issue("admin", pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"kubeadm:cluster-admins"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	serving, _, err := f.ca.Issue("apiserver", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.IP(f.lima0.Addr().AsSlice())})
	if err != nil {
		f.t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	kc := fmt.Sprintf(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: https://127.0.0.1:6443
  name: kind-%[2]s
contexts:
- context:
    cluster: kind-%[2]s
    user: kind-%[2]s
  name: kind-%[2]s
current-context: kind-%[2]s
kind: Config
users:
- name: kind-%[2]s
  user:
    client-certificate-data: %s
    client-key-data: %s
`, b64(f.ca.PEM()), name, b64(crt), b64(key))
	return "@@ kubeconfig " + name + "\n" + kc + "@@ cert " + name + "\n" + string(serving)
}

func kubeconfigFromKind(f *fixture, name, server string) ([]byte, error) {
	ex := guest.ParseExports(f.export(name))[name]
	return kubeconfig.FromKind(ex.Kubeconfig, ex.Cert, name, server, f.e.KubeOwner(false).Home)
}

// fakeMetalLB stands in for MetalLB's: its CRDs are what the waits
// read from it.
const fakeMetalLB = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ipaddresspools.metallb.io
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: l2advertisements.metallb.io
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller
  namespace: metallb-system
spec:
  template:
    spec:
      containers:
      - name: controller
        image: quay.io/metallb/controller:v0.16.2
`

// fakeMetricsServer stands in for metrics-server's components.yaml: its
// one Deployment, with the release's image.
func fakeMetricsServer(v string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: metrics-server
  namespace: kube-system
spec:
  template:
    spec:
      containers:
      - name: metrics-server
        image: registry.k8s.io/metrics-server/metrics-server:` + v + "\n"
}

type fakeVM struct{ *world }

func (v fakeVM) Version(context.Context) (string, error) { return "2.0.3", v.call("vm.version") }
func (v fakeVM) Get(_ context.Context, name string) (*vm.Instance, error) {
	if err := v.call("vm.get " + name); err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.instance == nil {
		return nil, nil
	}
	in := *v.instance
	return &in, nil
}
func (v fakeVM) Create(_ context.Context, name string, template []byte) error {
	if err := v.call("vm.create " + name); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.template = template
	v.instance = &vm.Instance{Name: name, Status: vm.StatusRunning}
	return nil
}
func (v fakeVM) Start(ctx context.Context, name string, edits vm.Edits) error {
	if len(edits.Set) > 0 {
		// As Lima does: the expressions edit the instance's lima.yaml
		// before it boots.
		if err := v.call("vm.set " + name + " " + strings.Join(edits.Set, " ")); err != nil {
			return err
		}
		p := filepath.Join(v.instance.Dir, "lima.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if b, err = yqutil.EvaluateExpression(ctx, yqutil.Join(edits.Set), b); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	if err := v.call("vm.start " + name); err != nil {
		return err
	}
	// As Lima does: a mount whose folder is missing fails the start.
	if b, err := os.ReadFile(filepath.Join(v.instance.Dir, "lima.yaml")); err == nil && v.instance.Dir != "" {
		var y struct {
			Mounts []struct{ Location string } `json:"mounts"`
		}
		if err := sigyaml.Unmarshal(b, &y); err != nil {
			return err
		}
		for _, m := range y.Mounts {
			if fi, err := os.Stat(m.Location); err != nil || !fi.IsDir() {
				return fmt.Errorf("mount %s: not a folder (%v)", m.Location, err)
			}
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.instance.Status = vm.StatusRunning
	// Docker gives a restarted container whatever address its IPAM has
	// free: not always the one it had.
	if v.readdress {
		for i := range v.nodes {
			v.nodes[i].IP = "172.30.0.99"
		}
	}
	return nil
}
func (v fakeVM) Stop(_ context.Context, name string) error {
	if err := v.call("vm.stop " + name); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.instance.Status = vm.StatusStopped
	return nil
}
func (v fakeVM) Delete(_ context.Context, name string) error {
	if err := v.call("vm.delete " + name); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.instance = nil
	return nil
}
func (v fakeVM) Shell(_ context.Context, name string, args []string, _ io.Reader, _, _ io.Writer) (int, error) {
	return 0, v.call("vm.shell " + name + " " + strings.Join(args, " "))
}

type fakeGuest struct{ *world }

func (g fakeGuest) Observe(ctx context.Context) (guest.State, error) {
	if err := ctx.Err(); err != nil {
		_ = g.call("guest.cancelled observe")
		return guest.State{}, err
	}
	if err := g.call("guest.observe"); err != nil {
		return guest.State{}, err
	}
	return g.state(), nil
}

// state is the guest as marina leaves it: its rules in place for the Mac.
func (g fakeGuest) state() guest.State {
	cfg := config.Default()
	g.mu.Lock()
	n := kindNet(netip.MustParsePrefix(cfg.Network.CIDR), g.mac)
	g.mu.Unlock()
	files, err := n.Files()
	if err != nil {
		g.t.Fatal(err)
	}
	st := guest.NetState{Forwarding: true, Enabled: true, Sums: map[string]string{}, Chains: map[string][]string{}, Policies: map[string]string{"filter FORWARD": "DROP"}}
	for _, f := range files {
		st.Sums[f.Path] = f.Sum()
	}
	for _, r := range append(guest.Jumps(), n.Rules()...) {
		key := r.Table + " " + strings.Fields(r.Spec)[1]
		st.Chains[key] = append(st.Chains[key], r.Spec)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	sums := maps.Clone(g.registrySums)
	if sums == nil {
		sums = map[string]string{}
	}
	return guest.State{Lima0: g.lima0, Lima0All: []netip.Prefix{g.lima0}, Net: st, RegistrySums: sums, DNSSum: g.dnsSum, EtcdAuth: g.etcdAuth, Addons: maps.Clone(g.addons)}
}

func (g fakeGuest) Run(ctx context.Context, s vm.Script) (vm.Result, error) {
	// As limactl: an ended context runs nothing (a rollback must not use
	// the command's own, which a signal ended).
	if err := ctx.Err(); err != nil {
		_ = g.call("guest.cancelled " + s.Name)
		return vm.Result{}, err
	}
	g.mu.Lock()
	g.bodies[s.Name] = s.Body
	g.mu.Unlock()
	if err := g.call("guest.run " + s.Name); err != nil {
		return vm.Result{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// The guest's DNS files and addons records, as the scripts write them.
	if m := corefileWrite.FindStringSubmatch(s.Body); m != nil {
		g.dnsSum = dns.Spec{File: m[1]}.FileSum()
	}
	for _, n := range g.nodes {
		if a, ok := addonsWrite(s.Body, n.Cluster); ok {
			g.addons[n.Cluster] = a
		}
	}
	// The etcd users' set-up records the etcd container it set up.
	if strings.Contains(s.Body, ">/etc/marina/dns/etcd-auth\n") {
		for _, c := range g.mirrors {
			if c.Name == dns.EtcdName {
				g.etcdAuth = c.ID
			}
		}
	}
	for k, r := range g.scripts {
		if strings.HasPrefix(s.Name, k) {
			return r, nil
		}
	}
	// kind deletes in the VM: the nodes of exactly the clusters it names go.
	if strings.HasPrefix(s.Name, "kind delete cluster") || strings.HasPrefix(s.Name, "remove cluster") {
		g.nodes = slices.DeleteFunc(g.nodes, func(n docker.Node) bool {
			return strings.Contains(s.Body, "\nkind_delete "+run.ShellQuote(n.Cluster)+"\n")
		})
	}
	return vm.Result{}, nil
}

type fakeDocker struct{ *world }

func (d fakeDocker) Version(ctx context.Context) (string, error) {
	if err := d.call("docker.version"); err != nil {
		return "", err
	}
	return "29.1.0", ctx.Err() // a cancelled request fails, as a real one does
}
func (d fakeDocker) WaitReady(ctx context.Context, timeout time.Duration) (string, error) {
	if err := d.call("docker.wait-ready"); err != nil {
		return "", err
	}
	d.mu.Lock()
	hangs := d.dockerHangs
	d.mu.Unlock()
	if !hangs {
		return "29.1.0", nil
	}
	select {
	case <-ctx.Done():
		_ = d.call("docker.wait-ready cancelled")
		return "", ctx.Err()
	case <-time.After(min(timeout, dockerHang)):
		return "", errors.New("Docker did not answer")
	}
}
func (d fakeDocker) InspectNetwork(_ context.Context, name string) (*docker.NetworkState, error) {
	err := d.call("docker.inspect-network " + name)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.network, err
}
func (d fakeDocker) CreateNetwork(_ context.Context, spec docker.NetworkSpec) error {
	return d.call("docker.create-network " + spec.Name)
}
func (d fakeDocker) ListLabeled(_ context.Context, label string) ([]docker.Container, error) {
	d.mu.Lock()
	var out []docker.Container
	for _, c := range d.mirrors {
		if _, ok := c.Labels[label]; ok {
			out = append(out, c)
		}
	}
	d.mu.Unlock()
	return out, d.call("docker.list " + label)
}
func (d fakeDocker) KindNodes(context.Context, string, string) ([]docker.Node, error) {
	d.mu.Lock()
	out := slices.Clone(d.nodes)
	d.mu.Unlock()
	return out, d.call("docker.kind-nodes")
}
func (d fakeDocker) Remove(_ context.Context, id string) error {
	if err := d.call("docker.remove " + id); err != nil {
		return err
	}
	d.mu.Lock()
	d.mirrors = slices.DeleteFunc(d.mirrors, func(c docker.Container) bool { return c.ID == id })
	d.mu.Unlock()
	return nil
}
func (d fakeDocker) Start(_ context.Context, id string) error {
	if err := d.call("docker.start " + id); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.nodes {
		if d.nodes[i].ID == id {
			d.nodes[i].State = "running"
		}
	}
	return nil
}
func (d fakeDocker) EnsureImage(_ context.Context, ref string) error {
	return d.call("docker.ensure-image")
}
func (d fakeDocker) Run(_ context.Context, spec docker.RunSpec) error {
	if err := d.call("docker.run " + spec.Name); err != nil {
		return err
	}
	d.mu.Lock()
	d.mirrors = append(d.mirrors, docker.Container{ID: spec.Name + "-new", Name: spec.Name, State: "running", Labels: spec.Labels})
	d.mu.Unlock()
	return nil
}
func (d fakeDocker) Close() error { return nil }
func (d fakeDocker) Named(_ context.Context, name string) (*docker.Container, error) {
	err := d.call("docker.named " + name)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.mirrors {
		if c.Name == name {
			return &c, err
		}
	}
	return nil, err
}
func (d fakeDocker) Endpoints(_ context.Context, network string) ([]docker.Endpoint, error) {
	err := d.call("docker.endpoints " + network)
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []docker.Endpoint
	for _, n := range d.nodes {
		if !d.detached[n.Name] {
			out = append(out, docker.Endpoint{ID: n.ID, Name: n.Name, IP: netip.MustParseAddr(n.IP), Running: n.State == "running"})
		}
	}
	return out, err
}

// Reattach does what Docker's does: every container named leaves the old
// network, the network is made again, and each comes back with the
// address it is given. "docker.reattach-half" fails it after the first
// two, as an interrupted conversion leaves it: a network of marina's with
// nothing on it.
func (d fakeDocker) Reattach(_ context.Context, spec docker.NetworkSpec, eps []docker.Endpoint, _ func(string)) error {
	if err := d.call(fmt.Sprintf("docker.reattach %s %d", spec.Name, len(eps))); err != nil {
		return err
	}
	d.mu.Lock()
	if d.detached == nil {
		d.detached = map[string]bool{}
	}
	for _, ep := range eps {
		d.detached[ep.Name] = true
	}
	d.network = &docker.NetworkState{Driver: "bridge", Subnet: spec.Subnet, Gateway: spec.Gateway, IPRange: spec.IPRange, Options: spec.Options, Managed: true}
	d.mu.Unlock()
	if err := d.call("docker.reattach-half"); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ep := range eps {
		for i := range d.nodes {
			if d.nodes[i].Name == ep.Name {
				d.nodes[i].IP = ep.IP.String()
				delete(d.detached, ep.Name)
			}
		}
	}
	d.network.Containers = len(eps)
	return nil
}

// fakeHost scripts the routing table; the route commands are production's.
type fakeHost struct {
	*world
	real *host.Host
}

func (h fakeHost) Lookup(_ context.Context, p netip.Prefix) (*host.Route, error) {
	if err := h.call("host.lookup " + p.String()); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// lima0 itself: on the vzNAT bridge, directly, unless told otherwise.
	if p.Bits() == 32 && p.Addr() == h.lima0.Addr() {
		if h.lima0Route != nil {
			r := *h.lima0Route
			return &r, nil
		}
		return &host.Route{Dest: h.lima0.Masked(), Interface: "bridge100"}, nil
	}
	if h.route == nil {
		return &host.Route{Dest: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("192.168.1.1"), Interface: "en0"}, nil
	}
	r := *h.route
	return &r, nil
}

// Privileged logs argv and carries out the resolver file changes marina
// makes (in the fixture's own resolver folder), as root would.
func (h fakeHost) Privileged(_ context.Context, argv []string) error {
	if err := h.call("host.privileged " + strings.Join(argv, " ")); err != nil {
		return err
	}
	in := func(p string) bool { return strings.HasPrefix(p, h.resolverDir+"/") || p == h.resolverDir }
	switch {
	case len(argv) == 5 && argv[0] == "/usr/bin/install" && argv[1] == "-d" && in(argv[4]):
		return os.MkdirAll(argv[4], 0o755)
	case len(argv) == 5 && argv[0] == "/usr/bin/install" && argv[1] == "-m" && in(argv[4]):
		b, err := os.ReadFile(argv[3])
		if err != nil {
			return err
		}
		return os.WriteFile(argv[4], b, 0o644)
	case len(argv) == 3 && argv[0] == "/bin/rm" && in(argv[2]):
		return os.Remove(argv[2])
	}
	return nil
}
func (h fakeHost) Query(_ context.Context, server netip.Addr, name string) (dns.Answer, error) {
	if err := h.call("host.query " + server.String() + " " + name); err != nil {
		return dns.Answer{}, err
	}
	return dns.Answer{Rcode: "NXDOMAIN"}, nil
}
func (h fakeHost) RouteFix(s host.RouteStatus) []string { return h.real.RouteFix(s) }

// FlushDNS is a Mac's, unless the world's host is Linux.
func (h fakeHost) FlushDNS() ([][]string, error) {
	h.mu.Lock()
	style := h.hostStyle
	h.mu.Unlock()
	if style == "" {
		style = host.BSD
	}
	return (&host.Host{Style: style}).FlushDNS()
}
func (h fakeHost) RouteRemove(s host.RouteStatus) []string { return h.real.RouteRemove(s) }
func (h fakeHost) DeleteCommand(p netip.Prefix, gw netip.Addr) []string {
	return h.real.DeleteCommand(p, gw)
}
func (h fakeHost) SourceFor(netip.Addr) (netip.Addr, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mac, nil
}

// ClientIP is what the echo server answers: the Mac's own address, unless
// the world says something on the way rewrote it (seen).
func (h fakeHost) ClientIP(_ context.Context, lb netip.Addr) (string, string, error) {
	err := h.call("host.client-ip " + lb.String())
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := h.seen
	if seen == "" {
		seen = h.mac.String() + ":50000"
	}
	return seen, h.mac.String(), err
}

// kube is the Kube factory: one fake per cluster, named by its kubeconfig's
// context.
func (f *fixture) kube(kc []byte, _ time.Duration) (session.Kube, error) {
	name := ""
	for _, l := range strings.Split(string(kc), "\n") {
		if v, ok := strings.CutPrefix(l, "current-context: "); ok {
			name = strings.TrimSpace(v)
		}
	}
	if name == "" {
		return nil, errors.New("fake kube: no current-context")
	}
	return fakeKube{f.world, name}, nil
}

type fakeKube struct {
	*world
	name string
}

func (k fakeKube) ApplyMetalLB(context.Context, []byte) error {
	return k.call("kube " + k.name + " apply-metallb")
}
func (k fakeKube) ApplyExternalDNS(_ context.Context, _ []byte, etcd dns.Creds) error {
	if etcd.User != dns.ClusterUser(k.name) || len(etcd.Password) < 40 {
		return fmt.Errorf("ExternalDNS of %s got etcd user %q with a %d-character password", k.name, etcd.User, len(etcd.Password))
	}
	return k.call("kube " + k.name + " apply-external-dns")
}
func (k fakeKube) Wait(ctx context.Context, w addons.Wait) error {
	if err := k.call("kube " + k.name + " wait " + w.String()); err != nil {
		return err
	}
	return ctx.Err() // an interrupted wait ends, as a real one does
}
func (k fakeKube) Pool(_ context.Context, name string, _ []string) error {
	return k.call("kube " + k.name + " pool " + name)
}
func (k fakeKube) CoreDNS(context.Context, []config.DNSResolver) error {
	return k.call("kube " + k.name + " coredns")
}
func (k fakeKube) NodeLabels(_ context.Context, node string) (map[string]string, error) {
	err := k.call("kube " + k.name + " node-labels " + node)
	k.mu.Lock()
	defer k.mu.Unlock()
	if l, ok := k.labels[k.name]; ok {
		return maps.Clone(l), err
	}
	return map[string]string{cluster.RegionLabel: "r"}, err
}
func (k fakeKube) LabelNodes(_ context.Context, set map[string]string, remove []string) error {
	if err := k.call("kube " + k.name + " label-nodes " + labelString(set)); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.labels == nil {
		k.labels = map[string]map[string]string{}
	}
	l := k.labels[k.name]
	if l == nil {
		l = map[string]string{cluster.RegionLabel: "r"}
		k.labels[k.name] = l
	}
	maps.Copy(l, set)
	for _, r := range remove {
		delete(l, r)
	}
	return nil
}
func (k fakeKube) Nodes(context.Context) ([]kube.NodeInfo, error) {
	err := k.call("kube " + k.name + " nodes")
	k.mu.Lock()
	defer k.mu.Unlock()
	l := maps.Clone(k.labels[k.name])
	if l == nil {
		l = map[string]string{}
	}
	l["node-role.kubernetes.io/control-plane"] = ""
	return []kube.NodeInfo{{Name: k.name + "-control-plane", Version: "v1.36.1", Ready: true, Labels: l}}, err
}
func (k fakeKube) ApplyMetricsServer(_ context.Context, manifest []byte, insecure bool) error {
	// What reaches a cluster runs its images by digest.
	if !regexp.MustCompile(`image: registry.k8s.io/metrics-server/metrics-server:v[0-9.]+@sha256:[0-9a-f]{64}\n`).Match(manifest) {
		return fmt.Errorf("metrics-server's manifest does not pin its image:\n%s", manifest)
	}
	return k.call(fmt.Sprintf("kube %s apply-metrics-server insecure=%v", k.name, insecure))
}
func (k fakeKube) DeployEcho(_ context.Context, e kube.Echo) error {
	return k.call("kube " + k.name + " deploy-echo")
}
func (k fakeKube) EchoAddress(context.Context, string) (netip.Addr, error) {
	err := k.call("kube " + k.name + " echo-address")
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.echo.IsValid() {
		return k.echo, err
	}
	return netip.MustParseAddr("172.30.1.1"), err
}
func (k fakeKube) DeleteNamespace(_ context.Context, ns string) error {
	return k.call("kube " + k.name + " delete-namespace")
}

type hostRoute = host.Route

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// mustMade is marina's record of the routes it made, in the fixture's home.
func mustMade(t *testing.T, f *fixture) *host.Made {
	t.Helper()
	m, err := host.LoadMade(f.e.Paths.Routes(), hostOwn(config.Default(), true))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// defaultCorefileSum is the sum of marina-dns's Corefile for the default
// config and label key, as the VM has it once marina wrote it.
func defaultCorefileSum(t *testing.T, key []byte) string {
	specs, err := dns.Specs(config.Default(), key)
	if err != nil {
		t.Fatal(err)
	}
	return specs[1].FileSum()
}

// corefileWrite finds the Corefile a script installs in the VM.
var corefileWrite = regexp.MustCompile(`put ` + regexp.QuoteMeta(dns.CorefilePath) + ` 0600 <<'EOF' \|\| true\n((?s:.*?\n))EOF\n`)

// addonsWrite is the addons record a script writes for cluster (what up
// writes for an older cluster, or kind create's file), and whether it
// writes one.
func addonsWrite(body, cluster string) (guest.Addons, bool) {
	q := regexp.QuoteMeta(cluster)
	for _, re := range []string{
		`printf '%s\\n' '?(dns=[^'\n]+)'? >/etc/marina/clusters/` + q + `/addons`,
		`put /etc/marina/clusters/` + q + `/addons 0644 <<'EOF'[^\n]*\n(dns=[^\n]+)\n`,
	} {
		if m := regexp.MustCompile(re).FindStringSubmatch(body); m != nil {
			var a guest.Addons
			for _, f := range strings.Fields(m[1]) {
				if v, ok := strings.CutPrefix(f, "dns="); ok {
					a.DNS = v
				}
				a.Auth = a.Auth || f == "dnsauth=1"
			}
			return a, true
		}
	}
	return guest.Addons{}, false
}
