package docker

import (
	"net/netip"
	"strings"
	"testing"
)

func TestKindNetworkSpec(t *testing.T) {
	s := KindNetworkSpec(netip.MustParsePrefix("172.30.0.0/16"), "lima0")
	if s.Gateway.String() != "172.30.0.1" || s.IPRange.String() != "172.30.128.0/18" || s.Subnet.String() != "172.30.0.0/16" {
		t.Errorf("spec = %+v", s)
	}
	// The dynamic range stays clear of every slot's /24 and of .255.x.
	for n := 1; n <= 99; n++ {
		slot := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 30, byte(n), 0}), 24)
		if s.IPRange.Overlaps(slot) {
			t.Errorf("ip-range overlaps slot %d's %s", n, slot)
		}
	}
	if s.IPRange.Contains(netip.MustParseAddr("172.30.255.53")) {
		t.Error("ip-range holds marina's fixed .255.x addresses")
	}
	want := "docker network create -d bridge --subnet 172.30.0.0/16 --gateway 172.30.0.1 --ip-range 172.30.128.0/18 -o com.docker.network.bridge.enable_ip_masquerade=true -o com.docker.network.bridge.gateway_mode_ipv4=nat -o com.docker.network.bridge.name=br-kind -o com.docker.network.bridge.trusted_host_interfaces=lima0 kind"
	if got := s.CreateArgs(); got != want {
		t.Errorf("CreateArgs:\n%s\nwant\n%s", got, want)
	}
}

func TestDifferences(t *testing.T) {
	s := KindNetworkSpec(netip.MustParsePrefix("172.30.0.0/16"), "lima0")
	same := &NetworkState{Driver: "bridge", Subnet: s.Subnet, Gateway: s.Gateway, IPRange: s.IPRange, Options: map[string]string{}}
	for k, v := range s.Options {
		same.Options[k] = v
	}
	same.Options["com.docker.network.driver.mtu"] = "1500" // extra options are fine
	if d := s.Differences(same); len(d) != 0 {
		t.Errorf("differences on a matching network: %q", d)
	}
	// What kind creates when it finds no network.
	kinds := &NetworkState{Driver: "bridge", Subnet: netip.MustParsePrefix("172.18.0.0/16"), Gateway: netip.MustParseAddr("172.18.0.1"),
		Options: map[string]string{"com.docker.network.bridge.enable_ip_masquerade": "true", "com.docker.network.driver.mtu": "1500"}}
	d := strings.Join(s.Differences(kinds), "\n")
	for _, want := range []string{
		"subnet is 172.18.0.0/16, not 172.30.0.0/16",
		"gateway is 172.18.0.1, not 172.30.0.1",
		"ip-range is unset, not 172.30.128.0/18",
		`option com.docker.network.bridge.trusted_host_interfaces is "", not "lima0"`,
		`option com.docker.network.bridge.name is "", not "br-kind"`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf("differences lack %q:\n%s", want, d)
		}
	}
}
