package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/distribution/reference"
)

// NodeImages are the kindest/node images published with kind v0.33.0 (the
// kind marina installs in the VM), pinned by digest: kind only supports a
// node image with the kind release it was built for.
var NodeImages = map[string]string{
	"v1.37.0":  "kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5",
	"v1.36.4":  "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed",
	"v1.35.8":  "kindest/node:v1.35.8@sha256:07b2536e30b803ed61d1677a79df6115f798ce64c80f9e22f6ed45afd09323c0",
	"v1.34.11": "kindest/node:v1.34.11@sha256:44e222ee2132dab25ff87301682f89eb82c7880ea3a1bf543bfe9708fd08d67d",
}

// NodeImage is the digest-pinned node image of version: kind.nodeImages
// first, then the images published with kind.
func (k Kind) NodeImage(version string) (string, error) {
	if ref, ok := k.NodeImages[version]; ok {
		return ref, nil
	}
	if ref, ok := NodeImages[version]; ok {
		return ref, nil
	}
	return "", fmt.Errorf("node version %q has no node image for kind v0.33.0 (the kind in the VM): use one of %s, or pin an image for it under kind.nodeImages", version, strings.Join(k.NodeVersions(), ", "))
}

// NodeVersions lists the versions that have a node image, newest first.
func (k Kind) NodeVersions() []string {
	v := make([]string, 0, len(NodeImages)+len(k.NodeImages))
	for x := range NodeImages {
		v = append(v, x)
	}
	for x := range k.NodeImages {
		if _, dup := NodeImages[x]; !dup {
			v = append(v, x)
		}
	}
	sort.Slice(v, func(i, j int) bool { return semverLess(v[j], v[i]) })
	return v
}

func semverLess(a, b string) bool {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if len(pa[i]) != len(pb[i]) {
			return len(pa[i]) < len(pb[i])
		}
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

// checkPinned reports why ref is not a usable digest-pinned image reference.
func checkPinned(ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("%q is not an image reference: %w", ref, err)
	}
	if _, ok := named.(reference.Digested); !ok {
		return fmt.Errorf("%q is not pinned by digest: write it as name:tag@sha256:<digest> (docker image inspect --format '{{index .RepoDigests 0}}' shows it)", ref)
	}
	return nil
}
