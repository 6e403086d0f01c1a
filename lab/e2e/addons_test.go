package e2e

// internal/addons against the lab's real kube-apiserver and etcd
// (kubeAPI): MetalLB's own v0.16.2 manifest, the waits, the pool and its
// webhook, and the CoreDNS change. No controller manager or kubelet runs
// there, so the tests play them: they write the status that makes a wait
// true, and decide whether MetalLB's webhook exists at all. The API server
// runs in the mac namespace, which has no route off the machine, so its
// calls to the webhook fail here as they do in a cluster whose MetalLB
// controller does not serve yet.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/config"
	mkube "github.com/bcollard/marina/internal/kube"
)

// metalLBCRDs are the nine CRDs of MetalLB v0.16.2's metallb-native.yaml.
var metalLBCRDs = []string{
	"bfdprofiles.metallb.io", "bgpadvertisements.metallb.io", "bgppeers.metallb.io",
	"communities.metallb.io", "configurationstates.metallb.io", "ipaddresspools.metallb.io",
	"l2advertisements.metallb.io", "servicebgpstatuses.metallb.io", "servicel2statuses.metallb.io",
}

var (
	addonsCRDGVR  = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	addonsPoolGVR = schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "ipaddresspools"}
	addonsL2GVR   = schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "l2advertisements"}
)

func addonsClients(t *testing.T, cfg *rest.Config) (*kubernetes.Clientset, *dynamic.DynamicClient) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dyn
}

func addonsCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// addonsModDir returns the folder of a module in the Go module cache, which
// lab/lab filled while building (the mac namespace cannot download).
func addonsModDir(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go %s: no module folder in %s (%v)", strings.Join(args, " "), out, err)
	}
	return mod.Dir
}

// metalLBManifest returns MetalLB v0.16.2's manifest the way marina gets
// it: through addons.Manifest, from a cache seeded with the file from
// MetalLB's Go module. Nothing can be downloaded here, so this also proves
// marina's pinned digest is that file's.
func metalLBManifest(t *testing.T) []byte {
	t.Helper()
	dir := addonsModDir(t, t.TempDir(), "mod", "download", "-json", "go.universe.tf/metallb@v0.16.2")
	b, err := os.ReadFile(filepath.Join(dir, "config", "manifests", "metallb-native.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	seeded := filepath.Join(cache, "metallb", "v0.16.2", "metallb-native.yaml")
	if err := os.MkdirAll(filepath.Dir(seeded), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seeded, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := addons.Manifest(addonsCtx(t, 30*time.Second), cache, "v0.16.2")
	if err != nil {
		t.Fatalf("the module's manifest does not pass marina's pin: %v", err)
	}
	if !bytes.Equal(got, b) {
		t.Fatal("addons.Manifest did not return the seeded file")
	}
	return got
}

// installMetalLBObjects applies MetalLB's manifest and waits for its CRDs.
func installMetalLBObjects(t *testing.T, cfg *rest.Config) []byte {
	t.Helper()
	m := metalLBManifest(t)
	if err := addons.Apply(addonsCtx(t, 2*time.Minute), handle(t, cfg), m); err != nil {
		t.Fatalf("Apply MetalLB: %v", err)
	}
	if err := addons.WaitCRDsEstablished(addonsCtx(t, time.Minute), handle(t, cfg), metalLBCRDs...); err != nil {
		t.Fatal(err)
	}
	return m
}

func appliedByMarina(obj metav1.Object) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == addons.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

func TestAddonsMetalLBManifestApplies(t *testing.T) {
	cfg, _ := kubeAPI(t)
	cs, dyn := addonsClients(t, cfg)
	installMetalLBObjects(t, cfg)
	ctx := addonsCtx(t, time.Minute)

	// The nine CRDs are there, Established, and marina's.
	list, err := dyn.Resource(addonsCRDGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range list.Items {
		if strings.HasSuffix(crd.GetName(), ".metallb.io") {
			names = append(names, crd.GetName())
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			established := false
			for _, c := range conds {
				if m := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					established = true
				}
			}
			if !established || !appliedByMarina(&crd) {
				t.Errorf("CRD %s: established %v, applied by marina %v", crd.GetName(), established, appliedByMarina(&crd))
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, metalLBCRDs) {
		t.Errorf("metallb.io CRDs = %v, want %v", names, metalLBCRDs)
	}

	// The rest of the manifest, down to its last document.
	d, err := cs.AppsV1().Deployments("metallb-system").Get(ctx, "controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !appliedByMarina(d) {
		t.Errorf("deployment managed fields: %v", d.ManagedFields)
	}
	if _, err := cs.AppsV1().DaemonSets("metallb-system").Get(ctx, "speaker", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "metallb-webhook-configuration", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}

	// Applying again changes nothing.
	if err := addons.Apply(ctx, handle(t, cfg), metalLBManifest(t)); err != nil {
		t.Fatal(err)
	}
	d2, err := cs.AppsV1().Deployments("metallb-system").Get(ctx, "controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d2.ResourceVersion != d.ResourceVersion || d2.Generation != d.Generation {
		t.Errorf("second apply changed the deployment: resourceVersion %s → %s, generation %d → %d", d.ResourceVersion, d2.ResourceVersion, d.Generation, d2.Generation)
	}
}

// A custom resource right after its CRD in one manifest applies: the
// applier asks discovery again until the new kind is served. A kind that
// no CRD defines fails with a message that says so.
func TestAddonsApplyNewKind(t *testing.T) {
	cfg, _ := kubeAPI(t)
	_, dyn := addonsClients(t, cfg)
	manifest := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.addons-e2e.marina.dev
spec:
  group: addons-e2e.marina.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
---
apiVersion: addons-e2e.marina.dev/v1
kind: Gadget
metadata:
  name: g1
  namespace: default
spec:
  size: 3
`
	t.Cleanup(func() {
		_ = dyn.Resource(addonsCRDGVR).Delete(context.Background(), "gadgets.addons-e2e.marina.dev", metav1.DeleteOptions{})
	})
	if err := addons.Apply(addonsCtx(t, time.Minute), handle(t, cfg), []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	g, err := dyn.Resource(schema.GroupVersionResource{Group: "addons-e2e.marina.dev", Version: "v1", Resource: "gadgets"}).
		Namespace("default").Get(addonsCtx(t, 10*time.Second), "g1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(g.Object, "spec", "size"); size != 3 {
		t.Errorf("gadget spec = %v", g.Object["spec"])
	}

	unknown := "apiVersion: nothing.marina.dev/v1\nkind: Nothing\nmetadata:\n  name: nada\n"
	err = addons.Apply(addonsCtx(t, 3*time.Second), handle(t, cfg), []byte(unknown))
	if err == nil || !strings.Contains(err.Error(), "does not serve nothing.marina.dev/v1, Kind=Nothing") || !strings.Contains(err.Error(), "CustomResourceDefinition") {
		t.Fatalf("Apply of an unknown kind: %v", err)
	}
}

// waitReturns runs wait in a goroutine and returns its result channel.
func waitReturns(wait func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- wait() }()
	return ch
}

// stillWaiting fails the test if the wait has returned within d.
func stillWaiting(t *testing.T, ch <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned before its condition was true: %v", what, err)
	case <-time.After(d):
	}
}

// returnsNil fails the test unless the wait returns nil within d.
func returnsNil(t *testing.T, ch <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s did not return within %s of its condition becoming true", what, d)
	}
}

func TestAddonsWaitCRDsEstablished(t *testing.T) {
	cfg, _ := kubeAPI(t)
	_, dyn := addonsClients(t, cfg)
	crd := func(name, plural, kind string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"group": "wait-e2e.marina.dev", "scope": "Namespaced",
				"names": map[string]any{"plural": plural, "kind": kind},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object"}}}},
			},
		}}
	}
	t.Cleanup(func() {
		for _, n := range []string{"widgets.wait-e2e.marina.dev", "thingies.wait-e2e.marina.dev"} {
			_ = dyn.Resource(addonsCRDGVR).Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})

	// Waiting for a CRD that does not exist yet: it returns once the test
	// creates it and the API server establishes it.
	ch := waitReturns(func() error {
		return addons.WaitCRDsEstablished(addonsCtx(t, time.Minute), handle(t, cfg), "widgets.wait-e2e.marina.dev")
	})
	stillWaiting(t, ch, 2*time.Second, "WaitCRDsEstablished")
	if _, err := dyn.Resource(addonsCRDGVR).Create(addonsCtx(t, 10*time.Second), crd("widgets.wait-e2e.marina.dev", "widgets", "Widget"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	returnsNil(t, ch, 10*time.Second, "WaitCRDsEstablished")

	// A CRD whose kind another CRD of the group already has is never
	// established; the timeout says why.
	if _, err := dyn.Resource(addonsCRDGVR).Create(addonsCtx(t, 10*time.Second), crd("thingies.wait-e2e.marina.dev", "thingies", "Widget"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := addons.WaitCRDsEstablished(addonsCtx(t, 3*time.Second), handle(t, cfg), "widgets.wait-e2e.marina.dev", "thingies.wait-e2e.marina.dev")
	if err == nil {
		t.Fatal("a CRD with a conflicting kind counted as established")
	}
	for _, want := range []string{"customresourcedefinition thingies.wait-e2e.marina.dev: still ", "Established=False", "after 3s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
}

// TestAddonsMetalLBWaits proves addons.MetalLB waits for the controller
// and then the speaker: each wait returns only once the test has written
// the status the missing Kubernetes controllers would write.
func TestAddonsMetalLBWaits(t *testing.T) {
	cfg, _ := kubeAPI(t)
	cs, _ := addonsClients(t, cfg)
	m := installMetalLBObjects(t, cfg)
	deps := cs.AppsV1().Deployments("metallb-system")
	dss := cs.AppsV1().DaemonSets("metallb-system")

	setDeployment := func(available bool) {
		t.Helper()
		ctx := addonsCtx(t, 10*time.Second)
		d, err := deps.Get(ctx, "controller", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse,
				Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."}}}
		if available {
			d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UnavailableReplicas = 1, 1, 0
			d.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
				Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}
		}
		if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setDaemonSet := func(ready int32) {
		t.Helper()
		ctx := addonsCtx(t, 10*time.Second)
		ds, err := dss.Get(ctx, "speaker", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2,
			UpdatedNumberScheduled: 2, NumberReady: ready, NumberAvailable: ready, NumberUnavailable: 2 - ready}
		if _, err := dss.UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Whatever an earlier test left: nothing is ready.
	setDeployment(false)
	setDaemonSet(0)

	// What each wait says when its time runs out.
	err := addons.WaitDeploymentAvailable(addonsCtx(t, 2*time.Second), handle(t, cfg), "metallb-system", "controller")
	want := "deployment metallb-system/controller: still Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.) after 2s"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("WaitDeploymentAvailable = %v\nwant it to say %q", err, want)
	}
	err = addons.WaitDaemonSetReady(addonsCtx(t, 2*time.Second), handle(t, cfg), "metallb-system", "speaker")
	want = "daemonset metallb-system/speaker: still numberReady=0 of desiredNumberScheduled=2 after 2s"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("WaitDaemonSetReady = %v\nwant it to say %q", err, want)
	}

	// The whole install: blocked on the controller, then on the speaker,
	// then done.
	ch := waitReturns(func() error { return addons.MetalLB(addonsCtx(t, 2*time.Minute), handle(t, cfg), m) })
	stillWaiting(t, ch, 3*time.Second, "MetalLB (controller not available)")
	setDeployment(true)
	stillWaiting(t, ch, 3*time.Second, "MetalLB (speaker not ready)")
	setDaemonSet(1)
	stillWaiting(t, ch, 2*time.Second, "MetalLB (one speaker of two ready)")
	setDaemonSet(2)
	returnsNil(t, ch, 5*time.Second, "MetalLB")

	// A new controller spec is not available until the deployment
	// controller has seen it, however good the old status looks.
	ctx := addonsCtx(t, 30*time.Second)
	d, err := deps.Get(ctx, "controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["addons-e2e"] = time.Now().Format(time.RFC3339Nano)
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ch = waitReturns(func() error {
		return addons.WaitDeploymentAvailable(addonsCtx(t, time.Minute), handle(t, cfg), "metallb-system", "controller")
	})
	stillWaiting(t, ch, 2*time.Second, "WaitDeploymentAvailable (new generation)")
	setDeployment(true)
	returnsNil(t, ch, 5*time.Second, "WaitDeploymentAvailable")
}

// TestAddonsPoolWebhook proves both sides of MetalLB's webhook: while its
// configuration exists and nothing serves it, Pool keeps retrying and fails
// at its deadline saying why, but a real validation error fails at once;
// once the test removes the webhook, Pool succeeds.
func TestAddonsPoolWebhook(t *testing.T) {
	cfg, _ := kubeAPI(t)
	cs, dyn := addonsClients(t, cfg)
	installMetalLBObjects(t, cfg) // the webhook configuration comes back with it
	ranges := []string{"172.30.42.1-172.30.42.7", "172.30.42.16-172.30.42.254"}
	pools := dyn.Resource(addonsPoolGVR).Namespace("metallb-system")
	l2s := dyn.Resource(addonsL2GVR).Namespace("metallb-system")
	cleanup := func() {
		for _, n := range []string{"addons-e2e", "addons-e2e-denied"} {
			_ = pools.Delete(context.Background(), n, metav1.DeleteOptions{})
			_ = l2s.Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	}
	cleanup()
	t.Cleanup(cleanup)

	// 1. The webhook is configured and unreachable: retried to the deadline.
	start := time.Now()
	err := addons.Pool(addonsCtx(t, 15*time.Second), handle(t, cfg), "addons-e2e", ranges)
	took := time.Since(start)
	if err == nil {
		t.Fatal("Pool succeeded although the API server cannot call MetalLB's webhook")
	}
	for _, want := range []string{
		"apply IPAddressPool metallb-system/addons-e2e: MetalLB's validating webhook still could not be called after",
		`failed calling webhook "ipaddresspoolvalidationwebhook.metallb.io"`,
		"kubectl -n metallb-system get pods,endpointslices",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if took < 14*time.Second {
		t.Errorf("Pool gave up after %s, before its 15s deadline: it did not retry", took)
	}
	if _, err := pools.Get(addonsCtx(t, 10*time.Second), "addons-e2e", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pool exists although the webhook never let it through: %v", err)
	}
	t.Logf("webhook unreachable: %v", err)

	// 2. A real validation error is not retried, webhook or not. A
	// ValidatingAdmissionPolicy (evaluated in the API server, before the
	// webhooks) plays the validator that says no.
	vaps := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "addons-e2e-deny"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: addonsPtr(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"metallb.io"}, APIVersions: []string{"*"}, Resources: []string{"ipaddresspools"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "object.metadata.name != 'addons-e2e-denied'",
				Message:    "addons-e2e-denied overlaps another pool",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "addons-e2e-deny"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "addons-e2e-deny", ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	ctx := addonsCtx(t, 10*time.Second)
	if _, err := vaps.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vaps.Delete(context.Background(), policy.Name, metav1.DeleteOptions{}) })
	if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), binding.Name, metav1.DeleteOptions{}) })
	// The API server loads the policy a moment later: probe with dry runs
	// until it denies, so that Pool's very first try meets the denial.
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
		"metadata": map[string]any{"name": "addons-e2e-denied", "namespace": "metallb-system"},
		"spec":     map[string]any{"addresses": []any{ranges[0]}},
	}}
	for ctx := addonsCtx(t, 30*time.Second); ; {
		_, err := pools.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "overlaps another pool") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the ValidatingAdmissionPolicy never took effect: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	start = time.Now()
	err = addons.Pool(addonsCtx(t, 2*time.Minute), handle(t, cfg), "addons-e2e-denied", ranges)
	took = time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "addons-e2e-denied overlaps another pool") {
		t.Fatalf("Pool with a pool the validator denies: %v", err)
	}
	if strings.Contains(err.Error(), "still could not be called") || took > time.Minute {
		t.Errorf("a validation error was retried (%s): %v", took, err)
	}
	t.Logf("denied after %s: %v", took.Round(time.Millisecond), err)

	// 3. The webhook is taken away on purpose: the pool goes through.
	if err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(addonsCtx(t, 10*time.Second), "metallb-webhook-configuration", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := addons.Pool(addonsCtx(t, 30*time.Second), handle(t, cfg), "addons-e2e", ranges); err != nil {
		t.Fatalf("Pool without the webhook: %v", err)
	}
	ctx = addonsCtx(t, 10*time.Second)
	pool, err := pools.Get(ctx, "addons-e2e", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addrs, _, _ := unstructured.NestedStringSlice(pool.Object, "spec", "addresses")
	if !slices.Equal(addrs, ranges) || !appliedByMarina(pool) {
		t.Errorf("pool addresses %v (want %v), applied by marina %v", addrs, ranges, appliedByMarina(pool))
	}
	l2, err := l2s.Get(ctx, "addons-e2e", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if names, _, _ := unstructured.NestedStringSlice(l2.Object, "spec", "ipAddressPools"); !slices.Equal(names, []string{"addons-e2e"}) {
		t.Errorf("L2Advertisement announces %v", names)
	}
	// Again: nothing changes.
	if err := addons.Pool(addonsCtx(t, 30*time.Second), handle(t, cfg), "addons-e2e", ranges); err != nil {
		t.Fatal(err)
	}
	again, err := pools.Get(ctx, "addons-e2e", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.GetResourceVersion() != pool.GetResourceVersion() {
		t.Errorf("second Pool rewrote the pool")
	}
}

func addonsPtr[T any](v T) *T { return &v }

// kubeadmCorefile renders the Corefile kubeadm v1.36.1 puts in a new
// cluster (and so kind does) from kubeadm's own template, in the
// k8s.io/kubernetes module lab/kube builds from.
func kubeadmCorefile(t *testing.T) string {
	t.Helper()
	repo := filepath.Dir(filepath.Dir(labScript))
	dir := addonsModDir(t, filepath.Join(repo, "lab", "kube"), "list", "-m", "-json", "k8s.io/kubernetes")
	src := filepath.Join(dir, "cmd", "kubeadm", "app", "phases", "addons", "dns", "manifests.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "CoreDNSConfigMap" {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				tmpl, _ = strconv.Unquote(lit.Value)
			}
		}
		return true
	})
	if tmpl == "" {
		t.Fatalf("no CoreDNSConfigMap template in %s", src)
	}
	var out bytes.Buffer
	if err := template.Must(template.New("cm").Parse(tmpl)).Execute(&out, map[string]string{"DNSDomain": "cluster.local"}); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := utilyaml.Unmarshal(out.Bytes(), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["Corefile"] == "" {
		t.Fatalf("kubeadm's ConfigMap has no Corefile:\n%s", out.String())
	}
	return cm.Data["Corefile"]
}

func TestAddonsCoreDNS(t *testing.T) {
	cfg, _ := kubeAPI(t)
	cs, _ := addonsClients(t, cfg)
	orig := kubeadmCorefile(t)
	// The unit tests' copy must be kubeadm's, byte for byte.
	fixture, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(labScript)), "internal", "addons", "testdata", "kubeadm.Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	if string(fixture) != orig {
		t.Errorf("internal/addons/testdata/kubeadm.Corefile differs from kubeadm's:\n%q\nkubeadm:\n%q", fixture, orig)
	}

	cms := cs.CoreV1().ConfigMaps("kube-system")
	ctx := addonsCtx(t, time.Minute)
	_ = cms.Delete(ctx, "coredns", metav1.DeleteOptions{})
	t.Cleanup(func() { _ = cms.Delete(context.Background(), "coredns", metav1.DeleteOptions{}) })
	created, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Data:       map[string]string{"Corefile": orig},
	}, metav1.CreateOptions{FieldManager: "kubeadm"})
	if err != nil {
		t.Fatal(err)
	}
	read := func() *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	// kubeadm's CoreDNS Deployment, as far as marina touches it: its pod
	// template's annotations, which roll the pods.
	deps := cs.AppsV1().Deployments("kube-system")
	_ = deps.Delete(ctx, "coredns", metav1.DeleteOptions{})
	t.Cleanup(func() { _ = deps.Delete(context.Background(), "coredns", metav1.DeleteOptions{}) })
	labels := map[string]string{"k8s-app": "kube-dns"}
	if _, err := deps.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.14.2"}}},
			},
		},
	}, metav1.CreateOptions{FieldManager: "kubeadm"}); err != nil {
		t.Fatal(err)
	}
	// rolled says the Deployment's generation and that its pod template
	// carries the digest of the Corefile now in the ConfigMap.
	rolled := func() int64 {
		t.Helper()
		d, err := deps.Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(read().Data["Corefile"]))
		if got := d.Spec.Template.Annotations[addons.CorefileAnnotation]; got != hex.EncodeToString(sum[:]) {
			t.Errorf("CoreDNS's pod template has %s=%q, not the Corefile's digest", addons.CorefileAnnotation, got)
		}
		return d.Generation
	}

	first := []config.DNSResolver{
		{Domain: "corp.example.com", Resolvers: []string{"10.0.0.53", "10.0.0.54:5353"}},
		{Domain: "demo.internal", Resolvers: []string{"172.30.255.53"}},
	}
	if err := addons.CoreDNS(ctx, handle(t, cfg), first); err != nil {
		t.Fatal(err)
	}
	cm := read()
	got := cm.Data["Corefile"]
	if !strings.HasPrefix(got, orig) {
		t.Fatalf("kubeadm's block was not kept byte for byte:\n%s", got)
	}
	for _, want := range []string{
		"\ncorp.example.com:53 {\n    errors\n    cache 30\n    forward . 10.0.0.53 10.0.0.54:5353\n}\n",
		"\ndemo.internal:53 {\n    errors\n    cache 30\n    forward . 172.30.255.53\n}\n",
	} {
		if !strings.Contains(got[len(orig):], want) {
			t.Errorf("added part lacks %q:\n%s", want, got[len(orig):])
		}
	}
	if cm.ResourceVersion == created.ResourceVersion {
		t.Error("resourceVersion did not change")
	}
	gen := rolled()
	if gen < 2 {
		t.Errorf("the new Corefile did not roll CoreDNS (generation %d)", gen)
	}

	// The same list again: no write at all, no restart.
	if err := addons.CoreDNS(ctx, handle(t, cfg), first); err != nil {
		t.Fatal(err)
	}
	if rv := read().ResourceVersion; rv != cm.ResourceVersion {
		t.Errorf("second run with the same list wrote the ConfigMap (resourceVersion %s → %s)", cm.ResourceVersion, rv)
	}
	if g := rolled(); g != gen {
		t.Errorf("the same Corefile rolled CoreDNS again (generation %d → %d)", gen, g)
	}

	// Bad input: an error, and the ConfigMap is untouched.
	err = addons.CoreDNS(ctx, handle(t, cfg), []config.DNSResolver{{Domain: "corp.example.com", Resolvers: []string{"dns.google"}}})
	if err == nil || !strings.Contains(err.Error(), `"dns.google" is not an IP address`) {
		t.Errorf("CoreDNS with a hostname resolver: %v", err)
	}
	if rv := read().ResourceVersion; rv != cm.ResourceVersion {
		t.Error("bad input changed the ConfigMap")
	}

	// Another list replaces marina's blocks only.
	second := []config.DNSResolver{{Domain: "lab.example", Resolvers: []string{"[fd00::53]:53"}}}
	if err := addons.CoreDNS(ctx, handle(t, cfg), second); err != nil {
		t.Fatal(err)
	}
	got = read().Data["Corefile"]
	if !strings.HasPrefix(got, orig) || strings.Contains(got, "corp.example.com") || !strings.Contains(got, "lab.example:53 {") || !strings.Contains(got, "forward . [fd00::53]:53\n") {
		t.Errorf("after a new list:\n%s", got)
	}
	if g := rolled(); g <= gen {
		t.Errorf("a new list did not roll CoreDNS (generation %d → %d)", gen, g)
	}

	// No list: kubeadm's Corefile, exactly.
	if err := addons.CoreDNS(ctx, handle(t, cfg), nil); err != nil {
		t.Fatal(err)
	}
	if got := read().Data["Corefile"]; got != orig {
		t.Errorf("an empty list left\n%q\nwant kubeadm's\n%q", got, orig)
	}

	// A cluster without kubeadm's CoreDNS Deployment: the cause and the fix.
	if err := deps.Delete(ctx, "coredns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := addons.CoreDNS(ctx, handle(t, cfg), second); err == nil || !strings.Contains(err.Error(), "Deployment kube-system/coredns does not exist") || !strings.Contains(err.Error(), "recreate the cluster") {
		t.Errorf("CoreDNS without its Deployment: %v", err)
	}
}

// handle is marina's client handle on the API server cfg points at.
func handle(t *testing.T, cfg *rest.Config) *mkube.Cluster {
	t.Helper()
	k, err := mkube.New(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
