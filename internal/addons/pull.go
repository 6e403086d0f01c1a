package addons

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bcollard/marina/internal/kube"
)

// pullGrace is how long an add-on's pods may fail to pull an image before
// its wait gives up on it: the kubelet retries after 10, 20 and 40 s, so
// it has tried three times by then, and a pull that failed for a passing
// reason has succeeded or is under way.
// One that still fails (the image is not in a mirror's cache and its
// upstream does not answer, or does not have it) would only fail again
// until the wait ran out, minutes later, saying less.
var pullGrace = time.Minute

// PullError is an add-on's workload whose pods cannot pull images: each
// image with what the kubelet last said of it.
type PullError struct {
	What   string
	Images map[string]string
}

func (e *PullError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: its pods cannot pull ", e.What)
	for i, img := range slices.Sorted(maps.Keys(e.Images)) {
		if i > 0 {
			b.WriteString(", nor ")
		}
		fmt.Fprintf(&b, "%s (%s)", img, e.Images[img])
	}
	b.WriteString(": images come through marina's registry mirrors, which serve only what their caches hold while their upstreams do not answer (`marina doctor` says when); once online, `marina registry prefetch IMAGE` puts an image into the caches")
	return b.String()
}

// pullWatch remembers since when each image has failed to pull.
type pullWatch struct{ since map[string]time.Time }

// look reads the pods sel selects in ns; an image one of them has failed
// to pull for pullGrace is a *PullError. Pods it cannot read are no
// error: the wait goes on as before.
func (w *pullWatch) look(ctx context.Context, k *kube.Cluster, ns string, sel *metav1.LabelSelector, what string) error {
	if sel == nil {
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil
	}
	pods, err := kube.ListMatching[corev1.Pod](ctx, k, kube.Pods, ns, s.String())
	if err != nil {
		return nil
	}
	failing := pullFailures(pods)
	now := time.Now()
	long := map[string]string{}
	for img, msg := range failing {
		if _, ok := w.since[img]; !ok {
			w.since[img] = now
		}
		if now.Sub(w.since[img]) >= pullGrace {
			long[img] = msg
		}
	}
	maps.DeleteFunc(w.since, func(img string, _ time.Time) bool { _, ok := failing[img]; return !ok })
	if len(long) > 0 {
		return &PullError{What: what, Images: long}
	}
	return nil
}

// pullFailures are the images pods' containers wait for because pulling
// them failed, with the kubelet's message. A pod being deleted (an old
// template's) is no longer waited for.
func pullFailures(pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		specs := map[string]string{}
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			specs[c.Name] = c.Image
		}
		for _, st := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			wt := st.State.Waiting
			if wt == nil || (wt.Reason != "ErrImagePull" && wt.Reason != "ImagePullBackOff") {
				continue
			}
			img := specs[st.Name]
			if img == "" {
				img = st.Image
			}
			out[img] = strings.TrimSpace(wt.Reason + ": " + wt.Message)
		}
	}
	return out
}
