package status

import (
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/podnet"
	"github.com/bcollard/marina/internal/session"
)

func node(name, role, state, ip string) docker.Node {
	return docker.Node{Container: docker.Container{Name: name, State: state, IP: ip}, Role: role}
}

// The podRouting section judges each cluster's routes against its running
// nodes, the Mac's routes against the plan, and the VM's service.
func TestPodsOf(t *testing.T) {
	lima0 := netip.MustParseAddr("192.168.64.2")
	var routes []host.Route
	for _, p := range podnet.HostRoutes() {
		routes = append(routes, host.Route{Dest: p, Gateway: lima0, Interface: "bridge100"})
	}
	made, err := host.LoadMade(filepath.Join(t.TempDir(), "made.json"), host.Own{Networks: podnet.HostRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	dev := cluster.Info{Name: "dev", Slot: 1, Nodes: []docker.Node{
		node("dev-control-plane", "control-plane", "running", "172.30.128.6"),
		node("dev-worker", "worker", "running", "172.30.128.7"),
	}}
	ops := cluster.Info{Name: "ops", Slot: 2, Nodes: []docker.Node{node("ops-control-plane", "control-plane", "running", "172.30.128.9")}}
	stopped := cluster.Info{Name: "old", Slot: 3, Nodes: []docker.Node{node("old-control-plane", "control-plane", "exited", "")}}
	foreign := cluster.Info{Name: "kind", Nodes: []docker.Node{node("kind-control-plane", "control-plane", "running", "172.30.128.20")}}
	vm := strings.Join([]string{
		"active active",
		"route 10.11.0.0/24 via 172.30.128.6 dev br-kind",
		"route 10.11.1.0/24 via 172.30.128.7 dev br-kind",
		"route 10.1.0.0/16 via 172.30.128.7 dev br-kind",
		// ops' node came back with another address: its route is stale,
		// and the service range is not routed.
		"route 10.12.0.0/24 via 172.30.128.8 dev br-kind",
	}, "\n")
	o := &session.Observed{Guest: guest.State{Podnet: vm}, PodRoutes: routes}
	p := PodsOf(o, []cluster.Info{dev, ops, stopped, foreign}, lima0, made)
	if p == nil || p.HostRoutes != 11 || p.Total != 11 || !p.Service || len(p.Clusters) != 3 {
		t.Fatalf("PodsOf = %+v", p)
	}
	byName := map[string]PodClusterStatus{}
	for _, c := range p.Clusters {
		byName[c.Name] = c
	}
	if c := byName["dev"]; !c.OK || c.Running != 2 || c.Routed != 2 || c.ServicesVia != "172.30.128.7" || c.Pods != "10.11.0.0/16" {
		t.Errorf("dev: %+v", c)
	}
	if c := byName["ops"]; c.OK || len(c.Stale) != 1 || c.Stale[0] != "10.12.0.0/24 via 172.30.128.8" || c.ServicesVia != "" {
		t.Errorf("ops: %+v", c)
	}
	if c := byName["old"]; !c.OK || c.Running != 0 {
		t.Errorf("a stopped cluster has nothing to route: %+v", c)
	}
	if p.OK || !strings.Contains(strings.Join(p.Failing(), "; "), "ops: pods 10.12.0.0/16: 0 of 1 running nodes routed; services 10.2.0.0/16 not routed; stale: 10.12.0.0/24 via 172.30.128.8") {
		t.Errorf("failing: %v", p.Failing())
	}
	// Every route where it must be: OK.
	ops.Nodes[0].IP = "172.30.128.8"
	o = &session.Observed{Guest: guest.State{Podnet: vm + "\nroute 10.2.0.0/16 via 172.30.128.8 dev br-kind"}, PodRoutes: routes}
	if p = PodsOf(o, []cluster.Info{dev, ops, stopped, foreign}, lima0, made); !p.OK || len(p.Failing()) != 0 {
		t.Errorf("all routed: %+v, failing %v", p, p.Failing())
	}
	// The host's routes unknown: said as such, not as missing.
	o.PodRoutes, o.PodRoutesErr = nil, errors.New("netstat: exit status 1")
	if p = PodsOf(o, []cluster.Info{dev}, lima0, made); p.OK || !strings.Contains(strings.Join(p.Failing(), ";"), "this host's routes could not be read: netstat") || strings.Contains(strings.Join(p.Failing(), ";"), "0 of 11") {
		t.Errorf("routes unknown: %v", p.Failing())
	}
	// A VPN's route inside the space, a missing host route, no service.
	vpn := host.Route{Dest: netip.MustParsePrefix("10.5.0.0/16"), Gateway: netip.MustParseAddr("10.99.0.1"), Interface: "utun4"}
	o = &session.Observed{Guest: guest.State{Podnet: ""}, PodRoutes: append(routes[1:], vpn)}
	p = PodsOf(o, []cluster.Info{dev}, lima0, made)
	f := strings.Join(p.Failing(), "; ")
	for _, want := range []string{"host routes: 10 of 11 present", "10.5.0.0/16 via 10.99.0.1 on utun4", "marina-podnet.service not running"} {
		if !strings.Contains(f, want) {
			t.Errorf("failing lacks %q: %s", want, f)
		}
	}
}
