package addons

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/bcollard/marina/internal/kube"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// timeoutError says what was still false when a wait ended, or passes on a
// lasting error.
func timeoutError(ctx context.Context, what, state string, start time.Time, err error, fix string) error {
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return wrap(err, "wait for %s", what)
	}
	// The context's error is said, not wrapped: a wait that ran out is the
	// wait's failure (exit 1), never taken for an interrupt.
	return fmt.Errorf("%s: still %s after %s (%v): %s", what, state, time.Since(start).Round(time.Second), ctx.Err(), fix) //nolint:errorlint // said, not wrapped
}

// waitObject waits until state calls the object name of r in namespace
// ns done: it looks whenever the API server reports a change to it, and
// every kube.PollInterval. While it is not done, the pods pods selects
// are looked at too: one image they have failed to pull for pullGrace
// ends the wait with a *PullError. On a timeout the error names what, what
// was still false, and fix.
func waitObject[T any](ctx context.Context, k *kube.Cluster, r kube.Resource, ns, name, what string, state func(*T) (bool, string), pods func(*T) *metav1.LabelSelector, fix string) error {
	start := time.Now()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	pulls := pullWatch{since: map[string]time.Time{}}
	seen, err := kube.PollOn(ctx, k.Changes(wctx, r.GroupVersionResource, ns, name), func(ctx context.Context) (bool, string, error) {
		obj, err := kube.Read[T](ctx, k, r, ns, name)
		if err != nil {
			return false, "", err
		}
		ok, s := state(obj)
		if !ok {
			if err := pulls.look(ctx, k, ns, pods(obj), what); err != nil {
				return false, s, &kube.Final{Err: err}
			}
		}
		return ok, s, nil
	})
	if pe, ok := errors.AsType[*PullError](err); ok {
		return pe
	}
	if err == nil {
		return nil
	}
	return timeoutError(ctx, what, seen, start, err, fix)
}

// WaitCRDsEstablished waits until every named CustomResourceDefinition has
// Established=True: only then does the API server serve its kind, so that
// objects of that kind can be applied.
func WaitCRDsEstablished(ctx context.Context, k *kube.Cluster, names ...string) error {
	dyn := k.Dynamic
	start := time.Now()
	pending := append([]string(nil), names...)
	var what string
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	state, err := kube.PollOn(ctx, k.Changes(wctx, crdResource, "", ""), func(ctx context.Context) (bool, string, error) {
		var still []string
		var first string
		for _, n := range pending {
			what = "customresourcedefinition " + n
			obj, err := dyn.Resource(crdResource).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if ok, s := crdState(obj); !ok {
				still = append(still, n)
				if first == "" {
					first = s
				}
			}
		}
		pending = still
		if len(still) == 0 {
			return true, "Established=True", nil
		}
		what = "customresourcedefinition " + still[0]
		if len(still) > 1 {
			what += fmt.Sprintf(" (and %d more: %s)", len(still)-1, strings.Join(still[1:], ", "))
		}
		return false, first, nil
	})
	if err == nil {
		return nil
	}
	return timeoutError(ctx, what, state, start, err,
		"the API server has not accepted the CRD's names; see status.conditions in kubectl get crd -o yaml")
}

// crdState reports whether a CRD is Established, and else why not.
func crdState(obj *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Established" {
			continue
		}
		if m["status"] == "True" {
			return true, "Established=True"
		}
		return false, condition("Established", fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"]))
	}
	return false, "no Established condition yet"
}

func condition(typ, status, reason, message string) string {
	s := typ + "=" + status
	switch {
	case reason != "" && message != "":
		s += " (" + reason + ": " + message + ")"
	case reason != "" || message != "":
		s += " (" + reason + message + ")"
	}
	return s
}

// WaitDeploymentAvailable waits until a Deployment's current spec has
// rolled out and is available: the deployment controller has seen the
// latest generation, every replica runs the current pod template, none of an
// older one is left, at least one is up and the Available condition is
// True. Available alone is not enough: during an upgrade it stays True
// while pods of the previous version still do the work.
func WaitDeploymentAvailable(ctx context.Context, k *kube.Cluster, namespace, name string) error {
	return waitObject(ctx, k, kube.Deployments, namespace, name, "deployment "+namespace+"/"+name, deploymentState,
		func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector },
		fmt.Sprintf("look at its pods and their events (kubectl -n %s describe deployment %s; kubectl -n %s get events); images come through marina's registry mirrors", namespace, name, namespace))
}

// deploymentState reports whether d has rolled out and is available, and
// else the first thing that is still false.
func deploymentState(d *appsv1.Deployment) (bool, string) {
	st := d.Status
	if st.ObservedGeneration < d.Generation {
		return false, fmt.Sprintf("observedGeneration=%d, behind generation %d (the deployment controller has not acted on the latest spec)", st.ObservedGeneration, d.Generation)
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	var avail *appsv1.DeploymentCondition
	for i := range st.Conditions {
		if st.Conditions[i].Type == appsv1.DeploymentAvailable {
			avail = &st.Conditions[i]
		}
	}
	switch {
	case avail == nil:
		return false, "no Available condition yet"
	case avail.Status != "True":
		return false, condition("Available", string(avail.Status), avail.Reason, avail.Message)
	case want < 1:
		return false, "spec.replicas=0: no pod runs it"
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("Available=True but only %d of %d replicas run the current pod template", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("Available=True but %d replicas of an older pod template are still there", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		return false, fmt.Sprintf("Available=True but only %d of %d updated replicas are available", st.AvailableReplicas, st.UpdatedReplicas)
	}
	return true, "Available=True"
}

// WaitDaemonSetReady waits until a DaemonSet runs a ready, available pod of
// its current template on every node it should run on — and that there is
// at least one such node: a DaemonSet scheduled nowhere is trivially "done"
// and does nothing.
func WaitDaemonSetReady(ctx context.Context, k *kube.Cluster, namespace, name string) error {
	return waitObject(ctx, k, kube.DaemonSets, namespace, name, "daemonset "+namespace+"/"+name, daemonSetState,
		func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector },
		fmt.Sprintf("look at its pods and their events (kubectl -n %s describe daemonset %s; kubectl -n %s get events); images come through marina's registry mirrors", namespace, name, namespace))
}

// daemonSetState reports whether ds is ready on all its nodes, and else
// what is still short.
func daemonSetState(ds *appsv1.DaemonSet) (bool, string) {
	st := ds.Status
	desired := st.DesiredNumberScheduled
	switch {
	case st.ObservedGeneration < ds.Generation:
		return false, fmt.Sprintf("observedGeneration=%d, behind generation %d (the daemonset controller has not acted on the latest spec)", st.ObservedGeneration, ds.Generation)
	case desired < 1:
		return false, "desiredNumberScheduled=0: no node qualifies for it (check node taints and labels against its tolerations and nodeSelector)"
	case st.UpdatedNumberScheduled < desired:
		return false, fmt.Sprintf("updatedNumberScheduled=%d of desiredNumberScheduled=%d (pods of an older template remain)", st.UpdatedNumberScheduled, desired)
	case st.NumberReady < desired:
		return false, fmt.Sprintf("numberReady=%d of desiredNumberScheduled=%d", st.NumberReady, desired)
	case st.NumberAvailable < desired:
		return false, fmt.Sprintf("numberAvailable=%d of desiredNumberScheduled=%d", st.NumberAvailable, desired)
	}
	return true, fmt.Sprintf("numberReady=%d of desiredNumberScheduled=%d", st.NumberReady, desired)
}
