package addons

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// imageDigests are the images the manifests marina pins run, each with the
// digest its publisher recorded for that tag (a multi-platform index).
// Applying a manifest rewrites every image it names to name:tag@digest, so
// a tag moved upstream or in a mirror cannot change what runs; a manifest
// naming an image missing here is refused (the manifest's own sha256 pin
// makes that a marina bug, not a user's mistake). "" is an image whose
// digest marina could not find in a record of its publisher: it is pulled
// by its tag, and kind.addonImages pins a digest of the user's choice.
//
//   - metrics-server: the promotion file of registry.k8s.io,
//     kubernetes/k8s.io registry.k8s.io/images/k8s-staging-metrics-server/images.yaml.
//   - MetalLB: quay.io builds its images from the release tags and
//     publishes no digest with the release; none was found in a record of
//     MetalLB's.
var imageDigests = map[string]string{
	"registry.k8s.io/metrics-server/metrics-server:v0.8.0": "sha256:89258156d0e9af60403eafd44da9676fd66f600c7934d468ccc17e42b199aee2",
	"registry.k8s.io/metrics-server/metrics-server:v0.7.2": "sha256:ffcb2bf004d6aa0a17d90e0247cf94f2865c8901dcab4427034c341951c239f9",
	"quay.io/metallb/controller:v0.16.2":                   "",
	"quay.io/metallb/speaker:v0.16.2":                      "",
}

// KnownImages are the images of the pinned manifests, sorted.
func KnownImages() []string {
	out := make([]string, 0, len(imageDigests))
	for i := range imageDigests {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

var digestRef = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$`)

// CheckImageOverrides refuses a kind.addonImages entry for an image no
// pinned manifest runs, or one that is not pinned by digest.
func CheckImageOverrides(overrides map[string]string) error {
	for from, to := range overrides {
		if _, ok := imageDigests[from]; !ok {
			return fmt.Errorf("kind.addonImages names %q, which no add-on manifest marina pins runs (it knows %s)", from, strings.Join(KnownImages(), ", "))
		}
		if !digestRef.MatchString(to) {
			return fmt.Errorf("kind.addonImages: %q is not pinned by digest: write it as name:tag@sha256:<digest>", to)
		}
	}
	return nil
}

// PinImages rewrites every container image of manifest (init containers
// included) to its pinned form: overrides first (kind.addonImages), else
// name:tag@digest from imageDigests, else the image as it is when its
// digest is unknown. An image neither knows is an error, and nothing is
// applied.
func PinImages(manifest []byte, overrides map[string]string) ([]byte, error) {
	if err := CheckImageOverrides(overrides); err != nil {
		return nil, err
	}
	objs, err := decodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, o := range objs {
		if err := pinObject(o, overrides); err != nil {
			return nil, err
		}
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

// podSpecPaths are where the kinds marina's manifests carry keep their
// pod spec.
var podSpecPaths = map[string][]string{
	"Deployment":  {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
	"Pod":         {"spec"},
}

func pinObject(o *unstructured.Unstructured, overrides map[string]string) error {
	path, ok := podSpecPaths[o.GetKind()]
	if !ok {
		return nil
	}
	for _, field := range []string{"initContainers", "containers"} {
		cs, found, err := unstructured.NestedSlice(o.Object, append(path, field)...)
		if err != nil {
			return fmt.Errorf("%s: %w", describe(o), err)
		}
		if !found {
			continue
		}
		for i, c := range cs {
			m, ok := c.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: a container that is not an object", describe(o))
			}
			image, _ := m["image"].(string)
			pinned, err := pinImage(image, overrides)
			if err != nil {
				return fmt.Errorf("%s: %w", describe(o), err)
			}
			m["image"] = pinned
			cs[i] = m
		}
		if err := unstructured.SetNestedSlice(o.Object, cs, append(path, field)...); err != nil {
			return err
		}
	}
	return nil
}

func pinImage(image string, overrides map[string]string) (string, error) {
	if to, ok := overrides[image]; ok {
		return to, nil
	}
	d, ok := imageDigests[image]
	switch {
	case !ok:
		return "", fmt.Errorf("image %q is not one marina knows for this manifest (a marina bug: the manifest is pinned)", image)
	case d == "":
		return image, nil
	}
	return image + "@" + d, nil
}

// Images are the container images set's pods run, each once, in set's
// order: what a create pulls onto the nodes while kind still runs, so that
// the kubelet finds them there. An add-on without a manifest (the CoreDNS
// edit) runs none of its own.
func Images(set []Addon) ([]string, error) {
	var out []string
	for _, a := range set {
		m, ok := a.(interface{ pods() []byte })
		if !ok {
			continue
		}
		imgs, err := manifestImages(m.pods())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Name(), err)
		}
		for _, i := range imgs {
			if !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
	}
	return out, nil
}

// manifestImages are the images of manifest's containers and init
// containers, in its order.
func manifestImages(manifest []byte) ([]string, error) {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		path, ok := podSpecPaths[o.GetKind()]
		if !ok {
			continue
		}
		for _, field := range []string{"initContainers", "containers"} {
			cs, _, err := unstructured.NestedSlice(o.Object, append(path, field)...)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", describe(o), err)
			}
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					if image, _ := m["image"].(string); image != "" {
						out = append(out, image)
					}
				}
			}
		}
	}
	return out, nil
}
