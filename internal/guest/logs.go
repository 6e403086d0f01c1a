package guest

import (
	"fmt"
	"strings"

	"github.com/bcollard/marina/internal/run"
)

// Logs gathers, as root, what a bug report needs from the VM and prints
// it on stdout as one gzipped tar of plain files: the journal of Docker
// and marina's units, the firewall, the addresses and routes, Docker's
// containers (docker ps -a, docker inspect and the last lines of the logs
// of marina's own: the mirrors, the local DNS, the push registry), and
// kind's export logs of each cluster named (running ones: kind reads the
// nodes). Every command's failure is written into its file: a report of
// a broken VM is the one most needed. The caller scrubs secrets.
func Logs(clusters []string) (string, error) {
	var b strings.Builder
	b.WriteString(`set -u
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/vm/containers" "$d/clusters"
# grab FILE CMD…: CMD's output and errors into FILE, and its failure.
grab() {
	f=$1
	shift
	"$@" >"$d/vm/$f" 2>&1 || echo "marina: $* exited $?" >>"$d/vm/$f"
}
grab journal-docker.txt journalctl --no-pager -n 5000 -u docker.service -u containerd.service
grab journal-marina.txt journalctl --no-pager -n 5000 -u marina-network.service
grab iptables-save.txt iptables-save
grab ip-addr.txt ip addr
grab ip-route.txt ip route
grab docker-ps.txt docker ps -a --no-trunc
grab docker-info.txt docker info
ids="$(docker ps -aq --filter label=dev.marina.config 2>/dev/null) $(docker ps -aq --filter label=io.x-k8s.kind.cluster 2>/dev/null)"
# shellcheck disable=SC2086 # one id per word
[ -n "${ids// /}" ] && grab docker-inspect.json docker inspect $ids
for c in $(docker ps -a --filter label=dev.marina.config --format '{{.Names}}' 2>/dev/null); do
	case $c in *[!A-Za-z0-9_.-]*) continue ;; esac
	grab "containers/$c.log" docker logs --tail 2000 "$c"
done
`)
	for _, n := range clusters {
		if _, err := ClusterDir(n); err != nil {
			return "", err
		}
		q := run.ShellQuote(n)
		fmt.Fprintf(&b, "kind export logs \"$d/clusters/\"%s --name %s >\"$d/clusters/\"%s.txt 2>&1 || echo \"marina: kind export logs exited $?\" >>\"$d/clusters/\"%s.txt\n", q, q, q, q)
	}
	// Never more than marina takes (logs.maxArchive, 512 MiB) and a byte:
	// a larger archive arrives cut, and is refused whole.
	b.WriteString("tar -C \"$d\" -czf - vm clusters | head -c 536870913\n")
	return b.String(), nil
}
