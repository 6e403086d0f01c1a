package app

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/vm"
)

// observed is one look at a running VM and the host. Its three parts are
// read at the same time: the guest (one round trip), Docker (over the
// forwarded socket, itself an ssh channel) and the host's route. Each part
// keeps its own error, so status can print what it did learn.
type observed struct {
	guest    guest.State
	guestErr error
	// mac is this host's own address towards lima0: the one source the
	// VM's rules let into the kind network.
	mac netip.Addr

	dockerVer  string
	network    *docker.NetworkState // nil: no kind network
	mirrors    []docker.Container   // containers labelled as marina's mirrors
	dns        []docker.Container   // marina's DNS containers
	dockerErr  error
	route      *host.Route
	routeErr   error
	routeKnown bool

	// What doctor asks for besides (observeOpts): the host's routes that
	// overlap the kind network, and the clusters Docker shows.
	overlapping []host.Route
	overErr     error
	clusters    []cluster.Info
	clustersErr error
}

// observeOpts are what an observation reads beyond status's and up's.
type observeOpts struct {
	// wait is how long Docker may take to answer (a VM that just
	// booted); 0 asks once.
	wait time.Duration
	// probes go into the guest's round trip.
	probes guest.Probes
	// routes lists the host's routes overlapping the kind network too.
	routes bool
	// clusters lists the clusters from Docker too.
	clusters bool
}

// observe looks at the running VM name and at the host's route to cidr.
// dockerWait is how long Docker may take to answer (a VM that just booted);
// 0 asks once.
func observe(ctx context.Context, s *session.Session, cidr netip.Prefix, dockerWait time.Duration) *observed {
	return observeWith(ctx, s, cidr, observeOpts{wait: dockerWait})
}

// observeWith is observe, reading what opts asks for as well at the same
// time: still one guest round trip.
func observeWith(ctx context.Context, s *session.Session, cidr netip.Prefix, opts observeOpts) *observed {
	o := &observed{}
	dockerWait := opts.wait
	// A guest that cannot be reached fails up's observation whatever Docker
	// says, and Lima forwards Docker's socket over the same ssh: waiting
	// for Docker then only hides the guest's error for the whole wait.
	dctx, stopDocker := context.WithCancel(ctx)
	defer stopDocker()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		o.guest, o.guestErr = observeGuest(ctx, s, opts)
		if o.guestErr != nil {
			// Only a wait is worth stopping: asked once (status, doctor),
			// Docker's own answer is part of the report.
			if dockerWait > 0 {
				stopDocker()
			}
			return
		}
		o.mac, o.guestErr = s.Host.SourceFor(o.guest.Lima0.Addr())
	}()
	go func() {
		defer wg.Done()
		dc := s.Docker
		ctx := dctx
		var err error
		if dockerWait > 0 {
			o.dockerVer, err = dc.WaitReady(ctx, dockerWait)
		} else {
			o.dockerVer, err = dc.Version(ctx)
		}
		if err != nil {
			o.dockerErr = err
			return
		}
		// Once Docker answers, its three reads go at once: each is a
		// round trip over the forwarded socket.
		var netErr, mirErr, dnsErr error
		var dw sync.WaitGroup
		dw.Go(func() { o.network, netErr = dc.InspectNetwork(ctx, docker.KindNetwork) })
		dw.Go(func() { o.mirrors, mirErr = dc.ListLabeled(ctx, registry.LabelMirror) })
		dw.Go(func() { o.dns, dnsErr = dc.ListLabeled(ctx, dns.LabelRole) })
		if opts.clusters {
			dw.Go(func() { o.clusters, o.clustersErr = s.ListClusters(ctx) })
		}
		dw.Wait()
		o.dockerErr = errors.Join(netErr, mirErr, dnsErr)
	}()
	go func() {
		defer wg.Done()
		if cidr.IsValid() {
			o.route, o.routeErr = s.Host.Lookup(ctx, cidr)
			o.routeKnown = o.routeErr == nil
			if opts.routes {
				o.overlapping, o.overErr = s.Host.Overlapping(ctx, cidr)
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
func observeGuest(ctx context.Context, s *session.Session, opts observeOpts) (guest.State, error) {
	deadline := time.Now().Add(opts.wait)
	for {
		var st guest.State
		var err error
		if len(opts.probes.Upstreams) > 0 {
			st, err = s.Guest.ObserveWith(ctx, opts.probes)
		} else {
			st, err = s.Guest.Observe(ctx)
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
