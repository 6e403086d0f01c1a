package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/config"
)

// PoolName names the IPAddressPool and L2Advertisement of every cluster.
const PoolName = "marina"

// DefaultWait is how long a create waits for MetalLB to serve its pool.
const DefaultWait = 5 * time.Minute

// addonStep is one step of installAddons: its progress labels, its name in
// a failure, and what it does.
type addonStep struct {
	label, done, name string
	fn                func(context.Context) error
}

// metalLBManifest is the pinned MetalLB manifest, from marina's cache or
// downloaded once: fetched before kind runs, so that a Mac without a
// network fails before anything is created.
func metalLBManifest(ctx context.Context, e *Env, version string) ([]byte, error) {
	var m []byte
	err := e.step("Fetching the MetalLB "+version+" manifest", "", func() (err error) {
		m, err = addons.Manifest(ctx, e.Paths.Cache(), version)
		return err
	})
	return m, err
}

// installAddons puts MetalLB with the slot's pool, and the CoreDNS
// forwarding of customDnsResolvers, into a new cluster. A failure is an
// *addonError naming the step.
func installAddons(ctx context.Context, e *Env, cfg config.Config, rc *rest.Config, manifest []byte, pool []string, wait time.Duration) error {
	if wait <= 0 {
		wait = DefaultWait
	}
	version := cfg.Kind.MetalLBVersion
	steps := []addonStep{
		{"Installing MetalLB " + version, "Installed MetalLB " + version, "installing MetalLB", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			return addons.MetalLB(ctx, rc, manifest)
		}},
		{"Adding the LoadBalancer pool " + strings.Join(pool, ", "), "", "adding the MetalLB pool", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			return addons.Pool(ctx, rc, PoolName, pool)
		}},
	}
	if rs := cfg.Kind.CustomDNSResolvers; len(rs) > 0 {
		steps = append(steps, addonStep{fmt.Sprintf("Forwarding %d domains from CoreDNS", len(rs)), "", "configuring CoreDNS", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return addons.CoreDNS(ctx, rc, rs)
		}})
	}
	for _, s := range steps {
		if err := e.step(s.label, s.done, func() error { return s.fn(ctx) }); err != nil {
			return &addonError{step: s.name, err: err}
		}
	}
	return nil
}
