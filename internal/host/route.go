// Package host is the Mac side of marina: the one route that sends the
// kind network to the VM, and running the privileged commands that change
// it. Both ways of doing it build on every platform (see Style): macOS
// route(8) (bsd.go) and Linux ip(8) (linux.go).
package host

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// Route is the route the host would use for an address.
type Route struct {
	Dest      netip.Prefix // 0.0.0.0/0 for the default route
	Gateway   netip.Addr   // invalid for an interface route
	Interface string
	// Cloned is a host route macOS cloned from another one (WASCLONED):
	// its destination is not a route of its own, its parent's is unknown.
	Cloned bool
}

func (r Route) String() string {
	s := r.Dest.String()
	if r.Dest.Bits() == 0 {
		s = "the default route"
	}
	if r.Cloned {
		s = "a host route cloned from another"
	}
	if r.Gateway.IsValid() {
		s += " via " + r.Gateway.String()
	}
	if r.Interface != "" {
		s += " on " + r.Interface
	}
	return s
}

// RouteState is how the host routes the kind network.
type RouteState string

// The route states status reports.
const (
	Present      RouteState = "present"
	Missing      RouteState = "missing"
	WrongGateway RouteState = "wrong gateway"
	Shadowed     RouteState = "shadowed"
	// Foreign is a route of exactly the kind network that marina did not
	// make (a VPN's): it is reported and left alone.
	Foreign RouteState = "foreign"
)

// RouteStatus is the kind network's route as found, against what it must be.
type RouteStatus struct {
	Want  netip.Prefix
	Via   netip.Addr // the VM's lima0 address; invalid when unknown
	Found *Route     // the route the host uses for Want's first host; nil: none
	State RouteState
	// Ours is set when Found is marina's own route of Want: its gateway is
	// one marina recorded when it added or changed the route. Only such a
	// route is ever changed or deleted. lima0's address alone does not
	// make a route marina's: it is read from the guest, and whoever is
	// root there could name a VPN's gateway.
	Ours bool
}

// Classify tells present and ours from missing, wrong gateway, shadowed
// and foreign. found is the route the host picks for the first host of
// want; mine are the gateways marina routed want through (its record).
func Classify(want netip.Prefix, via netip.Addr, found *Route, mine ...netip.Addr) RouteStatus {
	s := RouteStatus{Want: want, Via: via, Found: found}
	// A host route macOS cloned through marina's gateway stands for its
	// parent, marina's route, which `route -net` then changes or removes.
	if found != nil && (found.Cloned || found.Dest == want) && found.Gateway.IsValid() {
		for _, gw := range mine {
			s.Ours = s.Ours || (gw.IsValid() && found.Gateway == gw)
		}
	}
	through := via.IsValid() && found != nil && found.Gateway == via
	switch {
	case found == nil:
		s.State = Missing
	case !found.Cloned && found.Dest.Bits() < want.Bits():
		// Nothing, or only a broader route (the default, a VPN's /12):
		// this is the check klimax got wrong by trusting an exit code.
		s.State = Missing
	case !found.Cloned && found.Dest.Bits() > want.Bits():
		s.State = Shadowed
	case through:
		s.State = Present
	case s.Ours && via.IsValid():
		s.State = WrongGateway // lima0 moved: marina's route follows it
	case s.Ours:
		s.State = Present // the VM is down: its address is not known
	case found.Cloned:
		// Cloned from a route marina did not make: most likely a broader
		// one; an add reports it if it was one of exactly want.
		s.State = Missing
	default:
		s.State = Foreign
	}
	return s
}

func (s RouteStatus) String() string {
	head := s.Want.String() + " → "
	switch s.State {
	case Present:
		if s.Found.Gateway.IsValid() {
			return head + "present (via " + s.Found.Gateway.String() + ")"
		}
		return head + "present (on " + s.Found.Interface + ")"
	case Missing:
		if s.Found == nil {
			return head + "missing (the host has no route for it at all)"
		}
		return head + "missing (the host would send it along " + s.Found.String() + ")"
	case WrongGateway:
		return head + fmt.Sprintf("wrong gateway (via %s; the VM's lima0 is %s)", gwOrIf(s.Found), s.Via)
	case Shadowed:
		return head + "shadowed by " + s.Found.String() + " (a VPN? addresses in " + s.Found.Dest.String() + " do not reach the VM)"
	case Foreign:
		return head + "taken by " + s.Found.String() + ", a route marina did not make (a VPN?): marina leaves it alone, and the kind network does not reach the VM from this host until it is gone"
	}
	return head + string(s.State)
}

func gwOrIf(r *Route) string {
	if r.Gateway.IsValid() {
		return r.Gateway.String()
	}
	return r.Interface
}

// commands builds one OS's route changes.
type commands struct {
	add, change, del func(netip.Prefix, netip.Addr) []string
}

// fix adds a missing route and moves marina's own to the new lima0
// address; nothing else, and only for a private IPv4 network.
func (c commands) fix(s RouteStatus) []string {
	// Via is lima0's address as the guest reported it: only a private
	// IPv4 address outside the kind network can be the route's gateway.
	if CheckPrefix(s.Want) != nil || !s.Via.Is4() || !s.Via.IsPrivate() || s.Want.Contains(s.Via) {
		return nil
	}
	switch s.State {
	case Missing:
		return c.add(s.Want, s.Via)
	case WrongGateway:
		if s.Ours {
			return c.change(s.Want, s.Via)
		}
	}
	return nil
}

// remove deletes only marina's own route of exactly the kind network:
// never the default route, a VPN's, or one whose gateway marina cannot
// tell as its own.
func (c commands) remove(s RouteStatus) []string {
	if CheckPrefix(s.Want) != nil || s.Found == nil || !s.Ours || (s.Found.Dest != s.Want && !s.Found.Cloned) {
		return nil
	}
	return c.del(s.Want, s.Found.Gateway)
}

// CheckPrefix reports why marina must not route p: it only ever routes a
// private (RFC 1918) IPv4 network of at least 256 addresses and at most
// a /8, so that no value can reach the default route or the internet.
func CheckPrefix(p netip.Prefix) error {
	switch {
	case !p.IsValid() || !p.Addr().Is4():
		return fmt.Errorf("%s is not an IPv4 network", p)
	case p != p.Masked():
		return fmt.Errorf("%s has host bits set", p)
	case p.Bits() < 8 || p.Bits() > 24:
		return fmt.Errorf("%s is not a network marina routes (a /8 to a /24)", p)
	}
	for _, r := range private {
		if r.Contains(p.Addr()) && r.Bits() <= p.Bits() {
			return nil
		}
	}
	return fmt.Errorf("%s is not a private (RFC 1918) network", p)
}

var private = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
}

// FirstHost is the address route lookups ask about.
func FirstHost(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }

// ParseRouteGet reads macOS `route -n get ADDR` output: its destination,
// mask, gateway and interface lines. No route at all is (nil, nil).
func ParseRouteGet(out string) (*Route, error) {
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "not in table") {
			return nil, nil
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	dest, ok := fields["destination"]
	if !ok {
		return nil, fmt.Errorf("cannot read `route -n get` output: no destination line in %q", strings.TrimSpace(out))
	}
	r := &Route{Interface: fields["interface"]}
	flags := strings.Split(strings.Trim(fields["flags"], "<>"), ",")
	for _, f := range flags {
		r.Cloned = r.Cloned || f == "WASCLONED"
	}
	addr := netip.IPv4Unspecified()
	bits := 32 // a host route has no mask line
	if dest == "default" {
		// "default" is 0.0.0.0 with the mask given: a split-tunnel VPN's
		// 0.0.0.0/1 prints as "default" with mask 128.0.0.0.
		bits = 0
	} else {
		a, err := netip.ParseAddr(dest)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("cannot read `route -n get` output: destination %q", dest)
		}
		addr = a
	}
	switch m, ok := fields["mask"]; {
	case !ok:
	case m == "default":
		bits = 0
	default:
		mask, err := netip.ParseAddr(m)
		if err != nil || !mask.Is4() {
			return nil, fmt.Errorf("cannot read `route -n get` output: mask %q", m)
		}
		if bits = maskBits(mask); bits < 0 {
			return nil, fmt.Errorf("cannot read `route -n get` output: mask %q is not contiguous", m)
		}
	}
	r.Dest = netip.PrefixFrom(addr, bits).Masked()
	// An interface route shows the interface (or a link address) as its
	// gateway; only an IP is a gateway.
	if gw, err := netip.ParseAddr(fields["gateway"]); err == nil {
		r.Gateway = gw
	}
	return r, nil
}

func maskBits(m netip.Addr) int {
	b := m.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n := 0
	for v&(1<<31) != 0 {
		n++
		v <<= 1
	}
	if v != 0 {
		return -1
	}
	return n
}

// ParseIPRoute reads Linux `ip -4 -j route show match ADDR`: every route
// containing ADDR. It returns the one the kernel picks (the longest).
func ParseIPRoute(out string) (*Route, error) {
	rs, err := ParseIPRoutes(out)
	if err != nil {
		return nil, err
	}
	var best *Route
	for i := range rs {
		if best == nil || rs[i].Dest.Bits() > best.Dest.Bits() {
			best = &rs[i]
		}
	}
	return best, nil
}

// ParseIPRoutes reads the routes of Linux `ip -4 -j route show`. A route
// with no device (blackhole, unreachable, prohibit) is listed with its
// type as its interface: its addresses go nowhere.
func ParseIPRoutes(out string) ([]Route, error) {
	var rs []struct {
		Type    string `json:"type"`
		Dst     string `json:"dst"`
		Gateway string `json:"gateway"`
		Dev     string `json:"dev"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		return nil, fmt.Errorf("cannot read `ip -j route` output: %w", err)
	}
	var routes []Route
	for _, x := range rs {
		r := Route{Interface: x.Dev}
		if r.Interface == "" && x.Type != "" && x.Type != "unicast" {
			r.Interface = x.Type
		}
		switch {
		case x.Dst == "default":
			r.Dest = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		case strings.Contains(x.Dst, "/"):
			p, err := netip.ParsePrefix(x.Dst)
			if err != nil || !p.Addr().Is4() {
				return nil, fmt.Errorf("cannot read `ip -j route` output: dst %q", x.Dst)
			}
			r.Dest = p.Masked()
		default:
			a, err := netip.ParseAddr(x.Dst)
			if err != nil || !a.Is4() {
				return nil, fmt.Errorf("cannot read `ip -j route` output: dst %q", x.Dst)
			}
			r.Dest = netip.PrefixFrom(a, 32)
		}
		if gw, err := netip.ParseAddr(x.Gateway); err == nil && gw.Is4() {
			r.Gateway = gw
		}
		routes = append(routes, r)
	}
	return routes, nil
}
