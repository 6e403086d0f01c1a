// Package slot derives every per-cluster resource from a cluster's slot
// number N (1–99): API port, service and pod subnets, MetalLB pool.
//
// Slots 1–9 keep klimax's published layout: services in 10.N.0.0/16 and pods
// in 10.1N.0.0/16. That layout cannot continue past 9 (the pods of slot 1,
// 10.11.0.0/16, are the services of slot 11), so each slot N ≥ 10 owns the
// single block 10.(100+N).0.0/16: services in its lower /17, pods in its
// upper /17. No two slots share an address and nothing uses 10.0.0.0/16,
// 10.10.0.0/16 or 10.20–10.109.
package slot

import (
	"fmt"
	"net/netip"
)

// The slot range and the API server port base.
const (
	Min      = 1
	Max      = 99
	portBase = 7000
)

// Check reports whether n is a usable slot.
func Check(n int) error {
	if n < Min || n > Max {
		return fmt.Errorf("slot %d is out of range: slots are %d to %d", n, Min, Max)
	}
	return nil
}

// APIPort is the VM port that publishes slot n's API server (7001 for slot 1).
func APIPort(n int) int { return portBase + n }

// ServiceSubnet is slot n's Kubernetes service range.
func ServiceSubnet(n int) netip.Prefix {
	if n < 10 {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(n), 0, 0}), 16)
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + n), 0, 0}), 17)
}

// PodSubnet is slot n's pod range.
func PodSubnet(n int) netip.Prefix {
	if n < 10 {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(10 + n), 0, 0}), 16)
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + n), 128, 0}), 17)
}

// Range is one address range a slot owns.
type Range struct {
	Slot   int
	What   string // "service" or "pod"
	Prefix netip.Prefix
}

// Ranges returns the service and pod ranges of every slot, for overlap checks.
func Ranges() []Range {
	out := make([]Range, 0, 2*Max)
	for n := Min; n <= Max; n++ {
		out = append(out, Range{n, "service", ServiceSubnet(n)}, Range{n, "pod", PodSubnet(n)})
	}
	return out
}

// MetalLBRanges is slot n's LoadBalancer pool inside the /16 kind bridge:
// <bridge>.N.1–7 and <bridge>.N.16–254. Addresses .8–.15 stay free for
// anything a user wants to pin by hand.
func MetalLBRanges(bridge netip.Prefix, n int) ([]string, error) {
	if !bridge.Addr().Is4() || bridge.Bits() != 16 {
		return nil, fmt.Errorf("MetalLB pools need a /16 IPv4 kind network, got %s", bridge)
	}
	b := bridge.Masked().Addr().As4()
	ip := func(last byte) netip.Addr { return netip.AddrFrom4([4]byte{b[0], b[1], byte(n), last}) }
	return []string{
		fmt.Sprintf("%s-%s", ip(1), ip(7)),
		fmt.Sprintf("%s-%s", ip(16), ip(254)),
	}, nil
}

// PoolSize is how many addresses a slot's LoadBalancer pool holds
// (MetalLBRanges: .1–.7 and .16–.254).
const PoolSize = 7 + 239

// InPool reports whether addr is in slot n's LoadBalancer pool inside the
// /16 kind bridge (MetalLBRanges).
func InPool(bridge netip.Prefix, n int, addr netip.Addr) bool {
	if Check(n) != nil || !bridge.Addr().Is4() || bridge.Bits() != 16 || !addr.Is4() || !bridge.Masked().Contains(addr) {
		return false
	}
	a := addr.As4()
	return int(a[2]) == n && ((a[3] >= 1 && a[3] <= 7) || (a[3] >= 16 && a[3] <= 254))
}
