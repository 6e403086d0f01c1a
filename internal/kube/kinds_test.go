package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Mapping asks the API server for a kind's group version only, skips
// subresources, remembers what it found, and asks again for a kind it did
// not find (a CRD applied a moment ago, in a new group or beside another
// of its group): a group the server does not know and a kind it does not
// serve are both "no match".
func TestMapping(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]int{}
	crdServed := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		asked[r.URL.Path]++
		var l metav1.APIResourceList
		switch r.URL.Path {
		case "/api/v1":
			l.APIResources = []metav1.APIResource{{Name: "namespaces", Kind: "Namespace"}, {Name: "services", Namespaced: true, Kind: "Service"}}
		case "/apis/apps/v1":
			l.APIResources = []metav1.APIResource{{Name: "deployments/scale", Namespaced: true, Kind: "Deployment"}, {Name: "deployments", Namespaced: true, Kind: "Deployment"}}
		case "/apis/metallb.io/v1beta1":
			if crdServed > 0 {
				l.APIResources = []metav1.APIResource{{Name: "ipaddresspools", Namespaced: true, Kind: "IPAddressPool"}}
			}
			if crdServed > 1 {
				l.APIResources = append(l.APIResources, metav1.APIResource{Name: "l2advertisements", Namespaced: true, Kind: "L2Advertisement"})
			}
			if crdServed > 0 {
				break
			}
			fallthrough
		default:
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(l)
	}))
	defer srv.Close()
	k, err := New(&rest.Config{Host: srv.URL}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := func(gvk schema.GroupVersionKind, resource string, namespaced bool) {
		t.Helper()
		m, err := k.Mapping(ctx, gvk)
		if err != nil || m.Resource != gvk.GroupVersion().WithResource(resource) || m.Namespaced != namespaced {
			t.Errorf("%s: %+v, %v", gvk, m, err)
		}
	}
	noMatch := func(gvk schema.GroupVersionKind) {
		t.Helper()
		if m, err := k.Mapping(ctx, gvk); !meta.IsNoMatchError(err) {
			t.Errorf("%s: %+v, %v; want no match", gvk, m, err)
		}
	}
	want(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "namespaces", false)
	want(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, "services", true)
	want(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true)
	want(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true)
	noMatch(schema.GroupVersionKind{Version: "v1", Kind: "Pond"})
	pool := schema.GroupVersionKind{Group: "metallb.io", Version: "v1beta1", Kind: "IPAddressPool"}
	noMatch(pool)
	mu.Lock()
	crdServed = 1
	mu.Unlock()
	want(pool, "ipaddresspools", true)
	want(pool, "ipaddresspools", true)
	l2 := schema.GroupVersionKind{Group: "metallb.io", Version: "v1beta1", Kind: "L2Advertisement"}
	noMatch(l2)
	mu.Lock()
	crdServed = 2
	mu.Unlock()
	want(l2, "l2advertisements", true)
	want(pool, "ipaddresspools", true)
	mu.Lock()
	defer mu.Unlock()
	for path, n := range map[string]int{"/api/v1": 2, "/apis/apps/v1": 1, "/apis/metallb.io/v1beta1": 4} {
		if asked[path] != n {
			t.Errorf("%s asked %d times, want %d (all: %v)", path, asked[path], n, asked)
		}
	}
}
