package addons

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func ptr[T any](v T) *T { return &v }

// rolledOut is a Deployment whose status says it is fully rolled out.
func rolledOut() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr(int32(1))},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue},
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			},
		},
	}
}

func TestDeploymentState(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *appsv1.Deployment)
		ok     bool
		want   string
	}{
		{"rolled out", func(d *appsv1.Deployment) {}, true, "Available=True"},
		{"default replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = nil }, true, "Available=True"},
		{"new generation not seen", func(d *appsv1.Deployment) { d.Generation = 3 }, false, "observedGeneration=2, behind generation 3"},
		{"no condition", func(d *appsv1.Deployment) { d.Status.Conditions = d.Status.Conditions[:1] }, false, "no Available condition yet"},
		{"unavailable", func(d *appsv1.Deployment) {
			d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse,
				Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."}
		}, false, "Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.)"},
		{"scaled to zero", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(0)) }, false, "spec.replicas=0"},
		{"rollout not started", func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 0 }, false, "only 0 of 1 replicas run the current pod template"},
		{"old pod left", func(d *appsv1.Deployment) { d.Status.Replicas = 2 }, false, "1 replicas of an older pod template"},
		{"new pod not available", func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 0 }, false, "only 0 of 1 updated replicas are available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rolledOut()
			tt.change(d)
			ok, state := deploymentState(d)
			if ok != tt.ok || !strings.Contains(state, tt.want) {
				t.Errorf("deploymentState = %v, %q; want %v, %q", ok, state, tt.ok, tt.want)
			}
		})
	}
}

func TestDaemonSetState(t *testing.T) {
	ready := func() *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
				UpdatedNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3},
		}
	}
	tests := []struct {
		name   string
		change func(ds *appsv1.DaemonSet)
		ok     bool
		want   string
	}{
		{"ready everywhere", func(ds *appsv1.DaemonSet) {}, true, "numberReady=3 of desiredNumberScheduled=3"},
		{"generation not seen", func(ds *appsv1.DaemonSet) { ds.Generation = 2 }, false, "behind generation 2"},
		{"no node", func(ds *appsv1.DaemonSet) { *ds = appsv1.DaemonSet{} }, false, "desiredNumberScheduled=0"},
		{"one not ready", func(ds *appsv1.DaemonSet) { ds.Status.NumberReady = 2 }, false, "numberReady=2 of desiredNumberScheduled=3"},
		{"old template", func(ds *appsv1.DaemonSet) { ds.Status.UpdatedNumberScheduled = 1 }, false, "updatedNumberScheduled=1"},
		{"not yet available", func(ds *appsv1.DaemonSet) { ds.Status.NumberAvailable = 2 }, false, "numberAvailable=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := ready()
			tt.change(ds)
			ok, state := daemonSetState(ds)
			if ok != tt.ok || !strings.Contains(state, tt.want) {
				t.Errorf("daemonSetState = %v, %q; want %v, %q", ok, state, tt.ok, tt.want)
			}
		})
	}
}

func TestCRDState(t *testing.T) {
	crd := func(conds ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": conds}}}
	}
	tests := []struct {
		obj  *unstructured.Unstructured
		ok   bool
		want string
	}{
		{crd(map[string]any{"type": "NamesAccepted", "status": "True"}, map[string]any{"type": "Established", "status": "True"}), true, "Established=True"},
		{crd(map[string]any{"type": "NamesAccepted", "status": "True"}), false, "no Established condition yet"},
		{crd(map[string]any{"type": "Established", "status": "False", "reason": "Installing", "message": "the initial names have not been accepted"}),
			false, "Established=False (Installing: the initial names have not been accepted)"},
		{&unstructured.Unstructured{Object: map[string]any{}}, false, "no Established condition yet"},
	}
	for _, tt := range tests {
		ok, state := crdState(tt.obj)
		if ok != tt.ok || state != tt.want {
			t.Errorf("crdState = %v, %q; want %v, %q", ok, state, tt.ok, tt.want)
		}
	}
}
