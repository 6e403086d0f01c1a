package guest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"text/template"

	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
)

// Where the routing rules live in the guest. The script is what every path
// runs: marina up, the boot unit, and the docker.service drop-in after each
// Docker start (Docker re-inserts its MASQUERADE rule at the top of
// POSTROUTING when it starts, above marina's exemption).
const (
	ScriptPath = "/usr/local/sbin/marina-network"
	UnitName   = "marina-network.service"
	UnitPath   = "/etc/systemd/system/" + UnitName
	DropInPath = "/etc/systemd/system/docker.service.d/marina-network.conf"

	// HostIf is the vzNAT interface the Mac's route points at.
	HostIf = "lima0"

	// marina's own chains: it owns their whole content, so stale rules
	// (from an older lima0 network) go when the chain is rewritten.
	natChain    = "MARINA-POSTROUTING"
	filterChain = "MARINA-FORWARD"
)

// Net is what the rules are computed from.
type Net struct {
	Kind   netip.Prefix // the kind network (network.cidr)
	Bridge string       // its Linux bridge
	// Mac is the Mac's own address on the vzNAT network, as the VM sees
	// its packets: the only host on lima0 the kind network is open to.
	Mac netip.Addr
	// Pods opens the clusters' pod and service ranges (PodSpace) to the
	// Mac too (network.podRouting).
	Pods bool
}

// PodSpace holds every slot's pod and service ranges (internal/podnet's
// routes). The Mac routes only those to lima0 and the VM sends to the
// bridge only what its routes name, so the rules can name the whole /8.
var PodSpace = netip.MustParsePrefix("10.0.0.0/8")

// KindNet is the kind network cidr on marina's bridge (docker.KindBridge),
// open to the Mac at mac, and the pod ranges too when pods.
func KindNet(cidr netip.Prefix, mac netip.Addr, pods bool) Net {
	return Net{Kind: cidr, Bridge: docker.KindBridge, Mac: mac, Pods: pods}
}

var ifName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,14}$`)

func (n Net) check() error {
	if !n.Kind.IsValid() || !n.Kind.Addr().Is4() || n.Kind != n.Kind.Masked() {
		return fmt.Errorf("the kind network %s is not an IPv4 network address", n.Kind)
	}
	if !ifName.MatchString(n.Bridge) {
		return fmt.Errorf("%q is not an interface name", n.Bridge)
	}
	if !n.Mac.Is4() || n.Mac.IsUnspecified() || n.Mac.IsLoopback() || n.Kind.Contains(n.Mac) {
		return fmt.Errorf("%s is not the Mac's address on the VM's network", n.Mac)
	}
	return nil
}

// Rule is one iptables rule in `iptables -S` form, with its table.
type Rule struct {
	Table string
	Spec  string // "-A CHAIN …" exactly as iptables -S prints it
	What  string // what it is for, for status
}

// Rules are the rules the script installs, in `iptables -S` form: the Mac
// alone reaches the kind network from lima0 (anything else on the vzNAT
// network, another VM, is dropped, published API server ports included),
// and traffic between the two keeps its addresses both ways.
func (n Net) Rules() []Rule {
	mac := netip.PrefixFrom(n.Mac, 32)
	etcd, _ := dns.Addrs(n.Kind)
	rules := []Rule{
		{"nat", fmt.Sprintf("-A %s -s %s -d %s -o %s -j ACCEPT", natChain, n.Kind, mac, HostIf),
			"kind → Mac keeps its source address (exempt from Docker's MASQUERADE)"},
		{"filter", fmt.Sprintf("-A %s -d %s -i %s -o %s -j DROP", filterChain, netip.PrefixFrom(etcd, 32), HostIf, n.Bridge),
			"the local DNS's etcd stays out of the Mac's reach (only the kind network writes records)"},
		{"filter", fmt.Sprintf("-A %s -s %s -d %s -i %s -o %s -j ACCEPT", filterChain, mac, n.Kind, HostIf, n.Bridge),
			"Mac → kind network: containers, unpublished ports, MetalLB addresses"},
		{"filter", fmt.Sprintf("-A %s -s %s -d %s -i %s -o %s -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT", filterChain, n.Kind, mac, n.Bridge, HostIf),
			"replies from the kind network to the Mac"},
	}
	if n.Pods {
		rules = append(rules,
			Rule{"filter", fmt.Sprintf("-A %s -s %s -d %s -i %s -o %s -j ACCEPT", filterChain, mac, PodSpace, HostIf, n.Bridge),
				"Mac → the clusters' pods and ClusterIPs (network.podRouting)"},
			Rule{"filter", fmt.Sprintf("-A %s -s %s -d %s -i %s -o %s -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT", filterChain, PodSpace, mac, n.Bridge, HostIf),
				"replies from the clusters' pods to the Mac"})
	}
	return append(rules, []Rule{
		{"filter", fmt.Sprintf("-A %s -i %s -o %s -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN", filterChain, HostIf, n.Bridge),
			"replies to connections the kind network opened go on to Docker's rules"},
		{"filter", fmt.Sprintf("-A %s -i %s -o %s -j DROP", filterChain, HostIf, n.Bridge),
			"nothing else on the VM's network (another VM) reaches the kind network"},
	}...)
}

// Jumps are the rules that send traffic into marina's chains; each must be
// the first rule of its chain.
func Jumps() []Rule {
	return []Rule{
		{"nat", "-A POSTROUTING -j " + natChain, "first in POSTROUTING, ahead of Docker's MASQUERADE"},
		{"filter", "-A DOCKER-USER -j " + filterChain, "first in DOCKER-USER, which FORWARD runs before Docker's own rules"},
	}
}

// Parsed when first used: not at start, which every command pays.
var scriptTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("net").Parse(`#!/bin/bash
# Written by marina; marina up rewrites it. Routes the Mac ({{.Mac}}) into
# the kind network at layer 3 with no address translation either way:
#  - the Mac reaches every address of {{.Kind}} over {{.HostIf}}, through
#    Docker's DOCKER-USER chain (Docker 28.2+ drops such traffic otherwise);
#    nothing else on {{.HostIf}}'s network does, and nothing from it reaches
#    the local DNS's etcd;
#  - traffic from the kind network to the Mac keeps its source address,
#    exempt from Docker's MASQUERADE;
#  - the FORWARD policy is DROP, whatever Docker found at its start.
# Runs from marina up, from {{.Unit}} at boot and after every Docker start.
set -eu -o pipefail

if [ -z "$(ip -4 -o addr show dev {{.HostIf}} 2>/dev/null)" ]; then
	echo "marina-network: {{.HostIf}} has no IPv4 address yet; no rules changed" >&2
	exit 1
fi
if ! iptables -w -S DOCKER-USER >/dev/null 2>&1; then
	echo "marina-network: Docker's DOCKER-USER chain is missing: is Docker running, on the iptables backend?" >&2
	exit 1
fi
sysctl -q -w net.ipv4.ip_forward=1
iptables -w -P FORWARD DROP

# chain TABLE CHAIN RULE…: make CHAIN hold exactly the RULES, in order.
chain() {
	local table=$1 name=$2 want have r
	shift 2
	want=$(printf '%s\n' "$@")
	iptables -w -t "$table" -N "$name" 2>/dev/null || true
	have=$(iptables -w -t "$table" -S "$name" | grep -v '^-N ' || true)
	[ "$have" = "$want" ] && return 0
	iptables -w -t "$table" -F "$name"
	for r in "$@"; do
		# shellcheck disable=SC2086 # a rule is words
		iptables -w -t "$table" $r
	done
}

# first TABLE CHAIN TARGET: exactly one jump from CHAIN to TARGET, first.
first() {
	local table=$1 name=$2 target=$3 rules
	rules=$(iptables -w -t "$table" -S "$name" | grep -v '^-[PN] ' || true)
	if [ "$(printf '%s\n' "$rules" | head -n 1)" = "-A $name -j $target" ] &&
		[ "$(printf '%s\n' "$rules" | grep -c -- "-j $target\$")" = 1 ]; then
		return 0
	fi
	while iptables -w -t "$table" -D "$name" -j "$target" 2>/dev/null; do :; done
	iptables -w -t "$table" -I "$name" 1 -j "$target"
}

{{range .Chains}}chain {{.Table}} {{.Name}}{{range .Rules}} \
	'{{.}}'{{end}}
{{end}}first nat POSTROUTING {{.NatChain}}
first filter DOCKER-USER {{.FilterChain}}
`))
})

const unitFile = `[Unit]
Description=marina: route the kind network to the Mac without address translation
Documentation=https://github.com/bcollard/marina
After=docker.service
Requires=docker.service

[Service]
Type=oneshot
ExecStart=` + ScriptPath + `
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
`

// Docker re-inserts its MASQUERADE rule above marina's on every start;
// this puts marina's back in front. "-" keeps a failure (lima0 not up yet)
// from failing Docker itself.
const dropInFile = `[Service]
ExecStartPost=-` + ScriptPath + `
`

// File is a file marina installs in the guest (see Batch.Put).
type File struct {
	Path string // absolute and clean
	Mode string // octal, such as 0644
	// Content is text ending with a newline, without NUL: it travels in a
	// here-document, which carries exactly that.
	Content string
}

// Sum is the sha256 of the content, as sha256sum prints it.
func (f File) Sum() string { return fmt.Sprintf("%x", sha256.Sum256([]byte(f.Content))) }

// Files are the script, the boot unit and the Docker drop-in.
func (n Net) Files() ([]File, error) {
	if err := n.check(); err != nil {
		return nil, err
	}
	// The script installs exactly Rules(), the list the checks compare
	// with: one source for both.
	type chain struct {
		Table, Name string
		Rules       []string
	}
	var chains []chain
	for _, r := range n.Rules() {
		name := strings.Fields(r.Spec)[1]
		if len(chains) == 0 || chains[len(chains)-1].Name != name {
			chains = append(chains, chain{Table: r.Table, Name: name})
		}
		c := &chains[len(chains)-1]
		c.Rules = append(c.Rules, r.Spec)
	}
	var b bytes.Buffer
	err := scriptTmpl().Execute(&b, map[string]any{
		"Kind": n.Kind.String(), "Mac": n.Mac.String(), "HostIf": HostIf, "Unit": UnitName,
		"NatChain": natChain, "FilterChain": filterChain, "Chains": chains,
	})
	if err != nil {
		return nil, err
	}
	return []File{
		{ScriptPath, "0755", b.String()},
		{UnitPath, "0644", unitFile},
		{DropInPath, "0644", dropInFile},
	}, nil
}

// Apply adds to b what installs files that differ, enables the unit, and
// runs the rules script.
func (n Net) Apply(b *Batch) error {
	files, err := n.Files()
	if err != nil {
		return err
	}
	b.Sh("reload=0")
	for _, f := range files {
		if err := b.Put(f, "reload"); err != nil {
			return err
		}
	}
	b.Sh(fmt.Sprintf(`if [ "$reload" = 1 ]; then systemctl daemon-reload; fi
if [ "$(systemctl is-enabled %[1]s 2>/dev/null)" != enabled ]; then systemctl enable %[1]s; fi
%[2]s`, UnitName, ScriptPath))
	return nil
}

// NetState is what the guest's routing looks like.
type NetState struct {
	Forwarding bool
	// Sums maps each installed file to its sha256 ("" when missing).
	Sums    map[string]string
	Enabled bool
	// Chains maps "table chain" to its rules in -S form.
	Chains map[string][]string
	// Policies maps "table chain" to a built-in chain's policy.
	Policies map[string]string
	// Err is set when the rules could not be read.
	Err string
}

// networkObserve prints the routing state; it needs root for iptables.
const networkObserve = `echo "@@ forward"
if read -r v < /proc/sys/net/ipv4/ip_forward; then echo "$v"; fi
echo "@@ files"
for f in ` + ScriptPath + " " + UnitPath + " " + DropInPath + `; do
	if [ -n "${sum[$f]:-}" ]; then echo "${sum[$f]}  $f"; else echo "- $f"; fi
done
echo "@@ enabled"
systemctl is-enabled ` + UnitName + ` 2>/dev/null || true
echo "@@ nat"
iptables -w -t nat -S 2>&1 || true
echo "@@ filter"
iptables -w -t filter -S 2>&1 || true
`

func parseNetState(sec map[string]string) NetState {
	st := NetState{Sums: map[string]string{}, Chains: map[string][]string{}, Policies: map[string]string{}}
	st.Forwarding = strings.TrimSpace(sec["forward"]) == "1"
	for _, line := range strings.Split(sec["files"], "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if f[0] == "-" {
			st.Sums[f[1]] = ""
		} else {
			st.Sums[f[1]] = f[0]
		}
	}
	st.Enabled = strings.TrimSpace(sec["enabled"]) == "enabled"
	for _, table := range []string{"nat", "filter"} {
		for _, line := range strings.Split(sec[table], "\n") {
			line = strings.TrimSpace(line)
			if f := strings.Fields(line); len(f) == 3 && f[0] == "-P" {
				st.Policies[table+" "+f[1]] = f[2]
				continue
			}
			if !strings.HasPrefix(line, "-A ") {
				if line != "" && !strings.HasPrefix(line, "-P ") && !strings.HasPrefix(line, "-N ") && st.Err == "" {
					st.Err = "iptables -t " + table + ": " + line
				}
				continue
			}
			name := strings.Fields(line)[1]
			st.Chains[table+" "+name] = append(st.Chains[table+" "+name], line)
		}
	}
	return st
}

// Check is one probe of the guest's routing, for status and for planning.
type Check struct {
	What string
	OK   bool
	Note string
	// Area is what the check is about: forwarding, the firewall rules, or
	// what keeps them across boots and Docker restarts.
	Area Area
	// Rule and Jump say a firewall check is of one of marina's rules or of
	// a jump into its chains (for doctor's count).
	Rule, Jump bool
}

// Area groups the checks (doctor reports one line per area).
type Area string

// The areas of Checks.
const (
	AreaForwarding Area = "forwarding"
	AreaFirewall   Area = "firewall"
	AreaBoot       Area = "boot"
)

// Checks compares st with what the rules must be. Each check looks for
// exactly what the script installs.
func (n Net) Checks(st NetState) ([]Check, error) {
	files, err := n.Files()
	if err != nil {
		return nil, err
	}
	var out []Check
	out = append(out, Check{What: "IPv4 forwarding", OK: st.Forwarding, Note: "net.ipv4.ip_forward", Area: AreaForwarding})
	out = append(out, Check{What: "the VM forwards nothing it is not told to", OK: st.Policies["filter FORWARD"] == "DROP", Note: "-t filter -P FORWARD DROP", Area: AreaFirewall})
	for _, r := range n.Rules() {
		chain := strings.Fields(r.Spec)[1]
		found := false
		for _, have := range st.Chains[r.Table+" "+chain] {
			found = found || have == r.Spec
		}
		out = append(out, Check{What: r.What, OK: found, Note: "-t " + r.Table + " " + r.Spec, Area: AreaFirewall, Rule: true})
	}
	// A chain may only hold marina's rules: anything else is stale.
	want := map[string]bool{}
	for _, r := range n.Rules() {
		want[r.Table+" "+r.Spec] = true
	}
	for _, key := range []string{"nat " + natChain, "filter " + filterChain} {
		table := strings.Fields(key)[0]
		for _, have := range st.Chains[key] {
			if !want[table+" "+have] {
				out = append(out, Check{What: "stale rule", OK: false, Note: "-t " + table + " " + have, Area: AreaFirewall})
			}
		}
	}
	for _, j := range Jumps() {
		from := strings.Fields(j.Spec)[1]
		rules := st.Chains[j.Table+" "+from]
		n := 0
		for _, r := range rules {
			if r == j.Spec {
				n++
			}
		}
		ok := len(rules) > 0 && rules[0] == j.Spec && n == 1
		out = append(out, Check{What: "jump into marina's rules", OK: ok, Note: "-t " + j.Table + " " + j.Spec + " (" + j.What + ")", Area: AreaFirewall, Jump: true})
	}
	for _, f := range files {
		out = append(out, Check{What: "installed " + f.Path, OK: st.Sums[f.Path] == f.Sum(), Note: "survives reboots and Docker restarts", Area: AreaBoot})
	}
	out = append(out, Check{What: UnitName + " enabled", OK: st.Enabled, Note: "applies the rules at boot", Area: AreaBoot})
	return out, nil
}

// AllOK reports whether every check passed.
func AllOK(cs []Check) bool {
	for _, c := range cs {
		if !c.OK {
			return false
		}
	}
	return true
}
