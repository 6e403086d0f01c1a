// Package podnet plans the routes that make clusters' pod and service
// ranges reachable at layer 3 (network.podRouting): from the Mac, through
// a few host routes to the VM, and between clusters. It computes; it
// changes nothing.
//
// The Mac's routes cover the ranges of every slot, not only the slots in
// use, so that they are added once by up and never follow clusters: the
// slot layout (internal/slot) makes that eleven prefixes of 10.0.0.0/8,
// and no address of 10.0.0.0/16, 10.10.0.0/16, 10.20-10.109 or
// 10.200-10.255.
package podnet

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"go4.org/netipx"

	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/slot"
)

// Ranges are the service and pod ranges of slots, in slot order.
func Ranges(slots []int) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, 2*len(slots))
	for _, n := range slots {
		if err := slot.Check(n); err != nil {
			return nil, err
		}
		out = append(out, slot.ServiceSubnet(n), slot.PodSubnet(n))
	}
	return out, nil
}

// Cover is the fewest prefixes whose union is exactly the union of
// ranges, sorted: a route for each sends those addresses and no other.
func Cover(ranges []netip.Prefix) []netip.Prefix {
	var b netipx.IPSetBuilder
	for _, p := range ranges {
		b.AddPrefix(p.Masked())
	}
	s, _ := b.IPSet() // only invalid prefixes fail, and they are skipped
	return s.Prefixes()
}

// HostRoutes are the Mac's routes to the VM: every slot's ranges, covered.
func HostRoutes() []netip.Prefix {
	all := make([]int, 0, slot.Max-slot.Min+1)
	for n := slot.Min; n <= slot.Max; n++ {
		all = append(all, n)
	}
	r, _ := Ranges(all) // every slot of the range is valid
	return Cover(r)
}

// catchAll is how wide a route must be to claim no address space of its
// own: the default route, and the halves (0.0.0.0/1, 128.0.0.0/1) and
// other wide routes a full-tunnel VPN puts over it. A route of 10.0.0.0/8
// or narrower belongs to someone: a company network behind a VPN.
const catchAll = 8

// Conflict is a host route that owns part of the addresses a plan routes.
type Conflict struct {
	Route host.Route
	// Prefixes are the plan's prefixes it overlaps.
	Prefixes []netip.Prefix
}

func (c Conflict) String() string {
	ps := make([]string, len(c.Prefixes))
	for i, p := range c.Prefixes {
		ps[i] = p.String()
	}
	return fmt.Sprintf("%s (over %s)", c.Route, strings.Join(ps, ", "))
}

// Conflicts lists the host's routes that overlap plan and do not lead to
// the VM (through via, lima0's address, or, when a new lease moved it,
// through a gateway marina routed through before: mine): a VPN's, or
// another network's. A narrower one would take part of a range from the
// VM; a wider one (10.0.0.0/8 through a VPN) would lose part of its
// network to marina's routes. Routes wider than /8 claim nothing (the
// default route).
func Conflicts(plan []netip.Prefix, routes []host.Route, via netip.Addr, mine ...netip.Addr) []Conflict {
	var out []Conflict
	for _, r := range routes {
		if !r.Dest.IsValid() || r.Dest.Bits() < catchAll || r.Cloned {
			continue
		}
		if r.Gateway.IsValid() && (r.Gateway == via || slices.Contains(mine, r.Gateway)) {
			continue // marina's own, or another route to the VM
		}
		var over []netip.Prefix
		for _, p := range plan {
			if p.Overlaps(r.Dest) {
				over = append(over, p)
			}
		}
		if len(over) > 0 && !slices.ContainsFunc(out, func(c Conflict) bool { return c.Route == r }) {
			out = append(out, Conflict{Route: r, Prefixes: over})
		}
	}
	return out
}
