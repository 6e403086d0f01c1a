package main

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func prefixes(ss ...string) []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range ss {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}

// node makes a Node; addrs are "InternalIP=1.2.3.4" or "ExternalIP=…".
func node(name string, podCIDRs []string, addrs ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.PodCIDRs = podCIDRs
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	for _, a := range addrs {
		typ, ip, _ := strings.Cut(a, "=")
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(typ), Address: ip})
	}
	return n
}

func TestParsePodSubnets(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []netip.Prefix
		wantErr bool
	}{
		{in: "10.244.0.0/16", want: prefixes("10.244.0.0/16")},
		{in: "10.244.0.0/16,fd00:10:244::/56", want: prefixes("10.244.0.0/16")},
		{in: "fd00:10:244::/56, 10.244.0.0/16", want: prefixes("10.244.0.0/16")},
		{in: "fd00:10:244::/56", want: nil},
		{in: "", want: nil},
		{in: " 10.244.0.0/16 , 10.245.0.0/16 ,", want: prefixes("10.244.0.0/16", "10.245.0.0/16")},
		{in: "10.244.0.0/16,10.244.0.0/16", want: prefixes("10.244.0.0/16")},
		{in: "10.244.3.7/16", want: prefixes("10.244.0.0/16")}, // host bits dropped
		{in: "10.244.0.0", wantErr: true},
		{in: "10.244.0.0/16,pods", wantErr: true},
	} {
		got, err := parsePodSubnets(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parsePodSubnets(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parsePodSubnets(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestPodCIDRs4(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.NodeSpec
		want []netip.Prefix
	}{
		{"none", corev1.NodeSpec{}, nil},
		{"list", corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}}, prefixes("10.244.1.0/24")},
		{"old field only", corev1.NodeSpec{PodCIDR: "10.244.2.0/24"}, prefixes("10.244.2.0/24")},
		{"dual stack, IPv6 first", corev1.NodeSpec{PodCIDRs: []string{"fd00:10:244:1::/64", "10.244.1.0/24"}}, prefixes("10.244.1.0/24")},
		{"IPv6 only", corev1.NodeSpec{PodCIDR: "fd00:10:244:1::/64", PodCIDRs: []string{"fd00:10:244:1::/64"}}, nil},
		{"garbage skipped", corev1.NodeSpec{PodCIDRs: []string{"nope", "10.244.4.0/24"}}, prefixes("10.244.4.0/24")},
	} {
		n := corev1.Node{Spec: tc.spec}
		if got := podCIDRs4(&n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: podCIDRs4 = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOwnNode(t *testing.T) {
	nodes := []corev1.Node{
		node("kind-control-plane", []string{"10.244.0.0/24"}, "InternalIP=172.18.0.2", "Hostname=kind-control-plane"),
		node("kind-worker", []string{"10.244.1.0/24"}, "ExternalIP=172.18.0.9", "InternalIP=172.18.0.3"),
		node("kind-worker2", nil, "InternalIP=fc00:f853:ccd:e793::4", "InternalIP=172.18.0.4"),
	}
	for _, tc := range []struct {
		hostIP string
		want   string
	}{
		{"172.18.0.2", "kind-control-plane"},
		{"172.18.0.3", "kind-worker"},
		{"172.18.0.9", ""}, // an ExternalIP is not the node's InternalIP
		{"172.18.0.4", "kind-worker2"},
		{"fc00:f853:ccd:e793::4", "kind-worker2"},
		{"::ffff:172.18.0.3", "kind-worker"},
		{"172.18.0.5", ""},
	} {
		got := ""
		if n := ownNode(nodes, netip.MustParseAddr(tc.hostIP)); n != nil {
			got = n.Name
		}
		if got != tc.want {
			t.Errorf("ownNode(%s) = %q, want %q", tc.hostIP, got, tc.want)
		}
	}
}

func TestDesiredRoutes(t *testing.T) {
	type routes = map[netip.Prefix]netip.Addr
	r := func(kv ...string) routes {
		m := routes{}
		for i := 0; i < len(kv); i += 2 {
			m[netip.MustParsePrefix(kv[i])] = netip.MustParseAddr(kv[i+1])
		}
		return m
	}
	cp := node("cp", []string{"10.244.0.0/24"}, "InternalIP=172.18.0.2")
	w1 := node("w1", []string{"10.244.1.0/24"}, "InternalIP=172.18.0.3")
	w2 := node("w2", []string{"10.244.2.0/24"}, "InternalIP=172.18.0.4")
	for _, tc := range []struct {
		name   string
		nodes  []corev1.Node
		hostIP string
		want   routes
	}{
		{"own node excluded", []corev1.Node{cp, w1, w2}, "172.18.0.2",
			r("10.244.1.0/24", "172.18.0.3", "10.244.2.0/24", "172.18.0.4")},
		{"from a worker", []corev1.Node{cp, w1, w2}, "172.18.0.3",
			r("10.244.0.0/24", "172.18.0.2", "10.244.2.0/24", "172.18.0.4")},
		{"alone", []corev1.Node{cp}, "172.18.0.2", r()},
		{"own node not listed yet", []corev1.Node{w1}, "172.18.0.2", r("10.244.1.0/24", "172.18.0.3")},
		{"node without podCIDR skipped", []corev1.Node{cp, node("new", nil, "InternalIP=172.18.0.5")}, "172.18.0.2", r()},
		{"node without InternalIP skipped", []corev1.Node{cp, node("odd", []string{"10.244.5.0/24"}, "ExternalIP=172.18.0.6")}, "172.18.0.2", r()},
		{"node with only an IPv6 InternalIP skipped", []corev1.Node{cp, node("v6", []string{"10.244.6.0/24"}, "InternalIP=fc00::6")}, "172.18.0.2", r()},
		{"IPv6 podCIDR ignored, IPv4 gateway chosen", []corev1.Node{cp,
			node("ds", []string{"fd00:10:244:7::/64", "10.244.7.0/24"}, "InternalIP=fc00::7", "InternalIP=172.18.0.7")},
			"172.18.0.2", r("10.244.7.0/24", "172.18.0.7")},
		{"own node found by its IPv6 InternalIP", []corev1.Node{
			node("me", []string{"10.244.0.0/24"}, "InternalIP=fc00::2", "InternalIP=172.18.0.2"), w1},
			"fc00::2", r("10.244.1.0/24", "172.18.0.3")},
		{"same range claimed twice: first keeps it", []corev1.Node{cp, w1,
			node("dup", []string{"10.244.1.0/24"}, "InternalIP=172.18.0.8")},
			"172.18.0.2", r("10.244.1.0/24", "172.18.0.3")},
	} {
		got := desiredRoutes(tc.nodes, netip.MustParseAddr(tc.hostIP))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: desiredRoutes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestConflistBytes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cidrs   []netip.Prefix
		mtu     int
		subnets [][]string
		wantMTU float64
		wantErr bool
	}{
		{name: "one range", cidrs: prefixes("10.244.1.0/24"), mtu: 1500, subnets: [][]string{{"10.244.1.0/24"}}, wantMTU: 1500},
		{name: "default-route MTU", cidrs: prefixes("10.244.2.0/24"), mtu: 1450, subnets: [][]string{{"10.244.2.0/24"}}, wantMTU: 1450},
		{name: "no MTU known", cidrs: prefixes("10.244.2.0/24"), mtu: 0, subnets: [][]string{{"10.244.2.0/24"}}, wantMTU: 1500},
		{name: "host bits dropped", cidrs: prefixes("10.244.3.9/24"), mtu: 1500, subnets: [][]string{{"10.244.3.0/24"}}, wantMTU: 1500},
		{name: "no range", cidrs: nil, mtu: 1500, wantErr: true},
		{name: "IPv6 range", cidrs: prefixes("fd00:10:244:1::/64"), mtu: 1500, wantErr: true},
	} {
		b, err := conflistBytes(tc.cidrs, tc.mtu)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error = %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if !strings.HasSuffix(string(b), "}\n") {
			t.Errorf("%s: file does not end in a newline: %q", tc.name, b)
		}
		// Read it back as a CNI runtime would: untyped, by field name.
		var c struct {
			CNIVersion string           `json:"cniVersion"`
			Name       string           `json:"name"`
			Plugins    []map[string]any `json:"plugins"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", tc.name, err, b)
		}
		if c.CNIVersion != "0.4.0" || c.Name != "kindnet" || len(c.Plugins) != 2 {
			t.Fatalf("%s: cniVersion %q name %q, %d plugins:\n%s", tc.name, c.CNIVersion, c.Name, len(c.Plugins), b)
		}
		ptp, portmap := c.Plugins[0], c.Plugins[1]
		if ptp["type"] != "ptp" || ptp["ipMasq"] != false || ptp["mtu"] != tc.wantMTU {
			t.Errorf("%s: ptp = %v", tc.name, ptp)
		}
		ipam, _ := ptp["ipam"].(map[string]any)
		if ipam["type"] != "host-local" || ipam["dataDir"] != "/run/cni-ipam-state" {
			t.Errorf("%s: ipam = %v", tc.name, ipam)
		}
		var subnets [][]string
		ranges, _ := ipam["ranges"].([]any)
		for _, set := range ranges {
			var s []string
			for _, r := range set.([]any) {
				s = append(s, r.(map[string]any)["subnet"].(string))
			}
			subnets = append(subnets, s)
		}
		if !reflect.DeepEqual(subnets, tc.subnets) {
			t.Errorf("%s: ranges' subnets = %v, want %v", tc.name, subnets, tc.subnets)
		}
		if routes, _ := ipam["routes"].([]any); len(routes) != 1 || routes[0].(map[string]any)["dst"] != "0.0.0.0/0" {
			t.Errorf("%s: ipam routes = %v", tc.name, ipam["routes"])
		}
		if caps, _ := portmap["capabilities"].(map[string]any); portmap["type"] != "portmap" || caps["portMappings"] != true || len(portmap) != 2 {
			t.Errorf("%s: portmap = %v", tc.name, portmap)
		}
		// The same input gives the same bytes: the file is rewritten only
		// on a change.
		again, _ := conflistBytes(tc.cidrs, tc.mtu)
		if string(again) != string(b) {
			t.Errorf("%s: two runs differ:\n%s\n%s", tc.name, b, again)
		}
	}
}

func TestMasqRules(t *testing.T) {
	ret := func(cidr string) []string {
		return []string{"-d", cidr, "-j", "RETURN", "-m", "comment", "--comment", "kind-masq-agent: local traffic is not subject to MASQUERADE"}
	}
	masq := []string{"-j", "MASQUERADE", "-m", "comment", "--comment", "kind-masq-agent: outbound traffic is subject to MASQUERADE (must be last in chain)"}
	for _, tc := range []struct {
		subnets []netip.Prefix
		want    [][]string
	}{
		{prefixes("10.244.0.0/16"), [][]string{ret("10.244.0.0/16"), masq}},
		{prefixes("10.244.0.0/16", "10.245.0.0/16"), [][]string{ret("10.244.0.0/16"), ret("10.245.0.0/16"), masq}},
	} {
		if got := masqRules(tc.subnets); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("masqRules(%v) = %v, want %v", tc.subnets, got, tc.want)
		}
	}
	// The POSTROUTING jump, as kindnetd appends it.
	jump := "-m addrtype ! --dst-type LOCAL -j KIND-MASQ-AGENT -m comment --comment kind-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom KIND-MASQ-AGENT chain"
	if got := strings.Join(masqJump, " "); got != jump {
		t.Errorf("masqJump = %q", got)
	}
}

func TestDefaultRouteDev(t *testing.T) {
	const header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	for _, tc := range []struct {
		name, table, want string
	}{
		{"kind node", header +
			"eth0\t00000000\t010012AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
			"eth0\t000012AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n", "eth0"},
		{"no default route", header +
			"eth0\t000012AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n", ""},
		{"lowest metric wins", header +
			"wlan0\t00000000\t0100A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n" +
			"eth1\t00000000\t010012AC\t0003\t0\t0\t100\t00000000\t0\t0\t0\n", "eth1"},
		{"a route that is down is not used", header +
			"eth9\t00000000\t010012AC\t0002\t0\t0\t0\t00000000\t0\t0\t0\n", ""},
		{"empty", "", ""},
	} {
		if got := defaultRouteDev(tc.table); got != tc.want {
			t.Errorf("%s: defaultRouteDev = %q, want %q", tc.name, got, tc.want)
		}
	}
}
