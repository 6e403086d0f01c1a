package addons

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/bcollard/marina/internal/testmanifests"
)

// A components.yaml as metrics-server's release lays it out, cut down to
// what the edit touches.
const fakeComponents = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: metrics-server
  namespace: kube-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: metrics-server
  namespace: kube-system
spec:
  template:
    spec:
      containers:
      - name: sidecar
        args: [--x]
      - name: metrics-server
        args:
        - --cert-dir=/tmp
        - --secure-port=10250
`

func containerArgs(t *testing.T, objs []*unstructured.Unstructured, name string) []string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			if cm := c.(map[string]any); cm["name"] == name {
				args, _, _ := unstructured.NestedStringSlice(cm, "args")
				return args
			}
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

func TestMetricsServerInsecureTLS(t *testing.T) {
	for _, insecure := range []bool{true, false} {
		objs, err := metricsServerObjects([]byte(fakeComponents), insecure)
		if err != nil {
			t.Fatal(err)
		}
		args := containerArgs(t, objs, MetricsServerName)
		if got := slices.Contains(args, InsecureTLSArg); got != insecure {
			t.Errorf("insecure=%v: args %v", insecure, args)
		}
		if args[0] != "--cert-dir=/tmp" || len(args) != 2+btoi(insecure) {
			t.Errorf("the release's own arguments changed: %v", args)
		}
		if side := containerArgs(t, objs, "sidecar"); strings.Join(side, " ") != "--x" {
			t.Errorf("another container changed: %v", side)
		}
		if len(objs) != 2 {
			t.Errorf("%d objects, want the manifest's 2", len(objs))
		}
	}
	// Applying again does not add the argument twice.
	twice := strings.Replace(fakeComponents, "- --secure-port=10250", "- --secure-port=10250\n        - "+InsecureTLSArg, 1)
	objs, err := metricsServerObjects([]byte(twice), true)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(containerArgs(t, objs, MetricsServerName), " "), InsecureTLSArg); n != 1 {
		t.Errorf("the argument is there %d times", n)
	}
}

func TestMetricsServerManifestWithoutItsDeployment(t *testing.T) {
	bad := strings.Replace(fakeComponents, "name: metrics-server\n  namespace: kube-system\nspec", "name: other\n  namespace: kube-system\nspec", 1)
	if _, err := metricsServerObjects([]byte(bad), true); err == nil || !strings.Contains(err.Error(), "no Deployment kube-system/metrics-server") {
		t.Errorf("error = %v", err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The pins are the digests of the files metrics-server's releases publish:
// each is rebuilt from the module as the release builds it, and goes
// through the real pin table and the download path.
func TestPinnedDigestsMatchMetricsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kustomize and metrics-server's release manifest")
	}
	for _, v := range MetricsServerVersions() {
		t.Run(v, func(t *testing.T) {
			real, err := testmanifests.MetricsServer(v)
			if err != nil {
				t.Fatalf("cannot rebuild metrics-server %s, so its pin is unchecked: %v", v, err)
			}
			srv, _ := manifestServerAt(t, "/releases/download/"+v+"/components.yaml", real)
			src := metricsServerSource
			src.baseURL = srv.URL
			got, err := src.manifest(context.Background(), t.TempDir(), v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, real) {
				t.Error("returned bytes differ from the release's")
			}
			if _, err := metricsServerObjects(got, true); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDefaultMetricsServerIsPinned(t *testing.T) {
	vs := MetricsServerVersions()
	if len(vs) == 0 || vs[len(vs)-1] != "v0.8.0" {
		t.Errorf("versions %v: the default (last) should be v0.8.0", vs)
	}
}
