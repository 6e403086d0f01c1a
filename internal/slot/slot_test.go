package slot

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestSeedLayoutForSlotsOneToNine(t *testing.T) {
	for n := 1; n <= 9; n++ {
		svc := netip.MustParsePrefix("10." + itoa(n) + ".0.0/16")
		pod := netip.MustParsePrefix("10.1" + itoa(n) + ".0.0/16")
		if got := ServiceSubnet(n); got != svc {
			t.Errorf("ServiceSubnet(%d) = %s, want %s", n, got, svc)
		}
		if got := PodSubnet(n); got != pod {
			t.Errorf("PodSubnet(%d) = %s, want %s", n, got, pod)
		}
	}
}

func TestHighSlotsSplitTheirOwnBlock(t *testing.T) {
	cases := []struct {
		n        int
		svc, pod string
	}{
		{10, "10.110.0.0/17", "10.110.128.0/17"},
		{11, "10.111.0.0/17", "10.111.128.0/17"},
		{99, "10.199.0.0/17", "10.199.128.0/17"},
	}
	for _, c := range cases {
		if got := ServiceSubnet(c.n).String(); got != c.svc {
			t.Errorf("ServiceSubnet(%d) = %s, want %s", c.n, got, c.svc)
		}
		if got := PodSubnet(c.n).String(); got != c.pod {
			t.Errorf("PodSubnet(%d) = %s, want %s", c.n, got, c.pod)
		}
	}
}

// Every range of every slot must be disjoint from every other one.
func TestNoTwoRangesOverlap(t *testing.T) {
	rs := Ranges()
	if len(rs) != 2*Max {
		t.Fatalf("Ranges() has %d entries, want %d", len(rs), 2*Max)
	}
	for i := range rs {
		p := rs[i].Prefix
		if !p.IsValid() || p != p.Masked() {
			t.Fatalf("range %d (%s) is not a canonical prefix", i, p)
		}
		for j := i + 1; j < len(rs); j++ {
			if p.Overlaps(rs[j].Prefix) {
				t.Errorf("slot %d's %s %s overlaps slot %d's %s %s", rs[i].Slot, rs[i].What, p, rs[j].Slot, rs[j].What, rs[j].Prefix)
			}
		}
	}
}

func TestAPIPortAndCheck(t *testing.T) {
	if APIPort(1) != 7001 || APIPort(99) != 7099 {
		t.Errorf("APIPort(1), APIPort(99) = %d, %d", APIPort(1), APIPort(99))
	}
	for _, n := range []int{0, 100, -1} {
		if Check(n) == nil {
			t.Errorf("Check(%d) accepted an out-of-range slot", n)
		}
	}
	for _, n := range []int{1, 50, 99} {
		if err := Check(n); err != nil {
			t.Errorf("Check(%d) = %v", n, err)
		}
	}
}

func TestMetalLBRanges(t *testing.T) {
	got, err := MetalLBRanges(netip.MustParsePrefix("172.30.0.0/16"), 7)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"172.30.7.1-172.30.7.7", "172.30.7.16-172.30.7.254"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MetalLBRanges = %v, want %v", got, want)
	}
	if _, err := MetalLBRanges(netip.MustParsePrefix("172.30.0.0/24"), 1); err == nil {
		t.Error("a /24 bridge was accepted")
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

func TestInPool(t *testing.T) {
	bridge := netip.MustParsePrefix("172.30.0.0/16")
	for _, c := range []struct {
		addr string
		n    int
		want bool
	}{
		{"172.30.1.1", 1, true}, {"172.30.1.7", 1, true}, {"172.30.1.16", 1, true}, {"172.30.1.254", 1, true},
		{"172.30.1.0", 1, false}, {"172.30.1.8", 1, false}, {"172.30.1.15", 1, false}, {"172.30.1.255", 1, false},
		{"172.30.2.20", 1, false}, {"172.31.1.20", 1, false}, {"169.254.169.254", 1, false},
		{"::ffff:172.30.1.20", 1, false}, {"172.30.0.20", 0, false}, {"172.30.100.20", 100, false},
	} {
		if got := InPool(bridge, c.n, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("InPool(%s, slot %d) = %v", c.addr, c.n, got)
		}
	}
	// Each address in the ranges MetalLB gets is in the pool.
	for _, r := range must(MetalLBRanges(bridge, 3)) {
		from, to, _ := strings.Cut(r, "-")
		for a := netip.MustParseAddr(from); a.Compare(netip.MustParseAddr(to)) <= 0; a = a.Next() {
			if !InPool(bridge, 3, a) {
				t.Errorf("%s of %s is not in the pool", a, r)
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// PoolSize is what InPool counts in a slot's third octet.
func TestPoolSize(t *testing.T) {
	bridge := netip.MustParsePrefix("172.30.0.0/16")
	for _, n := range []int{Min, 42, Max} {
		got := 0
		for last := range 256 {
			if InPool(bridge, n, netip.AddrFrom4([4]byte{172, 30, byte(n), byte(last)})) {
				got++
			}
		}
		if got != PoolSize {
			t.Errorf("slot %d: %d addresses in its pool, PoolSize %d", n, got, PoolSize)
		}
	}
}
