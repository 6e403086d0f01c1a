package guest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bcollard/marina/internal/run"
)

// Image is an image in the VM's Docker: its full name and the id Docker
// holds it under.
type Image struct {
	Ref string // normalised: docker.io/library/app:dev
	ID  string // sha256:…
}

var (
	imageID  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	nodeName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	// A normalised reference: no space, quote or shell character, which
	// distribution's grammar allows none of either.
	imageRef = regexp.MustCompile(`^[a-z0-9][a-zA-Z0-9._:/@-]*$`)
)

// ImageLoad is the script that brings imgs from the VM's Docker into the
// containerd of every one of nodes (one cluster's), in one round trip. A
// node whose containerd already holds an image under the same digest
// keeps it; the others get one archive of the images any of them lacks,
// imported into all of them at once, as kind load docker-image does. It
// prints one line per node and image (ParseImageLoad).
func ImageLoad(nodes []string, imgs []Image) (string, error) {
	var b strings.Builder
	b.WriteString("set -uo pipefail\nnodes=(")
	for _, n := range nodes {
		if !nodeName.MatchString(n) {
			return "", fmt.Errorf("%q is not a node's name", n)
		}
		b.WriteString(" " + run.ShellQuote(n))
	}
	b.WriteString(" )\nrefs=(")
	for _, im := range imgs {
		if !imageRef.MatchString(im.Ref) {
			return "", fmt.Errorf("%q is not an image name", im.Ref)
		}
		b.WriteString(" " + run.ShellQuote(im.Ref))
	}
	b.WriteString(" )\nids=(")
	for _, im := range imgs {
		if !imageID.MatchString(im.ID) {
			return "", fmt.Errorf("image %s: %q is not an image id", im.Ref, im.ID)
		}
		b.WriteString(" " + im.ID)
	}
	b.WriteString(" )\n" + imageLoadBody)
	return b.String(), nil
}

// The lines: "@@ image NODE INDEX skipped|loaded|failed [WHY]".
const imageLoadBody = `tmp=$(mktemp -d /var/tmp/marina-load.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
# what node's containerd holds each name under (its target's digest)
held() { docker exec "$1" ctr -n k8s.io images ls 2>"$tmp/$1.err" | awk 'NR > 1 { print $1, $3 }'; }
why() { tr -s '\n\t' '  ' <"$1" | cut -c1-300; }
declare -A lacks
want=()
for n in "${nodes[@]}"; do
	if ! list=$(held "$n"); then
		for i in "${!refs[@]}"; do echo "@@ image $n $i failed $(why "$tmp/$n.err")"; done
		continue
	fi
	for i in "${!refs[@]}"; do
		if grep -qxF "${refs[$i]} ${ids[$i]}" <<<"$list"; then
			echo "@@ image $n $i skipped"
		else
			lacks[$n]+="$i "
			want[$i]=1
		fi
	done
done
[ "${#lacks[@]}" -gt 0 ] || exit 0
save=()
for i in "${!want[@]}"; do save+=("${refs[$i]}"); done
if ! docker save "${save[@]}" >"$tmp/images.tar" 2>"$tmp/save.err"; then
	for n in "${!lacks[@]}"; do for i in ${lacks[$n]}; do echo "@@ image $n $i failed docker save: $(why "$tmp/save.err")"; done; done
	exit 0
fi
for n in "${!lacks[@]}"; do
	(
		snap=$(docker exec "$n" crictl info 2>/dev/null | sed -n 's/.*"snapshotter": *"\([^"]*\)".*/\1/p' | head -n 1)
		docker exec -i "$n" ctr -n k8s.io images import --digests --snapshotter="${snap:-overlayfs}" - <"$tmp/images.tar" >"$tmp/$n.import" 2>&1
	) &
done
wait
for n in "${!lacks[@]}"; do
	list=$(held "$n") || list=
	for i in ${lacks[$n]}; do
		if grep -qxF "${refs[$i]} ${ids[$i]}" <<<"$list"; then
			echo "@@ image $n $i loaded"
		else
			echo "@@ image $n $i failed $(why "$tmp/$n.import")"
		fi
	done
done
`

// ImageResult is what a load did with one image on one node.
type ImageResult struct {
	Node  string
	Image int // index into the images given
	Did   string
	Why   string
}

// ParseImageLoad reads ImageLoad's lines.
func ParseImageLoad(out string, images int) ([]ImageResult, error) {
	var rs []ImageResult
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "@@ image ")
		if !ok {
			continue
		}
		f := strings.SplitN(rest, " ", 4)
		if len(f) < 3 {
			return nil, fmt.Errorf("the VM's answer to the load: %q is not a result", line)
		}
		i, err := strconv.Atoi(f[1])
		if err != nil || i < 0 || i >= images {
			return nil, fmt.Errorf("the VM's answer to the load: %q names no image given", line)
		}
		r := ImageResult{Node: f[0], Image: i, Did: f[2]}
		switch r.Did {
		case "skipped", "loaded":
		case "failed":
			if len(f) == 4 {
				r.Why = strings.TrimSpace(f[3])
			}
		default:
			return nil, fmt.Errorf("the VM's answer to the load: %q", line)
		}
		rs = append(rs, r)
	}
	return rs, nil
}
