package addons

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
)

// recorder is a Cluster that records what an install asks of it, and
// fails the operation called fail. A wait called block waits for its
// context to end.
type recorder struct {
	mu    sync.Mutex
	did   []string
	fail  string
	block string
}

func (r *recorder) Do(_ context.Context, op Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.did = append(r.did, op.Name)
	if op.Name == r.fail {
		return errors.New("boom")
	}
	return nil
}

func (r *recorder) Wait(ctx context.Context, w Wait) error {
	r.mu.Lock()
	r.did = append(r.did, "wait "+w.String())
	r.mu.Unlock()
	if "wait "+w.String() == r.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.did)
}

// inOrder reports whether want appear in got in their order.
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

func (r *recorder) Get(context.Context, schema.GroupVersionResource, string, string) (*unstructured.Unstructured, error) {
	return nil, nil
}

const (
	oneCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ipaddresspools.metallb.io
`
	oneNamespace = `apiVersion: v1
kind: Namespace
metadata:
  name: external-dns
`
	metricsDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: metrics-server
  namespace: kube-system
spec:
  template:
    spec:
      containers:
      - name: metrics-server
        image: registry.k8s.io/metrics-server/metrics-server:v0.8.0
`
)

func defaults() Defaults {
	return Defaults{
		Manifests:      map[string][]byte{MetalLBSource: []byte(oneCRD), MetricsServerSource: []byte(metricsDeployment)},
		MetalLBVersion: "v0.16.2", Pool: []string{"172.30.1.1-172.30.1.7"},
		Zone: "dev.demo.internal", ExternalDNS: []byte(oneNamespace), Etcd: dns.Creds{User: "externaldns-dev", Password: strings.Repeat("p", 40)},
		Forwards:      []config.DNSResolver{{Domain: "demo.internal", Resolvers: []string{"172.30.255.53"}}},
		MetricsServer: &MetricsServer{Version: "v0.8.0", InsecureTLS: true},
	}
}

// The default list is one order for everything that reads it: what a dry
// run plans is what an install does, step by step, each a line of its own.
func TestDefaultInstallsAsItPlans(t *testing.T) {
	set := Default(defaults())
	if refs := Manifests(set); !slices.Equal(refs, []Ref{{MetalLBSource, "v0.16.2"}, {MetricsServerSource, "v0.8.0"}}) {
		t.Errorf("manifests: %v", refs)
	}
	plans := Plans(set)
	for i, want := range []string{"install MetalLB v0.16.2", "install ExternalDNS", "forward from CoreDNS: demo.internal → 172.30.255.53", "install metrics-server v0.8.0 with " + InsecureTLSArg} {
		if i >= len(plans) || !strings.HasPrefix(plans[i], want) {
			t.Fatalf("plans:\n%s\nwant %q at %d", strings.Join(plans, "\n"), want, i)
		}
	}
	r := &recorder{}
	var mu sync.Mutex
	lines := map[string][]string{}
	if err := Install(context.Background(), r, set, nil, func(addon, label string, fn func() error) error {
		mu.Lock()
		lines[addon] = append(lines[addon], label)
		mu.Unlock()
		return fn()
	}); err != nil {
		t.Fatal(err)
	}
	// Each add-on's steps in their order; the add-ons side by side. The
	// pool needs the controller (its webhook), not the speakers.
	chains := map[string][]string{
		"MetalLB":        {"apply-metallb", "wait 1 CRDs Established", "wait deployment metallb-system/controller available", "pool marina", "wait daemonset metallb-system/speaker ready"},
		"ExternalDNS":    {"apply-external-dns", "wait deployment external-dns/external-dns available"},
		"CoreDNS":        {"coredns", "wait deployment kube-system/coredns available"},
		"metrics-server": {"apply-metrics-server insecure=true", "wait deployment kube-system/metrics-server available"},
	}
	did, n := r.calls(), 0
	for name, want := range chains {
		n += len(want)
		if !inOrder(did, want) {
			t.Errorf("%s's steps out of order in:\n%s\nwant\n%s", name, strings.Join(did, "\n"), strings.Join(want, "\n"))
		}
		if len(lines[name]) != len(want) {
			t.Errorf("%d lines of progress for %s's %d steps: %q", len(lines[name]), name, len(want), lines[name])
		}
	}
	if len(did) != n {
		t.Errorf("install did %d things, want %d:\n%s", len(did), n, strings.Join(did, "\n"))
	}
}

// Steps that need every node wait for them; the others go on meanwhile.
func TestInstallHoldsNodeStepsUntilTheNodesJoined(t *testing.T) {
	r := &recorder{}
	nodes := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	show := func(_, label string, fn func() error) error {
		mu.Lock()
		seen = append(seen, label)
		mu.Unlock()
		return fn()
	}
	errc := make(chan error, 1)
	go func() { errc <- Install(context.Background(), r, Default(defaults()), nodes, show) }()
	// Before the nodes join, every step that needs only the API server
	// runs: MetalLB up to its pool, ExternalDNS, metrics-server.
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(r.calls(), "wait deployment external-dns/external-dns available") || !slices.Contains(r.calls(), "pool marina") || !slices.Contains(r.calls(), "wait deployment kube-system/metrics-server available") {
		if time.Now().After(deadline) {
			t.Fatalf("the API server's steps did not run before the nodes joined: %v", r.calls())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	for _, held := range []string{"wait daemonset metallb-system/speaker ready", "coredns"} {
		if slices.Contains(r.calls(), held) {
			t.Errorf("%s ran before the nodes joined: %v", held, r.calls())
		}
	}
	select {
	case err := <-errc:
		t.Fatalf("install ended before the nodes joined: %v", err)
	default:
	}
	close(nodes)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for _, held := range []string{"wait daemonset metallb-system/speaker ready", "coredns"} {
		if !slices.Contains(r.calls(), held) {
			t.Errorf("%s never ran: %v", held, r.calls())
		}
	}
}

// A failed step ends the install: the error names the step, and the
// add-ons still at work stop.
func TestInstallStopsAtTheFailedStep(t *testing.T) {
	r := &recorder{fail: "pool marina", block: "wait deployment external-dns/external-dns available"}
	done := make(chan error, 1)
	go func() {
		done <- Install(context.Background(), r, Default(defaults()), nil, func(_, _ string, fn func() error) error { return fn() })
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the install did not stop the add-on still waiting after the pool failed")
	}
	ae, ok := errors.AsType[*Error](err)
	if !ok || ae.What != "adding the MetalLB pool" || err.Error() != "adding the MetalLB pool: boom" {
		t.Fatalf("err = %v", err)
	}
	if slices.Contains(r.calls(), "wait daemonset metallb-system/speaker ready") {
		t.Errorf("MetalLB went on after its failure: %v", r.calls())
	}
	// A manifest that cannot be read fails before any step.
	d := defaults()
	d.Manifests = map[string][]byte{MetalLBSource: []byte("kind: [")}
	r = &recorder{}
	err = Install(context.Background(), r, Default(d), nil, func(_, _ string, fn func() error) error { return fn() })
	if ae, ok := errors.AsType[*Error](err); !ok || ae.What != "installing MetalLB" || len(r.calls()) != 0 {
		t.Errorf("a broken manifest: %v after %v", err, r.calls())
	}
}
