package kindcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// PoolName names the IPAddressPool and L2Advertisement of every cluster.
const PoolName = "marina"

// DefaultWait is how long a create waits for MetalLB to serve its pool.
const DefaultWait = 5 * time.Minute

// addonStep is one step of installAddons: its progress labels, its name in
// a failure, and what it does.
type addonStep struct {
	Label, done, name string
	Fn                func(context.Context) error
}

// MetalLBManifest is the pinned MetalLB manifest, from marina's cache or
// downloaded once: fetched before kind runs, so that a Mac without a
// network fails before anything is created.
func MetalLBManifest(ctx context.Context, s *session.Session, version string) ([]byte, error) {
	var m []byte
	err := s.Step("Fetching the MetalLB "+version+" manifest", "", func() (err error) {
		if m, err = s.Deps.MetalLB(ctx, version); err != nil {
			return err
		}
		m, err = addons.PinImages(m, s.Config.Kind.AddonImages)
		return err
	})
	return m, err
}

// installAddons puts MetalLB with the slot's pool, ExternalDNS, and the
// CoreDNS forwarding of marina's zone and customDnsResolvers, into a new
// cluster. A failure is an
// *addonError naming the step.
func installAddons(ctx context.Context, s *session.Session, k session.Kube, manifest []byte, externalDNS Manifests, pool []string, wait time.Duration) error {
	if wait <= 0 {
		wait = DefaultWait
	}
	cfg := s.Config
	version := cfg.Kind.MetalLBVersion
	waits, err := addons.MetalLBWaits(manifest)
	if err != nil {
		return &addonError{step: "installing MetalLB", err: err}
	}
	// One deadline for the whole of MetalLB's install, as its waits follow
	// one another.
	mctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	steps := []addonStep{{"Installing MetalLB " + version, "", "installing MetalLB", func(context.Context) error {
		return k.ApplyMetalLB(mctx, manifest)
	}}}
	for _, w := range waits {
		steps = append(steps, addonStep{"Waiting for MetalLB: " + w.String(), "", "installing MetalLB", func(context.Context) error {
			return k.Wait(mctx, w)
		}})
	}
	steps = append(steps, addonStep{"Adding the LoadBalancer pool " + strings.Join(pool, ", "), "", "adding the MetalLB pool", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		return k.Pool(ctx, PoolName, pool)
	}})
	steps = append(steps, DNSSteps(s, k, externalDNS, wait)...)
	for _, st := range steps {
		if err := s.Step(st.Label, st.done, func() error { return st.Fn(ctx) }); err != nil {
			return &addonError{step: st.name, err: err}
		}
	}
	return nil
}

// Manifests are the addon Manifests a step list applies, and the etcd
// user of the cluster's ExternalDNS.
type Manifests struct {
	ExternalDNS []byte
	Etcd        dns.Creds
}

// DNSSteps put a cluster on the local DNS: ExternalDNS publishing its
// LoadBalancer Services, available, and CoreDNS forwarding marina's zone
// (and customDnsResolvers) so that pods resolve the names too.
func DNSSteps(s *session.Session, k session.Kube, m Manifests, wait time.Duration) []addonStep {
	fwd := coreDNSForwards(s.Config)
	return []addonStep{
		{"Installing ExternalDNS " + dns.ExternalDNSVersion, "", "installing ExternalDNS", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			return k.ApplyExternalDNS(ctx, m.ExternalDNS, m.Etcd)
		}},
		{"Waiting for ExternalDNS to be available", "", "installing ExternalDNS", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			return k.Wait(ctx, addons.DeploymentWait(dns.ExternalDNSNamespace, dns.ExternalDNSName))
		}},
		{fmt.Sprintf("Forwarding %s from CoreDNS", ui.Plural(len(fwd), "domain")), "", "configuring CoreDNS", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return k.CoreDNS(ctx, fwd)
		}},
		// Until its pods have rolled, CoreDNS answers with the old Corefile.
		{"Waiting for CoreDNS to serve it", "", "configuring CoreDNS", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			return k.Wait(ctx, addons.CoreDNSWait())
		}},
	}
}

// coreDNSForwards are the domains every cluster's CoreDNS forwards: marina's
// zone to the local DNS server, then kind.customDnsResolvers.
func coreDNSForwards(cfg config.Config) []config.DNSResolver {
	_, server := dns.Addrs(cfg.Network.Prefix())
	return append([]config.DNSResolver{{Domain: cfg.DNS.Domain, Resolvers: []string{server.String()}}}, cfg.Kind.CustomDNSResolvers...)
}

// installMetricsServer applies metrics-server's manifest and waits for it
// to be available.
func installMetricsServer(ctx context.Context, s *session.Session, k session.Kube, manifest []byte, ms *addons.MetricsServer, wait time.Duration) error {
	if wait <= 0 {
		wait = DefaultWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := s.Step("Installing metrics-server "+ms.Version, "", func() error {
		return k.ApplyMetricsServer(ctx, manifest, ms.InsecureTLS)
	}); err != nil {
		return err
	}
	return s.Step("Waiting for metrics-server to be available", "", func() error {
		return k.Wait(ctx, addons.MetricsServerWait())
	})
}
