package podnet

import (
	"context"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/slot"
)

var (
	kindNet = netip.MustParsePrefix("172.30.0.0/16")
	mac     = netip.MustParseAddr("192.168.105.1")
	lima0   = netip.MustParseAddr("192.168.105.2")
)

// A node's rules exempt its pods towards every other slot's ranges and
// nothing of its own cluster's: its own service range stays subject to
// kube-proxy, its own pods to kindnetd's RETURN.
func TestNodeRules(t *testing.T) {
	for _, n := range []int{1, 3, 9, 10, 57, 99} {
		rules := NodeRules(n, mac)
		var dests, froms []netip.Prefix
		for _, r := range rules {
			f := strings.Fields(r)
			switch {
			case len(f) == 8 && f[2] == "-s" && f[4] == "-d" && f[6] == "-j" && f[7] == "ACCEPT":
				if f[3] != slot.PodSubnet(n).String() {
					t.Errorf("slot %d: %q exempts a source other than its pods", n, r)
				}
				dests = append(dests, netip.MustParsePrefix(f[5]))
			case len(f) == 9 && f[2] == "-s" && f[4] == "!" && f[5] == "-o" && f[6] == "eth0" && f[8] == "ACCEPT":
				froms = append(froms, netip.MustParsePrefix(f[3]))
			default:
				t.Errorf("slot %d: unexpected rule %q", n, r)
			}
		}
		own := []netip.Prefix{slot.PodSubnet(n), slot.ServiceSubnet(n)}
		for _, d := range dests {
			if slices.ContainsFunc(own, d.Overlaps) {
				t.Errorf("slot %d: %s overlaps its own ranges", n, d)
			}
		}
		if got, want := union(append(slices.Clone(dests), own...)), union(HostRoutes()); !slices.Equal(got, want) {
			t.Errorf("slot %d: the exemptions and its own ranges cover %v, want every slot's %v", n, got, want)
		}
		if !slices.Contains(froms, netip.PrefixFrom(mac, 32)) || !slices.Equal(union(froms[1:]), union(dests)) {
			t.Errorf("slot %d: the sources kept towards local pods are %v, want the Mac and %v", n, froms, dests)
		}
	}
}

// Names and addresses that reach the VM's files are checked first.
func TestConfRefuses(t *testing.T) {
	for _, c := range []struct {
		c    Cluster
		kind netip.Prefix
		mac  netip.Addr
	}{
		{Cluster{"../etc/passwd", 1}, kindNet, mac},
		{Cluster{"a b", 1}, kindNet, mac},
		{Cluster{"$(reboot)", 1}, kindNet, mac},
		{Cluster{"Dev", 1}, kindNet, mac},
		{Cluster{"dev", 0}, kindNet, mac},
		{Cluster{"dev", 100}, kindNet, mac},
		{Cluster{"dev", 1}, netip.MustParsePrefix("172.30.1.0/16"), mac},
		{Cluster{"dev", 1}, kindNet, netip.Addr{}},
		{Cluster{"dev", 1}, kindNet, netip.MustParseAddr("127.0.0.1")},
	} {
		if _, err := Conf(c.c, c.kind, c.mac); err == nil {
			t.Errorf("Conf(%v, %s, %s) accepted", c.c, c.kind, c.mac)
		}
	}
	if _, err := Forget([]string{"dev", "x;reboot"}); err == nil {
		t.Error("Forget accepted x;reboot")
	}
	f, err := Conf(Cluster{"dev", 3}, kindNet, mac)
	if err != nil || f.Path != ConfDir+"/dev.conf" || !strings.Contains(f.Content, "\npods 10.13.0.0/16\nservices 10.3.0.0/16\n") {
		t.Errorf("Conf = %+v, %v", f, err)
	}
}

// What the VM prints is read for what it must be; anything else is left
// out, and routes outside the pod space are never marina's.
func TestParseHostile(t *testing.T) {
	sum := strings.Repeat("a", 64)
	st := Parse(strings.Join([]string{
		"file " + sum + " " + ScriptPath,
		"file " + sum + " /etc/passwd",
		"file $(reboot) " + UnitPath,
		"active active",
		"route 10.3.1.0/24 via 172.30.0.3 dev br-kind",
		"route 10.3.1.7/24 via 172.30.0.3 dev br-kind",
		"route 192.168.1.0/24 via 172.30.0.3 dev br-kind",
		"route 10.4.0.0/16 via ; dev br-kind",
	}, "\n"))
	if len(st.Files) != 1 || st.Files[ScriptPath] != sum || !st.Active {
		t.Errorf("files %v active %v", st.Files, st.Active)
	}
	if len(st.Routes) != 1 || st.Routes[netip.MustParsePrefix("10.3.1.0/24")] != netip.MustParseAddr("172.30.0.3") {
		t.Errorf("routes %v", st.Routes)
	}
}

func made(t *testing.T, routes ...host.MadeRoute) *host.Made {
	t.Helper()
	m, err := host.LoadMade(filepath.Join(t.TempDir(), "made.json"), host.Own{Networks: HostRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if err := m.Add(r.CIDR, r.Gateway); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestPlanUp(t *testing.T) {
	clusters := []Cluster{{"dev", 1}, {"pods", 2}}
	hr := HostRoutes()
	// On, nothing there yet: every prefix is added, the VM gets its files.
	p, err := PlanUp(true, clusters, Parse(""), nil, lima0, kindNet, mac, made(t))
	if err != nil || len(p.Adds()) != len(hr) || !p.Guest || len(p.Removes()) != 0 {
		t.Fatalf("on, from nothing: %+v, %v", p, err)
	}
	// A VPN's route inside the space: the Mac's routes are refused, the
	// VM still routes between the clusters.
	vpn := host.Route{Dest: netip.MustParsePrefix("10.5.0.0/16"), Gateway: netip.MustParseAddr("10.99.0.1"), Interface: "utun4"}
	p, err = PlanUp(true, clusters, Parse(""), []host.Route{vpn}, lima0, kindNet, mac, made(t))
	if err != nil || p.Refused == nil || !strings.Contains(p.Refused.Error(), "10.5.0.0/16 via 10.99.0.1 on utun4") || !strings.Contains(p.Refused.Error(), "network.podRouting: false") ||
		len(p.Adds()) != 0 || !p.Guest {
		t.Errorf("a VPN's route: %+v, %v", p, err)
	}
	// On with no cluster yet: the service is installed all the same, and
	// once it runs nothing is left to do.
	p, _ = PlanUp(true, nil, Parse(""), nil, lima0, kindNet, mac, made(t))
	if !p.Guest || !p.On || len(p.Clusters) != 0 {
		t.Errorf("on, no cluster: %+v", p)
	}
	none, _ := Want(nil, kindNet, mac)
	var installed []string
	for path, sum := range none {
		installed = append(installed, "file "+sum+" "+path)
	}
	if p, _ = PlanUp(true, nil, Parse(strings.Join(append(installed, "active active"), "\n")), nil, lima0, kindNet, mac, made(t)); p.Guest {
		t.Errorf("on, no cluster, service installed: %+v", p.Why)
	}
	// Off: only the routes marina recorded go; an equal route of someone
	// else's stays.
	mine := host.Route{Dest: hr[0], Gateway: lima0, Interface: "bridge100"}
	theirs := host.Route{Dest: hr[1], Gateway: netip.MustParseAddr("192.168.1.1"), Interface: "en0"}
	p, err = PlanUp(false, clusters, Parse(""), []host.Route{mine, theirs}, lima0, kindNet, mac, made(t, host.MadeRoute{CIDR: hr[0], Gateway: lima0}))
	if err != nil || len(p.Adds()) != 0 || len(p.Removes()) != 1 || p.Removes()[0].Want != hr[0] || p.Guest {
		t.Errorf("off: %+v, %v", p, err)
	}
	// Off with the VM still routing: it is cleaned.
	p, _ = PlanUp(false, nil, Parse("active active"), nil, lima0, kindNet, mac, made(t))
	if !p.Guest || !strings.Contains(strings.Join(p.Steps(), "\n"), "remove "+ScriptPath) {
		t.Errorf("off, VM still routing: %+v", p)
	}
	// On and all there: nothing to do.
	want, _ := Want(clusters, kindNet, mac)
	var lines []string
	for path, sum := range want {
		lines = append(lines, "file "+sum+" "+path)
	}
	var present []host.Route
	for _, pr := range hr {
		present = append(present, host.Route{Dest: pr, Gateway: lima0, Interface: "bridge100"})
	}
	p, err = PlanUp(true, clusters, Parse(strings.Join(append(lines, "active active"), "\n")), present, lima0, kindNet, mac, made(t))
	if err != nil || p.Guest || len(p.Adds()) != 0 || len(p.Steps()) != 0 {
		t.Errorf("all there: %+v, %v", p, err)
	}
	// A cluster gone: its file is named, and only it is removed.
	p, _ = PlanUp(true, clusters[:1], Parse(strings.Join(append(lines, "active active"), "\n")), present, lima0, kindNet, mac, made(t))
	if !p.Guest || !slices.Contains(p.Why, ConfDir+"/pods.conf is of a cluster no longer routed") || !slices.Equal(p.Stale, []string{ConfDir + "/pods.conf"}) {
		t.Errorf("a cluster gone: %+v %v", p.Why, p.Stale)
	}
	b := guest.NewBatch()
	if err := Apply(b, p, kindNet, mac); err != nil {
		t.Fatal(err)
	}
	if sc := b.Script(); !strings.Contains(sc, "rm -f -- "+ConfDir+"/pods.conf") || strings.Contains(sc, "rm -f -- "+ConfDir+"/dev.conf") {
		t.Errorf("apply removes other than the stale file:\n%s", sc)
	}
}

// fakeHost records the privileged commands ApplyHost runs.
type fakeHost struct{ ran []string }

func (f *fakeHost) Privileged(_ context.Context, argv []string) error {
	f.ran = append(f.ran, strings.Join(argv, " "))
	return nil
}
func (f *fakeHost) RouteFix(s host.RouteStatus) []string {
	return []string{"add", s.Want.String(), s.Via.String()}
}
func (f *fakeHost) RouteRemove(s host.RouteStatus) []string { return []string{"del", s.Want.String()} }

// ApplyHost records what it adds, and forgets what it removes: only a
// recorded route is ever removed again.
func TestApplyHost(t *testing.T) {
	m := made(t)
	p, _ := PlanUp(true, nil, Parse(""), nil, lima0, kindNet, mac, m)
	h := &fakeHost{}
	if err := p.ApplyHost(context.Background(), h, m); err != nil {
		t.Fatal(err)
	}
	if len(h.ran) != 11 || !Recorded(m) || len(m.Gateways(HostRoutes()[3])) != 1 {
		t.Fatalf("ran %v, recorded %v", h.ran, m.Routes)
	}
	var present []host.Route
	for _, pr := range HostRoutes() {
		present = append(present, host.Route{Dest: pr, Gateway: lima0, Interface: "bridge100"})
	}
	p, _ = PlanUp(false, nil, Parse(""), present, lima0, kindNet, mac, m)
	h = &fakeHost{}
	if err := p.ApplyHost(context.Background(), h, m); err != nil {
		t.Fatal(err)
	}
	if len(h.ran) != 11 || !strings.HasPrefix(h.ran[0], "del ") || Recorded(m) {
		t.Errorf("off: ran %v, recorded %v", h.ran, m.Routes)
	}
}

// The script's own range check, run by bash: what it accepts from the
// VM's Docker and the clusters' API servers.
func TestScriptInside(t *testing.T) {
	helpers := script[:strings.Index(script, "# node_rules ")]
	for _, c := range []struct {
		x, net string
		ok     bool
	}{
		{"10.3.1.0/24", "10.3.0.0/16", true},
		{"10.3.0.0/16", "10.3.0.0/16", true},
		{"10.4.1.0/24", "10.3.0.0/16", false},
		{"10.3.1.5/24", "10.3.0.0/16", false}, // not a network address
		{"10.3.0.0/15", "10.3.0.0/16", false}, // wider than the range
		{"172.30.0.5", "172.30.0.0/16", true},
		{"172.31.0.5", "172.30.0.0/16", false},
		{"172.30.0.256", "172.30.0.0/16", false},
		{"172.30.0.5;reboot", "172.30.0.0/16", false},
		{"$(reboot)", "172.30.0.0/16", false},
		{"", "172.30.0.0/16", false},
		{"10.100.128.0/24", "10.100.128.0/17", true},
		{"10.100.0.0/24", "10.100.128.0/17", false},
	} {
		err := exec.Command("bash", "-c", helpers+`inside "$1" "$2"`, "bash", c.x, c.net).Run()
		if (err == nil) != c.ok {
			t.Errorf("inside %q %q: %v, want ok=%v", c.x, c.net, err, c.ok)
		}
	}
}

// The guest's observation reads the paths podnet installs.
func TestObservePaths(t *testing.T) {
	obs := guest.ObserveScript()
	for _, p := range []string{ScriptPath, UnitPath, ConfDir + "/*.conf", UnitName, "proto " + "200"} {
		if !strings.Contains(obs, p) {
			t.Errorf("the guest's observation does not name %s", p)
		}
	}
}
