package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Resource is a built-in resource marina reads or writes as a Go type
// (k8s.io/api's): its address in the API and the kind its objects have.
type Resource struct {
	schema.GroupVersionResource
	Kind string
}

// The built-in resources marina uses.
var (
	Nodes       = Resource{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "Node"}
	Namespaces  = Resource{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "Namespace"}
	Services    = Resource{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "Service"}
	ConfigMaps  = Resource{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap"}
	Secrets     = Resource{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret"}
	Deployments = Resource{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment"}
	DaemonSets  = Resource{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, "DaemonSet"}
	Pods        = Resource{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "Pod"}
)

// Read gets the object name of r in namespace ns ("" for a cluster-wide
// one) as a T, the Go type of r's objects.
func Read[T any](ctx context.Context, k *Cluster, r Resource, ns, name string) (*T, error) {
	u, err := k.Dynamic.Resource(r.GroupVersionResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return typed[T](u)
}

// List lists r's objects in namespace ns ("" for all) as Ts.
func List[T any](ctx context.Context, k *Cluster, r Resource, ns string) ([]T, error) {
	return ListMatching[T](ctx, k, r, ns, "")
}

// ListMatching lists r's objects in namespace ns that match the label
// selector (as metav1.FormatLabelSelector writes it; "" matches all).
func ListMatching[T any](ctx context.Context, k *Cluster, r Resource, ns, selector string) ([]T, error) {
	l, err := k.Dynamic.Resource(r.GroupVersionResource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(l.Items))
	for i := range l.Items {
		t, err := typed[T](&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// Create creates obj (a T of r's kind) in namespace ns.
func Create(ctx context.Context, k *Cluster, r Resource, ns string, obj any, opts metav1.CreateOptions) error {
	u, err := untyped(r, obj)
	if err != nil {
		return err
	}
	_, err = k.Dynamic.Resource(r.GroupVersionResource).Namespace(ns).Create(ctx, u, opts)
	return err
}

// Update writes obj (a T of r's kind, as read, so that its resourceVersion
// makes a concurrent change a conflict) back to namespace ns.
func Update(ctx context.Context, k *Cluster, r Resource, ns string, obj any, opts metav1.UpdateOptions) error {
	u, err := untyped(r, obj)
	if err != nil {
		return err
	}
	_, err = k.Dynamic.Resource(r.GroupVersionResource).Namespace(ns).Update(ctx, u, opts)
	return err
}

// Patch sends a patch of type pt to the object name of r in namespace ns.
func Patch(ctx context.Context, k *Cluster, r Resource, ns, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) error {
	_, err := k.Dynamic.Resource(r.GroupVersionResource).Namespace(ns).Patch(ctx, name, pt, data, opts)
	return err
}

// Delete deletes the object name of r in namespace ns, without waiting.
func Delete(ctx context.Context, k *Cluster, r Resource, ns, name string) error {
	return k.Dynamic.Resource(r.GroupVersionResource).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

// typed converts what the API server sent into a T. A field of the wrong
// type is an error, not a zero value.
func typed[T any](u *unstructured.Unstructured) (*T, error) {
	t := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return t, nil
}

// untyped is obj as the API server wants it, with r's apiVersion and kind.
func untyped(r Resource, obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(r.GroupVersion().String())
	u.SetKind(r.Kind)
	return u, nil
}
