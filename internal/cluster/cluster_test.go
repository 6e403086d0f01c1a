package cluster

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/slot"
)

func TestCheckName(t *testing.T) {
	good := []string{"dev", "a", "east-1", "0day", strings.Repeat("a", MaxNameLen)}
	bad := []string{"", "Dev", "-dev", "dev-", "dev_1", "dev.1", "dev 1", strings.Repeat("a", MaxNameLen+1), "a;rm -rf /", "é"}
	for _, n := range good {
		if err := CheckName(n); err != nil {
			t.Errorf("CheckName(%q) = %v", n, err)
		}
	}
	for _, n := range bad {
		if err := CheckName(n); err == nil {
			t.Errorf("CheckName(%q) accepted it", n)
		}
	}
	// The longest name still makes a valid hostname for kind's longest node.
	if l := len(strings.Repeat("a", MaxNameLen) + "-control-plane"); l != 63 {
		t.Errorf("longest node name is %d characters", l)
	}
}

func TestParseLabels(t *testing.T) {
	set, remove, err := ParseLabels([]string{"team=net", "env=", "example.com/owner=me", "old-", "a=b=c"})
	if err == nil {
		t.Fatalf("a=b=c has an invalid value and was accepted: %v %v", set, remove)
	}
	set, remove, err = ParseLabels([]string{"team=net", "env=", "example.com/owner=me", "old-", "team=sre"})
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 3 || set["team"] != "sre" || set["env"] != "" || set["example.com/owner"] != "me" {
		t.Errorf("set = %v", set)
	}
	if len(remove) != 1 || remove[0] != "old" {
		t.Errorf("remove = %v", remove)
	}
	for _, bad := range []string{"novalue", "=v", "Bad Key=v", "k=" + strings.Repeat("v", 64), "-=x", "a/b/c=d", "k=v;rm"} {
		if _, _, err := ParseLabels([]string{bad}); err == nil {
			t.Errorf("ParseLabels(%q) accepted it", bad)
		}
	}
}

func TestCheckKubeletLabels(t *testing.T) {
	for _, ok := range []Labels{{"team": "net"}, {"example.com/x": "y"}, {"node.kubernetes.io/pool": "a"}, {"kubelet.kubernetes.io/x": "y"}} {
		if err := CheckKubeletLabels(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range []Labels{{"kubernetes.io/role": "x"}, {"node-role.kubernetes.io/edge": ""}, {"k8s.io/x": "y"}, {RegionLabel: "x"}} {
		if err := CheckKubeletLabels(bad); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}

func spec() Spec {
	return Spec{
		Name: "dev", Slot: 3, Region: "europe-west3", Zone: "europe-west3-b",
		Labels: Labels{"team": "net"}, Workers: 2,
		ListenAddress: "0.0.0.0", SANs: []string{"192.168.64.2", "127.0.0.1"},
		CertsD: "/etc/marina/clusters/dev/certs.d", ContainerdPatch: "[plugins]\n",
	}
}

func TestKindConfig(t *testing.T) {
	b, err := spec().KindConfig()
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatalf("kind's own types do not read it back: %v\n%s", err, b)
	}
	if c.Kind != "Cluster" || c.APIVersion != "kind.x-k8s.io/v1alpha4" || c.Name != "dev" {
		t.Errorf("header = %+v", c.TypeMeta)
	}
	n := c.Networking
	if n.APIServerAddress != "0.0.0.0" || n.APIServerPort != 7003 || n.ServiceSubnet != "10.3.0.0/16" || n.PodSubnet != "10.13.0.0/16" || n.DisableDefaultCNI {
		t.Errorf("networking = %+v", n)
	}
	if len(c.Nodes) != 3 || c.Nodes[0].Role != v1alpha4.ControlPlaneRole || c.Nodes[1].Role != v1alpha4.WorkerRole {
		t.Fatalf("nodes = %+v", c.Nodes)
	}
	for _, node := range c.Nodes {
		want := map[string]string{"managed-by": "marina", RegionLabel: "europe-west3", ZoneLabel: "europe-west3-b", "team": "net"}
		// The control plane alone is ingress-ready, as kind's ingress
		// guides have it.
		if node.Role == v1alpha4.ControlPlaneRole {
			want[IngressReady] = "true"
		}
		if len(node.Labels) != len(want) {
			t.Errorf("labels = %v", node.Labels)
		}
		for k, v := range want {
			if node.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
			}
		}
		if len(node.ExtraMounts) != 1 || node.ExtraMounts[0].ContainerPath != "/etc/containerd/certs.d" || !node.ExtraMounts[0].Readonly {
			t.Errorf("mounts = %+v", node.ExtraMounts)
		}
	}
	if len(c.KubeadmConfigPatches) != 1 || !strings.Contains(c.KubeadmConfigPatches[0], "kind: ClusterConfiguration") {
		t.Fatalf("kubeadm patches = %q", c.KubeadmConfigPatches)
	}
	var patch struct {
		APIServer struct {
			CertSANs []string `json:"certSANs"`
		} `json:"apiServer"`
	}
	if err := yaml.Unmarshal([]byte(c.KubeadmConfigPatches[0]), &patch); err != nil || strings.Join(patch.APIServer.CertSANs, ",") != "127.0.0.1,192.168.64.2" {
		t.Errorf("certSANs = %v, %v", patch.APIServer.CertSANs, err)
	}
	if len(c.ContainerdConfigPatches) != 1 {
		t.Errorf("containerd patches = %q", c.ContainerdConfigPatches)
	}
}

// --cni none is kind's networking.disableDefaultCNI, and only it: the
// ranges stay the slot's, for the user's CNI to allocate from.
func TestKindConfigNoCNI(t *testing.T) {
	for _, cni := range []string{"", CNIKindnet, CNINone} {
		s := spec()
		s.CNI = cni
		b, err := s.KindConfig()
		if err != nil {
			t.Fatal(err)
		}
		var c v1alpha4.Cluster
		if err := yaml.UnmarshalStrict(b, &c); err != nil {
			t.Fatal(err)
		}
		if n := c.Networking; n.DisableDefaultCNI != (cni == CNINone) || n.PodSubnet != "10.13.0.0/16" || n.ServiceSubnet != "10.3.0.0/16" {
			t.Errorf("cni %q: networking = %+v", cni, n)
		}
	}
}

func TestKindConfigHighSlot(t *testing.T) {
	s := spec()
	s.Slot = 42
	b, err := s.KindConfig()
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Networking.ServiceSubnet != slot.ServiceSubnet(42).String() || c.Networking.PodSubnet != slot.PodSubnet(42).String() || c.Networking.APIServerPort != 7042 {
		t.Errorf("networking = %+v", c.Networking)
	}
}

func TestKindConfigRefusesBadInput(t *testing.T) {
	cases := map[string]func(*Spec){
		"name":      func(s *Spec) { s.Name = "Dev" },
		"slot":      func(s *Spec) { s.Slot = 100 },
		"workers":   func(s *Spec) { s.Workers = MaxWorkers + 1 },
		"region":    func(s *Spec) { s.Region = "europe west" },
		"zone":      func(s *Spec) { s.Zone = "" },
		"label":     func(s *Spec) { s.Labels = Labels{"kubernetes.io/role": "x"} },
		"listen":    func(s *Spec) { s.ListenAddress = "lima0" },
		"san":       func(s *Spec) { s.SANs = []string{"192.168.64.2; rm"} },
		"san empty": func(s *Spec) { s.SANs = []string{""} },
		"cni":       func(s *Spec) { s.CNI = "cilium" },
	}
	for what, change := range cases {
		s := spec()
		change(&s)
		if b, err := s.KindConfig(); err == nil {
			t.Errorf("%s: accepted\n%s", what, b)
		}
	}
}

func node(cluster, role string, state string, ports ...int) docker.Node {
	return docker.Node{Container: docker.Container{Name: cluster + "-" + role, State: state}, Cluster: cluster, Role: role, APIPorts: ports}
}

func TestGroupAndFree(t *testing.T) {
	nodes := []docker.Node{
		node("b", "control-plane", "running", 7002),
		node("b", "worker", "running"),
		node("a", "control-plane", "running", 7001),
		node("x", "control-plane", "exited", 6443), // not a marina port
		node("c", "control-plane", "created", 7004),
		// Labels anyone could write: never a cluster marina acts on.
		node("../../etc", "control-plane", "running", 7009),
		node("a b", "control-plane", "running", 7008),
		node("", "control-plane", "running", 7007),
	}
	cs := Group(nodes)
	if strings.Join(Names(cs), ",") != "a,b,c,x" {
		t.Fatalf("names = %v", Names(cs))
	}
	slots := []int{cs[0].Slot, cs[1].Slot, cs[2].Slot, cs[3].Slot}
	if slots[0] != 1 || slots[1] != 2 || slots[2] != 4 || slots[3] != 0 {
		t.Errorf("slots = %v", slots)
	}
	if len(cs[1].Nodes) != 2 || !cs[1].Running() || cs[2].Running() {
		t.Errorf("b = %+v, c running = %v", cs[1], cs[2].Running())
	}
	n, err := Free(cs, nil)
	if err != nil || n != 3 {
		t.Errorf("Free = %d, %v", n, err)
	}
	n, err = Free(cs, []Reservation{{Slot: 3}})
	if err != nil || n != 5 {
		t.Errorf("Free with 3 reserved = %d, %v", n, err)
	}
	var full []Info
	for i := slot.Min; i <= slot.Max; i++ {
		full = append(full, Info{Name: strconv.Itoa(i), Slot: i})
	}
	if _, err := Free(full, nil); err == nil {
		t.Error("Free found a slot in a full VM")
	}
}

func TestReservations(t *testing.T) {
	r := Reservations{Dir: filepath.Join(t.TempDir(), "slots")}
	if held, err := r.List(); err != nil || len(held) != 0 {
		t.Fatalf("empty: %v %v", held, err)
	}
	res, err := r.Take(4, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(r.Dir, "4")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("reservation file: %v %v", fi, err)
	}
	// A reservation of a process that is gone does not hold its slot.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "5"), []byte(strconv.Itoa(dead.Process.Pid)+" old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := r.List()
	if err != nil || len(held) != 1 || held[0].Slot != 4 || held[0].Name != "dev" || held[0].PID != os.Getpid() {
		t.Fatalf("held = %+v, %v", held, err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "5")); !os.IsNotExist(err) {
		t.Error("the dead reservation was not cleared")
	}
	res.Release()
	if held, _ := r.List(); len(held) != 0 {
		t.Errorf("after release: %+v", held)
	}
}

// A cluster's API address mode is the address its control plane's API
// port is published on, as Docker shows it.
func TestGroupReadsTheAPIAddressMode(t *testing.T) {
	lo := node("lo", "control-plane", "running", 7001)
	lo.APIHosts = map[int]string{7001: "127.0.0.1"}
	all := node("all", "control-plane", "running", 7002)
	all.APIHosts = map[int]string{7002: "0.0.0.0"}
	unset := node("unset", "control-plane", "running", 7003)
	got := map[string]bool{}
	for _, c := range Group([]docker.Node{lo, all, unset}) {
		got[c.Name] = c.Loopback()
	}
	if want := map[string]bool{"lo": true, "all": false, "unset": false}; !maps.Equal(got, want) {
		t.Errorf("loopback = %v, want %v", got, want)
	}
}

// A user's own ingress-ready label is kept as given, on every node.
func TestKindConfigIngressReadyOfTheUser(t *testing.T) {
	s := spec()
	s.Labels = Labels{IngressReady: "false"}
	b, err := s.KindConfig()
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if n.Labels[IngressReady] != "false" {
			t.Errorf("%s: ingress-ready=%q", n.Role, n.Labels[IngressReady])
		}
	}
}
