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
	}{
		{"route-get-missing.txt", Missing,
			"172.30.0.0/16 → missing (the host would send it along the default route via 192.168.1.1 on en0)",
			"/sbin/route -n add -net 172.30.0.0/16 192.168.64.3"},
		{"route-get-ours.txt", Present, "172.30.0.0/16 → present (via 192.168.64.3)", ""},
		{"route-get-wrong-gateway.txt", WrongGateway,
			"172.30.0.0/16 → wrong gateway (via 192.168.64.7; the VM's lima0 is 192.168.64.3)",
			"/sbin/route -n change -net 172.30.0.0/16 192.168.64.3"},
		{"route-get-utun.txt", Shadowed,
			"172.30.0.0/16 → shadowed by 172.30.0.0/24 via 100.64.0.1 on utun4 (a VPN? addresses in 172.30.0.0/24 do not reach the VM)", ""},
		{"route-get-vpn-broad.txt", Missing,
			"172.30.0.0/16 → missing (the host would send it along 172.16.0.0/12 on utun3)",
			"/sbin/route -n add -net 172.30.0.0/16 192.168.64.3"},
		{"route-get-no-route.txt", Missing, "172.30.0.0/16 → missing (the host has no route for it at all)",
			"/sbin/route -n add -net 172.30.0.0/16 192.168.64.3"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r, err := ParseRouteGet(read(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			s := Classify(kindNet, lima0, r)
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

func TestClassifyWithoutKnownGateway(t *testing.T) {
	r, _ := ParseRouteGet(read(t, "route-get-wrong-gateway.txt"))
	if s := Classify(kindNet, netip.Addr{}, r); s.State != Present {
		t.Errorf("with the VM down any gateway is present: %s", s.State)
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
	if cmd := strings.Join(darwinCommands.remove(Classify(kindNet, lima0, r)), " "); cmd != "/sbin/route -n delete -net 172.30.0.0/16" {
		t.Errorf("removing our own route: %q", cmd)
	}
}

func FuzzParseRouteGet(f *testing.F) {
	for _, name := range []string{"route-get-missing.txt", "route-get-ours.txt", "route-get-utun.txt", "route-get-no-route.txt"} {
		b, _ := os.ReadFile(filepath.Join("testdata", name))
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, out string) {
		r, err := ParseRouteGet(out)
		if err == nil && r != nil && !r.Dest.IsValid() {
			t.Fatalf("invalid destination from %q", out)
		}
		if err == nil {
			_ = Classify(kindNet, lima0, r).String()
		}
	})
}
