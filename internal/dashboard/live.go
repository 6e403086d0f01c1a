package dashboard

import (
	"context"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/doctor"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kubeconfig"
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

// Snapshot reads every view in one session and one guest round trip: the
// observation status makes carries the local DNS's records and the
// caches' measures; the clusters and their Services come from Docker and
// their API servers.
func (l Live) Snapshot(ctx context.Context) Snapshot {
	e := l.env()
	snap := Snapshot{Time: time.Now(), Errors: map[string]string{}, Clusters: []kindcluster.Row{},
		DNS: []dns.Record{}, Mirrors: []status.MirrorStatus{}, Fleets: []fleet.ListRow{}, Services: []ClusterServices{}}
	// No early observation: this one carries probes.
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnlyQuiet})
	if err != nil {
		snap.Errors["status"] = err.Error()
		return snap
	}
	defer s.Close()
	valid := s.File.Err == nil // the names and registries need the whole config
	var probes guest.Probes
	var sizes status.Sizes
	var dnsWhy string // why the records are not asked for
	if valid {
		snap.Domain, snap.Network = s.Config.DNS.Domain, s.Config.Network.Prefix().String()
		probes, sizes, dnsWhy, err = l.probes(s)
		if err != nil {
			snap.Errors["registries"] = err.Error()
		}
	} else {
		why := "the config is invalid (`marina config edit` fixes it): " + s.File.Err.Error()
		snap.Errors["dns"], snap.Errors["registries"] = why, why
	}
	st, o := status.Of(ctx, s, probes)
	snap.Status = &st
	if o == nil { // the VM does not run: the mirrors say so, the rest is empty
		if valid {
			snap.Mirrors = status.MirrorRows(s, nil)
			sizes.Fill(s, snap.Mirrors, nil)
		}
		return snap
	}
	var wg sync.WaitGroup
	wg.Go(func() { l.clusters(ctx, s, o, valid, &snap) })
	if valid {
		wg.Go(func() { l.names(s, o, dnsWhy, &snap) })
		wg.Go(func() { l.mirrors(ctx, s, o, sizes, &snap) })
	}
	wg.Wait()
	return snap
}

// probes are what the observation asks besides status's: the local DNS's
// records (when marina up set it up; else why not) and the caches kept
// in the VM.
func (l Live) probes(s *session.Session) (guest.Probes, status.Sizes, string, error) {
	var p guest.Probes
	var why string
	switch etcd, _, ok, err := session.DNSEtcd(s.Config, s.Paths); {
	case err != nil:
		why = err.Error()
	case !ok:
		why = s.Paths.LabelKey() + " is missing, so marina up never set up the local DNS on this Mac: run `marina up`"
	default:
		if p.Records, err = guest.DNSRecordsProbe(etcd, s.Config.DNS.Domain); err != nil {
			why = err.Error()
		}
	}
	sizes, err := status.PlanSizes(s, status.MirrorRows(s, nil))
	p.Sizes = guest.SizesProbe(sizes.Script)
	return p, sizes, why, err
}

// mirrors are registry list's rows, their states from the observation
// and the caches kept in the VM measured in it.
func (l Live) mirrors(ctx context.Context, s *session.Session, o *session.Observed, sizes status.Sizes, snap *Snapshot) {
	var have []docker.Container
	switch {
	case o.DockerErr != nil:
		snap.errorf("registries", "Docker in the VM did not answer: %v", o.DockerErr)
	default:
		have = o.Mirrors
	}
	if o.GuestErr != nil && sizes.Script != "" {
		snap.errorf("registries", "the caches in the VM could not be measured: the VM did not answer: %v", o.GuestErr)
	}
	rows := status.MirrorRows(s, have)
	sizes.Fill(s, rows, o.Guest.Health.Sizes)
	status.ProxyCounters(ctx, rows)
	snap.Mirrors = rows
}

// names are dns list's names, from the observation's records probe.
func (l Live) names(s *session.Session, o *session.Observed, why string, snap *Snapshot) {
	switch {
	case why != "":
		snap.errorf("dns", "%s", why)
		return
	case o.GuestErr != nil:
		snap.errorf("dns", "the VM did not answer: %v", o.GuestErr)
		return
	case !o.Guest.Health.RecordsRead:
		snap.errorf("dns", "the local DNS's etcd (%s) did not answer: `marina up` starts it", dns.EtcdName)
		return
	}
	recs, err := status.Records(s.UI, o.Guest.Health.Records, s.Config.DNS.Domain, o.Clusters)
	if err != nil {
		snap.errorf("dns", "%v", err)
	}
	if recs != nil {
		snap.DNS = recs
	}
}

// clusters reads cluster list's rows, the fleets they make, and each
// running cluster's nodes and LoadBalancers, with the clusters status
// listed.
func (l Live) clusters(ctx context.Context, s *session.Session, o *session.Observed, valid bool, snap *Snapshot) {
	if o.ClustersErr != nil {
		snap.errorf("clusters", "%v", o.ClustersErr)
		return
	}
	s.Clusters = o.Clusters
	rows, err := kindcluster.Rows(ctx, s, nil, "")
	if err != nil {
		snap.errorf("clusters", "%v", err)
		return
	}
	snap.Clusters = rows
	snap.Fleets = fleet.WithDependencies(s.Env, s, fleet.Group(rows))
	var bridge netip.Prefix // without a valid config: no pool, no names
	var domain string
	if valid {
		bridge, domain = s.Config.Network.Prefix(), s.Config.DNS.Domain
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
