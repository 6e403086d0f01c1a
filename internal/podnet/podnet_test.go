package podnet

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/slot"
)

// span is a prefix as its first and last address.
func span(p netip.Prefix) (uint32, uint32) {
	a := p.Masked().Addr().As4()
	first := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	return first, first + uint32(1<<(32-p.Bits())) - 1
}

// union merges the prefixes' spans into sorted, disjoint, non-adjacent
// intervals: the reference Cover is checked against, computed apart from
// the library Cover uses.
func union(ps []netip.Prefix) [][2]uint32 {
	var iv [][2]uint32
	for _, p := range ps {
		f, l := span(p)
		iv = append(iv, [2]uint32{f, l})
	}
	slices.SortFunc(iv, func(a, b [2]uint32) int { return int(int64(a[0]) - int64(b[0])) })
	var out [][2]uint32
	for _, v := range iv {
		if n := len(out); n > 0 && uint64(v[0]) <= uint64(out[n-1][1])+1 {
			out[n-1][1] = max(out[n-1][1], v[1])
			continue
		}
		out = append(out, v)
	}
	return out
}

// checkCover asserts that cover is exactly the union of ranges and
// minimal: sorted, disjoint, no prefix inside another, and no two halves
// of one parent (they would be that parent, one route fewer).
func checkCover(t *testing.T, ranges, cover []netip.Prefix) {
	t.Helper()
	want := union(ranges)
	var size, wantSize uint64
	for _, v := range want {
		wantSize += uint64(v[1]-v[0]) + 1
	}
	for i, p := range cover {
		f, l := span(p)
		size += uint64(l-f) + 1
		if !slices.ContainsFunc(want, func(v [2]uint32) bool { return v[0] <= f && l <= v[1] }) {
			t.Errorf("%s covers addresses outside the ranges %v", p, ranges)
		}
		if i > 0 {
			_, prevLast := span(cover[i-1])
			if f <= prevLast {
				t.Errorf("%s and %s overlap or are out of order", cover[i-1], p)
			}
		}
		if p.Bits() > 0 {
			parent := netip.PrefixFrom(p.Addr(), p.Bits()-1).Masked()
			pf, _ := span(parent)
			var sibling netip.Prefix
			if f == pf {
				sibling = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte((l + 1) >> 24), byte((l + 1) >> 16), byte((l + 1) >> 8), byte(l + 1)}), p.Bits())
			} else {
				sibling = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(pf >> 24), byte(pf >> 16), byte(pf >> 8), byte(pf)}), p.Bits())
			}
			if slices.Contains(cover, sibling) {
				t.Errorf("%s and %s are the halves of %s: not the fewest routes", p, sibling, parent)
			}
		}
	}
	// Inside the ranges and as large as their union: exactly the union.
	if size != wantSize {
		t.Errorf("cover %v holds %d addresses, the ranges %d", cover, size, wantSize)
	}
}

// Over random sets of slots, the cover is exactly their ranges, in the
// fewest prefixes.
func TestCoverRandomSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		var slots []int
		for n := slot.Min; n <= slot.Max; n++ {
			if r.IntN(4) == 0 {
				slots = append(slots, n)
			}
		}
		ranges, err := Ranges(slots)
		if err != nil {
			t.Fatal(err)
		}
		checkCover(t, ranges, Cover(ranges))
		if t.Failed() {
			t.Fatalf("slots %v", slots)
		}
	}
}

// The Mac's routes: eleven prefixes for the 99 slots, none of the space
// the layout leaves alone.
func TestHostRoutes(t *testing.T) {
	got := HostRoutes()
	var s []string
	for _, p := range got {
		s = append(s, p.String())
	}
	want := "10.1.0.0/16 10.2.0.0/15 10.4.0.0/14 10.8.0.0/15 10.11.0.0/16 10.12.0.0/14 10.16.0.0/14 10.110.0.0/15 10.112.0.0/12 10.128.0.0/10 10.192.0.0/13"
	if strings.Join(s, " ") != want {
		t.Errorf("HostRoutes = %s\nwant       %s", strings.Join(s, " "), want)
	}
	all, _ := Ranges([]int{1, 9, 10, 99})
	checkCover(t, all, Cover(all))
	for _, free := range []string{"10.0.0.1", "10.10.0.1", "10.20.0.1", "10.109.255.254", "10.200.0.1", "10.255.0.1"} {
		a := netip.MustParseAddr(free)
		if slices.ContainsFunc(got, func(p netip.Prefix) bool { return p.Contains(a) }) {
			t.Errorf("the host routes take %s, which no slot uses", free)
		}
	}
	if _, err := Ranges([]int{0}); err == nil {
		t.Error("slot 0 has ranges")
	}
}

func TestConflicts(t *testing.T) {
	plan := HostRoutes()
	lima := netip.MustParseAddr("192.168.105.2")
	route := func(dest, gw, iface string) host.Route {
		r := host.Route{Dest: netip.MustParsePrefix(dest), Interface: iface}
		if gw != "" {
			r.Gateway = netip.MustParseAddr(gw)
		}
		return r
	}
	corp := route("10.0.0.0/8", "", "utun4")
	inside := route("10.12.4.0/24", "10.8.0.1", "utun3")
	routes := []host.Route{
		route("0.0.0.0/0", "192.168.1.1", "en0"),
		route("0.0.0.0/1", "", "utun5"),    // a full tunnel's halves claim nothing
		route("10.50.0.0/16", "", "utun4"), // outside every slot
		route("10.1.0.0/16", lima.String(), "bridge100"),
		{Dest: netip.MustParsePrefix("10.2.0.9/32"), Gateway: netip.MustParseAddr("192.168.1.1"), Interface: "en0", Cloned: true},
		corp, inside, inside,
	}
	got := Conflicts(plan, routes, lima)
	if len(got) != 2 || got[0].Route != corp || got[1].Route != inside {
		t.Fatalf("Conflicts = %v", got)
	}
	if len(got[0].Prefixes) != len(plan) || !slices.Equal(got[1].Prefixes, []netip.Prefix{netip.MustParsePrefix("10.12.0.0/14")}) {
		t.Errorf("overlapped prefixes: %v; %v", got[0].Prefixes, got[1].Prefixes)
	}
	if s := got[1].String(); s != "10.12.4.0/24 via 10.8.0.1 on utun3 (over 10.12.0.0/14)" {
		t.Errorf("String = %q", s)
	}
	if s := got[0].String(); !strings.HasPrefix(s, "10.0.0.0/8 on utun4 (over 10.1.0.0/16, ") {
		t.Errorf("String = %q", s)
	}
	// Without lima0's address, a route to the VM is not told apart; an
	// interface route is a conflict all the same.
	if n := len(Conflicts(plan, []host.Route{routes[3], corp}, netip.Addr{})); n != 2 {
		t.Errorf("with no VM address: %d conflicts", n)
	}
	// A route marina made through lima0's old address is its own.
	if got := Conflicts(plan, routes, netip.MustParseAddr("192.168.105.3"), lima); len(got) != 2 {
		t.Errorf("with lima0's old address as marina's: %v", got)
	}
}
