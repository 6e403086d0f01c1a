package machine

import (
	"context"
	"net/netip"
	"slices"

	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
)

// DownOptions are the flags of marina down.
type DownOptions struct {
	DryRun      bool
	RemoveRoute bool
}

// Down stops the VM; it keeps everything in it.
func Down(ctx context.Context, e *session.Env, opts DownOptions) (session.Result, error) {
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	name, in := s.Name, s.Instance
	running := s.Running()
	var steps []session.Step
	if running {
		steps = append(steps, session.Step{Do: "stop VM " + name, Reason: "clusters, images and caches are kept; `marina up` starts it again"})
	}
	var unroute []routeRemoval
	if opts.RemoveRoute {
		if unroute, err = routeRemovals(ctx, s); err != nil {
			return session.Result{}, err
		}
		for _, r := range unroute {
			steps = append(steps, r.step())
		}
	}
	if len(steps) == 0 || opts.DryRun {
		state := "does not exist"
		if in != nil {
			state = "is " + in.Status
		}
		return session.Planned(steps, "VM "+name+" "+state), nil
	}
	if running {
		if err := e.Step("Stopping VM "+name, "Stopped VM "+name, func() error { return s.VM.Stop(ctx, name) }); err != nil {
			return session.Result{}, err
		}
	}
	return session.Result{}, removeRoutes(ctx, s, unroute)
}

// routeRemoval is one host route marina made and will delete, with the
// record it is forgotten from.
type routeRemoval struct {
	status host.RouteStatus
	argv   []string
	made   *host.Made
	// resolver, when set, makes this the removal of a resolver file
	// marina wrote (the route's one companion on the host) instead.
	resolver *host.Removal
}

func (r routeRemoval) step() session.Step {
	if r.resolver != nil {
		return session.Step{Do: "remove the resolver file " + r.resolver.Path + ": " + run.Quote(r.resolver.Argv)}
	}
	return session.Step{Do: "remove the host's route to " + r.status.Want.String() + " via " + r.status.Found.Gateway.String() + ": " + run.Quote(r.argv)}
}

// routeRemovals are the host routes to delete: of the networks marina
// routed (its record) and the config's network.cidr (when the config is
// valid), only a route of exactly that network through a gateway marina
// recorded when it added the route. Any other route is reported and left
// alone; the default route never qualifies.
func routeRemovals(ctx context.Context, s *session.Session) ([]routeRemoval, error) {
	e, v := s.Env, s.File
	made, err := loadOwnMade(s, v.Config, v.Err == nil)
	if err != nil {
		return nil, err
	}
	nets := made.Networks()
	if v.Err == nil {
		p := v.Config.Network.Prefix()
		if !slices.Contains(nets, p) {
			nets = append(nets, p)
		}
	} else {
		e.UI.Warnf("network.cidr and dns.domain are not read from an invalid config, so no route or resolver file is marina's to remove: fix the config (marina config edit) and run it again")
	}
	var out []routeRemoval
	for _, p := range nets {
		found, err := s.Host.Lookup(ctx, p)
		if err != nil {
			return nil, err
		}
		rs := host.Classify(p, netip.Addr{}, found, made.Gateways(p)...)
		if argv := s.Host.RouteRemove(rs); argv != nil {
			out = append(out, routeRemoval{status: rs, argv: argv, made: made})
		} else if rs.Found != nil && rs.Found.Dest == p {
			e.UI.Warnf("the host's route to %s (%s) is not one marina recorded making: it is left as it is (if it is a leftover: `sudo %s`)", p, rs.Found, run.Quote(s.Host.DeleteCommand(p, rs.Found.Gateway)))
		}
	}
	// The resolver files marina wrote and that still hold what it wrote.
	for _, rm := range host.ResolverRemovals(made, "") {
		out = append(out, routeRemoval{made: made, resolver: &rm})
	}
	return out, nil
}

func removeRoutes(ctx context.Context, s *session.Session, rs []routeRemoval) error {
	for _, r := range rs {
		if r.resolver != nil {
			if err := removeResolvers(ctx, s, r.made, []host.Removal{*r.resolver}); err != nil {
				return err
			}
			continue
		}
		err := s.Step("Removing the host's route to "+r.status.Want.String(), "", func() error { return s.Host.Privileged(ctx, r.argv) })
		if err != nil {
			return err
		}
		if err := r.made.Forget(r.status.Want); err != nil {
			return err
		}
	}
	return nil
}
