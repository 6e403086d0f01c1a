package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Back reports whether a cluster whose nodes restarted (their containers
// started at since or later, by the VM's clock, which the kubelets share)
// is back: nodes nodes, all Ready, every pod in namespaces Ready, and on
// the restarted nodes a heartbeat and the pods' containers from after
// since. The API server keeps what it last heard from before the stop
// (nodes Ready, pods Ready), so a condition alone would be true at once
// there; the times tell today's from that. A node that ran all along is
// only Ready: its kubelet reports every few minutes. state says what is
// still missing.
func (k *Cluster) Back(ctx context.Context, since time.Time, nodes int, restarted, namespaces []string) (bool, string, error) {
	// Heartbeats are kept to the second: one in since's second counts.
	since = since.Truncate(time.Second)
	list, err := List[corev1.Node](ctx, k, Nodes, "")
	if err != nil {
		return false, "", fmt.Errorf("list the nodes: %w", err)
	}
	var waiting []string
	for _, n := range list {
		if !nodeBack(n, when(n.Name, restarted, since)) {
			waiting = append(waiting, n.Name)
		}
	}
	if len(list) < nodes {
		return false, fmt.Sprintf("%d of %d nodes registered", len(list), nodes), nil
	}
	if len(waiting) > 0 {
		return false, "nodes not Ready since the start: " + strings.Join(waiting, ", "), nil
	}
	for _, ns := range namespaces {
		pods, err := List[corev1.Pod](ctx, k, Pods, ns)
		if err != nil {
			return false, "", fmt.Errorf("list the pods of %s: %w", ns, err)
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil && !podBack(p, when(p.Spec.NodeName, restarted, since)) {
				waiting = append(waiting, ns+"/"+p.Name)
			}
		}
	}
	if len(waiting) > 0 {
		return false, "pods not Ready since the start: " + strings.Join(waiting, ", "), nil
	}
	return true, fmt.Sprintf("%d nodes Ready", len(list)), nil
}

// when is since for a node that restarted, and the zero time (Ready is
// enough) for one that ran all along.
func when(node string, restarted []string, since time.Time) time.Time {
	if slices.Contains(restarted, node) {
		return since
	}
	return time.Time{}
}

func nodeBack(n corev1.Node, since time.Time) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(since)
		}
	}
	return false
}

func podBack(p corev1.Pod, since time.Time) bool {
	if p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if r := c.State.Running; r == nil || r.StartedAt.Time.Before(since) {
			return false
		}
	}
	return true
}
