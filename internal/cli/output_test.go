package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/cli/show"
	"github.com/bcollard/marina/internal/status"
)

// status's text ends with the clusters of a running VM: one line each,
// (none), or unknown when Docker could not list them; a VM that does not
// run has no such section.
func TestPrintStatusClusters(t *testing.T) {
	running := status.VMStatus{Name: "marina", Status: "Running", VMType: "vz", Arch: "aarch64", CPUs: 4, Memory: "10GiB", Disk: "40GiB"}
	list := []status.ClusterStatus{{Name: "dev", Slot: 1, Nodes: 1, State: "running"}, {Name: "east-long", Slot: 12, Nodes: 3, State: "stopped"}, {Name: "odd", Nodes: 1, State: "running"}}
	none := []status.ClusterStatus{}
	for _, c := range []struct {
		name string
		st   status.Status
		want string // the end of the text; "" for no clusters section
	}{
		{"clusters", status.Status{VM: running, Clusters: &list},
			"=== Clusters ===\n  dev        slot 1   running  1 node\n  east-long  slot 12  stopped  3 nodes\n  odd        slot -   running  1 node\n"},
		{"none", status.Status{VM: running, Clusters: &none},
			"=== Clusters ===\n  (none): `marina cluster create NAME` makes one\n"},
		{"unknown", status.Status{VM: running},
			"=== Clusters ===\n  unknown: Docker did not list them (the VM's problems above say why)\n"},
		{"stopped VM", status.Status{VM: status.VMStatus{Name: "marina", Status: "Stopped"}}, ""},
		{"no VM", status.Status{VM: status.VMStatus{Name: "marina", Status: status.NotCreated}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			show.Status(&b, c.st)
			out := b.String()
			if c.want == "" {
				if strings.Contains(out, "Clusters") {
					t.Errorf("a clusters section:\n%s", out)
				}
				return
			}
			if !strings.HasSuffix(out, c.want) {
				t.Errorf("status text ends:\n%s\nwant it to end:\n%s", out, c.want)
			}
		})
	}
}

// status's default view: one line per part with its mark and its first
// problem; a mirror that does not run is a warning; colour only when on.
func TestStatusGlance(t *testing.T) {
	running := status.VMStatus{Name: "marina", Status: "Running", CPUs: 4, Memory: "10GiB", Lima0: "192.168.64.3/24", Docker: "29.1.0"}
	route := status.RouteStatus{CIDR: "172.30.0.0/16", State: "present", Line: "172.30.0.0/16 → present (via 192.168.64.3)"}
	guest := &status.GuestStatus{KindNetwork: &status.KindNetworkStatus{Present: true}, Checks: []status.CheckStatus{
		{What: "IPv4 forwarding", OK: true}, {What: "Mac → kind network", OK: false}, {What: "jump into marina's rules", OK: false}}}
	mirrors := []status.MirrorState{{Name: "registry-dockerio", State: "running", NodeImageBytes: 1 << 30}, {Name: "registry-gcrio", State: "restarting"}}
	none := []status.ClusterStatus{}
	for _, c := range []struct {
		name   string
		st     status.Status
		colour bool
		want   []string
	}{
		{"broken rules and a restarting mirror", status.Status{VM: running, Route: route, Guest: guest, Mirrors: &mirrors, Clusters: &none}, false, []string{
			"✓ VM       marina: Running, 4 CPUs, 10GiB memory, lima0 192.168.64.3/24, Docker 29.1.0\n",
			"✓ route    172.30.0.0/16 → present (via 192.168.64.3)\n",
			"✗ network  Mac → kind network (and 1 more): `marina up` puts it back\n",
			"! mirrors  1 of 2 running; registry-dockerio holds 1GiB of node images; registry-gcrio restarting: `marina doctor` says why\n",
			"\nNo clusters: `marina cluster create NAME` makes one\n",
		}},
		{"pods routed", status.Status{VM: running, Route: route, Pods: &status.PodsStatus{HostRoutes: 11, Total: 11, Service: true, OK: true,
			Clusters: []status.PodClusterStatus{{Name: "dev", OK: true}, {Name: "ops", OK: true}}}}, false, []string{
			"✓ pods     pods and ClusterIPs of 2 clusters routed from the Mac and between clusters (11 host routes)\n",
		}},
		{"a pod route stale", status.Status{VM: running, Route: route, Pods: &status.PodsStatus{HostRoutes: 11, Total: 11, Service: true,
			Clusters: []status.PodClusterStatus{{Name: "dev", OK: true}, {Name: "ops", Line: "pods 10.12.0.0/16: 0 of 1 running nodes routed"}}}}, false, []string{
			"✗ pods     ops: pods 10.12.0.0/16: 0 of 1 running nodes routed: `marina up` puts it back\n",
		}},
		{"a stopped VM", status.Status{VM: status.VMStatus{Name: "marina", Status: "Stopped"}, Route: status.RouteStatus{CIDR: "172.30.0.0/16", State: "missing", Line: "172.30.0.0/16 → missing"}}, false, []string{
			"- VM       marina: Stopped: `marina up` starts it\n",
			"- route    172.30.0.0/16 → missing\n",
		}},
		{"colour", status.Status{VM: running, Route: route, Guest: guest, Mirrors: &mirrors}, true, []string{
			"\x1b[32m✓\x1b[0m VM", "\x1b[31m✗\x1b[0m network", "\x1b[33m!\x1b[0m mirrors",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			show.Style{Colour: c.colour}.Status(&b, c.st)
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("status lacks %q:\n%s", w, b.String())
				}
			}
			if !c.colour && strings.Contains(b.String(), "\x1b") {
				t.Errorf("colour without a terminal:\n%q", b.String())
			}
			if c.st.VM.Status != "Running" && strings.Contains(b.String(), "CLUSTER") {
				t.Errorf("clusters of a VM that does not run:\n%s", b.String())
			}
		})
	}
}
