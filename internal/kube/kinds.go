package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Mapping is where a kind's objects live in the API.
type Mapping struct {
	Resource   schema.GroupVersionResource
	Namespaced bool
}

// kinds remembers, per group version, the resources the API server said it
// serves. It asks for one group version at a time (GET /api/v1, GET
// /apis/GROUP/VERSION): a manifest names a few, and a full discovery of
// every group costs more than the handful of small answers marina needs.
type kinds struct {
	mu    sync.Mutex
	lists map[schema.GroupVersion][]metav1.APIResource
}

// Mapping finds gvk's resource. A kind the server does not serve (yet: its
// CRD was applied a moment ago) is a meta.NoKindMatchError. What the server
// said of a group version is remembered, but a kind not in it sends the
// question again: another CRD of the same group may have come since.
func (k *Cluster) Mapping(ctx context.Context, gvk schema.GroupVersionKind) (Mapping, error) {
	gv := gvk.GroupVersion()
	k.kinds.mu.Lock()
	list := k.kinds.lists[gv]
	k.kinds.mu.Unlock()
	if m, found := find(list, gvk); found {
		return m, nil
	}
	list, err := k.resources(ctx, gv)
	if err != nil {
		return Mapping{}, err
	}
	k.remember(gv, list)
	if m, found := find(list, gvk); found {
		return m, nil
	}
	return Mapping{}, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
}

// find looks for gvk's resource in what its group version serves.
func find(list []metav1.APIResource, gvk schema.GroupVersionKind) (Mapping, bool) {
	for _, r := range list {
		// Subresources (deployments/scale) name their parent's kind too.
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return Mapping{Resource: gvk.GroupVersion().WithResource(r.Name), Namespaced: r.Namespaced}, true
		}
	}
	return Mapping{}, false
}

func (k *Cluster) remember(gv schema.GroupVersion, list []metav1.APIResource) {
	k.kinds.mu.Lock()
	defer k.kinds.mu.Unlock()
	if k.kinds.lists == nil {
		k.kinds.lists = map[schema.GroupVersion][]metav1.APIResource{}
	}
	k.kinds.lists[gv] = list
}

// resources asks the API server what gv serves: none when it does not know
// gv at all.
func (k *Cluster) resources(ctx context.Context, gv schema.GroupVersion) ([]metav1.APIResource, error) {
	path := "/apis/" + gv.String()
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	raw, err := k.raw.Get().AbsPath(path).Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ask the API server what %s serves: %w", gv, err)
	}
	var l metav1.APIResourceList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("read the API server's list of %s's resources: %w", gv, err)
	}
	return l.APIResources, nil
}
