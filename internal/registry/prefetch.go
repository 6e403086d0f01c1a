package registry

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"

	"github.com/bcollard/marina/internal/config"
)

// Pull is one image that registry prefetch brings into a mirror's cache.
type Pull struct {
	// Image is the name as containerd pulls it
	// (docker.io/library/nginx:1.27).
	Image string
	// Mirror is the mirror that serves its registry, at Port; "" when no
	// mirror does (the nodes pull it from the Internet).
	Mirror string
	Port   int
	// Registry is the image's registry (docker.io); Repo its path there,
	// and so in the mirror (library/nginx); Ref the digest when it has
	// one, else its tag.
	Registry string
	Repo     string
	Ref      string
}

// Route is image's pull through the mirror that serves its registry, as a
// node's containerd finds it (the hosts.toml of CertsD): a name without a
// registry is Docker Hub's, without a tag "latest".
func Route(mirrors []config.Mirror, image string) (Pull, error) {
	n, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return Pull{}, fmt.Errorf("%q is not an image name: %w (write it as Docker does, like nginx:1.27 or quay.io/metallb/speaker:v0.16.2)", image, err)
	}
	n = reference.TagNameOnly(n)
	p := Pull{Image: n.String(), Registry: reference.Domain(n), Repo: reference.Path(n)}
	if d, ok := n.(reference.Digested); ok {
		p.Ref = d.Digest().String()
	} else if t, ok := n.(reference.Tagged); ok {
		p.Ref = t.Tag()
	}
	for _, m := range mirrors {
		hosts, err := Hosts(m)
		if err != nil {
			return Pull{}, err
		}
		if slices.Contains(hosts, p.Registry) {
			p.Mirror, p.Port = m.Name, m.Port
			break
		}
	}
	return p, nil
}

var sha256Digest = regexp.MustCompile(`^sha256:([0-9a-f]{64})$`)

// BlobFiles are where a mirror's storage keeps blob digest of repo,
// relative to its cache folder: the blob, and the link that makes it the
// repository's. distribution's proxy serves a blob from its cache only
// when both are there; otherwise it fetches it from the upstream.
func BlobFiles(repo, digest string) (link, data string, err error) {
	m := sha256Digest.FindStringSubmatch(digest)
	if m == nil {
		return "", "", fmt.Errorf("%q is not a sha256 digest", digest)
	}
	if !isRepo(repo) {
		return "", "", fmt.Errorf("%q is not a repository path", repo)
	}
	hex := m[1]
	return path.Join(storageV2, "repositories", repo, "_layers", "sha256", hex, "link"), blobData(hex), nil
}

// isRepo says whether repo is a repository path as a parsed reference
// gives it: lower-case components of letters, digits and separators, none
// of them "." or "..". Checked again where it names folders.
func isRepo(repo string) bool {
	_, err := reference.ParseNamed("docker.io/" + repo)
	return err == nil && !strings.Contains(repo, "..") && !strings.HasPrefix(repo, "/")
}

// storageV2 is where distribution's filesystem storage keeps everything,
// relative to its root.
const storageV2 = "docker/registry/v2"

// blobData is where a mirror's storage keeps the blob of sha256 hex.
func blobData(hex string) string {
	return path.Join(storageV2, "blobs", "sha256", hex[:2], hex, "data")
}

// RepoLinkDirs are the folders, relative to a mirror's cache folder, whose
// entries (one named by each digest's hex) are the blobs repo links: its
// layers and configs, and its manifests. Empty when repo is not a
// repository path.
func RepoLinkDirs(repo string) []string {
	if !isRepo(repo) {
		return nil
	}
	r := path.Join(storageV2, "repositories", repo)
	return []string{path.Join(r, "_layers", "sha256"), path.Join(r, "_manifests", "revisions", "sha256")}
}
