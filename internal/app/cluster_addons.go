package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/addons"
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
func metalLBManifest(ctx context.Context, s *Session, version string) ([]byte, error) {
	var m []byte
	err := s.step("Fetching the MetalLB "+version+" manifest", "", func() (err error) {
		m, err = s.deps.MetalLB(ctx, version)
		return err
	})
	return m, err
}

// installAddons puts MetalLB with the slot's pool, and the CoreDNS
// forwarding of customDnsResolvers, into a new cluster. A failure is an
// *addonError naming the step.
func installAddons(ctx context.Context, s *Session, k Kube, manifest []byte, pool []string, wait time.Duration) error {
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
	if rs := cfg.Kind.CustomDNSResolvers; len(rs) > 0 {
		steps = append(steps, addonStep{fmt.Sprintf("Forwarding %d domains from CoreDNS", len(rs)), "", "configuring CoreDNS", func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			return k.CoreDNS(ctx, rs)
		}})
	}
	for _, st := range steps {
		if err := s.step(st.label, st.done, func() error { return st.fn(ctx) }); err != nil {
			return &addonError{step: st.name, err: err}
		}
	}
	return nil
}
