package machine

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/podnet"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// converge brings a running VM's networking and services to the config:
// the kind network, the guest's routing rules, the registry mirrors and
// the host route. It observes (one guest round trip), plans, and applies
// only what differs, so a warm run changes nothing. With dryRun it
// returns planned (the steps decided before it) and its own as the plan,
// and changes nothing.
//
// A VM provisioned by another marina is provisioned again first; when
// that restarted its Docker, converge looks again.
func converge(ctx context.Context, s *session.Session, planned []session.Step, opts UpOptions) (*Ready, error) {
	cfg, name, dryRun := s.Config, s.Name, opts.DryRun
	cidr := cfg.Network.Prefix()
	o, err := observeStep(ctx, s, cidr, dryRun)
	if err != nil {
		return nil, err
	}
	prov := planProvision(s, o)
	if prov != nil && !dryRun && !opts.again {
		ran, resumed, err := reprovision(ctx, s, prov, opts)
		if err != nil {
			return nil, err
		}
		if ran {
			keepProvisioned(s, s.Marina)
		}
		if ran && prov.restart {
			opts.again = true
			r, err := converge(ctx, s, planned, opts)
			if err != nil {
				return nil, err
			}
			return r, waitAPIs(ctx, s, resumed)
		}
	}
	if prov == nil && !dryRun && o.Guest.Provisioning.Current() {
		keepProvisioned(s, o.Guest.Provisioning.Record.Marina)
	}
	said := sayOffline(s, o)
	p, err := planFor(s, o)
	if err != nil {
		return nil, err
	}
	older, err := olderClusters(ctx, s, o)
	if err != nil {
		return nil, err
	}
	behind, err := behindRegistry(ctx, s, o)
	if err != nil {
		return nil, err
	}
	stale, err := kindcluster.StaleAfterMove(ctx, s, o)
	if err != nil {
		return nil, err
	}
	if dryRun {
		if prov != nil {
			planned = append(planned, prov.steps(name)...)
		}
		steps := append(planned, p.steps...)
		steps = append(steps, p.dns.steps()...)
		if len(stale) > 0 {
			steps = append(steps, kindcluster.FollowStep(s, stale))
		}
		if len(older) > 0 {
			steps = append(steps, olderStep(s, older))
		}
		if len(behind) > 0 {
			steps = append(steps, registryStep(s, behind))
		}
		return &Ready{Plan: &session.Plan{Steps: steps, None: "VM " + name + " and its networking match the config"}}, nil
	}
	if err := applyConverge(ctx, s, p); err != nil {
		return nil, err
	}
	if !said {
		probeNew(ctx, s, cidr, o, p.mirrors)
	}
	if err := kindcluster.FollowLima0(ctx, s, stale); err != nil {
		return nil, err
	}
	// Before the local DNS's upgrade, which writes the records again.
	if err := advertiseRegistry(ctx, s, behind, o.Guest.Addons); err != nil {
		return nil, err
	}
	if err := upgradeClusters(ctx, s, older, o.Guest.Addons); err != nil {
		return nil, err
	}
	return ready(s, o.Guest.Lima0.Addr(), cidr), nil
}

// planFor plans converge from one observation, with the label key, the
// record of what marina made on the host and the host's resolver file,
// and warns about what on the host marina will not change.
func planFor(s *session.Session, o *session.Observed) (convergePlan, error) {
	e, cfg := s.Env, s.Config
	key, err := session.LoadLabelKey(e.Paths)
	if err != nil {
		return convergePlan{}, err
	}
	made, err := loadOwnMade(s, cfg, true)
	if err != nil {
		return convergePlan{}, err
	}
	res, err := session.ReadResolver(cfg, made)
	if err != nil {
		return convergePlan{}, err
	}
	p, err := planConverge(cfg, o, key, made, s.Host)
	if err != nil {
		return p, err
	}
	p.dns.planResolver(e.Paths, cfg.DNS.Domain, res, made)
	if res.State == host.ResolverForeign {
		e.UI.Warnf("%s", res)
	}
	if p.pods.Refused != nil {
		e.UI.Warnf("%v", p.pods.Refused)
	}
	switch p.route.State {
	case host.Shadowed:
		e.UI.Warnf("%s\n  marina cannot fix this; the addresses it covers stay unreachable from this host until that route is gone (check your VPN client)", p.route)
	case host.Foreign:
		e.UI.Warnf("%s\n  choose another network.cidr, or remove that route if it is a leftover: `sudo %s`", p.route, run.Quote(s.Host.DeleteCommand(p.route.Want, p.route.Found.Gateway)))
	}
	return p, nil
}

// observeStep observes the VM, its Docker and the host route (one guest
// round trip), as a step of output unless dryRun.
func observeStep(ctx context.Context, s *session.Session, cidr netip.Prefix, dryRun bool) (*session.Observed, error) {
	e := s.Env
	// The host's routes of the pod space are read to add them, or to
	// remove those marina recorded (planFor warns about the record).
	made, err := host.LoadMade(s.Paths.Routes(), session.HostOwn(s.Config, true))
	if err != nil {
		return nil, err
	}
	wait := 2 * time.Minute
	if dryRun {
		wait = 5 * time.Second
	} else {
		e.UI.Start("Looking at the VM, its Docker and this host's route")
	}
	// The upstreams' probes run alongside the rest of the round trip.
	pods := s.Config.Network.PodRouting
	o := session.ObserveWith(ctx, s, cidr, session.ObserveOptions{Wait: wait, Probes: session.UpstreamProbes(s.Config), Clusters: pods, PodRoutes: pods || podnet.Recorded(made)})
	switch {
	case o.GuestErr != nil:
		err = o.GuestErr
	case o.DockerErr != nil:
		err = fmt.Errorf("%w\nLima forwards the socket: `marina down && marina up` re-creates it", o.DockerErr)
	case o.RouteErr != nil:
		err = o.RouteErr
	case o.PodRoutesErr != nil:
		err = o.PodRoutesErr
	case o.ClustersErr != nil:
		err = o.ClustersErr
	}
	if err != nil {
		e.UI.End(false)
		return nil, err
	}
	e.UI.Relabel(fmt.Sprintf("VM address on lima0: %s (this host: %s); Docker %s answers on %s", o.Guest.Lima0, o.Mac, o.DockerVersion, s.Socket()))
	e.UI.End(true)
	if all := o.Guest.Lima0All; len(all) > 1 {
		e.UI.Warnf("lima0 has %d IPv4 addresses (%v); marina uses %s", len(all), all, o.Guest.Lima0)
	}
	return o, nil
}

// sayOffline warns when o's probes found the mirrors' upstreams silent,
// and reports whether it did.
func sayOffline(s *session.Session, o *session.Observed) bool {
	w := offline(s.Config, o)
	if w != "" {
		s.UI.Warnf("%s", w)
	}
	return w != ""
}

// probeNew asks the upstreams again, in one round trip, when up ran a
// mirror its observation could not probe (it was not running: a new VM's,
// or a new mirror's), so that an up offline says so however it found the
// VM. Nothing else of that observation is used.
func probeNew(ctx context.Context, s *session.Session, cidr netip.Prefix, o *session.Observed, p mirrorPlan) {
	running := map[string]bool{}
	for _, c := range o.Mirrors {
		running[c.Labels[registry.LabelMirror]] = c.State == "running"
	}
	for _, m := range p.create {
		if m.Name != registry.LocalName && !running[m.Name] {
			s.UI.Start("Asking the new mirrors' upstreams whether they answer")
			again := session.ObserveWith(ctx, s, cidr, session.ObserveOptions{Wait: 30 * time.Second, Probes: session.UpstreamProbes(s.Config)})
			s.UI.End(again.GuestErr == nil && again.DockerErr == nil)
			if again.GuestErr == nil && again.DockerErr == nil {
				sayOffline(s, again)
			}
			return
		}
	}
}

// convergePlan is what converge changes.
type convergePlan struct {
	steps      []session.Step
	network    docker.NetworkSpec
	createNet  bool
	net        guest.Net
	applyRules bool
	mirrors    mirrorPlan
	dns        dnsPlan
	route      host.RouteStatus
	routeFix   []string
	pods       podnet.Plan
	made       *host.Made       // the routes marina made
	key        session.LabelKey // of the mirrors' label digests
}

// planConverge decides, from one observation, the key of the mirrors'
// label digests, the routes marina made and the host's route commands,
// what must change. It changes
// nothing; it fails on what marina must not change (a foreign kind
// network).
func planConverge(cfg config.Config, o *session.Observed, key session.LabelKey, made *host.Made, h session.Host) (convergePlan, error) {
	cidr := cfg.Network.Prefix()
	lima0 := o.Guest.Lima0
	p := convergePlan{network: docker.KindNetworkSpec(cidr, guest.HostIf), net: guest.KindNet(cidr, o.Mac, cfg.Network.PodRouting)}
	if have := o.Network; have != nil {
		if diff := p.network.Differences(have); len(diff) > 0 {
			return p, p.network.Mismatch(cfg.VM.Name, have, diff)
		}
	} else {
		p.createNet = true
		p.steps = append(p.steps, session.Step{Do: "create the Docker network " + p.network.Name + ": " + p.network.CreateArgs()})
	}
	checks, err := p.net.Checks(o.Guest.Net)
	if err != nil {
		return p, err
	}
	// A new network makes Docker insert its MASQUERADE rule above marina's.
	p.applyRules = p.createNet || !guest.AllOK(checks)
	if p.applyRules {
		s := session.Step{Do: "install and apply the VM's routing rules (" + guest.ScriptPath + ", " + guest.UnitName + ", a docker.service drop-in)"}
		var bad []string
		for _, c := range checks {
			if !c.OK {
				bad = append(bad, c.What)
			}
		}
		if len(bad) > 0 {
			s.Reason = "not right yet: " + strings.Join(bad, "; ")
		}
		p.steps = append(p.steps, s)
	}
	specs, err := registry.All(cfg.Registries, vm.GuestCacheDir, key.Key)
	if err != nil {
		return p, err
	}
	p.key = key
	p.mirrors = planMirrors(specs, o.Mirrors, o.Guest.RegistrySums)
	p.steps = append(p.steps, p.mirrors.steps()...)
	dnsSpecs, err := dns.Specs(cfg, key.Key)
	if err != nil {
		return p, err
	}
	p.dns = planDNS(dnsSpecs, o.DNS, o.Guest.DNSSum, o.Guest.EtcdAuth)
	p.made = made
	if p.pods, err = podnet.PlanUp(cfg.Network.PodRouting, podnet.Of(o.Clusters), podnet.Parse(o.Guest.Podnet), o.PodRoutes, lima0.Addr(), cidr, o.Mac, made); err != nil {
		return p, err
	}
	for _, d := range p.pods.Steps() {
		p.steps = append(p.steps, session.Step{Do: d})
	}
	p.route = host.Classify(cidr, lima0.Addr(), o.Route, made.Gateways(cidr)...)
	if p.routeFix = h.RouteFix(p.route); p.routeFix != nil {
		p.steps = append(p.steps, session.Step{Do: "route " + cidr.String() + " to the VM: " + run.Quote(p.routeFix), Reason: "now " + string(p.route.State)})
	}
	return p, nil
}

// applyConverge carries p out: Docker first (the network the rest hangs
// on), then everything for the guest in one round trip, then the mirror
// containers, then the host route.
func applyConverge(ctx context.Context, s *session.Session, p convergePlan) error {
	e := s.Env
	if p.createNet {
		err := e.Step("Creating the Docker network "+p.network.Name+" ("+p.network.Subnet.String()+")", "", func() error {
			return s.Docker.CreateNetwork(ctx, p.network)
		})
		if err != nil {
			return err
		}
	}
	// The containers go before their config files do (removeMirrors).
	if len(p.mirrors.remove) > 0 {
		err := e.Step(fmt.Sprintf("Removing %s", ui.Plural(len(p.mirrors.remove), "mirror container")), "", func() error {
			return removeMirrors(ctx, s.Docker, p.mirrors)
		})
		if err != nil {
			return err
		}
	}
	if err := installGuest(ctx, s, p); err != nil {
		return err
	}
	if len(p.mirrors.create) > 0 {
		// The containers about to be labelled need the key kept.
		if err := p.key.Save(e.Paths); err != nil {
			return err
		}
		err := e.Step(fmt.Sprintf("Running %s", ui.Plural(len(p.mirrors.create), "registry mirror")), "", func() error {
			return runMirrors(ctx, s.Docker, p.mirrors)
		})
		if err != nil {
			return err
		}
	}
	if len(p.dns.create)+len(p.dns.remove) > 0 {
		if err := p.key.Save(e.Paths); err != nil {
			return err
		}
		err := e.Step(fmt.Sprintf("Running the local DNS (%d to start, %d to remove)", len(p.dns.create), len(p.dns.remove)), "", func() error {
			return applyDNS(ctx, s.Docker, p.dns)
		})
		if err != nil {
			return err
		}
	}
	if p.dns.auth {
		if err := etcdUsers(ctx, s, p.key); err != nil {
			return err
		}
	}
	// Remember the route marina made: a lima0 move may then change it and
	// destroy delete it, even with the VM stopped; nothing else is ever
	// touched.
	if p.routeFix != nil {
		if err := AddRoute(ctx, s, p.made, p.route, p.routeFix); err != nil {
			return err
		}
	}
	if add, del := p.pods.Adds(), p.pods.Removes(); len(add)+len(del) > 0 {
		if err := s.Step(p.pods.HostStep(), "", func() error { return p.pods.ApplyHost(ctx, s.Host, p.made) }); err != nil {
			return err
		}
	}
	// After the route: the resolver file sends lookups over it.
	return applyResolver(ctx, s, p.dns, p.made)
}

// installGuest writes the routing rules and the mirror configs p needs
// into the guest and applies them, in one round trip.
func installGuest(ctx context.Context, s *session.Session, p convergePlan) error {
	w := GuestWrites{Net: p.net, Rules: p.applyRules}
	if p.pods.Guest {
		w.Pods = &p.pods
	}
	if p.mirrors.writes {
		w.Mirrors = &p.mirrors.specs
	}
	if p.dns.writes {
		w.DNS = &p.dns.specs
	}
	return InstallGuest(ctx, s, w)
}

// GuestWrites is what one round trip installs in the guest.
type GuestWrites struct {
	Net guest.Net
	// Rules installs Net's network script, unit and drop-in, and runs it.
	Rules bool
	// Mirrors, when set, are the mirror configs to write (none: remove
	// them all).
	Mirrors *[]registry.Spec
	// DNS, when set, is the DNS servers' config to write.
	DNS *[]dns.Spec
	// Pods, when set, is what podRouting changes in the VM.
	Pods *podnet.Plan
}

// InstallGuest writes w into the guest and applies it, in one round trip:
// what up converges, and what doctor --fix repairs.
func InstallGuest(ctx context.Context, s *session.Session, w GuestWrites) error {
	if !w.Rules && w.Mirrors == nil && w.DNS == nil && w.Pods == nil {
		return nil
	}
	b := guest.NewBatch()
	var what []string
	if w.Rules {
		if err := w.Net.Apply(b); err != nil {
			return err
		}
		what = append(what, "routing rules")
	}
	if w.Mirrors != nil {
		if err := guest.RegistryApply(b, *w.Mirrors); err != nil {
			return err
		}
		what = append(what, "mirror configs")
	}
	if w.DNS != nil {
		if err := guest.DNSApply(b, *w.DNS); err != nil {
			return err
		}
		what = append(what, "DNS server's Corefile")
	}
	if w.Pods != nil {
		if err := podnet.Apply(b, *w.Pods, w.Net.Kind, w.Net.Mac); err != nil {
			return err
		}
		what = append(what, "pod routes")
	}
	parts := strings.Join(what, " and ")
	return s.Step("Installing the VM's "+parts, "", func() error {
		_, err := s.Guest.Run(ctx, vm.Script{Name: "install the VM's " + parts, Body: b.Script(), Root: true})
		return err
	})
}

// AddRoute routes rs.Want from this host via rs.Via (fix is the
// privileged command that does it) and records it in made: only a route
// marina recorded is ever changed or removed, by a lima0 move, down
// --remove-route or destroy.
func AddRoute(ctx context.Context, s *session.Session, made *host.Made, rs host.RouteStatus, fix []string) error {
	err := s.Step(fmt.Sprintf("Routing %s from this host via %s", rs.Want, rs.Via), "", func() error {
		return s.Host.Privileged(ctx, fix)
	})
	if err != nil {
		return err
	}
	return made.Add(rs.Want, rs.Via)
}

// etcdUsers sets up the local DNS's etcd users, for every cluster the VM
// has (one Docker call and one guest round trip), and turns its
// authentication on.
func etcdUsers(ctx context.Context, s *session.Session, key session.LabelKey) error {
	return s.Step("Setting up the local DNS's etcd users", "", func() error {
		if err := key.Save(s.Paths); err != nil {
			return err
		}
		etcd, pw, ok, err := session.DNSEtcd(s.Config, s.Paths)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s could not be read back (a marina bug)", s.Paths.LabelKey())
		}
		if s.Clusters == nil {
			if s.Clusters, err = s.ListClusters(ctx); err != nil {
				return err
			}
		}
		var users []guest.EtcdUser
		for _, c := range s.Clusters {
			if c.Slot == 0 {
				continue // not marina's
			}
			u, err := guest.ClusterUser(pw, c.Name, s.Config.DNS.Domain)
			if err != nil {
				return err
			}
			users = append(users, u)
		}
		auth, err := guest.EtcdAuth(etcd, pw.Reader(), users)
		if err != nil {
			return err
		}
		_, err = s.Guest.Run(ctx, vm.Script{Name: "set up the local DNS's etcd users", Body: "set -eu -o pipefail\n" + auth, Root: true})
		return err
	})
}
