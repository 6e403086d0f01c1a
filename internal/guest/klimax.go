package guest

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strings"

	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/vm"
)

// What klimax installed in its VM (a root script, its unit and the
// docker.service drop-in that re-ran it, two sysctl files) and the guest
// cache folder of its cacheStorage: guest.
var (
	klimaxFiles = []string{
		"/etc/systemd/system/docker.service.d/99-no-nat-kind.conf",
		"/etc/systemd/system/lima-no-nat-kind.service",
		"/usr/local/sbin/no-nat-kind.sh",
		"/etc/sysctl.d/99-klimax.conf",
		"/etc/sysctl.d/99-klimax-forward.conf",
	}
	klimaxUnit     = "lima-no-nat-kind.service"
	KlimaxCacheDir = "/var/lib/klimax/registry-cache"
)

// KlimaxCleanup is the root script that takes klimax's own networking out
// of an adopted VM, so that marina's chains alone decide what reaches the
// kind network: klimax's unit and drop-in (which would insert its rules
// above marina's at every Docker start), its script and sysctl files, and
// its three rules, matched exactly as klimax wrote them for kind (inserted
// straight into nat POSTROUTING and DOCKER-USER, no comment, so nothing
// else names them). cacheMoves (klimax mirror name → marina's) moves the
// mirrors' guest caches (cacheStorage: guest) into marina's folder, each
// only when marina's is not there yet. It prints one line per thing it
// removed or moved, and nothing when there was nothing: running it again
// changes nothing.
func KlimaxCleanup(kind netip.Prefix, cacheMoves map[string]string) (string, error) {
	if !kind.IsValid() || !kind.Addr().Is4() {
		return "", fmt.Errorf("klimax cleanup: %v is not an IPv4 network", kind)
	}
	cidr := regexp.QuoteMeta(kind.Masked().String())
	var b strings.Builder
	b.WriteString("set -eu\n")
	fmt.Fprintf(&b, "if [ -e /etc/systemd/system/%[1]s ]; then\n  systemctl disable --now %[1]s >/dev/null 2>&1 || true\nfi\n", klimaxUnit)
	b.WriteString("reload=\n")
	for _, f := range klimaxFiles {
		q := run.ShellQuote(f)
		fmt.Fprintf(&b, "if [ -e %[1]s ]; then rm -f %[1]s; printf 'removed %%s\\n' %[1]s; reload=1; fi\n", q)
	}
	b.WriteString("if [ -n \"$reload\" ]; then systemctl daemon-reload; fi\n")
	// iptables -S prints a rule as it would be appended: turn -A into -D.
	rules := []struct{ table, chain, re string }{
		{"nat", "POSTROUTING", `^-A POSTROUTING -s ` + cidr + ` -d [0-9.]+/24 -o lima0 -j ACCEPT$`},
		{"filter", "DOCKER-USER", `^-A DOCKER-USER -s [0-9.]+/32 -d ` + cidr + ` -m conntrack --ctstate NEW,RELATED,ESTABLISHED -j ACCEPT$`},
		{"filter", "DOCKER-USER", `^-A DOCKER-USER -s [0-9.]+/32 -d ` + cidr + ` -i lima0 -o [0-9a-z_-]+ -j ACCEPT$`},
	}
	for _, r := range rules {
		fmt.Fprintf(&b, "iptables -w -t %s -S %s 2>/dev/null | grep -E %s | while read -r rule; do\n", r.table, r.chain, run.ShellQuote(r.re))
		fmt.Fprintf(&b, "  read -ra args <<<\"${rule#-A }\"\n  iptables -w -t %s -D \"${args[@]}\"\n  echo \"removed klimax's %s rule: $rule\"\ndone\n", r.table, r.chain)
	}
	olds := make([]string, 0, len(cacheMoves))
	for o := range cacheMoves {
		olds = append(olds, o)
	}
	sort.Strings(olds)
	if len(olds) > 0 {
		fmt.Fprintf(&b, "mkdir -p %s\n", run.ShellQuote(vm.GuestCacheDir))
	}
	for _, o := range olds {
		from, err := fileutil.Child(KlimaxCacheDir, o)
		if err != nil {
			return "", fmt.Errorf("klimax mirror %q: %w", o, err)
		}
		to, err := fileutil.Child(vm.GuestCacheDir, cacheMoves[o])
		if err != nil {
			return "", fmt.Errorf("mirror %q: %w", cacheMoves[o], err)
		}
		fmt.Fprintf(&b, "if [ -d %[1]s ] && [ ! -e %[2]s ]; then mv %[1]s %[2]s; printf 'moved %%s to %%s\\n' %[1]s %[2]s; fi\n", run.ShellQuote(from), run.ShellQuote(to))
	}
	return b.String(), nil
}
