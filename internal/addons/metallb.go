package addons

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/bcollard/marina/internal/kube"
)

// Where MetalLB's manifest puts things.
const (
	MetalLBNamespace  = "metallb-system"
	metalLBController = "controller"
	metalLBSpeaker    = "speaker"
)

// webhookRetryInterval spaces pool applies while MetalLB's webhook is not
// answering. Each failed try can itself last up to the webhook's 10 s
// timeout, so trying more often would only queue calls.
const webhookRetryInterval = time.Second

// MetalLB applies MetalLB's manifest and waits until MetalLB can serve an
// address pool. That takes four things, and the first three are waited for
// here:
//
//  1. its CRDs are Established, or the API server does not know what an
//     IPAddressPool is;
//  2. the controller Deployment has rolled out and is available: it hands
//     out addresses from pools to LoadBalancer Services, and it serves the
//     validating webhook that every pool goes through;
//  3. the speaker DaemonSet is ready on every node, and on at least one: in
//     layer 2 mode a speaker answers ARP for each address, so without one an
//     address is handed out but nothing on the kind network can reach it
//     (speakers also need the memberlist Secret the controller writes, so
//     they are ready only after the controller has run);
//  4. the webhook answers. The controller turns ready before that: it first
//     writes its own certificate into the metallb-webhook-cert Secret and the
//     webhook configuration's caBundle, and the Service needs a ready
//     endpoint. No condition on an object says when that is done; the one
//     true test is a pool apply the webhook lets through, which is why Pool
//     retries while the webhook cannot be called.
//
// cluster create runs the same steps one at a time (ApplyMetalLB, then each
// of MetalLBWaits), to show each as it goes; the lab's tests run this.
func MetalLB(ctx context.Context, k *kube.Cluster, manifest []byte) error {
	if err := ApplyMetalLB(ctx, k, manifest); err != nil {
		return err
	}
	waits, err := MetalLBWaits(manifest)
	if err != nil {
		return err
	}
	for _, w := range waits {
		if err := w.Do(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// ApplyMetalLB applies MetalLB's manifest, without waiting (see MetalLB).
func ApplyMetalLB(ctx context.Context, k *kube.Cluster, manifest []byte) error {
	objs, err := metalLBObjects(manifest)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, k, objs); err != nil {
		return fmt.Errorf("install MetalLB: %w", err)
	}
	return memberlistSecret(ctx, k)
}

// The Secret MetalLB's speakers mount, and its one key (MetalLB's
// internal/k8s: MLSecretKeyName).
const (
	memberlistName = "memberlist"
	memberlistKey  = "secretkey"
)

// memberlistSecret makes the Secret MetalLB's speakers share their
// memberlist key in, as MetalLB's controller would (16 random bytes,
// base64 without padding, owned by the controller's Deployment), unless
// it exists. The controller makes it only once it runs, and a speaker
// that started before it waits on the kubelet's backoff to mount it: up
// to 10 s more on a new cluster. MetalLB's install guides had users make
// it by hand before v0.13; the controller leaves one that exists alone.
func memberlistSecret(ctx context.Context, k *kube.Cluster) error {
	if _, err := kube.Read[corev1.Secret](ctx, k, kube.Secrets, MetalLBNamespace, memberlistName); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return wrap(err, "read Secret %s/%s", MetalLBNamespace, memberlistName)
	}
	d, err := kube.Read[appsv1.Deployment](ctx, k, kube.Deployments, MetalLBNamespace, metalLBController)
	if err != nil {
		return wrap(err, "read Deployment %s/%s", MetalLBNamespace, metalLBController)
	}
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	err = kube.Create(ctx, k, kube.Secrets, MetalLBNamespace, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: memberlistName, Namespace: MetalLBNamespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID}}},
		Data: map[string][]byte{memberlistKey: []byte(base64.RawStdEncoding.EncodeToString(key))},
	}, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) { // the controller was first
		return wrap(err, "create Secret %s/%s", MetalLBNamespace, memberlistName)
	}
	return nil
}

// Readiness is how often the kubelet asks MetalLB's controller and
// speakers whether they are ready, from their start. MetalLB's manifest
// asks first after 10 s and then every 10 s, so a new cluster's webhook
// (which serves only through a ready controller) and its speakers came
// 10 to 20 s after their pods started; asking every 2 s from the start
// costs one local HTTP GET per pod and period.
const Readiness = 2

// metalLBObjects are the objects of MetalLB's manifest as marina applies
// them: the controller's and speakers' readiness probes ask every
// Readiness seconds from the start. Their liveness probes are MetalLB's.
func metalLBObjects(manifest []byte) ([]*unstructured.Unstructured, error) {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetNamespace() != MetalLBNamespace || (o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet") {
			continue
		}
		cs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return nil, fmt.Errorf("MetalLB's manifest: %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			probe, ok := cm["readinessProbe"].(map[string]any)
			if !ok {
				continue
			}
			probe["initialDelaySeconds"] = int64(0)
			probe["periodSeconds"] = int64(Readiness)
		}
		if err := unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers"); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// MetalLBWaits are the first three conditions of MetalLB's doc comment, in
// the order they come true.
func MetalLBWaits(manifest []byte) ([]Wait, error) {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	var crds []string
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == crdResourceKind {
			crds = append(crds, o.GetName())
		}
	}
	return []Wait{
		{kind: waitCRDs, Names: crds},
		{kind: waitDeployment, Namespace: MetalLBNamespace, Names: []string{metalLBController}},
		{kind: waitDaemonSet, Namespace: MetalLBNamespace, Names: []string{metalLBSpeaker}},
	}, nil
}

// DeploymentWait waits for Deployment namespace/name to be available.
func DeploymentWait(namespace, name string) Wait {
	return Wait{kind: waitDeployment, Namespace: namespace, Names: []string{name}}
}

// Wait is one condition an install waits for before its next step.
type Wait struct {
	kind      waitKind
	Namespace string
	Names     []string
}

type waitKind int

const (
	waitCRDs waitKind = iota
	waitDeployment
	waitDaemonSet
)

// String names what is waited for, as progress and errors show it.
func (w Wait) String() string {
	switch w.kind {
	case waitCRDs:
		return fmt.Sprintf("%d CRDs Established", len(w.Names))
	case waitDeployment:
		return "deployment " + w.Namespace + "/" + strings.Join(w.Names, ",") + " available"
	default:
		return "daemonset " + w.Namespace + "/" + strings.Join(w.Names, ",") + " ready"
	}
}

// Do waits until the condition holds or ctx ends.
func (w Wait) Do(ctx context.Context, k *kube.Cluster) error {
	var err error
	switch w.kind {
	case waitCRDs:
		err = WaitCRDsEstablished(ctx, k, w.Names...)
	case waitDeployment:
		err = WaitDeploymentAvailable(ctx, k, w.Namespace, w.Names[0])
	default:
		err = WaitDaemonSetReady(ctx, k, w.Namespace, w.Names[0])
	}
	// No "install MetalLB" here: ExternalDNS and CoreDNS are waited for
	// too, and the caller's step names the install.
	return err
}

var crdResourceKind = schema.GroupKind{Group: crdResource.Group, Kind: "CustomResourceDefinition"}

// Pool applies, in metallb-system, an IPAddressPool called name holding
// ranges (as slot.MetalLBRanges returns them: "first-last" or a CIDR) and an
// L2Advertisement of the same name that announces it. While MetalLB's
// webhook cannot be called the applies are retried until ctx ends; any other
// error, such as the webhook rejecting the pool, fails at once.
func Pool(ctx context.Context, k *kube.Cluster, name string, ranges []string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("MetalLB pool name %q is not valid: %s (a marina bug: pool names come from cluster names)", name, strings.Join(errs, "; "))
	}
	if err := checkRanges(ranges); err != nil {
		return fmt.Errorf("MetalLB pool %s: %w", name, err)
	}
	addrs := make([]any, len(ranges))
	for i, r := range ranges {
		addrs[i] = r
	}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metallb.io/v1beta1",
		"kind":       "IPAddressPool",
		"metadata":   map[string]any{"name": name, "namespace": MetalLBNamespace},
		"spec":       map[string]any{"addresses": addrs},
	}}
	l2 := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metallb.io/v1beta1",
		"kind":       "L2Advertisement",
		"metadata":   map[string]any{"name": name, "namespace": MetalLBNamespace},
		"spec":       map[string]any{"ipAddressPools": []any{name}},
	}}
	a := newApplier(k)
	for _, obj := range []*unstructured.Unstructured{pool, l2} {
		if err := applyThroughWebhook(ctx, a, obj); err != nil {
			return err
		}
	}
	return nil
}

// applyThroughWebhook applies obj, trying again while the API server
// cannot call an admission webhook.
func applyThroughWebhook(ctx context.Context, a *applier, obj *unstructured.Unstructured) error {
	ri, err := a.resource(ctx, obj)
	if err != nil {
		return fmt.Errorf("apply %s: %w", describe(obj), err)
	}
	start := time.Now()
	var last error
	err = wait.PollUntilContextCancel(ctx, webhookRetryInterval, true, func(ctx context.Context) (bool, error) {
		err := send(ctx, ri, obj)
		switch {
		case err == nil:
			return true, nil
		case webhookUnavailable(err):
			last = err
			return false, nil
		default:
			return false, err
		}
	})
	switch {
	case err == nil:
		return nil
	case last != nil && (ctx.Err() != nil || limiterDeadline(err)):
		// The deadline can strike during a try, whose error is then only
		// the deadline: report the webhook error that kept us waiting.
		cause := ctx.Err()
		if cause == nil { // the rate limiter saw the deadline coming
			cause = context.DeadlineExceeded
		}
		return fmt.Errorf("apply %s: MetalLB's validating webhook still could not be called after %s (%v): %w. "+
			"The MetalLB controller serves it once its pod runs and has written its certificate: check kubectl -n %s get pods,endpointslices and the controller's log, then run marina again",
			describe(obj), time.Since(start).Round(time.Second), cause, last, MetalLBNamespace)
	default:
		return wrap(err, "apply %s", describe(obj))
	}
}

// limiterDeadline reports whether err is client-go's rate limiter refusing
// to wait past the context's deadline: the deadline, seen a moment early
// (the lab's addon test met it, ending a webhook wait with it).
func limiterDeadline(err error) bool {
	return err != nil && strings.Contains(err.Error(), "would exceed context deadline")
}

// webhookUnavailable reports whether err is the API server failing to call
// an admission webhook (no endpoints, connection refused, TLS not set up
// yet, timeout): what MetalLB's webhook returns until its controller serves
// it. A webhook that answered and denied the object is not this: that is a
// real validation error and retrying cannot fix it.
func webhookUnavailable(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	msg := st.Status().Message
	return strings.Contains(msg, "failed calling webhook") && !strings.Contains(msg, "denied the request")
}

// checkRanges validates MetalLB address ranges: "first-last" in one family,
// first ≤ last, or a CIDR prefix.
func checkRanges(ranges []string) error {
	if len(ranges) == 0 {
		return errors.New("no address ranges given (a marina bug: slot.MetalLBRanges gives two)")
	}
	for _, r := range ranges {
		if p, err := netip.ParsePrefix(r); err == nil {
			if p != p.Masked() {
				return fmt.Errorf("address range %q has host bits set: write it as %s", r, p.Masked())
			}
			continue
		}
		first, last, ok := strings.Cut(r, "-")
		a, err1 := netip.ParseAddr(strings.TrimSpace(first))
		b, err2 := netip.ParseAddr(strings.TrimSpace(last))
		switch {
		case !ok || err1 != nil || err2 != nil || a.Zone() != "" || b.Zone() != "":
			return fmt.Errorf("address range %q is neither first-last (172.30.1.1-172.30.1.7) nor a CIDR (172.30.1.0/24)", r)
		case a.Is4() != b.Is4():
			return fmt.Errorf("address range %q mixes IPv4 and IPv6", r)
		case b.Less(a):
			return fmt.Errorf("address range %q ends before it starts", r)
		}
	}
	return nil
}

// PoolName names the IPAddressPool and L2Advertisement of every cluster.
const PoolName = "marina"

// metalLB is MetalLB with the cluster's LoadBalancer pool.
type metalLB struct {
	version  string
	manifest []byte
	pool     []string
	wait     time.Duration
}

// NewMetalLB is MetalLB version (its pinned manifest) serving pool: its
// install and each of its waits share one deadline, wait.
func NewMetalLB(version string, manifest []byte, pool []string, wait time.Duration) Addon {
	return metalLB{version: version, manifest: manifest, pool: pool, wait: wait}
}

func (m metalLB) Name() string { return "MetalLB" }

func (m metalLB) What() string { return "installing MetalLB" }

func (m metalLB) Manifest() Ref { return Ref{Name: MetalLBSource, Version: m.version} }

func (m metalLB) Plan() string {
	return fmt.Sprintf("install MetalLB %s with the LoadBalancer pool %s", m.version, strings.Join(m.pool, ", "))
}

func (m metalLB) Steps() ([]Step, error) {
	objs, err := metalLBObjects(m.manifest)
	if err != nil {
		return nil, err
	}
	waits, err := MetalLBWaits(m.manifest)
	if err != nil {
		return nil, err
	}
	// One deadline for the whole of MetalLB's install, as its waits
	// follow one another; it starts with the apply.
	var deadline time.Time
	steps := []Step{{Label: "Installing MetalLB " + m.version, What: m.What(), Run: func(ctx context.Context, c Cluster) error {
		deadline = time.Now().Add(m.wait)
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		return c.Do(ctx, Op{Name: "apply-metallb", Objects: objs, Run: func(ctx context.Context, k *kube.Cluster) error {
			return ApplyMetalLB(ctx, k, m.manifest)
		}})
	}}}
	wait := func(w Wait) Step {
		return Step{Label: "Waiting for MetalLB: " + w.String(), What: m.What(), Run: func(ctx context.Context, c Cluster) error {
			ctx, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			return c.Wait(ctx, w)
		}}
	}
	// The CRDs and the controller (which serves the webhook every pool
	// goes through), then the pool; the speakers last, since they are
	// ready only on every node once every node has joined.
	for _, w := range waits[:2] {
		steps = append(steps, wait(w))
	}
	steps = append(steps, Step{Label: "Adding the LoadBalancer pool " + strings.Join(m.pool, ", "), What: "adding the MetalLB pool", Run: func(ctx context.Context, c Cluster) error {
		return within(ctx, m.wait, func(ctx context.Context) error {
			return c.Do(ctx, Op{Name: "pool " + PoolName, Run: func(ctx context.Context, k *kube.Cluster) error {
				return Pool(ctx, k, PoolName, m.pool)
			}})
		})
	}})
	speakers := wait(waits[2])
	speakers.Nodes = true
	return append(steps, speakers), nil
}

// PoolAddresses reads the addresses of MetalLB's IPAddressPool name; found
// is false when there is none.
func PoolAddresses(ctx context.Context, c Cluster, name string) (addrs []string, found bool, err error) {
	obj, err := c.Get(ctx, kube.PoolResource, MetalLBNamespace, name)
	if err != nil || obj == nil {
		return nil, false, err
	}
	addrs, _, err = unstructured.NestedStringSlice(obj.Object, "spec", "addresses")
	if err != nil {
		return nil, true, fmt.Errorf("read IPAddressPool %s/%s: %w", MetalLBNamespace, name, err)
	}
	return addrs, true, nil
}

func (m metalLB) pods() []byte { return m.manifest }
