package kindcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/slot"
)

// DefaultVerifyImage answers GET /clientip with the caller's address
// (agnhost netexec, the echo server of Kubernetes' own e2e tests), pinned
// by digest as the kueue project's e2e tests pin it.
const DefaultVerifyImage = "registry.k8s.io/e2e-test-images/agnhost:2.53@sha256:99c6b4bb4a1e1df3f0b3752168c89358794d02258ebebc26bf21c29399011a85"

// DefaultVerifyWait bounds the wait for the echo server and its address.
const DefaultVerifyWait = 3 * time.Minute

// VerifyOptions are the flags of marina cluster verify.
type VerifyOptions struct {
	Name  string // "" is the current context's cluster
	Image string
	Wait  time.Duration
}

// Verify puts an echo server behind a LoadBalancer Service with
// externalTrafficPolicy Local, calls it from this machine, and checks that
// the server saw this machine's own address: the whole layer-3 path (host
// route, the VM's rules, MetalLB's announcement) with no NAT on the way.
func Verify(ctx context.Context, e *session.Env, opts VerifyOptions) (session.Result, error) {
	opts, err := verifyDefaults(e, opts)
	if err != nil {
		return session.Result{}, err
	}
	name := opts.Name
	s, err := session.Open(ctx, e, session.Needs{Config: session.NoConfig})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	k, err := s.Kube(name, 30*time.Second)
	if err != nil {
		return session.Result{}, err
	}
	// The address to call comes from the cluster's Service status, which
	// its API server writes: it is called only when it is in the cluster's
	// own LoadBalancer pool, which marina gave MetalLB (S7).
	cfg, err := config.Load(e.Paths)
	if errors.Is(err, config.ErrNotFound) {
		cfg, err = config.Default(), nil // what up would make
	}
	if err != nil {
		return session.Result{}, err
	}
	bridge := cfg.Network.Prefix()
	n, err := clusterSlot(s, name)
	if err != nil {
		return session.Result{}, err
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	ns := "marina-verify-" + hex.EncodeToString(suffix)
	defer func() {
		// Whatever happened, the workload goes.
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = k.DeleteNamespace(bg, ns)
	}()
	var lb netip.Addr
	if err := e.Step("Deploying an echo server behind a LoadBalancer in "+name+"/"+ns, "", func() error {
		echo := kube.Echo{Namespace: ns, Image: opts.Image, Labels: map[string]string{cluster.ManagedBy: "marina"}}
		if err := k.DeployEcho(ctx, echo); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, opts.Wait)
		defer cancel()
		lb, err = k.EchoAddress(wctx, ns)
		return err
	}); err != nil {
		return session.Result{}, err
	}
	if !slot.InPool(bridge, n, lb) {
		pool, _ := slot.MetalLBRanges(bridge, n)
		return session.Result{}, fmt.Errorf("the echo server's Service in %s names %s, outside the cluster's LoadBalancer pool %s (slot %d): marina calls no address but its own pool's, so nothing was called; check the cluster's MetalLB pool with `marina doctor`", name, lb, strings.Join(pool, ", "), n)
	}
	var seen, mine string
	if err := e.Step("Calling http://"+lb.String()+"/clientip from this machine", "", func() error {
		wctx, cancel := context.WithTimeout(ctx, opts.Wait)
		defer cancel()
		seen, mine, err = s.Host.ClientIP(wctx, lb)
		return err
	}); err != nil {
		return session.Result{}, err
	}
	seenHost, _, _ := net.SplitHostPort(seen)
	if seenHost != mine {
		return session.Result{}, fmt.Errorf("the echo server at %s saw %s, not this machine's address %s: something on the way translates addresses (run `marina status`; the VM's rules or the host route may be missing)", lb, seenHost, mine)
	}
	return session.Said("✓ LoadBalancer %s in %s answered this machine directly: it saw %s, this machine's own address", lb, name, seen), nil
}

// clusterSlot is cluster name's slot, from the API port of the kubeconfig
// this home wrote for it (7000+N).
func clusterSlot(s *session.Session, name string) (int, error) {
	path, err := s.Paths.Kubeconfig(name)
	if err != nil {
		return 0, err
	}
	kc, err := kubeconfig.ReadFile(path, name)
	if err != nil {
		return 0, err
	}
	server, err := kubeconfig.Server(kc)
	if err != nil {
		return 0, err
	}
	u, err := url.Parse(server)
	if err != nil {
		return 0, err
	}
	p, err := strconv.Atoi(u.Port())
	n := p - slot.APIPort(0)
	if err != nil || slot.Check(n) != nil {
		return 0, fmt.Errorf("%s names %s, no marina API port (7001–7099): `marina kubeconfig merge %s` writes it again", path, server, name)
	}
	return n, nil
}

// verifyDefaults fills in what opts leaves out: the current context's
// cluster, the echo image, the wait.
func verifyDefaults(e *session.Env, opts VerifyOptions) (VerifyOptions, error) {
	if opts.Name == "" {
		cur, err := currentContext(e)
		if err != nil {
			return opts, err
		}
		opts.Name = cur
	}
	if err := cluster.CheckName(opts.Name); err != nil {
		return opts, err
	}
	if opts.Image == "" {
		opts.Image = DefaultVerifyImage
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultVerifyWait
	}
	return opts, nil
}

// currentContext is the current context of the user's kubeconfig, when it
// names a marina cluster.
func currentContext(e *session.Env) (string, error) {
	target := e.KubeconfigTarget()
	cur, err := kubeconfig.Current(target)
	if err != nil || cur == "" {
		return "", fmt.Errorf("name the cluster to verify (%s has no current context)", target)
	}
	return cur, nil
}
