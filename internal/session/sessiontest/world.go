// Package sessiontest is the fake world the feature packages test their
// orchestration in: a session.Env whose outside world (Lima, the guest,
// Docker, the Mac, each cluster's API) is scripted fakes that record every
// call in one log and can fail at any of them. Everything marina keeps on
// the Mac (config, kubeconfigs, routes.json, the slot lock) is real, in a
// temporary home.
package sessiontest

import (
	"bytes"
	"context"
	"crypto/sha256"
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

	"github.com/lima-vm/lima/v2/pkg/yqutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigyaml "sigs.k8s.io/yaml"

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
	"github.com/bcollard/marina/internal/testpki"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// Fakes is the fakes' shared state and the log of calls.
type Fakes struct {
	T  *testing.T
	Mu sync.Mutex
	// Calls is every call to the outside world, in order, as "part.what".
	Calls []string
	// Fail makes the first call whose text starts with a key Fail with its
	// error (and removes the key: a rollback's own calls then succeed).
	Fail map[string]error
	// Before runs Before a call is logged (to change the world meanwhile);
	// calls come from several goroutines at once, so it takes mu itself to
	// touch the fields below.
	Before func(call string)

	// The fields below are read and written under mu.

	Instance       *vm.Instance // nil: no VM
	Template       []byte       // the Lima template the VM was created with
	Lima0          netip.Prefix
	Mac            netip.Addr
	Network        *docker.NetworkState
	Mirrors        []docker.Container
	NodeContainers []docker.Node
	// Images are the VM's Docker's images: name to id.
	Images map[string]string
	Route  *host.Route
	// Lima0Route is the host's route to lima0's address (nil: directly
	// on bridge100).
	Lima0Route *host.Route
	// Detached are the containers not on the kind network (a conversion
	// stopped halfway); readdress: a VM start gives containers other
	// addresses (a dynamic range).
	Detached  map[string]bool
	Readdress bool
	// NotReady is how many times a cluster's Nodes answer NotReady (no
	// CNI runs yet; -1: never Ready).
	NotReady map[string]int
	// LBs are each cluster's LoadBalancer Services.
	LBs       map[string][]kube.LoadBalancer
	Seen      string     // what the echo server of verify saw ("": the Mac)
	Echo      netip.Addr // its Service's address (zero: 172.30.1.1)
	HostStyle host.Style // the host's routing style ("": a Mac's)
	// RegistrySums are the mirror config files in the VM (path → sha256).
	RegistrySums map[string]string
	Scripts      map[string]vm.Result // guest.Run output by script name prefix
	Bodies       map[string]string    // the last body run under each script name
	CA           *testpki.CA
	// The local DNS: its Corefile's sum in the VM, the clusters' addons
	// records, and the host's resolver folder.
	DNSSum   string
	EtcdAuth string // the etcd container whose users were set up
	// Provisioning is how the VM was provisioned (nil: by this marina's
	// script, which a run of it makes so again).
	Provisioning *guest.Provisioning
	Addons       map[string]guest.Addons
	ResolverDir  string
	// Labels are the clusters' node Labels, set by label-nodes (a cluster
	// missing here shows only a region).
	Labels map[string]map[string]string
	// Doctor is what Doctor's own questions get (doctor_test.go).
	Doctor DoctorWorld
	// DockerHangs makes Docker's WaitReady wait as for a socket nobody
	// answers on: until its ctx ends (then "docker.wait-ready cancelled"
	// is logged) or, at most, dockerHang.
	DockerHangs bool
}

// dockerHang is the longest a hanging Docker keeps a test waiting.
const dockerHang = 3 * time.Second

// Call logs what and returns the error it was told to fail with.
func (w *Fakes) Call(what string) error {
	if w.Before != nil {
		w.Before(what)
	}
	w.Mu.Lock()
	defer w.Mu.Unlock()
	w.Calls = append(w.Calls, what)
	for k, err := range w.Fail {
		if strings.HasPrefix(what, k) {
			delete(w.Fail, k)
			return err
		}
	}
	return nil
}

// Log is the calls so far, one per line.
func (w *Fakes) Log() string {
	w.Mu.Lock()
	defer w.Mu.Unlock()
	return strings.Join(w.Calls, "\n")
}

// Called reports the calls starting with prefix.
func (w *Fakes) Called(prefix string) []string {
	w.Mu.Lock()
	defer w.Mu.Unlock()
	var out []string
	for _, c := range w.Calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// World is a marina Env over the Fakes, with its output captured.
type World struct {
	*Fakes
	Env            *session.Env
	Vars           map[string]string
	Stdout, Stderr bytes.Buffer
}

// New is a running VM with the default config, the kind network in
// place and no clusters.
func New(t *testing.T) *World {
	t.Helper()
	// Short: Lima's socket paths under it must fit macOS's limit.
	home, err := os.MkdirTemp("", "m")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	f := &World{Fakes: &Fakes{
		T: t, Fail: map[string]error{}, Scripts: map[string]vm.Result{}, Bodies: map[string]string{},
		Lima0: netip.MustParsePrefix("192.168.64.3/24"), Mac: netip.MustParseAddr("192.168.64.1"),
		Addons: map[string]guest.Addons{}, ResolverDir: filepath.Join(t.TempDir(), "resolver"),
	}}
	// The host's resolver folder, as marina's record of what it wrote
	// checks it.
	t.Setenv(host.ResolverDirEnv, f.ResolverDir)
	f.Vars = map[string]string{"HOME": home}
	paths, err := config.ResolvePaths(func(k string) string { return f.Vars[k] }, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f.Instance = &vm.Instance{Name: "marina", Status: vm.StatusRunning, CPUs: 4, Memory: 10 << 30, Disk: 40 << 30}
	cfg := config.Default()
	spec := docker.KindNetworkSpec(cfg.Network.Prefix(), guest.HostIf)
	f.Network = &docker.NetworkState{Driver: "bridge", Subnet: spec.Subnet, Gateway: spec.Gateway, IPRange: spec.IPRange, Options: spec.Options, Managed: true}
	if f.CA, err = testpki.LoadOrMakeCA(t.TempDir(), "ca", "kubernetes"); err != nil {
		t.Fatal(err)
	}
	f.Env = &session.Env{
		Paths: paths, UI: ui.New(&f.Stderr, false, false), Getenv: func(k string) string { return f.Vars[k] },
		Stdin: strings.NewReader(""), Stdout: &f.Stdout, Stderr: &f.Stderr, HostArch: "arm64", Marina: "v9.9.9",
	}
	f.Env.Deps = session.Deps{
		// Nothing picked, unless a test scripts the picker.
		Pick:   func(string, []string) ([]int, error) { return nil, ui.ErrCancelled },
		VM:     func() (session.VM, error) { return VM{f.Fakes}, nil },
		Guest:  func(string) session.Guest { return Guest{f.Fakes} },
		Docker: func(string) (session.Docker, error) { return Docker{f.Fakes}, nil },
		Host:   func() session.Host { return Host{f.Fakes, host.New(run.Runner{}, false, nil, io.Discard)} },
		Kube:   f.Kube,
		Manifest: func(_ context.Context, name, v string) ([]byte, error) {
			m := fakeManifests[name]
			if name == addons.MetricsServerSource {
				m = fakeMetricsServer(v)
			}
			return []byte(m), f.Call("net." + name + "-manifest " + v)
		},
		Calls: func() int64 { return int64(len(f.Called("guest."))) },
	}
	return f
}

// Config writes the Config file, changed by change.
func (f *World) Config(change func(*config.Config)) {
	f.T.Helper()
	cfg := config.Default()
	if change != nil {
		change(&cfg)
	}
	b, err := config.Marshal(cfg)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := os.WriteFile(f.Env.Paths.Config, b, 0o600); err != nil {
		f.T.Fatal(err)
	}
}

// KubeconfigFile is ~/.kube/config.
func (f *World) KubeconfigFile() string { return filepath.Join(f.Vars["HOME"], ".kube", "config") }

// Cluster adds a running Cluster of workers+1 nodes in slot n to Docker,
// with its kubeconfig written as marina writes it.
func (f *World) Cluster(name string, n int, server string) {
	f.T.Helper()
	f.NodeContainers = append(f.NodeContainers, docker.Node{
		Container: docker.Container{ID: name + "-cp", Name: name + "-control-plane", State: "running"},
		Cluster:   name, Role: "control-plane", APIPorts: []int{slot.APIPort(n)},
	})
	if server == "" {
		return
	}
	path, err := f.Env.Paths.Kubeconfig(name)
	if err != nil {
		f.T.Fatal(err)
	}
	kc, err := KubeconfigFromKind(f, name, server)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.T.Fatal(err)
	}
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		f.T.Fatal(err)
	}
}

// Export is what kind prints in the VM for cluster name: its kubeconfig
// and the API server's certificate, valid for loopback and lima0.
func (f *World) Export(name string) string {
	f.T.Helper()
	crt, key, err := f.CA.Issue("admin", pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"kubeadm:cluster-admins"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		f.T.Fatal(err)
	}
	serving, _, err := f.CA.Issue("apiserver", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.IP(f.Lima0.Addr().AsSlice())})
	if err != nil {
		f.T.Fatal(err)
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
`, b64(f.CA.PEM()), name, b64(crt), b64(key))
	return "@@ kubeconfig " + name + "\n" + kc + "@@ cert " + name + "\n" + string(serving)
}

func KubeconfigFromKind(f *World, name, server string) ([]byte, error) {
	ex := guest.ParseExports(f.Export(name))[name]
	return kubeconfig.FromKind(ex.Kubeconfig, ex.Cert, name, server, f.Env.KubeOwner(false).Home)
}

// fakeMetalLB stands in for MetalLB's: its CRDs are what the waits
// read from it.
// fakeManifests are the add-ons' manifests the fake network serves.
var fakeManifests = map[string]string{addons.MetalLBSource: fakeMetalLB}

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

type VM struct{ *Fakes }

func (v VM) Version(context.Context) (string, error) { return "2.0.3", v.Call("vm.version") }
func (v VM) Get(_ context.Context, name string) (*vm.Instance, error) {
	if err := v.Call("vm.get " + name); err != nil {
		return nil, err
	}
	v.Mu.Lock()
	defer v.Mu.Unlock()
	if v.Instance == nil {
		return nil, nil
	}
	in := *v.Instance
	return &in, nil
}
func (v VM) Create(_ context.Context, name string, template []byte) error {
	if err := v.Call("vm.create " + name); err != nil {
		return err
	}
	v.Mu.Lock()
	defer v.Mu.Unlock()
	v.Template = template
	v.Instance = &vm.Instance{Name: name, Status: vm.StatusRunning}
	return nil
}
func (v VM) Start(ctx context.Context, name string, edits vm.Edits) error {
	if len(edits.Set) > 0 {
		// As Lima does: the expressions edit the instance's lima.yaml
		// before it boots.
		if err := v.Call("vm.set " + name + " " + strings.Join(edits.Set, " ")); err != nil {
			return err
		}
		p := filepath.Join(v.Instance.Dir, "lima.yaml")
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
	if err := v.Call("vm.start " + name); err != nil {
		return err
	}
	// As Lima does: a mount whose folder is missing fails the start.
	if b, err := os.ReadFile(filepath.Join(v.Instance.Dir, "lima.yaml")); err == nil && v.Instance.Dir != "" {
		var y struct {
			Mounts []struct{ Location string } `json:"mounts"`
		}
		if err := sigyaml.Unmarshal(b, &y); err != nil {
			return err
		}
		for _, m := range y.Mounts {
			if fi, err := os.Stat(m.Location); err != nil || !fi.IsDir() {
				return fmt.Errorf("mount %s: not a folder (%w)", m.Location, err)
			}
		}
	}
	v.Mu.Lock()
	defer v.Mu.Unlock()
	v.Instance.Status = vm.StatusRunning
	// Docker gives a restarted container whatever address its IPAM has
	// free: not always the one it had.
	if v.Readdress {
		for i := range v.NodeContainers {
			v.NodeContainers[i].IP = "172.30.0.99"
		}
	}
	return nil
}
func (v VM) Stop(_ context.Context, name string) error {
	if err := v.Call("vm.stop " + name); err != nil {
		return err
	}
	v.Mu.Lock()
	defer v.Mu.Unlock()
	v.Instance.Status = vm.StatusStopped
	return nil
}
func (v VM) Delete(_ context.Context, name string) error {
	if err := v.Call("vm.delete " + name); err != nil {
		return err
	}
	v.Mu.Lock()
	defer v.Mu.Unlock()
	v.Instance = nil
	return nil
}
func (v VM) Shell(_ context.Context, name string, args []string, _ io.Reader, _, _ io.Writer) (int, error) {
	return 0, v.Call("vm.shell " + name + " " + strings.Join(args, " "))
}

type Guest struct{ *Fakes }

func (g Guest) Observe(ctx context.Context) (guest.State, error) {
	if err := ctx.Err(); err != nil {
		_ = g.Call("guest.cancelled observe")
		return guest.State{}, err
	}
	if err := g.Call("guest.observe"); err != nil {
		return guest.State{}, err
	}
	return g.State(), nil
}

// State is the guest as marina leaves it: its rules in place for the Mac.
func (g Guest) State() guest.State {
	cfg := config.Default()
	g.Mu.Lock()
	n := guest.KindNet(cfg.Network.Prefix(), g.Mac, cfg.Network.PodRouting)
	g.Mu.Unlock()
	files, err := n.Files()
	if err != nil {
		g.T.Fatal(err)
	}
	st := guest.NetState{Forwarding: true, Enabled: true, Sums: map[string]string{}, Chains: map[string][]string{}, Policies: map[string]string{"filter FORWARD": "DROP"}}
	for _, f := range files {
		st.Sums[f.Path] = f.Sum()
	}
	for _, r := range append(guest.Jumps(), n.Rules()...) {
		key := r.Table + " " + strings.Fields(r.Spec)[1]
		st.Chains[key] = append(st.Chains[key], r.Spec)
	}
	g.Mu.Lock()
	defer g.Mu.Unlock()
	sums := maps.Clone(g.RegistrySums)
	if sums == nil {
		sums = map[string]string{}
	}
	prov := guest.Provisioned("v9.9.9", "marina", "29.1.0")
	if g.Provisioning != nil {
		prov = *g.Provisioning
	}
	return guest.State{Lima0: g.Lima0, Lima0All: []netip.Prefix{g.Lima0}, Net: st, RegistrySums: sums, DNSSum: g.DNSSum, EtcdAuth: g.EtcdAuth, Addons: maps.Clone(g.Addons), Provisioning: prov}
}

func (g Guest) Run(ctx context.Context, s vm.Script) (vm.Result, error) {
	// As limactl: an ended context runs nothing (a rollback must not use
	// the command's own, which a signal ended).
	if err := ctx.Err(); err != nil {
		_ = g.Call("guest.cancelled " + s.Name)
		return vm.Result{}, err
	}
	g.Mu.Lock()
	g.Bodies[s.Name] = s.Body
	g.Mu.Unlock()
	if err := g.Call("guest.run " + s.Name); err != nil {
		return vm.Result{}, err
	}
	g.Mu.Lock()
	defer g.Mu.Unlock()
	if s.Name == "provision the VM again" {
		g.Provisioning = nil
	}
	// The guest's DNS files and addons records, as the scripts write them.
	if m := corefileWrite.FindStringSubmatch(s.Body); m != nil {
		g.DNSSum = dns.Spec{File: m[1]}.FileSum()
	}
	for _, n := range g.NodeContainers {
		if a, ok := addonsWrite(s.Body, n.Cluster); ok {
			g.Addons[n.Cluster] = a
		}
	}
	// The etcd users' set-up records the etcd container it set up.
	if strings.Contains(s.Body, ">/etc/marina/dns/etcd-auth\n") {
		for _, c := range g.Mirrors {
			if c.Name == dns.EtcdName {
				g.EtcdAuth = c.ID
			}
		}
	}
	for k, r := range g.Scripts {
		if strings.HasPrefix(s.Name, k) {
			return r, nil
		}
	}
	// kind deletes in the VM: the nodes of exactly the clusters it names go.
	if strings.HasPrefix(s.Name, "kind delete cluster") || strings.HasPrefix(s.Name, "remove cluster") {
		g.NodeContainers = slices.DeleteFunc(g.NodeContainers, func(n docker.Node) bool {
			return strings.Contains(s.Body, "\nkind_delete "+run.ShellQuote(n.Cluster)+"\n")
		})
	}
	return vm.Result{}, nil
}

type Docker struct{ *Fakes }

func (d Docker) Version(ctx context.Context) (string, error) {
	if err := d.Call("docker.version"); err != nil {
		return "", err
	}
	return "29.1.0", ctx.Err() // a cancelled request fails, as a real one does
}
func (d Docker) WaitReady(ctx context.Context, timeout time.Duration) (string, error) {
	if err := d.Call("docker.wait-ready"); err != nil {
		return "", err
	}
	d.Mu.Lock()
	hangs := d.DockerHangs
	d.Mu.Unlock()
	if !hangs {
		return "29.1.0", nil
	}
	select {
	case <-ctx.Done():
		_ = d.Call("docker.wait-ready cancelled")
		return "", ctx.Err()
	case <-time.After(min(timeout, dockerHang)):
		return "", errors.New("Docker did not answer")
	}
}
func (d Docker) InspectNetwork(_ context.Context, name string) (*docker.NetworkState, error) {
	err := d.Call("docker.inspect-network " + name)
	d.Mu.Lock()
	defer d.Mu.Unlock()
	return d.Network, err
}
func (d Docker) CreateNetwork(_ context.Context, spec docker.NetworkSpec) error {
	return d.Call("docker.create-network " + spec.Name)
}
func (d Docker) ListLabeled(_ context.Context, label string) ([]docker.Container, error) {
	d.Mu.Lock()
	var out []docker.Container
	for _, c := range d.Mirrors {
		if _, ok := c.Labels[label]; ok {
			out = append(out, c)
		}
	}
	if label == cluster.KindLabel {
		// kind's node containers, with the labels kind gives them.
		for _, n := range d.NodeContainers {
			c := n.Container
			c.Labels = map[string]string{cluster.KindLabel: n.Cluster, cluster.RoleLabel: n.Role}
			out = append(out, c)
		}
	}
	d.Mu.Unlock()
	return out, d.Call("docker.list " + label)
}
func (d Docker) KindNodes(context.Context, string, string) ([]docker.Node, error) {
	d.Mu.Lock()
	out := slices.Clone(d.NodeContainers)
	d.Mu.Unlock()
	return out, d.Call("docker.kind-nodes")
}
func (d Docker) Remove(_ context.Context, id string) error {
	if err := d.Call("docker.remove " + id); err != nil {
		return err
	}
	d.Mu.Lock()
	d.Mirrors = slices.DeleteFunc(d.Mirrors, func(c docker.Container) bool { return c.ID == id })
	d.Mu.Unlock()
	return nil
}
func (d Docker) Start(_ context.Context, id string) error {
	if err := d.Call("docker.start " + id); err != nil {
		return err
	}
	d.Mu.Lock()
	defer d.Mu.Unlock()
	for i := range d.NodeContainers {
		if d.NodeContainers[i].ID == id {
			d.NodeContainers[i].State = "running"
		}
	}
	return nil
}
func (d Docker) Stop(_ context.Context, id string) error {
	if err := d.Call("docker.stop " + id); err != nil {
		return err
	}
	d.Mu.Lock()
	defer d.Mu.Unlock()
	for i := range d.NodeContainers {
		if d.NodeContainers[i].ID == id {
			d.NodeContainers[i].State = "exited"
		}
	}
	return nil
}

// Started is the fake's fixed start time.
func (d Docker) Started(_ context.Context, id string) (time.Time, error) {
	return time.Unix(1_800_000_000, 0), d.Call("docker.started " + id)
}

// Memory is 300 MiB for a running node, none for a stopped one.
func (d Docker) Memory(_ context.Context, id string) (uint64, error) {
	err := d.Call("docker.memory " + id)
	d.Mu.Lock()
	defer d.Mu.Unlock()
	for _, n := range d.NodeContainers {
		if n.ID == id && n.State == "running" {
			return 300 << 20, err
		}
	}
	return 0, err
}
func (d Docker) EnsureImage(_ context.Context, ref string) error {
	return d.Call("docker.ensure-image")
}
func (d Docker) ImageID(_ context.Context, ref string) (string, error) {
	err := d.Call("docker.image-id " + ref)
	d.Mu.Lock()
	defer d.Mu.Unlock()
	return d.Images[ref], err
}
func (d Docker) ImageNames(context.Context) ([]string, error) {
	err := d.Call("docker.image-names")
	d.Mu.Lock()
	defer d.Mu.Unlock()
	return slices.Sorted(maps.Keys(d.Images)), err
}

// LoadArchive loads the names the archive lists, one per line, each as
// the id "sha256:" and the name's sha256.
func (d Docker) LoadArchive(_ context.Context, r io.Reader) ([]string, error) {
	if err := d.Call("docker.load"); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	names := strings.Fields(string(b))
	d.Mu.Lock()
	defer d.Mu.Unlock()
	if d.Images == nil {
		d.Images = map[string]string{}
	}
	for _, n := range names {
		d.Images[n] = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(n)))
	}
	return names, nil
}
func (d Docker) Run(_ context.Context, spec docker.RunSpec) error {
	if err := d.Call("docker.run " + spec.Name); err != nil {
		return err
	}
	d.Mu.Lock()
	d.Mirrors = append(d.Mirrors, docker.Container{ID: spec.Name + "-new", Name: spec.Name, State: "running", Labels: spec.Labels})
	d.Mu.Unlock()
	return nil
}
func (d Docker) Close() error { return nil }
func (d Docker) Named(_ context.Context, name string) (*docker.Container, error) {
	err := d.Call("docker.named " + name)
	d.Mu.Lock()
	defer d.Mu.Unlock()
	for _, c := range d.Mirrors {
		if c.Name == name {
			return &c, err
		}
	}
	return nil, err
}
func (d Docker) Endpoints(_ context.Context, network string) ([]docker.Endpoint, error) {
	err := d.Call("docker.endpoints " + network)
	d.Mu.Lock()
	defer d.Mu.Unlock()
	var out []docker.Endpoint
	for _, n := range d.NodeContainers {
		if !d.Detached[n.Name] {
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
func (d Docker) Reattach(_ context.Context, spec docker.NetworkSpec, eps []docker.Endpoint, _ func(string)) error {
	if err := d.Call(fmt.Sprintf("docker.reattach %s %d", spec.Name, len(eps))); err != nil {
		return err
	}
	d.Mu.Lock()
	if d.Detached == nil {
		d.Detached = map[string]bool{}
	}
	for _, ep := range eps {
		d.Detached[ep.Name] = true
	}
	d.Network = &docker.NetworkState{Driver: "bridge", Subnet: spec.Subnet, Gateway: spec.Gateway, IPRange: spec.IPRange, Options: spec.Options, Managed: true}
	d.Mu.Unlock()
	if err := d.Call("docker.reattach-half"); err != nil {
		return err
	}
	d.Mu.Lock()
	defer d.Mu.Unlock()
	for _, ep := range eps {
		for i := range d.NodeContainers {
			if d.NodeContainers[i].Name == ep.Name {
				d.NodeContainers[i].IP = ep.IP.String()
				delete(d.Detached, ep.Name)
			}
		}
	}
	d.Network.Containers = len(eps)
	return nil
}

// Host scripts the routing table; the route commands are production's.
type Host struct {
	*Fakes
	Real *host.Host
}

func (h Host) Lookup(_ context.Context, p netip.Prefix) (*host.Route, error) {
	if err := h.Call("host.lookup " + p.String()); err != nil {
		return nil, err
	}
	h.Mu.Lock()
	defer h.Mu.Unlock()
	// lima0 itself: on the vzNAT bridge, directly, unless told otherwise.
	if p.Bits() == 32 && p.Addr() == h.Lima0.Addr() {
		if h.Lima0Route != nil {
			r := *h.Lima0Route
			return &r, nil
		}
		return &host.Route{Dest: h.Lima0.Masked(), Interface: "bridge100"}, nil
	}
	if h.Route == nil {
		return &host.Route{Dest: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("192.168.1.1"), Interface: "en0"}, nil
	}
	r := *h.Route
	return &r, nil
}

// Privileged logs argv and carries out the resolver file changes marina
// makes (in the fixture's own resolver folder), as root would.
func (h Host) Privileged(_ context.Context, argv []string) error {
	if err := h.Call("host.privileged " + strings.Join(argv, " ")); err != nil {
		return err
	}
	in := func(p string) bool { return strings.HasPrefix(p, h.ResolverDir+"/") || p == h.ResolverDir }
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
func (h Host) Query(_ context.Context, server netip.Addr, name string) (dns.Answer, error) {
	if err := h.Call("host.query " + server.String() + " " + name); err != nil {
		return dns.Answer{}, err
	}
	return dns.Answer{Rcode: "NXDOMAIN"}, nil
}
func (h Host) RouteFix(s host.RouteStatus) []string { return h.Real.RouteFix(s) }

// FlushDNS is a Mac's, unless the world's host is Linux.
func (h Host) FlushDNS() ([][]string, error) {
	h.Mu.Lock()
	style := h.HostStyle
	h.Mu.Unlock()
	if style == "" {
		style = host.BSD
	}
	return (&host.Host{Style: style}).FlushDNS()
}
func (h Host) RouteRemove(s host.RouteStatus) []string { return h.Real.RouteRemove(s) }

// Sudoers is a Mac's, unless the world's host is Linux.
func (h Host) Sudoers(user string, cidr netip.Prefix, lima0 netip.Addr, resolver string, pods ...netip.Prefix) (string, error) {
	h.Mu.Lock()
	style := h.HostStyle
	h.Mu.Unlock()
	if style == "" {
		style = host.BSD
	}
	return (&host.Host{Style: style}).Sudoers(user, cidr, lima0, resolver, pods...)
}
func (h Host) DeleteCommand(p netip.Prefix, gw netip.Addr) []string {
	return h.Real.DeleteCommand(p, gw)
}
func (h Host) SourceFor(netip.Addr) (netip.Addr, error) {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	return h.Mac, nil
}

// ClientIP is what the echo server answers: the Mac's own address, unless
// the world says something on the way rewrote it (seen).
func (h Host) ClientIP(_ context.Context, lb netip.Addr) (string, string, error) {
	err := h.Call("host.client-ip " + lb.String())
	h.Mu.Lock()
	defer h.Mu.Unlock()
	seen := h.Seen
	if seen == "" {
		seen = h.Mac.String() + ":50000"
	}
	return seen, h.Mac.String(), err
}

// Kube is the Kube factory: one fake per cluster, named by its kubeconfig's
// context.
func (f *World) Kube(kc []byte, _ time.Duration) (session.Kube, error) {
	name := ""
	for _, l := range strings.Split(string(kc), "\n") {
		if v, ok := strings.CutPrefix(l, "current-context: "); ok {
			name = strings.TrimSpace(v)
		}
	}
	if name == "" {
		return nil, errors.New("fake kube: no current-context")
	}
	return Kube{f.Fakes, name}, nil
}

type Kube struct {
	*Fakes
	Name string
}

// Do records an add-on's operation by its name. What it applies holds to
// what reaches a real cluster: ExternalDNS's etcd user is the cluster's
// own, and metrics-server runs its image by digest.
func (k Kube) Do(_ context.Context, op addons.Op) error {
	for _, o := range op.Objects {
		if err := k.check(o); err != nil {
			return err
		}
	}
	return k.Call("kube " + k.Name + " " + op.Name)
}

func (k Kube) check(o *unstructured.Unstructured) error {
	switch {
	case o.GetKind() == "Secret" && o.GetName() == dns.ExternalDNSSecret:
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		user, _ := base64.StdEncoding.DecodeString(data["ETCD_USERNAME"])
		pw, _ := base64.StdEncoding.DecodeString(data["ETCD_PASSWORD"])
		if string(user) != dns.ClusterUser(k.Name) || len(pw) < 40 {
			return fmt.Errorf("ExternalDNS of %s got etcd user %q with a %d-character password", k.Name, user, len(pw))
		}
	case o.GetKind() == "Deployment" && o.GetName() == addons.MetricsServerName:
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			img, _ := c.(map[string]any)["image"].(string)
			if !regexp.MustCompile(`^registry.k8s.io/metrics-server/metrics-server:v[0-9.]+@sha256:[0-9a-f]{64}$`).MatchString(img) {
				return fmt.Errorf("metrics-server's manifest does not pin its image: %s", img)
			}
		}
	}
	return nil
}

func (k Kube) Wait(ctx context.Context, w addons.Wait) error {
	if err := k.Call("kube " + k.Name + " wait " + w.String()); err != nil {
		return err
	}
	return ctx.Err() // an interrupted wait ends, as a real one does
}
func (k Kube) NodeLabels(_ context.Context, node string) (map[string]string, error) {
	err := k.Call("kube " + k.Name + " node-labels " + node)
	k.Mu.Lock()
	defer k.Mu.Unlock()
	if l, ok := k.Labels[k.Name]; ok {
		return maps.Clone(l), err
	}
	return map[string]string{cluster.RegionLabel: "r"}, err
}
func (k Kube) LabelNodes(_ context.Context, set map[string]string, remove []string) error {
	if err := k.Call("kube " + k.Name + " label-nodes " + cluster.FormatLabels(set)); err != nil {
		return err
	}
	k.Mu.Lock()
	defer k.Mu.Unlock()
	if k.Labels == nil {
		k.Labels = map[string]map[string]string{}
	}
	l := k.Labels[k.Name]
	if l == nil {
		l = map[string]string{cluster.RegionLabel: "r"}
		k.Labels[k.Name] = l
	}
	maps.Copy(l, set)
	for _, r := range remove {
		delete(l, r)
	}
	return nil
}
func (k Kube) Nodes(context.Context) ([]kube.NodeInfo, error) {
	err := k.Call("kube " + k.Name + " nodes")
	k.Mu.Lock()
	defer k.Mu.Unlock()
	l := maps.Clone(k.Labels[k.Name])
	if l == nil {
		l = map[string]string{}
	}
	l["node-role.kubernetes.io/control-plane"] = ""
	ready := k.NotReady[k.Name] == 0
	if k.NotReady[k.Name] > 0 {
		k.NotReady[k.Name]--
	}
	return []kube.NodeInfo{{Name: k.Name + "-control-plane", Version: "v1.36.1", Ready: ready, Labels: l}}, err
}
func (k Kube) Back(_ context.Context, _ time.Time, nodes int, restarted, ns []string) (bool, string, error) {
	if err := k.Call(fmt.Sprintf("kube %s back %d %s since the start of %s", k.Name, nodes, strings.Join(ns, ","), strings.Join(restarted, ","))); err != nil {
		return false, "", err
	}
	return true, fmt.Sprintf("%d nodes Ready", nodes), nil
}
func (k Kube) DeployEcho(_ context.Context, e kube.Echo) error {
	return k.Call("kube " + k.Name + " deploy-echo")
}
func (k Kube) EchoAddress(context.Context, string) (netip.Addr, error) {
	err := k.Call("kube " + k.Name + " echo-address")
	k.Mu.Lock()
	defer k.Mu.Unlock()
	if k.Echo.IsValid() {
		return k.Echo, err
	}
	return netip.MustParseAddr("172.30.1.1"), err
}
func (k Kube) LoadBalancers(context.Context) ([]kube.LoadBalancer, error) {
	err := k.Call("kube " + k.Name + " load-balancers")
	k.Mu.Lock()
	defer k.Mu.Unlock()
	return slices.Clone(k.LBs[k.Name]), err
}
func (k Kube) DeleteNamespace(_ context.Context, ns string) error {
	return k.Call("kube " + k.Name + " delete-namespace")
}

// corefileWrite finds the Corefile a script installs in the VM.
var corefileWrite = regexp.MustCompile(`put ` + regexp.QuoteMeta(dns.CorefilePath) + ` 0600 <<'EOF' \|\| true\n((?s:.*?\n))EOF\n`)

// addonsWrite is the addons record a script writes for cluster (what up
// writes for an older cluster, or kind create's file), and whether it
// writes one.
func addonsWrite(body, cluster string) (guest.Addons, bool) {
	q := regexp.QuoteMeta(cluster)
	for _, re := range []string{
		`printf '%s\\n' '?((?:dns|registry)=[^'\n]+)'? >/etc/marina/clusters/` + q + `/addons`,
		`put /etc/marina/clusters/` + q + `/addons 0644 <<'EOF'[^\n]*\n((?:dns|registry)=[^\n]+)\n`,
	} {
		if m := regexp.MustCompile(re).FindStringSubmatch(body); m != nil {
			var a guest.Addons
			for _, f := range strings.Fields(m[1]) {
				if v, ok := strings.CutPrefix(f, "dns="); ok {
					a.DNS = v
				}
				if v, ok := strings.CutPrefix(f, "registry="); ok {
					a.Registry = v
				}
				a.Auth = a.Auth || f == "dnsauth=1"
			}
			return a, true
		}
	}
	return guest.Addons{}, false
}

// Said is everything res says, one line each: the plan's steps (or why
// there are none), then its lines. Tests search it; the CLI's view of a
// Result is printResult's.
func Said(res session.Result) string {
	var lines []string
	if p := res.Plan; p != nil {
		for _, s := range p.Steps {
			lines = append(lines, s.String())
		}
		if len(p.Steps) == 0 {
			lines = append(lines, p.None)
		}
	}
	return strings.Join(append(lines, res.Lines...), "\n")
}
