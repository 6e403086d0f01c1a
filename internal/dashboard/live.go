package dashboard

import (
	"context"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/doctor"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
)

// kubeTimeout bounds each read of a cluster's API: a stopped or slow
// cluster shows as such instead of holding the page.
const kubeTimeout = 5 * time.Second

// Live reads the lab through the commands' own code.
type Live struct {
	// Env is the command's; its warnings go nowhere (the page shows each
	// problem where it belongs, and a refresh every few seconds would
	// repeat them on the terminal).
	Env *session.Env
}

func (l Live) env() *session.Env {
	return l.Env.Member("dashboard", ui.New(io.Discard, false, false))
}

// Snapshot reads every view at once.
func (l Live) Snapshot(ctx context.Context) Snapshot {
	e := l.env()
	snap := Snapshot{Time: time.Now(), Errors: map[string]string{}, Clusters: []kindcluster.Row{},
		DNS: []dns.Record{}, Mirrors: []machine.MirrorStatus{}, Fleets: []fleet.ListRow{}, Services: []ClusterServices{}}
	var mu sync.Mutex // the parts are read side by side; each writes its own fields, and fail the one map
	fail := func(part string, err error) {
		mu.Lock()
		defer mu.Unlock()
		snap.Errors[part] = err.Error()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if st, err := status.Get(ctx, e); err != nil {
			fail("status", err)
		} else {
			snap.Status = &st
		}
	})
	wg.Go(func() {
		if recs, err := status.ListDNS(ctx, e, ""); err != nil {
			fail("dns", err)
		} else if recs != nil {
			snap.DNS = recs
		}
	})
	wg.Go(func() {
		if ms, err := machine.ListMirrors(ctx, e); err != nil {
			fail("registries", err)
		} else if ms != nil {
			snap.Mirrors = ms
		}
	})
	wg.Go(func() { l.clusters(ctx, e, &snap, fail) })
	wg.Wait()
	if len(snap.Errors) == 0 {
		snap.Errors = nil
	}
	return snap
}

// clusters reads cluster list's rows, the fleets they make, and each
// running cluster's nodes and LoadBalancers, in one session.
func (l Live) clusters(ctx context.Context, e *session.Env, snap *Snapshot, fail func(string, error)) {
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true, Clusters: true})
	if err != nil {
		fail("clusters", err)
		return
	}
	defer s.Close()
	rows, err := kindcluster.Rows(ctx, s, nil, "")
	if err != nil {
		fail("clusters", err)
		return
	}
	snap.Clusters = rows
	snap.Fleets = fleet.WithDependencies(e, s, fleet.Group(rows))
	bridge, domain := netip.Prefix{}, ""
	if s.File.Err == nil {
		bridge, domain = s.File.Config.Network.Prefix(), s.File.Config.DNS.Domain
		snap.Domain, snap.Network = domain, bridge.String()
	}
	out := make([]ClusterServices, len(s.Clusters))
	var wg sync.WaitGroup
	for i, c := range s.Clusters {
		out[i] = inSlot(c.Name, c.Slot, bridge)
		if !c.APIRunning() {
			continue
		}
		wg.Go(func() { out[i] = services(ctx, s, c, bridge, domain) })
	}
	wg.Wait()
	labels := map[string]map[string]string{}
	for _, r := range rows {
		labels[r.Name] = r.Labels
	}
	for i, c := range s.Clusters {
		out[i].API = apiOf(s, c.Name)
		out[i].Labels = fleet.Shown(labels[c.Name])
	}
	snap.Services = out
}

// apiOf is cluster name's API server URL from the kubeconfig marina wrote
// for it ("" when there is none).
func apiOf(s *session.Session, name string) string {
	path, err := s.Paths.Kubeconfig(name)
	if err != nil {
		return ""
	}
	kc, err := kubeconfig.ReadFile(path, name)
	if err != nil {
		return ""
	}
	server, _ := kubeconfig.Server(kc)
	return server
}

// services reads one running cluster's nodes and LoadBalancers.
func services(ctx context.Context, s *session.Session, c cluster.Info, bridge netip.Prefix, domain string) ClusterServices {
	cs := inSlot(c.Name, c.Slot, bridge)
	k, err := s.Kube(c.Name, kubeTimeout)
	if err != nil {
		cs.Error = err.Error()
		return cs
	}
	lbs, err := k.LoadBalancers(ctx)
	if err != nil {
		cs.Error = err.Error()
		return cs
	}
	cs = servicesOf(c.Name, c.Slot, lbs, bridge, domain)
	nodes, err := k.Nodes(ctx)
	if err != nil {
		cs.Error = err.Error()
		return cs
	}
	cs.Nodes = len(nodes)
	for _, n := range nodes {
		if n.Ready {
			cs.Ready++
		}
		if cs.Version == "" {
			cs.Version = n.Version
		}
	}
	return cs
}

// Doctor runs doctor's checks, without --fix.
func (l Live) Doctor(ctx context.Context) (doctor.Report, error) {
	return doctor.Run(ctx, l.env(), doctor.Options{})
}
