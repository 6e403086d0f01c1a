package host

import (
	"net/netip"
	"strings"
	"testing"
)

// A VPN's route of exactly the kind network is not marina's: up does not
// change it and destroy does not delete it.
func TestSamePrefixVPNRouteIsLeftAlone(t *testing.T) {
	r, err := ParseRouteGet(read(t, "route-get-vpn-same.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := Classify(kindNet, lima0, r)
	if fix := (&Host{}).RouteFix(s); fix != nil {
		t.Errorf("up would run %v on a VPN's route (%s)", fix, s)
	}
	if rm := (&Host{}).RouteRemove(s); rm != nil {
		t.Errorf("destroy would run %v on a VPN's route (%s)", rm, s)
	}
	if !strings.Contains(s.String(), "utun4") {
		t.Errorf("status does not say whose route it is: %s", s)
	}
}

// lima0's address comes from the guest: a hostile one never becomes the
// gateway of a route marina adds.
func TestNoRouteThroughAHostileLima0(t *testing.T) {
	for _, via := range []string{"8.8.8.8", "127.0.0.1", "0.0.0.0", "172.30.0.5", "fd00::1"} {
		if fix := (&Host{}).RouteFix(Classify(kindNet, netip.MustParseAddr(via), nil)); fix != nil {
			t.Errorf("lima0 %s: %v", via, fix)
		}
	}
}

// Without lima0's address marina cannot tell its route from another's.
func TestNoRemovalWithoutAGateway(t *testing.T) {
	r, err := ParseRouteGet(read(t, "route-get-ours.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if rm := (&Host{}).RouteRemove(Classify(kindNet, netip.Addr{}, r)); rm != nil {
		t.Errorf("removal planned with no gateway to check: %v", rm)
	}
	// lima0's address comes from the guest: it does not make a route
	// marina's, only marina's record does.
	if rm := (&Host{}).RouteRemove(Classify(kindNet, lima0, r)); rm != nil {
		t.Errorf("removal planned for a route marina has no record of: %v", rm)
	}
	if rm := (&Host{}).RouteRemove(Classify(kindNet, netip.Addr{}, r, lima0)); rm == nil {
		t.Error("marina's own route is not removed")
	}
}

// The default route, a split-tunnel VPN's 0.0.0.0/1 and a VPN's route of
// part of the kind network are never changed or deleted by any operation
// marina has (RouteFix, RouteRemove), in either style, whatever the record
// says: even a record naming their own gateway. A command marina would
// run names the network it wants and nothing else, and where the route
// found is not of that network, it only adds.
func TestDefaultRouteNeverTouched(t *testing.T) {
	vpnGW := netip.MustParseAddr("10.8.0.1")
	others := []*Route{
		{Dest: netip.MustParsePrefix("0.0.0.0/0"), Gateway: lima0, Interface: "bridge100"},
		{Dest: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("192.168.1.1"), Interface: "en0"},
		{Dest: netip.MustParsePrefix("0.0.0.0/1"), Gateway: vpnGW, Interface: "utun3"},
		{Dest: netip.MustParsePrefix("172.30.4.0/24"), Gateway: vpnGW, Interface: "utun3"},
		{Dest: netip.MustParsePrefix("172.16.0.0/12"), Gateway: vpnGW, Interface: "utun3"},
	}
	wants := []string{"0.0.0.0/0", "0.0.0.0/1", "8.0.0.0/8", "172.30.0.0/16", "10.0.0.0/8"}
	n := 0
	for _, style := range []Style{BSD, Linux} {
		h := &Host{Style: style}
		for _, found := range others {
			for _, want := range wants {
				p := netip.MustParsePrefix(want)
				// Every record: none, marina's lima0, and the found route's
				// own gateway (a hostile routes.json).
				for _, recorded := range [][]netip.Addr{nil, {lima0}, {found.Gateway}} {
					s := Classify(p, lima0, found, recorded...)
					for what, argv := range map[string][]string{"fix": h.RouteFix(s), "remove": h.RouteRemove(s)} {
						if argv == nil {
							continue
						}
						n++
						line := strings.Join(argv, " ")
						if p.Bits() < 8 || !strings.Contains(line, " "+p.String()) {
							t.Errorf("%s %s of %s with %s found (recorded %v): %s", style, what, want, found, recorded, line)
						}
						if found.Dest != p && (what == "remove" || strings.Contains(line, " change ") || strings.Contains(line, " del")) {
							t.Errorf("%s %s of %s touches %s: %s", style, what, want, found, line)
						}
					}
				}
			}
		}
	}
	// The check looked at commands: a fix of the kind network is one.
	if n == 0 {
		t.Fatal("no operation produced a command (the test proves nothing)")
	}
}

// A split-tunnel VPN's "default" with mask 128.0.0.0 is 0.0.0.0/1, and a
// cloned host route does not shadow the network it was cloned from.
func TestRouteGetMaskAndFlags(t *testing.T) {
	r, err := ParseRouteGet(read(t, "route-get-split-default.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Dest != netip.MustParsePrefix("0.0.0.0/1") {
		t.Errorf("split default = %s, want 0.0.0.0/1", r.Dest)
	}
	if s := Classify(kindNet, lima0, r); s.State != Missing || strings.Contains(s.String(), "the default route") {
		t.Errorf("split default: %s", s)
	}
	r, err = ParseRouteGet(read(t, "route-get-cloned.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if s := Classify(kindNet, lima0, r); s.State == Shadowed {
		t.Errorf("a cloned host route counts as shadowing: %s", s)
	}
}

// A host route macOS cloned from marina's route stands for it: destroy
// still removes marina's route; one cloned through another gateway is not
// marina's.
func TestClonedRoute(t *testing.T) {
	r, err := ParseRouteGet(read(t, "route-get-cloned.txt"))
	if err != nil || !r.Cloned {
		t.Fatalf("cloned = %+v, %v", r, err)
	}
	if rm := strings.Join((&Host{}).RouteRemove(Classify(kindNet, lima0, r, lima0)), " "); rm != "ip route del 172.30.0.0/16 via 192.168.64.3" && rm != "/sbin/route -n delete -net 172.30.0.0/16 192.168.64.3" {
		t.Errorf("remove after a clone: %q", rm)
	}
	// lima0 moved: the clone of marina's route through the old address is
	// a wrong gateway, fixed by changing the parent.
	if s := Classify(kindNet, netip.MustParseAddr("192.168.64.7"), r, lima0); s.State != WrongGateway || strings.Join((&Host{}).RouteFix(s), " ") == "" {
		t.Errorf("a clone through the old address: %s, fix %v", s.State, (&Host{}).RouteFix(s))
	}
	other := *r
	other.Gateway = netip.MustParseAddr("10.8.0.1")
	if s := Classify(kindNet, lima0, &other); s.State != Missing || s.Ours || (&Host{}).RouteRemove(s) != nil {
		t.Errorf("a clone of another route: %s ours %v", s.State, s.Ours)
	}
}
