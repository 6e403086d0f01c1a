package addons

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/bcollard/marina/internal/kube"
)

// Hosting is KEP-1755's local-registry-hosting ConfigMap in kube-public:
// how Tilt, Skaffold and ctlptl find the push registry without being
// told.
type hosting struct {
	ns, name, key, value string
	wait                 time.Duration
}

// NewHosting advertises a local registry: value is the ConfigMap's key's
// YAML (registry.Hosting), in namespace ns under name.
func NewHosting(ns, name, key, value string, wait time.Duration) Addon {
	return hosting{ns: ns, name: name, key: key, value: value, wait: wait}
}

func (h hosting) Name() string { return "push registry" }

func (h hosting) What() string { return "advertising the push registry" }

func (h hosting) Plan() string {
	return fmt.Sprintf("advertise the push registry in ConfigMap %s/%s (KEP-1755), for Tilt, Skaffold and ctlptl", h.ns, h.name)
}

// Object is the ConfigMap.
func (h hosting) Object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": h.name, "namespace": h.ns},
		"data":       map[string]any{h.key: h.value},
	}}
	return u
}

func (h hosting) Steps() ([]Step, error) {
	objs := []*unstructured.Unstructured{h.Object()}
	return []Step{{Label: "Advertising the push registry", What: h.What(), Run: func(ctx context.Context, c Cluster) error {
		return within(ctx, h.wait, func(ctx context.Context) error {
			return c.Do(ctx, Op{Name: "apply-registry-hosting", Objects: objs, Run: func(ctx context.Context, k *kube.Cluster) error {
				return applyObjects(ctx, k, objs)
			}})
		})
	}}}, nil
}
