package kindcluster

import (
	"context"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
)

// Fetch gets the pinned manifest ref names, from marina's cache or
// downloaded once, with kind.addonImages applied: before kind runs, so
// that a Mac without a network fails before anything is created.
func Fetch(ctx context.Context, s *session.Session, ref addons.Ref) ([]byte, error) {
	var m []byte
	err := s.Step(ref.Label(), "", func() (err error) {
		if m, err = s.Deps.Manifest(ctx, ref.Name, ref.Version); err != nil {
			return err
		}
		m, err = addons.PinImages(m, s.Config.Kind.AddonImages)
		return err
	})
	return m, err
}

// Manifests are the pinned manifests p's add-ons are made from.
func (p *Plan) Manifests(cfg config.Config) []addons.Ref {
	return addons.Manifests(p.addons(cfg, nil, 0))
}

// addons are the add-ons of p's cluster, from the fetched manifests (nil
// for a dry run, which prints their plans only).
func (p *Plan) addons(cfg config.Config, manifests map[string][]byte, wait time.Duration) []addons.Addon {
	return addons.Default(addons.Defaults{
		Manifests: manifests, MetalLBVersion: cfg.Kind.MetalLBVersion, Pool: p.pool,
		Zone: dns.ClusterZone(p.spec.Name, cfg.DNS.Domain), ExternalDNS: p.externalDNS, Etcd: p.etcd,
		Forwards: CoreDNSForwards(cfg), MetricsServer: p.metricsServer, Wait: wait,
		Hosting: HostingAddon(cfg, wait),
	})
}

// HostingAddon is the push registry's local-registry-hosting ConfigMap,
// nil when registries.local is off; up gives it to older clusters.
func HostingAddon(cfg config.Config, wait time.Duration) addons.Addon {
	if !cfg.Registries.Local.Enabled {
		return nil
	}
	v, err := registry.Hosting(cfg.Registries.Local)
	if err != nil {
		return nil // a struct of four strings always encodes
	}
	if wait == 0 {
		wait = addons.DefaultWait
	}
	return addons.NewHosting(registry.HostingNamespace, registry.HostingName, registry.HostingKey, v, wait)
}

// DNSAddons are the add-ons that put cluster name on the local DNS (up
// gives them to clusters made before marina had them): ExternalDNS from
// manifest with the etcd user etcd, and the CoreDNS edit.
func DNSAddons(cfg config.Config, name string, manifest []byte, etcd dns.Creds) []addons.Addon {
	return addons.DNS(addons.Defaults{
		Zone: dns.ClusterZone(name, cfg.DNS.Domain), ExternalDNS: manifest, Etcd: etcd, Forwards: CoreDNSForwards(cfg),
	})
}

// CoreDNSForwards are the domains every cluster's CoreDNS forwards:
// marina's zone to the local DNS server, then kind.customDnsResolvers.
func CoreDNSForwards(cfg config.Config) []config.DNSResolver {
	_, server := dns.Addrs(cfg.Network.Prefix())
	return append([]config.DNSResolver{{Domain: cfg.DNS.Domain, Resolvers: []string{server.String()}}}, cfg.Kind.CustomDNSResolvers...)
}

// Stepper shows add-on steps as lines of progress, one at a time, with
// prefix before each label: for up, which installs the add-ons of older
// clusters one after the other, a few lines among its own.
func Stepper(s *session.Session, prefix string) addons.Show {
	var mu sync.Mutex
	return func(_, label string, fn func() error) error {
		mu.Lock()
		defer mu.Unlock()
		return s.Step(prefix+label, "", fn)
	}
}

// AddonImages are the images a new cluster's add-ons run (metrics-server's
// too when metrics is set), from the pinned manifests a create uses,
// fetched or read from marina's cache as a create does: what registry
// prefetch brings into the mirrors.
func AddonImages(ctx context.Context, s *session.Session, metrics *addons.MetricsServer) ([]string, error) {
	// ExternalDNS for a placeholder cluster: its image is the same for every name.
	ext, err := dns.ExternalDNS("prefetch", s.Config)
	if err != nil {
		return nil, err
	}
	p := &Plan{metricsServer: metrics, externalDNS: ext}
	manifests := map[string][]byte{}
	for _, ref := range p.Manifests(s.Config) {
		if manifests[ref.Name], err = Fetch(ctx, s, ref); err != nil {
			return nil, err
		}
	}
	return addons.Images(p.addons(s.Config, manifests, 0))
}
