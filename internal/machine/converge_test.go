package machine

import (
	"io"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

// inPlace is an observation of a VM where everything is as marina leaves it.
func inPlace(t *testing.T, cfg config.Config, lima0 string) *session.Observed {
	t.Helper()
	cidr := netip.MustParsePrefix(cfg.Network.CIDR)
	l0 := netip.MustParsePrefix(lima0)
	mac := l0.Masked().Addr().Next()
	n := guest.KindNet(cidr, mac, false)
	files, err := n.Files()
	if err != nil {
		t.Fatal(err)
	}
	st := guest.NetState{Forwarding: true, Enabled: true, Sums: map[string]string{}, Chains: map[string][]string{}, Policies: map[string]string{"filter FORWARD": "DROP"}}
	for _, f := range files {
		st.Sums[f.Path] = f.Sum()
	}
	for _, j := range guest.Jumps() {
		key := j.Table + " " + strings.Fields(j.Spec)[1]
		st.Chains[key] = append(st.Chains[key], j.Spec)
	}
	for _, r := range n.Rules() {
		key := r.Table + " " + strings.Fields(r.Spec)[1]
		st.Chains[key] = append(st.Chains[key], r.Spec)
	}
	spec := docker.KindNetworkSpec(cidr, guest.HostIf)
	return &session.Observed{
		Mac:     mac,
		Guest:   guest.State{Lima0: l0, Lima0All: []netip.Prefix{l0}, Net: st, RegistrySums: map[string]string{}},
		Network: &docker.NetworkState{Driver: "bridge", Subnet: spec.Subnet, Gateway: spec.Gateway, IPRange: spec.IPRange, Options: spec.Options, Managed: true},
		Route:   &host.Route{Dest: cidr, Gateway: l0.Addr(), Interface: "bridge100"},
	}
}

func TestPlanConverge(t *testing.T) {
	cfg := config.Default()
	cfg.Registries.Mirrors = []config.Mirror{}
	cfg.Registries.Local.Enabled = false
	e := &session.Env{Paths: config.Paths{Home: t.TempDir(), Dir: filepath.Join(t.TempDir(), ".marina")}}
	// marina made the route through lima0's first address.
	made, err := host.LoadMade(e.Paths.Routes(), session.HostOwn(cfg, true))
	if err != nil {
		t.Fatal(err)
	}
	if err := made.Add(netip.MustParsePrefix(cfg.Network.CIDR), netip.MustParseAddr("192.168.64.3")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(o *session.Observed)
		create bool
		rules  bool
		route  bool
		steps  []string
		err    string
	}{
		{name: "everything in place"},
		{name: "no kind network", change: func(o *session.Observed) { o.Network = nil }, create: true, rules: true,
			steps: []string{"create the Docker network kind: docker network create -d bridge --subnet 172.30.0.0/16", "install and apply the VM's routing rules"}},
		{name: "a network kind made", change: func(o *session.Observed) {
			o.Network = &docker.NetworkState{Driver: "bridge", Subnet: netip.MustParsePrefix("172.18.0.0/16"), Containers: 2}
		}, err: `the Docker network "kind" in VM marina is not the one marina needs`},
		{name: "lima0 moved", change: func(o *session.Observed) {
			o.Guest.Lima0 = netip.MustParsePrefix("192.168.70.2/24")
			o.Mac = netip.MustParseAddr("192.168.70.1")
		}, rules: true, route: true, steps: []string{"install and apply the VM's routing rules", "route 172.30.0.0/16 to the VM"}},
		{name: "FORWARD policy ACCEPT after a reboot", change: func(o *session.Observed) {
			o.Guest.Net.Policies["filter FORWARD"] = "ACCEPT"
		}, rules: true, steps: []string{"not right yet: the VM forwards nothing it is not told to"}},
		{name: "a VPN's route of the same network", change: func(o *session.Observed) {
			o.Route = &host.Route{Dest: netip.MustParsePrefix("172.30.0.0/16"), Gateway: netip.MustParseAddr("100.64.0.1"), Interface: "utun3"}
		}},
		{name: "no route", change: func(o *session.Observed) {
			o.Route = &host.Route{Dest: netip.MustParsePrefix("0.0.0.0/0"), Interface: "en0"}
		},
			route: true, steps: []string{"route 172.30.0.0/16 to the VM"}},
		{name: "a VPN shadows part of it", change: func(o *session.Observed) {
			o.Route = &host.Route{Dest: netip.MustParsePrefix("172.30.0.0/24"), Interface: "utun3"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := inPlace(t, cfg, "192.168.64.3/24")
			if c.change != nil {
				c.change(o)
			}
			p, err := planConverge(cfg, o, session.LabelKey{Key: make([]byte, 32)}, made, sessiontest.Host{Real: host.New(run.Runner{}, false, nil, io.Discard)})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.createNet != c.create || p.applyRules != c.rules || (p.routeFix != nil) != c.route {
				t.Errorf("plan: create %v rules %v route %v", p.createNet, p.applyRules, p.routeFix)
			}
			if len(p.steps) != len(c.steps) {
				t.Fatalf("steps %v, want %d", p.steps, len(c.steps))
			}
			for i, s := range c.steps {
				if !strings.HasPrefix(p.steps[i].Do, s) && !strings.Contains(p.steps[i].String(), s) {
					t.Errorf("step %d = %q, want %q…", i, p.steps[i], s)
				}
			}
		})
	}
}
