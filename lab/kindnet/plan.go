package main

// The decisions: what the CNI file says, which routes the node should have,
// which rules the masquerade chain holds. Nothing here runs a program or
// talks to the API server, so the tests can check every case.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	confName   = "kindnet"
	cniVersion = "0.4.0" // the CNI plugins the node image carries (v1.9.1) read 0.4.0 and 1.0.0
	ipamDir    = "/run/cni-ipam-state"
	defaultMTU = 1500
	masqChain  = "KIND-MASQ-AGENT"
)

// parsePodSubnets reads POD_SUBNET, the cluster's pod subnets separated by
// commas, and keeps the IPv4 ones: this stand-in does not route IPv6, and a
// dual-stack cluster's IPv6 entry is not an error. An entry that is no
// prefix at all is.
func parsePodSubnets(s string) ([]netip.Prefix, error) {
	var v4 []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("POD_SUBNET entry %q: %w", f, err)
		}
		if p.Addr().Is4() {
			v4 = appendPrefix(v4, p.Masked())
		}
	}
	return v4, nil
}

// podCIDRs4 is a node's IPv4 pod ranges: spec.podCIDRs, or the older
// spec.podCIDR when the list is empty. Entries that do not parse are left
// out (the API server validates them; this only guards against surprises).
func podCIDRs4(n *corev1.Node) []netip.Prefix {
	list := n.Spec.PodCIDRs
	if len(list) == 0 && n.Spec.PodCIDR != "" {
		list = []string{n.Spec.PodCIDR}
	}
	var v4 []netip.Prefix
	for _, c := range list {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err == nil && p.Addr().Is4() {
			v4 = appendPrefix(v4, p.Masked())
		}
	}
	return v4
}

func appendPrefix(ps []netip.Prefix, p netip.Prefix) []netip.Prefix {
	for _, q := range ps {
		if q == p {
			return ps
		}
	}
	return append(ps, p)
}

// internalIPs is a node's InternalIP addresses, in the order of its status.
func internalIPs(n *corev1.Node) []netip.Addr {
	var ips []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(strings.TrimSpace(a.Address)); err == nil {
			ips = append(ips, ip.Unmap())
		}
	}
	return ips
}

// isNode reports whether hostIP is one of n's InternalIP addresses.
func isNode(n *corev1.Node, hostIP netip.Addr) bool {
	for _, ip := range internalIPs(n) {
		if ip == hostIP.Unmap() {
			return true
		}
	}
	return false
}

// ownNode is the node whose InternalIP is hostIP (HOST_IP, the pod's
// status.hostIP), or nil while no node says so.
func ownNode(nodes []corev1.Node, hostIP netip.Addr) *corev1.Node {
	for i := range nodes {
		if isNode(&nodes[i], hostIP) {
			return &nodes[i]
		}
	}
	return nil
}

// desiredRoutes maps each other node's IPv4 pod range to that node's first
// IPv4 InternalIP. Nodes with no IPv4 pod range yet, or no IPv4 InternalIP,
// are skipped, and so is the node hostIP belongs to: its own pods are on
// its own ptp links. Should two nodes claim one range, the first listed
// keeps it.
func desiredRoutes(nodes []corev1.Node, hostIP netip.Addr) map[netip.Prefix]netip.Addr {
	routes := map[netip.Prefix]netip.Addr{}
	for i := range nodes {
		n := &nodes[i]
		if isNode(n, hostIP) {
			continue
		}
		var gw netip.Addr
		for _, ip := range internalIPs(n) {
			if ip.Is4() {
				gw = ip
				break
			}
		}
		if !gw.IsValid() {
			continue
		}
		for _, c := range podCIDRs4(n) {
			if _, taken := routes[c]; !taken {
				routes[c] = gw
			}
		}
	}
	return routes
}

func sortPrefixes(ps []netip.Prefix) {
	sort.Slice(ps, func(i, j int) bool {
		if c := ps[i].Addr().Compare(ps[j].Addr()); c != 0 {
			return c < 0
		}
		return ps[i].Bits() < ps[j].Bits()
	})
}

// The conflist's shape, as the CNI plugins read it.
type (
	conflist struct {
		CNIVersion string   `json:"cniVersion"`
		Name       string   `json:"name"`
		Plugins    []plugin `json:"plugins"`
	}
	plugin struct {
		Type         string          `json:"type"`
		IPMasq       *bool           `json:"ipMasq,omitempty"`
		MTU          int             `json:"mtu,omitempty"`
		IPAM         *ipam           `json:"ipam,omitempty"`
		Capabilities map[string]bool `json:"capabilities,omitempty"`
	}
	ipam struct {
		Type    string        `json:"type"`
		DataDir string        `json:"dataDir"`
		Ranges  [][]ipamRange `json:"ranges"`
		Routes  []ipamRoute   `json:"routes"`
	}
	ipamRange struct {
		Subnet string `json:"subnet"`
	}
	ipamRoute struct {
		Dst string `json:"dst"`
	}
)

// conflistBytes is the content of 10-kindnet.conflist for a node whose
// IPv4 pod ranges are cidrs: ptp links to each pod with host-local
// addresses from the node's ranges (one range set each, so a pod gets one
// address per range) and a default route, then portmap for hostPort. The
// ptp plugin does no masquerading: the KIND-MASQ-AGENT chain does it,
// sparing pod-to-pod traffic.
func conflistBytes(cidrs []netip.Prefix, mtu int) ([]byte, error) {
	if len(cidrs) == 0 {
		return nil, errors.New("no IPv4 pod range")
	}
	if mtu <= 0 {
		mtu = defaultMTU
	}
	var ranges [][]ipamRange
	for _, c := range cidrs {
		if !c.Addr().Is4() {
			return nil, fmt.Errorf("pod range %s is not IPv4", c)
		}
		ranges = append(ranges, []ipamRange{{Subnet: c.Masked().String()}})
	}
	noMasq := false
	c := conflist{
		CNIVersion: cniVersion,
		Name:       confName,
		Plugins: []plugin{
			{
				Type:   "ptp",
				IPMasq: &noMasq,
				MTU:    mtu,
				IPAM: &ipam{
					Type:    "host-local",
					DataDir: ipamDir,
					Ranges:  ranges,
					Routes:  []ipamRoute{{Dst: "0.0.0.0/0"}},
				},
			},
			{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// The comments kindnetd puts on its rules (masq.go), so that the chain
// reads as on real kind.
const (
	commentReturn = "kind-masq-agent: local traffic is not subject to MASQUERADE"
	commentMasq   = "kind-masq-agent: outbound traffic is subject to MASQUERADE (must be last in chain)"
	commentJump   = "kind-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom KIND-MASQ-AGENT chain"
)

// masqRules is the rules of the KIND-MASQ-AGENT chain, in order, as
// kindnetd writes them: traffic to a pod subnet returns untouched (pod to
// pod keeps its source, also across nodes), anything else is masqueraded.
// The POSTROUTING jump that leads here already left out local
// destinations.
func masqRules(podSubnets []netip.Prefix) [][]string {
	var rules [][]string
	for _, p := range podSubnets {
		rules = append(rules, []string{"-d", p.String(), "-j", "RETURN", "-m", "comment", "--comment", commentReturn})
	}
	return append(rules, []string{"-j", "MASQUERADE", "-m", "comment", "--comment", commentMasq})
}

// masqJump is the POSTROUTING rule that sends non-local traffic to the
// chain.
var masqJump = []string{"-m", "addrtype", "!", "--dst-type", "LOCAL", "-j", masqChain, "-m", "comment", "--comment", commentJump}

// defaultRouteDev is the interface of the main table's IPv4 default route
// in the text of /proc/net/route, or "" when there is none.
func defaultRouteDev(procNetRoute string) string {
	s := bufio.NewScanner(strings.NewReader(procNetRoute))
	best, bestMetric := "", -1
	for first := true; s.Scan(); first = false {
		f := strings.Fields(s.Text())
		// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		if first || len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil || flags&1 == 0 { // RTF_UP
			continue
		}
		metric, err := strconv.Atoi(f[6])
		if err != nil {
			continue
		}
		if best == "" || metric < bestMetric {
			best, bestMetric = f[0], metric
		}
	}
	return best
}
