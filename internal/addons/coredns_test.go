package addons

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kube/kubetest"
)

// kubeadmDNS is a cluster's DNS as kubeadm leaves it: ConfigMap and
// Deployment kube-system/coredns.
func kubeadmDNS(t *testing.T, corefile *string) (*fake.FakeDynamicClient, *kube.Cluster) {
	t.Helper()
	var objs []runtime.Object
	if corefile != nil {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system", ResourceVersion: "1"},
			Data: map[string]string{"Corefile": *corefile}})
	}
	objs = append(objs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}})
	k, cs := kubetest.New(objs...)
	return cs, k
}

func corefileOf(t *testing.T, cs *fake.FakeDynamicClient) string {
	t.Helper()
	cm, err := kube.Read[corev1.ConfigMap](context.Background(), &kube.Cluster{Dynamic: cs}, kube.ConfigMaps, "kube-system", "coredns")
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["Corefile"]
}

func stampOf(t *testing.T, cs *fake.FakeDynamicClient) string {
	t.Helper()
	d, err := kube.Read[appsv1.Deployment](context.Background(), &kube.Cluster{Dynamic: cs}, kube.Deployments, "kube-system", "coredns")
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Annotations[CorefileAnnotation]
}

func sum(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }

// verbs is what the clientset was asked, as "verb resource".
func verbs(cs *fake.FakeDynamicClient) []string {
	var out []string
	for _, a := range cs.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// CoreDNS writes marina's blocks into kubeadm's Corefile, keeping kubeadm's
// text, and stamps the Deployment with the new Corefile's digest (which
// rolls the pods); the same list again writes nothing; an empty list
// gives kubeadm's Corefile back.
func TestCoreDNSWritesAndRolls(t *testing.T) {
	orig := kubeadmCorefile(t)
	cs, k := kubeadmDNS(t, &orig)
	ctx := context.Background()
	list := []res{{Domain: "demo.internal", Resolvers: []string{"172.30.255.53"}}}
	if err := CoreDNS(ctx, k, list); err != nil {
		t.Fatal(err)
	}
	got := corefileOf(t, cs)
	if !strings.HasPrefix(got, orig) || !strings.Contains(got, "demo.internal:53 {\n    errors\n    cache 30\n    forward . 172.30.255.53\n}") {
		t.Fatalf("Corefile:\n%s", got)
	}
	if stampOf(t, cs) != sum(got) {
		t.Errorf("the Deployment's stamp %q is not the Corefile's digest", stampOf(t, cs))
	}

	cs.ClearActions()
	if err := CoreDNS(ctx, k, list); err != nil {
		t.Fatal(err)
	}
	if v := strings.Join(verbs(cs), ","); v != "get configmaps,patch deployments" {
		t.Errorf("the same list again asked %s, want a read and the same stamp", v)
	}
	if corefileOf(t, cs) != got || stampOf(t, cs) != sum(got) {
		t.Error("the same list again changed the Corefile or the stamp")
	}

	if err := CoreDNS(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	if back := corefileOf(t, cs); back != orig || stampOf(t, cs) != sum(orig) {
		t.Errorf("an empty list left:\n%s", back)
	}
}

// A write that lost a race with another writer reads again and builds on
// what that writer left, instead of overwriting it.
func TestCoreDNSRetriesOnConflict(t *testing.T) {
	orig := kubeadmCorefile(t)
	cs, k := kubeadmDNS(t, &orig)
	theirs := orig + "\nexample.org:53 {\n    forward . 10.9.9.9\n}\n"
	conflicts := 0
	cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		// Someone else wrote meanwhile: the update is refused.
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "coredns", "namespace": "kube-system"}, "data": map[string]any{"Corefile": theirs}}}
		if err := cs.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cm, "kube-system"); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "coredns", nil)
	})
	if err := CoreDNS(context.Background(), k, []res{{Domain: "demo.internal", Resolvers: []string{"172.30.255.53"}}}); err != nil {
		t.Fatal(err)
	}
	got := corefileOf(t, cs)
	if conflicts != 1 || !strings.HasPrefix(got, theirs) || !strings.Contains(got, "demo.internal:53") {
		t.Errorf("after %d conflicts:\n%s", conflicts, got)
	}
	if stampOf(t, cs) != sum(got) {
		t.Error("the stamp is not the written Corefile's")
	}
}

// What is not kubeadm's DNS is refused with what to do, and bad input is
// refused before anything is asked of the cluster.
func TestCoreDNSRefuses(t *testing.T) {
	ctx := context.Background()
	list := []res{{Domain: "demo.internal", Resolvers: []string{"172.30.255.53"}}}

	cs, k := kubeadmDNS(t, nil)
	if err := CoreDNS(ctx, k, list); err == nil || !strings.Contains(err.Error(), "ConfigMap kube-system/coredns does not exist") {
		t.Errorf("no ConfigMap: %v", err)
	}
	if stampOf(t, cs) != "" {
		t.Error("the Deployment was stamped without a Corefile")
	}

	empty := ""
	cs, k = kubeadmDNS(t, &empty)
	cm, _ := kube.Read[corev1.ConfigMap](ctx, k, kube.ConfigMaps, "kube-system", "coredns")
	cm.Data = map[string]string{"other": "x"}
	if err := kube.Update(ctx, k, kube.ConfigMaps, "kube-system", cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := CoreDNS(ctx, k, list); err == nil || !strings.Contains(err.Error(), "has no Corefile key") {
		t.Errorf("no Corefile key: %v", err)
	}

	orig := kubeadmCorefile(t)
	cs, k = kubeadmDNS(t, &orig)
	if err := cs.Tracker().Delete(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "kube-system", "coredns"); err != nil {
		t.Fatal(err)
	}
	if err := CoreDNS(ctx, k, list); err == nil || !strings.Contains(err.Error(), "Deployment kube-system/coredns does not exist") {
		t.Errorf("no Deployment: %v", err)
	}

	cs, k = kubeadmDNS(t, &orig)
	for _, bad := range [][]res{
		{{Domain: "demo.internal", Resolvers: []string{"not an address"}}},
		{{Domain: "bad domain", Resolvers: []string{"10.0.0.53"}}},
	} {
		if err := CoreDNS(ctx, k, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if a := verbs(cs); len(a) != 0 {
		t.Errorf("bad input asked the cluster: %v", a)
	}
}
