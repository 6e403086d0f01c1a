package session

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/vm"
)

// Observed is one look at a running VM and the host. Its three parts are
// read at the same time: the guest (one round trip), Docker (over the
// forwarded socket, itself an ssh channel) and the host's route. Each part
// keeps its own error, so status can print what it did learn.
type Observed struct {
	Guest    guest.State
	GuestErr error
	// Mac is this host's own address towards lima0: the one source the
	// VM's rules let into the kind network.
	Mac netip.Addr

	DockerVersion string
	Network       *docker.NetworkState // nil: no kind network
	Mirrors       []docker.Container   // containers labelled as marina's mirrors
	DNS           []docker.Container   // marina's DNS containers
	DockerErr     error
	Route         *host.Route
	RouteErr      error
	RouteKnown    bool

	// What doctor asks for besides (ObserveOptions): the host's routes that
	// overlap the kind network, and the clusters Docker shows.
	Overlapping []host.Route
	OverlapErr  error
	Clusters    []cluster.Info
	ClustersErr error
	// PodRoutes are the host's routes overlapping the pod ranges'
	// space (guest.PodSpace), for network.podRouting.
	PodRoutes    []host.Route
	PodRoutesErr error
}

// ObserveOptions are what an observation reads beyond status's and up's.
type ObserveOptions struct {
	// Wait is how long Docker may take to answer (a VM that just
	// booted); 0 asks once.
	Wait time.Duration
	// Probes go into the guest's round trip.
	Probes guest.Probes
	// Routes lists the host's routes overlapping the kind network too.
	Routes bool
	// Clusters lists the clusters from Docker too.
	Clusters bool
	// PodRoutes lists the host's routes overlapping guest.PodSpace too.
	PodRoutes bool
}

// UpstreamProbes are the probes of every mirror's upstream in cfg (a
// remoteURL that names no address is left out: doctor names it).
func UpstreamProbes(cfg config.Config) guest.Probes {
	var p guest.Probes
	for _, m := range cfg.Registries.Mirrors {
		if u, err := guest.UpstreamOf(m); err == nil {
			p.Upstreams = append(p.Upstreams, u)
		}
	}
	return p
}

// guestObserve is the guest's observation, with p when it asks for any
// probe.
func guestObserve(ctx context.Context, g Guest, p guest.Probes) (guest.State, error) {
	if len(p.Upstreams) == 0 && p.Records == "" && p.Sizes == "" {
		return g.Observe(ctx)
	}
	return g.ObserveWith(ctx, p)
}

// Observe looks at the running VM name and at the host's route to cidr.
// dockerWait is how long Docker may take to answer (a VM that just booted);
// 0 asks once.
func Observe(ctx context.Context, s *Session, cidr netip.Prefix, dockerWait time.Duration) *Observed {
	return ObserveWith(ctx, s, cidr, ObserveOptions{Wait: dockerWait})
}

// ObserveWith is Observe, reading what opts asks for as well at the same
// time: still one guest round trip.
func ObserveWith(ctx context.Context, s *Session, cidr netip.Prefix, opts ObserveOptions) *Observed {
	o := &Observed{}
	dockerWait := opts.Wait
	// A guest that cannot be reached fails up's observation whatever Docker
	// says, and Lima forwards Docker's socket over the same ssh: waiting
	// for Docker then only hides the guest's error for the whole wait.
	dctx, stopDocker := context.WithCancel(ctx)
	defer stopDocker()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		o.Guest, o.GuestErr = observeGuest(ctx, s, opts)
		if o.GuestErr != nil {
			// Only a wait is worth stopping: asked once (status, doctor),
			// Docker's own answer is part of the report.
			if dockerWait > 0 {
				stopDocker()
			}
			return
		}
		o.Mac, o.GuestErr = s.Host.SourceFor(o.Guest.Lima0.Addr())
	}()
	go func() {
		defer wg.Done()
		dc := s.Docker
		ctx := dctx
		var err error
		if dockerWait > 0 {
			o.DockerVersion, err = dc.WaitReady(ctx, dockerWait)
		} else {
			o.DockerVersion, err = dc.Version(ctx)
		}
		if err != nil {
			o.DockerErr = err
			return
		}
		// Once Docker answers, its three reads go at once: each is a
		// round trip over the forwarded socket.
		var netErr, mirErr, dnsErr error
		var dw sync.WaitGroup
		dw.Go(func() { o.Network, netErr = dc.InspectNetwork(ctx, docker.KindNetwork) })
		dw.Go(func() { o.Mirrors, mirErr = dc.ListLabeled(ctx, registry.LabelMirror) })
		dw.Go(func() { o.DNS, dnsErr = dc.ListLabeled(ctx, dns.LabelRole) })
		if opts.Clusters {
			dw.Go(func() { o.Clusters, o.ClustersErr = s.ListClusters(ctx) })
		}
		dw.Wait()
		o.DockerErr = errors.Join(netErr, mirErr, dnsErr)
	}()
	go func() {
		defer wg.Done()
		if cidr.IsValid() {
			o.Route, o.RouteErr = s.Host.Lookup(ctx, cidr)
			o.RouteKnown = o.RouteErr == nil
			if opts.Routes {
				o.Overlapping, o.OverlapErr = s.Host.Overlapping(ctx, cidr)
			}
			if opts.PodRoutes {
				o.PodRoutes, o.PodRoutesErr = s.Host.Overlapping(ctx, guest.PodSpace)
			}
		}
	}()
	wg.Wait()
	return o
}

// guestRetry is how long observeGuest waits between tries of a guest
// whose ssh connection failed in a way that may pass.
const guestRetry = time.Second

// observeGuest is the guest's one round trip. With a wait (a VM that has
// just booted), a connection that may pass (refused: sshd starting) is
// tried again until the wait is over; one that cannot (sshd refuses the
// key) is reported at once.
func observeGuest(ctx context.Context, s *Session, opts ObserveOptions) (guest.State, error) {
	deadline := time.Now().Add(opts.Wait)
	for {
		var st guest.State
		var err error
		if o, ok := s.takeEarly(opts.Probes); ok {
			st, err = o.state, o.err
		} else {
			st, err = guestObserve(ctx, s.Guest, opts.Probes)
		}
		_, ssh := errors.AsType[*vm.SSHError](err)
		if err == nil || !ssh || vm.FinalSSH(err) || time.Now().Add(guestRetry).After(deadline) {
			return st, err
		}
		s.UI.Debugf("the guest did not answer (%v); trying again", err)
		select {
		case <-ctx.Done():
			return st, err
		case <-time.After(guestRetry):
		}
	}
}
