package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeLabels are the labels of node.
func (k *Cluster) NodeLabels(ctx context.Context, node string) (map[string]string, error) {
	n, err := Read[corev1.Node](ctx, k, Nodes, "", node)
	if err != nil {
		return nil, err
	}
	return n.Labels, nil
}

// LabelNodes sets the labels of set and removes those of remove on every
// node, with one JSON merge patch each (a key set to null is removed).
func (k *Cluster) LabelNodes(ctx context.Context, set map[string]string, remove []string) error {
	patch := map[string]any{}
	for key, v := range set {
		patch[key] = v
	}
	for _, key := range remove {
		patch[key] = nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
	if err != nil {
		return err
	}
	nodes, err := List[corev1.Node](ctx, k, Nodes, "")
	if err != nil {
		return fmt.Errorf("list the nodes: %w", err)
	}
	for _, n := range nodes {
		if err := Patch(ctx, k, Nodes, "", n.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "marina"}); err != nil {
			return fmt.Errorf("label node %s: %w", n.Name, err)
		}
	}
	return nil
}

// NodeInfo is what fleet describe shows of a node.
type NodeInfo struct {
	Name    string
	Version string // the kubelet's
	Ready   bool
	Labels  map[string]string
}

// Nodes lists the cluster's nodes, sorted by name.
func (k *Cluster) Nodes(ctx context.Context) ([]NodeInfo, error) {
	list, err := List[corev1.Node](ctx, k, Nodes, "")
	if err != nil {
		return nil, fmt.Errorf("list the nodes: %w", err)
	}
	out := make([]NodeInfo, 0, len(list))
	for _, n := range list {
		ni := NodeInfo{Name: n.Name, Version: n.Status.NodeInfo.KubeletVersion, Labels: n.Labels}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ni.Ready = c.Status == corev1.ConditionTrue
			}
		}
		out = append(out, ni)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
