package docker

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// The kind network marina creates, and the names of the bridge options it
// sets (Docker 28.2+).
const (
	KindNetwork   = "kind"
	KindBridge    = "br-kind"
	optBridgeName = "com.docker.network.bridge.name"
	optMasquerade = "com.docker.network.bridge.enable_ip_masquerade"
	optTrusted    = "com.docker.network.bridge.trusted_host_interfaces"
	optGwMode     = "com.docker.network.bridge.gateway_mode_ipv4"
	labelManaged  = "dev.marina.managed"
)

// NetworkSpec is a bridge network as marina wants it.
type NetworkSpec struct {
	Name    string
	Subnet  netip.Prefix
	Gateway netip.Addr
	IPRange netip.Prefix
	Options map[string]string
}

// KindNetworkSpec is the kind network for the configured /16:
//   - Docker allocates dynamic addresses (kind nodes, mirrors) only from
//     <a.b>.128.0/18, clear of the cluster slots' <a.b>.1–99.x pools and of
//     marina's fixed <a.b>.255.x addresses;
//   - a fixed bridge name, so the guest's firewall rules can name it;
//   - outbound masquerade for the clusters' own traffic to the internet;
//   - lima0 trusted: Docker 28.2+ drops routed packets to container
//     addresses from any other interface in the raw table, which would stop
//     the Mac reaching nodes, mirrors and the DNS server;
//   - gateway mode nat (Docker's default, said explicitly): unpublished
//     ports and MetalLB addresses are opened for lima0 only, by the guest's
//     DOCKER-USER rules, not for every interface.
func KindNetworkSpec(cidr netip.Prefix, trusted string) NetworkSpec {
	b := cidr.Masked().Addr().As4()
	return NetworkSpec{
		Name:    KindNetwork,
		Subnet:  cidr.Masked(),
		Gateway: netip.AddrFrom4([4]byte{b[0], b[1], 0, 1}),
		IPRange: netip.PrefixFrom(netip.AddrFrom4([4]byte{b[0], b[1], 128, 0}), 18),
		Options: map[string]string{
			optBridgeName: KindBridge,
			optMasquerade: "true",
			optTrusted:    trusted,
			optGwMode:     "nat",
		},
	}
}

// NetworkState is a network as Docker reports it.
type NetworkState struct {
	ID      string
	Driver  string
	Subnet  netip.Prefix
	Gateway netip.Addr
	IPRange netip.Prefix
	Options map[string]string
	// Containers counts the endpoints attached (kind nodes, mirrors…).
	Containers int
	Managed    bool
}

// InspectNetwork returns the named network, or nil when there is none.
func (c *Client) InspectNetwork(ctx context.Context, name string) (*NetworkState, error) {
	res, err := c.api.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect Docker network %s: %w", name, err)
	}
	n := res.Network
	st := &NetworkState{ID: n.ID, Driver: n.Driver, Options: n.Options, Containers: len(n.Containers), Managed: n.Labels[labelManaged] == "true"}
	if len(n.IPAM.Config) > 0 {
		ipc := n.IPAM.Config[0]
		st.Subnet, st.Gateway, st.IPRange = ipc.Subnet, ipc.Gateway, ipc.IPRange
	}
	return st, nil
}

// CreateNetwork creates the network of spec.
func (c *Client) CreateNetwork(ctx context.Context, spec NetworkSpec) error {
	v4, v6 := true, false
	_, err := c.api.NetworkCreate(ctx, spec.Name, client.NetworkCreateOptions{
		Driver:     "bridge",
		EnableIPv4: &v4,
		EnableIPv6: &v6,
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{
			Subnet: spec.Subnet, Gateway: spec.Gateway, IPRange: spec.IPRange,
		}}},
		Options: spec.Options,
		Labels:  map[string]string{labelManaged: "true"},
	})
	if err != nil {
		return fmt.Errorf("create Docker network %s: %w", spec.Name, err)
	}
	return nil
}

// Differences lists how have differs from spec, one readable line each; an
// empty list means the network is as marina wants it.
func (spec NetworkSpec) Differences(have *NetworkState) []string {
	var d []string
	if have.Driver != "bridge" {
		d = append(d, fmt.Sprintf("driver is %s, not bridge", have.Driver))
	}
	if have.Subnet != spec.Subnet {
		d = append(d, fmt.Sprintf("subnet is %s, not %s", orNone(have.Subnet.String(), have.Subnet.IsValid()), spec.Subnet))
	}
	if have.Gateway != spec.Gateway {
		d = append(d, fmt.Sprintf("gateway is %s, not %s", orNone(have.Gateway.String(), have.Gateway.IsValid()), spec.Gateway))
	}
	if have.IPRange != spec.IPRange {
		d = append(d, fmt.Sprintf("ip-range is %s, not %s", orNone(have.IPRange.String(), have.IPRange.IsValid()), spec.IPRange))
	}
	keys := make([]string, 0, len(spec.Options))
	for k := range spec.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got := have.Options[k]; got != spec.Options[k] {
			d = append(d, fmt.Sprintf("option %s is %q, not %q", k, got, spec.Options[k]))
		}
	}
	return d
}

func orNone(s string, ok bool) string {
	if !ok {
		return "unset"
	}
	return s
}

// CreateArgs renders spec as the `docker network create` command that
// makes it, for messages.
func (spec NetworkSpec) CreateArgs() string {
	args := []string{"docker network create -d bridge", "--subnet " + spec.Subnet.String(), "--gateway " + spec.Gateway.String(), "--ip-range " + spec.IPRange.String()}
	keys := make([]string, 0, len(spec.Options))
	for k := range spec.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-o "+k+"="+spec.Options[k])
	}
	return strings.Join(append(args, spec.Name), " ")
}

// Mismatch explains a network marina did not make, or made otherwise,
// and will not change (diff: Differences).
func (spec NetworkSpec) Mismatch(vmName string, have *NetworkState, diff []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the Docker network %q in VM %s is not the one marina needs:\n", spec.Name, vmName)
	for _, d := range diff {
		fmt.Fprintf(&b, "  - %s\n", d)
	}
	who := "it was created by marina with other settings"
	if !have.Managed {
		who = "it was not created by marina (kind makes one like it when it finds none)"
	}
	lost := "nothing is attached to it"
	switch have.Containers {
	case 0:
	case 1:
		lost = "the 1 container on it is lost"
	default:
		lost = fmt.Sprintf("the %d containers on it, kind clusters among them, are lost", have.Containers)
	}
	fmt.Fprintf(&b, "%s; marina changed nothing. To let marina recreate it (%s):\n", who, lost)
	fmt.Fprintf(&b, "  marina shell -- kind delete clusters --all\n")
	fmt.Fprintf(&b, "  marina shell -- sh -c 'docker rm -f $(docker ps -aq --filter network=%[1]s) 2>/dev/null; docker network rm %[1]s'\n", spec.Name)
	fmt.Fprintf(&b, "  marina up   (it recreates the network and the registry mirrors)")
	return fmt.Errorf("%s", b.String())
}
