package main

import (
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
)

// entry is one route as netstat shows it.
type entry struct {
	dst     netip.Prefix
	gw      netip.Addr // invalid for an interface route
	ifname  string
	ifindex int
	// kernel is the kernel's own route of an interface's network (macOS
	// shows it as cloning, C).
	kernel bool
}

// printTable writes the routing table as macOS 11.3+ `netstat -rn -f inet`
// does: a title, the family, a header, one line per route.
func printTable(w io.Writer, es []entry) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].dst, es[j].dst
		if a.Bits() == 0 || b.Bits() == 0 {
			return a.Bits() == 0 && b.Bits() != 0
		}
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c < 0
		}
		return a.Bits() < b.Bits()
	})
	fmt.Fprint(w, "Routing tables\n\nInternet:\n")
	fmt.Fprintf(w, "%-18s %-18s %-10s %6s %s\n", "Destination", "Gateway", "Flags", "Netif", "Expire")
	for _, e := range es {
		gw := fmt.Sprintf("link#%d", e.ifindex)
		if e.gw.IsValid() {
			gw = e.gw.String()
		}
		fmt.Fprintf(w, "%-18s %-18s %-10s %6s\n", destination(e), gw, flags(e), e.ifname)
	}
}

// flags are the ones macOS shows for such a route: up; a gateway; a host
// route; static unless the kernel made it; cloning for an interface's
// network, protocol cloning for a static network route.
func flags(e entry) string {
	f := "U"
	if e.gw.IsValid() {
		f += "G"
	}
	host := e.dst.Bits() == 32
	if host {
		f += "H"
	}
	if !e.kernel {
		f += "S"
	}
	switch {
	case e.kernel:
		f += "C"
	case !host:
		f += "c"
	}
	return f
}

// destination is route.c's naming with -n: "default" for the default
// route, a host route's address, else netname: the network's address
// without the trailing zero octets its classful mask allows, and "/BITS"
// when its mask is not that classful one.
func destination(e entry) string {
	if e.dst.Bits() == 0 {
		return "default"
	}
	if e.dst.Bits() == 32 {
		return e.dst.Addr().String()
	}
	return netname(e.dst)
}

func netname(p netip.Prefix) string {
	b := p.Addr().As4()
	i := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	classful := forgemask(i)
	var octets int
	switch {
	case classful == 8 && i&0x00ffffff == 0:
		octets = 1
	case classful <= 16 && i&0x0000ffff == 0:
		octets = 2
	case i&0x000000ff == 0:
		octets = 3
	default:
		octets = 4
	}
	parts := make([]string, octets)
	for k := range parts {
		parts[k] = fmt.Sprint(b[k])
	}
	s := strings.Join(parts, ".")
	if p.Bits() != classful {
		s += fmt.Sprintf("/%d", p.Bits())
	}
	return s
}

// forgemask is the classful mask length of an address: A /8, B /16, the
// rest /24 (route.c's forgemask).
func forgemask(i uint32) int {
	switch {
	case i&0x80000000 == 0:
		return 8
	case i&0xc0000000 == 0x80000000:
		return 16
	}
	return 24
}
