package podnet

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/bcollard/marina/internal/host"
)

// HostPlan is the Mac's side of podRouting, as found: each of HostRoutes
// classified as the kind network's route is, and the routes of someone
// else that stand in their way.
type HostPlan struct {
	Routes    []host.RouteStatus
	Conflicts []Conflict
}

// PlanHost classifies HostRoutes against the host's routes that overlap
// PodSpace (host.Overlapping), through via (lima0's address), with the
// gateways marina recorded (made).
func PlanHost(routes []host.Route, via netip.Addr, made *host.Made) HostPlan {
	var p HostPlan
	var mine []netip.Addr
	for _, want := range HostRoutes() {
		var found *host.Route
		for i, r := range routes {
			if r.Dest == want && !r.Cloned {
				found = &routes[i]
			}
		}
		gws := made.Gateways(want)
		mine = append(mine, gws...)
		p.Routes = append(p.Routes, host.Classify(want, via, found, gws...))
	}
	p.Conflicts = Conflicts(HostRoutes(), routes, via, mine...)
	return p
}

// Complete is whether every route leads to the VM and no route of
// someone else's stands in the way: the Mac reaches every pod range.
func (p HostPlan) Complete() bool {
	for _, r := range p.Routes {
		if r.State != host.Present {
			return false
		}
	}
	return len(p.Conflicts) == 0
}

// Missing are the routes to add or move to via.
func (p HostPlan) Missing() []host.RouteStatus {
	var out []host.RouteStatus
	for _, r := range p.Routes {
		if r.State == host.Missing || r.State == host.WrongGateway {
			out = append(out, r)
		}
	}
	return out
}

// Mine are the routes marina made, to remove when podRouting goes off.
func (p HostPlan) Mine() []host.RouteStatus {
	var out []host.RouteStatus
	for _, r := range p.Routes {
		if r.Ours && r.Found != nil {
			out = append(out, r)
		}
	}
	return out
}

// Refusal explains conflicts: marina adds none of its routes while
// another route owns part of the space.
func Refusal(cs []Conflict) error {
	if len(cs) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("network.podRouting would route parts of 10.0.0.0/8 that this host already sends elsewhere:\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "  - %s\n", c)
	}
	b.WriteString("marina added none of its pod routes. A VPN most likely owns these addresses: disconnect it and run `marina up` again, or set network.podRouting: false (`marina config edit`) to keep the VPN's routes")
	return fmt.Errorf("%s", b.String())
}

// Plan is what up changes for podRouting.
type Plan struct {
	// On is network.podRouting.
	On bool
	// Clusters are the clusters to route (on only), Stale the conf files
	// of clusters gone, as observed (a create that runs meanwhile writes
	// its own, which up then leaves alone).
	Clusters []Cluster
	Stale    []string
	sums     map[string]string // of the files observed
	// Guest says the VM's files or service must change: Why says how.
	Guest bool
	Why   []string
	Host  HostPlan
	// Refused says why the Mac's routes are not added: a route of someone
	// else's owns part of the space. The VM still routes between clusters.
	Refused error
}

// PlanUp decides, from one observation, what makes the VM and the host
// route exactly the marina clusters (slot set) when on, and nothing of it
// when off. When on and another route owns part of the space, the Mac's
// routes are refused (Refused) and the rest goes ahead.
func PlanUp(on bool, clusters []Cluster, st State, routes []host.Route, via netip.Addr, kind netip.Prefix, mac netip.Addr, made *host.Made) (Plan, error) {
	p := Plan{On: on, Host: PlanHost(routes, via, made)}
	if on {
		p.Refused = Refusal(p.Host.Conflicts)
		p.Clusters = clusters
		p.Stale, p.sums = st.Stale(clusters), st.Files
	}
	why, err := st.Differences(on, p.Clusters, kind, mac)
	if err != nil {
		return p, err
	}
	p.Guest, p.Why = len(why) > 0, why
	return p, nil
}

// Adds are the host routes to add (on), Removes marina's own to delete
// (off).
func (p Plan) Adds() []host.RouteStatus {
	if !p.On || p.Refused != nil {
		return nil
	}
	return p.Host.Missing()
}

// Removes are marina's pod routes on the host, when routing is off.
func (p Plan) Removes() []host.RouteStatus {
	if p.On {
		return nil
	}
	return p.Host.Mine()
}

// Recorded is whether made holds one of the pod routes.
func Recorded(made *host.Made) bool {
	return slices.ContainsFunc(HostRoutes(), func(p netip.Prefix) bool { return len(made.Gateways(p)) > 0 })
}

// Privileged runs the host's route commands (session.Host, host.Host).
type Privileged interface {
	Privileged(ctx context.Context, argv []string) error
	RouteFix(s host.RouteStatus) []string
	RouteRemove(s host.RouteStatus) []string
}

// ApplyHost adds the host's routes p needs, recording each in made, or
// removes those marina recorded when podRouting went off.
func (p Plan) ApplyHost(ctx context.Context, h Privileged, made *host.Made) error {
	for _, rs := range p.Adds() {
		if err := h.Privileged(ctx, h.RouteFix(rs)); err != nil {
			return err
		}
		if err := made.Add(rs.Want, rs.Via); err != nil {
			return err
		}
	}
	for _, rs := range p.Removes() {
		if err := h.Privileged(ctx, h.RouteRemove(rs)); err != nil {
			return err
		}
		if err := made.Forget(rs.Want); err != nil {
			return err
		}
	}
	return nil
}

// HostStep says what the host's part of the plan does, as a step.
func (p Plan) HostStep() string {
	if a := p.Adds(); len(a) > 0 {
		return fmt.Sprintf("Routing the clusters' pod and service ranges (%s of 10.0.0.0/8) via %s", plural(len(a), "prefix", "prefixes"), a[0].Via)
	}
	return fmt.Sprintf("Removing the %s marina routed for pods (network.podRouting is off)", plural(len(p.Removes()), "route", "routes"))
}

// Steps describe the plan, for --dry-run.
func (p Plan) Steps() []string {
	var out []string
	if p.Guest {
		what := "install " + ScriptPath + " and " + UnitName + ", which route the clusters' pod and service ranges to their nodes"
		if !p.On {
			what = "remove " + ScriptPath + ", " + UnitName + " and the VM's pod routes (network.podRouting is off)"
		}
		out = append(out, what+" ("+strings.Join(p.Why, "; ")+")")
	}
	if a := p.Adds(); len(a) > 0 {
		out = append(out, fmt.Sprintf("route %s of 10.0.0.0/8 (every slot's pod and service ranges) from this host to the VM", plural(len(a), "prefix", "prefixes")))
	}
	if r := p.Removes(); len(r) > 0 {
		out = append(out, fmt.Sprintf("remove the %s marina routed for pods from this host", plural(len(r), "route", "routes")))
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
