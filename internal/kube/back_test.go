package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// After a restart the API server still holds what it heard before the
// stop: Ready nodes and pods. Only what was said since the start counts.
func TestBackCountsOnlyWhatWasSaidSinceTheStart(t *testing.T) {
	start := time.Date(2026, 12, 5, 10, 0, 0, 500e6, time.UTC)
	before, after := metav1.NewTime(start.Add(-time.Hour)), metav1.NewTime(start.Add(3*time.Second))
	sameSecond := metav1.NewTime(start.Truncate(time.Second)) // heartbeats are kept to the second
	node := func(ready corev1.ConditionStatus, hb metav1.Time) corev1.Node {
		return corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: hb}}}}
	}
	since := start.Truncate(time.Second)
	for name, c := range map[string]struct {
		n    corev1.Node
		want bool
	}{
		"Ready before the stop": {node(corev1.ConditionTrue, before), false},
		"Ready since":           {node(corev1.ConditionTrue, after), true},
		"Ready in the second":   {node(corev1.ConditionTrue, sameSecond), true},
		"NotReady since":        {node(corev1.ConditionFalse, after), false},
		"no condition":          {corev1.Node{}, false},
	} {
		if got := nodeBack(c.n, since); got != c.want {
			t.Errorf("node %s: back = %v", name, got)
		}
	}
	pod := func(ready corev1.ConditionStatus, started *metav1.Time) corev1.Pod {
		p := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
		st := corev1.ContainerStatus{}
		if started != nil {
			st.State.Running = &corev1.ContainerStateRunning{StartedAt: *started}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		return p
	}
	for name, c := range map[string]struct {
		p    corev1.Pod
		want bool
	}{
		"Ready, started before the stop": {pod(corev1.ConditionTrue, &before), false},
		"Ready, started since":           {pod(corev1.ConditionTrue, &after), true},
		"not Ready, started since":       {pod(corev1.ConditionFalse, &after), false},
		"Ready, not running":             {pod(corev1.ConditionTrue, nil), false},
		"Succeeded":                      {corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, true},
	} {
		if got := podBack(c.p, since); got != c.want {
			t.Errorf("pod %s: back = %v", name, got)
		}
	}
}
