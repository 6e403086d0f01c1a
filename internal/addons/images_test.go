package addons

import (
	"slices"
	"strings"
	"testing"
)

const twoPods = `apiVersion: apps/v1
kind: Deployment
metadata: {name: metrics-server, namespace: kube-system}
spec:
  template:
    spec:
      initContainers:
      - {name: init, image: "registry.k8s.io/metrics-server/metrics-server:v0.8.0"}
      containers:
      - {name: m, image: "registry.k8s.io/metrics-server/metrics-server:v0.8.0"}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: speaker, namespace: metallb-system}
spec:
  template:
    spec:
      containers:
      - {name: speaker, image: "quay.io/metallb/speaker:v0.16.2"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {image: "not/an-image:looked-at"}
`

// Every container's image becomes its digest-pinned form; an image with no
// known digest keeps its tag; an override replaces either.
func TestPinImages(t *testing.T) {
	out, err := PinImages([]byte(twoPods), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	pinned := "image: registry.k8s.io/metrics-server/metrics-server:v0.8.0@sha256:89258156d0e9af60403eafd44da9676fd66f600c7934d468ccc17e42b199aee2"
	if strings.Count(got, pinned) != 2 || !strings.Contains(got, "image: quay.io/metallb/speaker:v0.16.2\n") || !strings.Contains(got, "image: not/an-image:looked-at") {
		t.Errorf("pinned:\n%s", got)
	}
	mine := "registry.example.com/metallb/speaker:v0.16.2@sha256:" + strings.Repeat("b", 64)
	out, err = PinImages([]byte(twoPods), map[string]string{"quay.io/metallb/speaker:v0.16.2": mine})
	if err != nil || !strings.Contains(string(out), "image: "+mine+"\n") {
		t.Errorf("override: %v\n%s", err, out)
	}
	if objs, err := decodeManifest(out); err != nil || len(objs) != 3 {
		t.Errorf("the pinned manifest reads back as %d objects: %v", len(objs), err)
	}
}

// An image the table does not know, an override for one it does not know,
// or an override not pinned by digest: refused, nothing returned.
func TestPinImagesRefuses(t *testing.T) {
	other := strings.Replace(twoPods, "quay.io/metallb/speaker:v0.16.2", "quay.io/metallb/speaker:v9.9.9", 1)
	for what, c := range map[string]struct {
		manifest  string
		overrides map[string]string
		want      string
	}{
		"unknown image":     {other, nil, `"quay.io/metallb/speaker:v9.9.9" is not one marina knows`},
		"unknown override":  {twoPods, map[string]string{"docker.io/evil:1": "x@sha256:" + strings.Repeat("a", 64)}, "which no add-on manifest marina pins runs"},
		"override by tag":   {twoPods, map[string]string{"quay.io/metallb/speaker:v0.16.2": "mirror/speaker:v0.16.2"}, "not pinned by digest"},
		"override with ctl": {twoPods, map[string]string{"quay.io/metallb/speaker:v0.16.2": "a\n@sha256:" + strings.Repeat("a", 64)}, "not pinned by digest"},
	} {
		out, err := PinImages([]byte(c.manifest), c.overrides)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != nil {
			t.Errorf("%s: %v (%d bytes)", what, err, len(out))
		}
	}
}

// Every image the pinned manifests run is in the table: the real MetalLB
// manifest's are checked by the lab (cluster_test), these by name.
func TestKnownImages(t *testing.T) {
	for _, want := range []string{"quay.io/metallb/controller:v0.16.2", "quay.io/metallb/speaker:v0.16.2", "registry.k8s.io/metrics-server/metrics-server:v0.8.0"} {
		if _, ok := imageDigests[want]; !ok {
			t.Errorf("%s is not in the table", want)
		}
	}
}

// Images lists every image the add-ons' pods run, init containers too,
// each once and in the add-ons' order; the CoreDNS edit runs none.
func TestImages(t *testing.T) {
	deploy := func(kind, name string, images ...string) string {
		s := "---\napiVersion: apps/v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\nspec:\n  template:\n    spec:\n      initContainers:\n      - name: init\n        image: " + images[0] + "\n      containers:\n"
		for _, i := range images[1:] {
			s += "      - name: c\n        image: " + i + "\n"
		}
		return s
	}
	metallb := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: metallb-system\n" +
		deploy("Deployment", "controller", "busybox:1", "quay.io/metallb/controller:v0.16.2") +
		deploy("DaemonSet", "speaker", "busybox:1", "quay.io/metallb/speaker:v0.16.2", "quay.io/frr:1")
	edns := deploy("Deployment", "external-dns", "busybox:1", "registry.k8s.io/external-dns/external-dns:v0.23.0")
	ms := deploy("Deployment", "metrics-server", "busybox:1", "registry.k8s.io/metrics-server/metrics-server:v0.8.0")
	set := Default(Defaults{
		Manifests:     map[string][]byte{MetalLBSource: []byte(metallb), MetricsServerSource: []byte(ms)},
		ExternalDNS:   []byte(edns),
		MetricsServer: &MetricsServer{Version: "v0.8.0"},
	})
	got, err := Images(set)
	want := []string{"busybox:1", "quay.io/metallb/controller:v0.16.2", "quay.io/metallb/speaker:v0.16.2", "quay.io/frr:1",
		"registry.k8s.io/external-dns/external-dns:v0.23.0", "registry.k8s.io/metrics-server/metrics-server:v0.8.0"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Images:\n got %q, %v\nwant %q", got, err, want)
	}
	if _, err := Images(Default(Defaults{Manifests: map[string][]byte{MetalLBSource: []byte("kind: [")}})); err == nil || !strings.Contains(err.Error(), "MetalLB") {
		t.Errorf("a broken manifest: %v", err)
	}
}
