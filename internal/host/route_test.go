package host

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	kindNet = netip.MustParsePrefix("172.30.0.0/16")
	lima0   = netip.MustParseAddr("192.168.64.3")
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Recorded `route -n get 172.30.0.1` outputs, one per case status must tell apart.
func TestClassifyMacOSRouteGet(t *testing.T) {
	cases := []struct {
		file  string
		state RouteState
		line  string
		fix   string
		mine  []netip.Addr
	}{
		{"route-get-missing.txt", Missing,
			"172.30.0.0/16 → missing (the host would send it along the default route via 192.168.1.1 on en0)",
			"/sbin/route -n add -net 172.30.0.0/16 192.168.64.3", nil},
		{"route-get-ours.txt", Present, "172.30.0.0/16 → present (via 192.168.64.3)", "", nil},
		// lima0 moved from .7 to .3: marina made the route through .7.
		{"route-get-wrong-gateway.txt", WrongGateway,
			"172.30.0.0/16 → wrong gateway (via 192.168.64.7; the VM's lima0 is 192.168.64.3)",
			"/sbin/route -n change -net 172.30.0.0/16 192.168.64.3", []netip.Addr{netip.MustParseAddr("192.168.64.7")}},
		// The same route, not made by marina: left alone.
		{"route-get-wrong-gateway.txt", Foreign,
			"172.30.0.0/16 → taken by 172.30.0.0/16 via 192.168.64.7 on bridge100, a route marina did not make (a VPN?): marina leaves it alone, and the kind network does not reach the VM from this host until it is gone",
			"", nil},
		{"route-get-vpn-same.txt", Foreign,
			"172.30.0.0/16 → taken by 172.30.0.0/16 via 100.64.0.1 on utun4, a route marina did not make (a VPN?): marina leaves it alone, and the kind network does not reach the VM from this host until it is gone",
			"", nil},
		{"route-get-split-default.txt", Missing,
			"172.30.0.0/16 → missing (the host would send it along 0.0.0.0/1 via 10.8.0.1 on utun5)",
			"/sbin/route -n add -net 172.30.0.0/16 192.168.64.3", nil},
		{"route-get-cloned.txt", Present, "172.30.0.0/16 → present (via 192.168.64.3)", "", nil},
		{"route-get-utun.txt", Shadowed,
			"172.30.0.0/16 → shadowed by 172.30.0.0/24 via 100.64.0.1 on utun4 (a VPN? addresses in 172.30.0.0/24 do not reach the VM)", "", nil},
		{"route-get-vpn-broad.txt", Missing,
			"172.30.0.0/16 → missing (the host would send it along 172.16.0.0/12 on utun3)",
			"/sbin/route -n add -net 172.30.0.0/16 192.168.64.3", nil},
		{"route-get-no-route.txt", Missing, "172.30.0.0/16 → missing (the host has no route for it at all)",
			"/sbin/route -n add -net 172.30.0.0/16 192.168.64.3", nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r, err := ParseRouteGet(read(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			s := Classify(kindNet, lima0, r, c.mine...)
			if s.State != c.state {
				t.Errorf("state = %s, want %s (route %+v)", s.State, c.state, r)
			}
			if s.String() != c.line {
				t.Errorf("line = %q\nwant   %q", s.String(), c.line)
			}
			fix := strings.Join(darwinCommands.fix(s), " ")
			if fix != c.fix {
				t.Errorf("fix = %q, want %q", fix, c.fix)
			}
		})
	}
}

// With the VM down (lima0 unknown) marina's own route is the one through
// a gateway it recorded; any other is not its own.
func TestClassifyWithoutKnownGateway(t *testing.T) {
	r, _ := ParseRouteGet(read(t, "route-get-wrong-gateway.txt"))
	if s := Classify(kindNet, netip.Addr{}, r, netip.MustParseAddr("192.168.64.7")); s.State != Present || !s.Ours {
		t.Errorf("the recorded route: %s, ours %v", s.State, s.Ours)
	}
	if s := Classify(kindNet, netip.Addr{}, r, netip.MustParseAddr("192.168.64.9")); s.State != Foreign || s.Ours || (&Host{}).RouteRemove(s) != nil {
		t.Errorf("another route: %s, ours %v", s.State, s.Ours)
	}
}

func TestParseRouteGetRejectsGarbage(t *testing.T) {
	for _, out := range []string{"", "hello", "destination: 172.30.0.0\nmask: 255.0.255.0\n", "destination: nowhere\n"} {
		if _, err := ParseRouteGet(out); err == nil {
			t.Errorf("accepted %q", out)
		}
	}
	r, err := ParseRouteGet("destination: 172.30.0.9\ngateway: 192.168.64.3\ninterface: bridge100\n")
	if err != nil || r.Dest != netip.MustParsePrefix("172.30.0.9/32") {
		t.Errorf("host route = %+v, %v", r, err)
	}
}

func TestParseIPRoutePicksLongest(t *testing.T) {
	out := `[{"dst":"default","gateway":"10.0.0.1","dev":"eth0","flags":[]},{"dst":"172.30.0.0/16","gateway":"192.168.64.2","dev":"bridge100","flags":[]},{"dst":"172.16.0.0/12","dev":"tun0","scope":"link","flags":[]}]`
	r, err := ParseIPRoute(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dest != kindNet || r.Gateway != netip.MustParseAddr("192.168.64.2") || r.Interface != "bridge100" {
		t.Errorf("route = %+v", r)
	}
	if r, err := ParseIPRoute("[]"); err != nil || r != nil {
		t.Errorf("no routes: %+v, %v", r, err)
	}
	if _, err := ParseIPRoute("not json"); err == nil {
		t.Error("garbage accepted")
	}
}

func TestRemoveOnlyExactRoute(t *testing.T) {
	r, _ := ParseRouteGet(read(t, "route-get-missing.txt"))
	if cmd := darwinCommands.remove(Classify(kindNet, lima0, r)); cmd != nil {
		t.Errorf("would delete the default route: %v", cmd)
	}
	r, _ = ParseRouteGet(read(t, "route-get-utun.txt"))
	if cmd := darwinCommands.remove(Classify(kindNet, lima0, r)); cmd != nil {
		t.Errorf("would delete a VPN's route: %v", cmd)
	}
	r, _ = ParseRouteGet(read(t, "route-get-ours.txt"))
	if cmd := strings.Join(darwinCommands.remove(Classify(kindNet, lima0, r, lima0)), " "); cmd != "/sbin/route -n delete -net 172.30.0.0/16 192.168.64.3" {
		t.Errorf("removing our own route: %q", cmd)
	}
}

func FuzzParseRouteGet(f *testing.F) {
	for _, name := range []string{"route-get-missing.txt", "route-get-ours.txt", "route-get-utun.txt", "route-get-no-route.txt", "route-get-split-default.txt", "route-get-cloned.txt"} {
		b, _ := os.ReadFile(filepath.Join("testdata", name))
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, out string) {
		r, err := ParseRouteGet(out)
		if err == nil && r != nil && !r.Dest.IsValid() {
			t.Fatalf("invalid destination from %q", out)
		}
		if err == nil {
			s := Classify(kindNet, lima0, r)
			_ = s.String()
			// Whatever the host says, marina deletes only its own route of
			// exactly the kind network and never touches a broader one.
			if rm := (&Host{}).RouteRemove(s); rm != nil && (r == nil || (r.Dest != kindNet && !r.Cloned) || r.Gateway != lima0) {
				t.Fatalf("remove %v for %+v", rm, r)
			}
			if fix := (&Host{}).RouteFix(s); fix != nil && (fix[len(fix)-1] != lima0.String() && fix[len(fix)-1] != kindNet.String()) {
				t.Fatalf("fix %v", fix)
			}
		}
	})
}

func TestCheckPrefix(t *testing.T) {
	for _, ok := range []string{"172.30.0.0/16", "10.0.0.0/8", "192.168.100.0/24"} {
		if err := CheckPrefix(netip.MustParsePrefix(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0/0", "0.0.0.0/1", "8.8.0.0/16", "172.0.0.0/8", "172.30.0.1/16", "192.168.1.1/32", "fd00::/64", "10.0.0.0/7"} {
		if err := CheckPrefix(netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestMadeRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes.json")
	m, err := LoadMade(path, Own{Networks: []netip.Prefix{kindNet}})
	if err != nil || len(m.Routes) != 0 {
		t.Fatalf("empty record: %+v, %v", m, err)
	}
	gw := netip.MustParseAddr("192.168.64.3")
	if err := m.Add(kindNet, gw); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(kindNet, lima0); err != nil {
		t.Fatal(err)
	}
	m2, err := LoadMade(path, Own{Networks: []netip.Prefix{kindNet}})
	if err != nil || len(m2.Gateways(kindNet)) != 1 || m2.Gateways(kindNet)[0] != lima0 {
		t.Errorf("reloaded: %+v, %v", m2, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	// A record naming the default route is ignored, not obeyed.
	if err := os.WriteFile(path, []byte(`{"routes":[{"cidr":"0.0.0.0/0","gateway":"192.168.64.3"},{"cidr":"172.30.0.0/16","gateway":"192.168.64.3"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m3, err := LoadMade(path, Own{Networks: []netip.Prefix{kindNet}})
	if err != nil || len(m3.Routes) != 1 || m3.Routes[0].CIDR != kindNet {
		t.Errorf("hostile record: %+v, %v", m3, err)
	}
	if len(m3.Ignored) != 1 || !strings.Contains(m3.Ignored[0], "0.0.0.0/0") {
		t.Errorf("the ignored entry is not said: %v", m3.Ignored)
	}
	// Forgetting marina's route keeps the ignored entry as it was: the
	// file is the user's to clean.
	if err := m3.Forget(kindNet); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), `"0.0.0.0/0"`) || strings.Contains(string(b), kindNet.String()) {
		t.Errorf("after Forget: %s, %v", b, err)
	}
	// With nothing of its own and nothing ignored left, no file.
	m4, err := LoadMade(filepath.Join(t.TempDir(), "routes.json"), Own{Networks: []netip.Prefix{kindNet}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m4.Add(kindNet, lima0); err != nil {
		t.Fatal(err)
	}
	if err := m4.Forget(kindNet); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m4.path); !os.IsNotExist(err) {
		t.Error("an empty record stays on disk")
	}
}

// S4: a record of any network but marina's own (a VPN's 10.0.0.0/8, which
// every older check accepted: private, /8 to /24) gives marina nothing to
// act on; nor does a record of a resolver file that is not marina's for
// dns.domain and does not hold what marina writes.
func TestMadeCountsOnlyWhatIsMarinas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes.json")
	body := `{"routes":[{"cidr":"10.0.0.0/8","gateway":"10.8.0.1"},{"cidr":"192.168.0.0/24","gateway":"192.168.64.3"},{"cidr":"172.30.0.0/16","gateway":"192.168.64.3"}],
"resolvers":[{"path":"/etc/resolver/corp.example.com","content":"nameserver 10.8.0.53\n"},{"path":"/etc/resolver/old.internal","content":"marina's\n"},{"path":"/etc/resolver/demo.internal","content":"marina's\n"}]}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := LoadMade(path, Own{Networks: []netip.Prefix{kindNet}, Resolver: "/etc/resolver/demo.internal", ResolverContent: "marina's\n"})
	if err != nil {
		t.Fatal(err)
	}
	if nets := m.Networks(); len(nets) != 1 || nets[0] != kindNet {
		t.Errorf("networks counted: %v", nets)
	}
	var paths []string
	for _, r := range m.Resolvers {
		paths = append(paths, r.Path)
	}
	// demo.internal's, and an earlier domain's holding what marina writes.
	if strings.Join(paths, " ") != "/etc/resolver/old.internal /etc/resolver/demo.internal" {
		t.Errorf("resolvers counted: %v", paths)
	}
	if len(m.Ignored) != 3 {
		t.Errorf("ignored: %v", m.Ignored)
	}
}
