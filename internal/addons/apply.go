package addons

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/bcollard/marina/internal/kube"
)

// mappingWait bounds how long a kind unknown to the API server is waited
// for. A CRD applied a moment earlier is served within a second or two; a
// kind still unknown after this is a wrong manifest, not a slow server.
const mappingWait = 30 * time.Second

// Apply server-side applies every document of a multi-document YAML
// manifest, in order, as field manager "marina" with force (marina owns
// what it applies; a leftover owner from an earlier tool must not block a
// re-run). The manifest's own order is kept: MetalLB's lists the namespace
// and the CRDs before anything that needs them.
func Apply(ctx context.Context, k *kube.Cluster, manifest []byte) error {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return err
	}
	return applyObjects(ctx, k, objs)
}

func applyObjects(ctx context.Context, k *kube.Cluster, objs []*unstructured.Unstructured) error {
	a := newApplier(k)
	for _, obj := range objs {
		if err := a.apply(ctx, obj); err != nil {
			return err // it names the object
		}
	}
	return nil
}

// decodeManifest splits a YAML stream into objects, skipping documents that
// are empty or only comments. Every object must name its apiVersion, kind
// and name, so that a broken manifest fails before anything is applied.
func decodeManifest(manifest []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var objs []*unstructured.Unstructured
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("manifest document %d: %w: the manifest is not valid YAML", n, err)
		}
		var m map[string]any
		if err := utilyaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("manifest document %d: %w: the manifest is not valid YAML", n, err)
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: m}
		gvk := obj.GroupVersionKind()
		if gvk.Version == "" || gvk.Kind == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("manifest document %d: missing apiVersion, kind or metadata.name: every document must be one whole Kubernetes object", n)
		}
		objs = append(objs, obj)
	}
}

// applier applies unstructured objects, finding each kind's resource
// through the cluster's kinds.
type applier struct{ k *kube.Cluster }

func newApplier(k *kube.Cluster) *applier { return &applier{k} }

// resource returns the client for obj's kind and namespace.
func (a *applier) resource(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	m, err := a.mapping(ctx, obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if !m.Namespaced {
		return a.k.Dynamic.Resource(m.Resource), nil
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault // as kubectl does
	}
	return a.k.Dynamic.Resource(m.Resource).Namespace(ns), nil
}

// mapping finds gvk's resource. A kind whose CRD was applied moments ago
// is unknown at first: on "no match" the API server is asked again until
// the kind appears or mappingWait runs out.
func (a *applier) mapping(ctx context.Context, gvk schema.GroupVersionKind) (kube.Mapping, error) {
	m, err := a.k.Mapping(ctx, gvk)
	if err == nil {
		return m, nil
	}
	if !meta.IsNoMatchError(err) {
		return m, wrap(err, "look up %s in the API server's discovery", gvk)
	}
	wctx, cancel := context.WithTimeout(ctx, mappingWait)
	defer cancel()
	perr := wait.PollUntilContextCancel(wctx, kube.PollInterval, false, func(ctx context.Context) (bool, error) {
		got, e := a.k.Mapping(ctx, gvk)
		switch {
		case e == nil:
			m, err = got, nil
			return true, nil
		case meta.IsNoMatchError(e):
			err = e
			return false, nil
		case ctx.Err() != nil:
			// The wait ended during a request: the server's last answer
			// (no such kind) stands, not the cancelled request.
			return false, nil
		default:
			err = e
			return false, e
		}
	})
	if perr == nil {
		return m, nil
	}
	if meta.IsNoMatchError(err) {
		msg := fmt.Sprintf("the API server does not serve %s: the CustomResourceDefinition that defines it must be applied, and Established, first", gvk)
		if cerr := ctx.Err(); cerr != nil {
			// The caller's end (an interrupt, its deadline) is the
			// error's too, so that an interrupt still reads as one.
			return m, fmt.Errorf("%s (the wait ended: %w)", msg, cerr)
		}
		// Only marina's own wait ran out: the error is the missing kind.
		return m, fmt.Errorf("%s (still unknown after %v)", msg, mappingWait)
	}
	return m, wrap(err, "look up %s in the API server's discovery", gvk)
}

// apply server-side applies one object.
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	ri, err := a.resource(ctx, obj)
	if err != nil {
		return fmt.Errorf("apply %s: %w", describe(obj), err)
	}
	if err := send(ctx, ri, obj); err != nil {
		return wrap(err, "apply %s", describe(obj))
	}
	return nil
}

// send is the server-side apply request itself; its error is the API
// server's, unadorned.
func send(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	_, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// describe names an object for messages: "Deployment metallb-system/controller".
func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}
