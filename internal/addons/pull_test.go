package addons

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kube/kubetest"
)

// pulling is a pod of app whose one container waits for its image for
// reason ("" while it is being pulled).
func pulling(name, app, image, reason, msg string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "external-dns", Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
	wt := &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	if reason != "" {
		wt = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: wt}}}
	return p
}

// An add-on's wait ends soon after its pods cannot pull an image, naming
// the image and the kubelet's words, instead of running out minutes later;
// a pull under way, and another workload's failing pull, keep it waiting.
func TestWaitNamesAnImageThatCannotBePulled(t *testing.T) {
	old := pullGrace
	pullGrace = 700 * time.Millisecond
	t.Cleanup(func() { pullGrace = old })
	d := rolledOut()
	d.Name, d.Namespace = "external-dns", "external-dns"
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "external-dns"}}
	d.Status.Conditions[1].Status = corev1.ConditionFalse
	const img = "registry.k8s.io/external-dns/external-dns:v0.23.0"
	const said = `Back-off pulling image "registry.k8s.io/external-dns/external-dns:v0.23.0": dial tcp: lookup registry.k8s.io: no such host`

	for _, c := range []struct {
		name string
		pods []*corev1.Pod
		pull bool
	}{
		{"backing off", []*corev1.Pod{pulling("ext-1", "external-dns", img, "ImagePullBackOff", said)}, true},
		{"first failure", []*corev1.Pod{pulling("ext-1", "external-dns", img, "ErrImagePull", said)}, true},
		{"being pulled", []*corev1.Pod{pulling("ext-1", "external-dns", img, "", "")}, false},
		{"another workload's pod", []*corev1.Pod{pulling("other-1", "other", "nginx:1.27", "ImagePullBackOff", "no")}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, _ := kubetest.New(d.DeepCopy(), c.pods[0])
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			err := WaitDeploymentAvailable(ctx, k, "external-dns", "external-dns")
			pe, ok := errors.AsType[*PullError](err)
			if ok != c.pull {
				t.Fatalf("error %v, want a pull error: %v", err, c.pull)
			}
			if !c.pull {
				if err == nil || !strings.Contains(err.Error(), "still Available=False") {
					t.Errorf("error %v, want the wait to run out", err)
				}
				return
			}
			if took := time.Since(start); took < pullGrace || took > 1800*time.Millisecond {
				t.Errorf("gave up after %v, want just after %v", took, pullGrace)
			}
			msg := pe.Error()
			for _, want := range []string{"deployment external-dns/external-dns: its pods cannot pull " + img, "no such host", "marina registry prefetch"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error does not say %q:\n%s", want, msg)
				}
			}
		})
	}
}

// A pull that failed and then went through resets the clock: only a
// failure lasting the whole grace ends the wait.
func TestPullWatchForgetsARecoveredPull(t *testing.T) {
	old := pullGrace
	pullGrace = 300 * time.Millisecond
	t.Cleanup(func() { pullGrace = old })
	const img = "quay.io/metallb/speaker:v0.16.2"
	// The same pod as the API server shows it at each look.
	failing, _ := kubetest.New(pulling("sp-1", "speaker", img, "ImagePullBackOff", "boom"))
	pulled, _ := kubetest.New(pulling("sp-1", "speaker", img, "", ""))
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "speaker"}}
	w := pullWatch{since: map[string]time.Time{}}
	look := func(k *kube.Cluster) error {
		return w.look(context.Background(), k, "external-dns", sel, "daemonset x")
	}
	if err := look(failing); err != nil {
		t.Fatalf("first failure: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := look(pulled); err != nil {
		t.Fatalf("pulled: %v", err)
	}
	// 200ms after the first failure, and again 200ms later: 400ms since
	// the first failure, 200ms since this one.
	if err := look(failing); err != nil {
		t.Fatalf("failing again: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := look(failing); err != nil {
		t.Errorf("failing again for 200ms of a 300ms grace, after a good pull: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := look(failing); err == nil {
		t.Error("failing for the whole grace did not end the wait")
	}
}

func TestPullFailuresOfInitContainers(t *testing.T) {
	p := corev1.Pod{
		Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}}, Containers: []corev1.Container{{Name: "main", Image: "app:1"}}},
		Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "m"}}}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
		},
	}
	got := pullFailures([]corev1.Pod{p})
	if len(got) != 1 || got["busybox:1"] != "ImagePullBackOff: m" {
		t.Errorf("pullFailures = %v", got)
	}
	// An old template's pod on its way out is not waited for.
	p.DeletionTimestamp = &metav1.Time{}
	if got := pullFailures([]corev1.Pod{p}); len(got) != 0 {
		t.Errorf("a pod being deleted: %v", got)
	}
}
