package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
)

// Poll reports the last state it saw, not a read that failed only as
// the deadline came; reads that keep failing are reported.
func TestPollState(t *testing.T) {
	errRead := errors.New("connection reset")
	run := func(results ...error) (string, error) {
		// One poll per result, then the wait ends as at a deadline.
		i := 0
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return Poll(ctx, func(ctx context.Context) (bool, string, error) {
			if i == len(results) {
				cancel()
				return false, "", ctx.Err()
			}
			err := results[i]
			i++
			return false, "Available=False", err
		})
	}
	if state, err := run(nil, nil, errRead); state != "Available=False" || !errors.Is(err, context.Canceled) {
		t.Errorf("one failed read at the end: %q, %v", state, err)
	}
	if state, _ := run(nil, errRead, errRead, errRead); state != "Available=False (and the last 3 reads failed: connection reset)" {
		t.Errorf("failing reads: %q", state)
	}
	if state, _ := run(errRead, errRead); state != "unreadable: connection reset" {
		t.Errorf("never read: %q", state)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "deployments"}, "controller", errors.New("no"))
	start := time.Now()
	if _, err := run(forbidden, nil, nil, nil, nil, nil, nil); !apierrors.IsForbidden(err) || time.Since(start) > PollInterval {
		t.Errorf("forbidden was waited out: %v after %s", err, time.Since(start))
	}
}

// EchoAddress says why it gave up: a refused read names the kubeconfig,
// a Service with no address names MetalLB, and an address is returned.
func TestEchoAddress(t *testing.T) {
	ns := "marina-verify-1"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: echoName}}
	cs := fake.NewSimpleDynamicClient(scheme.Scheme, svc.DeepCopy())
	k := &Cluster{Dynamic: cs}
	ctx, cancel := context.WithTimeout(context.Background(), 2*PollInterval)
	defer cancel()
	if _, err := k.EchoAddress(ctx, ns); err == nil || !strings.Contains(err.Error(), "got no LoadBalancer address (no address): is MetalLB running?") {
		t.Errorf("no address: %v", err)
	}

	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "172.30.1.1"}}
	u, err := untyped(Services, svc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Resource(Services.GroupVersionResource).Namespace(ns).UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, err := k.EchoAddress(context.Background(), ns); err != nil || a.String() != "172.30.1.1" {
		t.Errorf("address: %v, %v", a, err)
	}

	cs.PrependReactor("get", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, echoName, errors.New("no"))
	})
	if _, err := k.EchoAddress(context.Background(), ns); err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "marina kubeconfig merge") {
		t.Errorf("forbidden: %v", err)
	}
}

// A poll woken by a change looks at once, not at its next tick (an hour
// away here): the second look can only come from the wake.
func TestPollWakes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wake := make(chan struct{}, 1)
	looks := 0
	state, err := pollEvery(ctx, time.Hour, wake, func(context.Context) (bool, string, error) {
		looks++
		if looks == 1 {
			wake <- struct{}{}
			return false, "Available=False", nil
		}
		return true, "Available=True", nil
	})
	if err != nil || state != "Available=True" || looks != 2 {
		t.Errorf("after %d looks: %q, %v", looks, state, err)
	}
}

// Changes signals when the API server reports the object, and again when
// it changes.
func TestChanges(t *testing.T) {
	ns := "marina-verify-1"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: echoName}}
	cs := fake.NewSimpleDynamicClient(scheme.Scheme, svc.DeepCopy())
	k := &Cluster{Dynamic: cs}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := k.Changes(ctx, Services.GroupVersionResource, ns, echoName)
	next := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no signal for %s", what)
		}
	}
	next("the object as the watch starts")
	svc.Labels = map[string]string{"changed": "yes"}
	if err := Update(ctx, k, Services, ns, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("an update")
}
