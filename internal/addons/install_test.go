package addons

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
)

// recorder is a Cluster that records what an install asks of it, and
// fails the operation called fail.
type recorder struct {
	did  []string
	fail string
}

func (r *recorder) Do(_ context.Context, op Op) error {
	r.did = append(r.did, op.Name)
	if op.Name == r.fail {
		return errors.New("boom")
	}
	return nil
}

func (r *recorder) Wait(_ context.Context, w Wait) error {
	r.did = append(r.did, "wait "+w.String())
	return nil
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
	var lines []string
	if err := Install(context.Background(), r, set, func(label string, fn func() error) error {
		lines = append(lines, label)
		return fn()
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"apply-metallb", "wait 1 CRDs Established", "wait deployment metallb-system/controller available", "wait daemonset metallb-system/speaker ready", "pool marina",
		"apply-external-dns", "wait deployment external-dns/external-dns available",
		"coredns", "wait deployment kube-system/coredns available",
		"apply-metrics-server insecure=true", "wait deployment kube-system/metrics-server available",
	}
	if !slices.Equal(r.did, want) {
		t.Errorf("install did:\n%s\nwant\n%s", strings.Join(r.did, "\n"), strings.Join(want, "\n"))
	}
	if len(lines) != len(want) {
		t.Errorf("%d lines of progress for %d steps: %q", len(lines), len(want), lines)
	}
}

// A failed step ends the install, and the error names the step.
func TestInstallStopsAtTheFailedStep(t *testing.T) {
	r := &recorder{fail: "pool marina"}
	err := Install(context.Background(), r, Default(defaults()), func(_ string, fn func() error) error { return fn() })
	ae, ok := errors.AsType[*Error](err)
	if !ok || ae.What != "adding the MetalLB pool" || err.Error() != "adding the MetalLB pool: boom" {
		t.Fatalf("err = %v", err)
	}
	if slices.Contains(r.did, "apply-external-dns") {
		t.Errorf("went on after the failure: %v", r.did)
	}
	// A manifest that cannot be read fails before its add-on's first step.
	d := defaults()
	d.Manifests = map[string][]byte{MetalLBSource: []byte("kind: [")}
	r = &recorder{}
	err = Install(context.Background(), r, Default(d), func(_ string, fn func() error) error { return fn() })
	if ae, ok := errors.AsType[*Error](err); !ok || ae.What != "installing MetalLB" || len(r.did) != 0 {
		t.Errorf("a broken manifest: %v after %v", err, r.did)
	}
}
