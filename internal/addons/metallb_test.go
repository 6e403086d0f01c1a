package addons

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kube/kubetest"
	"github.com/bcollard/marina/internal/slot"
)

// The API server's own wording when it cannot call a webhook: an internal
// error around "failed calling webhook <name>: failed to call webhook: …".
func callFailure(cause string) error {
	return apierrors.NewInternalError(fmt.Errorf(`failed calling webhook "ipaddresspoolvalidationwebhook.metallb.io": failed to call webhook: Post "https://metallb-webhook-service.metallb-system.svc:443/validate-metallb-io-v1beta1-ipaddresspool?timeout=10s": %s`, cause))
}

func TestWebhookUnavailable(t *testing.T) {
	denied := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: `admission webhook "ipaddresspoolvalidationwebhook.metallb.io" denied the request: overlapping CIDRs`,
	}}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "metallb.io", Kind: "IPAddressPool"}, "p", nil)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", callFailure("dial tcp 10.96.0.20:443: connect: connection refused"), true},
		{"no endpoints", callFailure(`no endpoints available for service "metallb-webhook-service"`), true},
		{"certificate not injected yet", callFailure("tls: failed to verify certificate: x509: certificate signed by unknown authority"), true},
		{"timeout", callFailure("context deadline exceeded"), true},
		{"wrapped by marina", fmt.Errorf("apply IPAddressPool metallb-system/p: %w: retry", callFailure("connection refused")), true},
		{"webhook denied", denied, false},
		{"schema invalid", invalid, false},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Group: "metallb.io", Resource: "ipaddresspools"}, "p", errors.New("no")), false},
		// The API server itself down is not the webhook: it is not waited out.
		{"api server down", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), false},
	}
	for _, tt := range tests {
		if got := webhookUnavailable(tt.err); got != tt.want {
			t.Errorf("%s: webhookUnavailable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckRanges(t *testing.T) {
	fromSlot, err := slot.MetalLBRanges(netip.MustParsePrefix("172.30.0.0/16"), 42)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRanges(fromSlot); err != nil {
		t.Errorf("slot ranges %v refused: %v", fromSlot, err)
	}
	if err := checkRanges([]string{"172.30.1.0/24", "fd00::10-fd00::20", "10.0.0.1-10.0.0.1"}); err != nil {
		t.Errorf("valid ranges refused: %v", err)
	}
	for _, tt := range []struct {
		ranges []string
		want   string
	}{
		{nil, "no address ranges"},
		{[]string{"172.30.1.7-172.30.1.1"}, "ends before it starts"},
		{[]string{"172.30.1.1-fd00::1"}, "mixes IPv4 and IPv6"},
		{[]string{"172.30.1.1/24"}, "host bits set: write it as 172.30.1.0/24"},
		{[]string{"172.30.1.1"}, "neither first-last"},
		{[]string{"a-b"}, "neither first-last"},
		{[]string{"172.30.1.1-172.30.1.7", ""}, "neither first-last"},
	} {
		err := checkRanges(tt.ranges)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("checkRanges(%q) = %v, want %q", tt.ranges, err, tt.want)
		}
	}
}

// marina applies MetalLB with its controller's and speakers' readiness
// asked every Readiness seconds from the start, and changes nothing else.
func TestMetalLBReadinessIsAskedOften(t *testing.T) {
	const manifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller
  namespace: metallb-system
spec:
  template:
    spec:
      containers:
      - name: controller
        livenessProbe:
          initialDelaySeconds: 10
          periodSeconds: 10
        readinessProbe:
          initialDelaySeconds: 10
          periodSeconds: 10
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
  namespace: metallb-system
`
	objs, err := metalLBObjects([]byte(manifest))
	if err != nil || len(objs) != 2 {
		t.Fatalf("%d objects, %v", len(objs), err)
	}
	cs, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	ready, live := c["readinessProbe"].(map[string]any), c["livenessProbe"].(map[string]any)
	if ready["initialDelaySeconds"] != int64(0) || ready["periodSeconds"] != int64(Readiness) {
		t.Errorf("readinessProbe %v", ready)
	}
	if live["initialDelaySeconds"] != int64(10) || live["periodSeconds"] != int64(10) {
		t.Errorf("livenessProbe changed: %v", live)
	}
}

// The speakers' memberlist Secret is made with MetalLB before its
// controller runs, in the controller's form, and one that exists (the
// controller's, or an earlier run's) is left alone.
func TestMemberlistSecret(t *testing.T) {
	ctl := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "controller", Namespace: MetalLBNamespace, UID: "u-1"}}
	k, _ := kubetest.New(ctl)
	ctx := context.Background()
	if err := memberlistSecret(ctx, k); err != nil {
		t.Fatal(err)
	}
	s, err := kube.Read[corev1.Secret](ctx, k, kube.Secrets, MetalLBNamespace, "memberlist")
	if err != nil {
		t.Fatal(err)
	}
	key := s.Data["secretkey"]
	raw, err := base64.RawStdEncoding.DecodeString(string(key))
	if err != nil || len(raw) != 16 || len(s.Data) != 1 {
		t.Errorf("secretkey %q (%d bytes, %v), data %d keys", key, len(raw), err, len(s.Data))
	}
	if o := s.OwnerReferences; len(o) != 1 || o[0].Kind != "Deployment" || o[0].Name != "controller" || o[0].UID != "u-1" {
		t.Errorf("owner %+v", o)
	}
	if err := memberlistSecret(ctx, k); err != nil {
		t.Fatal(err)
	}
	again, _ := kube.Read[corev1.Secret](ctx, k, kube.Secrets, MetalLBNamespace, "memberlist")
	if string(again.Data["secretkey"]) != string(key) {
		t.Error("a second run replaced the key")
	}
}
