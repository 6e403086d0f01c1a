package addons

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/bcollard/marina/internal/kube"
)

func TestDecodeManifest(t *testing.T) {
	m := `---
# leading comment document
---
apiVersion: v1
kind: Namespace
metadata:
  name: one
---

---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: two
  namespace: one
spec:
  replicas: 3
---
# trailing comment
`
	objs, err := decodeManifest([]byte(m))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, describe(o))
	}
	if strings.Join(got, ",") != "Namespace one,Deployment one/two" {
		t.Fatalf("decoded %v", got)
	}
	// Numbers come out as int64, which unstructured objects need to be
	// copied and sent.
	if r, ok := objs[1].Object["spec"].(map[string]any)["replicas"].(int64); !ok || r != 3 {
		t.Errorf("replicas = %#v", objs[1].Object["spec"])
	}
}

func TestDecodeManifestRejects(t *testing.T) {
	for _, tt := range []struct{ manifest, want string }{
		{"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\nkind: Namespace\nmetadata:\n  name: b\n", "document 2: missing apiVersion"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "document 1: missing apiVersion, kind or metadata.name"},
		{"apiVersion: v1\nkind: [unclosed\n", "document 1"},
		{"- just\n- a list\n", "document 1"},
	} {
		_, err := decodeManifest([]byte(tt.manifest))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("decodeManifest(%q) = %v, want %q", tt.manifest, err, tt.want)
		}
	}
}

// MetalLB's own manifest decodes into its objects, in its order: the
// namespace, then the nine CRDs, and the webhook configuration last.
func TestDecodeMetalLBManifest(t *testing.T) {
	objs, err := decodeManifest(metalLBModuleManifest(t, "v0.16.2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 26 {
		t.Errorf("%d objects, want 26", len(objs))
	}
	if objs[0].GetKind() != "Namespace" || objs[0].GetName() != MetalLBNamespace {
		t.Errorf("first object is %s", describe(objs[0]))
	}
	for i := 1; i <= 9; i++ {
		if objs[i].GroupVersionKind().GroupKind() != crdResourceKind {
			t.Errorf("object %d is %s, want a CRD", i+1, describe(objs[i]))
		}
	}
	if last := objs[len(objs)-1]; last.GetKind() != "ValidatingWebhookConfiguration" {
		t.Errorf("last object is %s", describe(last))
	}
}

// A kind the API server does not serve is named as such even when the
// caller's deadline falls while a discovery request is in flight: the last
// answer the server gave (no such kind) stands, and the cancelled request
// is not blamed on the API server.
func TestApplyUnknownKindDeadlineMidRequest(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) > 1 {
			<-r.Context().Done() // a slow server: the caller's deadline falls here
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	k, err := kube.New(&rest.Config{Host: srv.URL}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = Apply(ctx, k, []byte("apiVersion: nothing.marina.dev/v1\nkind: Nothing\nmetadata:\n  name: nada\n"))
	if err == nil || !strings.Contains(err.Error(), "does not serve nothing.marina.dev/v1, Kind=Nothing") {
		t.Fatalf("Apply = %v; want the kind named as not served", err)
	}
	if asked.Load() < 2 {
		t.Fatalf("the server was asked %d times; the test needs a request in flight at the deadline", asked.Load())
	}
	// An interrupt (Ctrl-C) mid-request is still one.
	asked.Store(0)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for asked.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	err = Apply(ctx, k, []byte("apiVersion: nothing.marina.dev/v1\nkind: Nothing\nmetadata:\n  name: nada\n"))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "does not serve nothing.marina.dev/v1, Kind=Nothing") {
		t.Fatalf("Apply, interrupted = %v; want the kind named and the interrupt kept", err)
	}
}
