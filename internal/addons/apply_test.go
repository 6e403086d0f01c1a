package addons

import (
	"strings"
	"testing"
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
