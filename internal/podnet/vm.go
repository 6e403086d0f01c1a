package podnet

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"go4.org/netipx"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/slot"
)

// What network.podRouting installs in the VM. The script runs as a
// service, a pass every 10 seconds (as often as kindnetd syncs its
// routes), so routes follow nodes after a Docker restart or a reboot
// without marina; marina runs one pass itself after each change.
const (
	ScriptPath = "/usr/local/sbin/marina-podnet"
	UnitName   = "marina-podnet.service"
	UnitPath   = "/etc/systemd/system/" + UnitName
	// ConfDir holds one file per routed cluster, written by marina.
	ConfDir = "/etc/marina/podnet"
	// Proto marks the VM's routes the script makes (ip route … proto 200):
	// only routes with it are ever replaced or deleted.
	Proto = 200
	// Chain is the nat chain marina owns in every node, jumped to first
	// from POSTROUTING.
	Chain = "MARINA-PODNET"
)

// Cluster is one routed cluster: a marina cluster and its slot.
type Cluster struct {
	Name string
	Slot int
}

// Of are the marina clusters among cs (those with a slot).
func Of(cs []cluster.Info) []Cluster {
	var out []Cluster
	for _, c := range cs {
		if c.Slot != 0 {
			out = append(out, Cluster{Name: c.Name, Slot: c.Slot})
		}
	}
	return out
}

var clusterName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$`)

// others is every slot's ranges but n's own, covered.
func others(n int) []netip.Prefix {
	var b netipx.IPSetBuilder
	for _, p := range HostRoutes() {
		b.AddPrefix(p)
	}
	b.RemovePrefix(slot.PodSubnet(n))
	b.RemovePrefix(slot.ServiceSubnet(n))
	s, _ := b.IPSet()
	return s.Prefixes()
}

// NodeRules are the rules of Chain in each node of the cluster in slot n,
// in `iptables -S` form. nat ACCEPT ends the chain walk, so a rule here
// keeps a packet from every masquerade after it: kindnetd's
// KIND-MASQ-AGENT (appended at the end of POSTROUTING) and kube-proxy's
// KUBE-POSTROUTING.
//   - The cluster's pods keep their own address towards the other slots'
//     ranges: the other cluster sees, and answers, the pod itself.
//   - The Mac and the other clusters keep theirs towards this node's own
//     pods (out of any interface but eth0): to a ClusterIP whose endpoint
//     is on the node that received it (the reply comes back through it).
//     To an endpoint on another node kube-proxy's masquerade stays: its
//     reply would not come back through the node that translated it.
func NodeRules(n int, mac netip.Addr) []string {
	pods := slot.PodSubnet(n)
	var out []string
	for _, p := range others(n) {
		out = append(out, fmt.Sprintf("-A %s -s %s -d %s -j ACCEPT", Chain, pods, p))
	}
	out = append(out, fmt.Sprintf("-A %s -s %s ! -o eth0 -j ACCEPT", Chain, netip.PrefixFrom(mac, 32)))
	for _, p := range others(n) {
		out = append(out, fmt.Sprintf("-A %s -s %s ! -o eth0 -j ACCEPT", Chain, p))
	}
	return out
}

// Conf is the file that tells the VM's script to route c.
func Conf(c Cluster, kind netip.Prefix, mac netip.Addr) (guest.File, error) {
	if !clusterName.MatchString(c.Name) {
		return guest.File{}, fmt.Errorf("%q is not a cluster name marina makes", c.Name)
	}
	if err := slot.Check(c.Slot); err != nil {
		return guest.File{}, err
	}
	if !kind.IsValid() || !kind.Addr().Is4() || kind != kind.Masked() {
		return guest.File{}, fmt.Errorf("the kind network %s is not an IPv4 network address", kind)
	}
	if !mac.Is4() || mac.IsUnspecified() || mac.IsLoopback() {
		return guest.File{}, fmt.Errorf("%s is not the Mac's address on the VM's network", mac)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by marina: route cluster %s (slot %d) at layer 3.\n", c.Name, c.Slot)
	fmt.Fprintf(&b, "kind %s\npods %s\nservices %s\n", kind, slot.PodSubnet(c.Slot), slot.ServiceSubnet(c.Slot))
	for _, r := range NodeRules(c.Slot, mac) {
		fmt.Fprintf(&b, "rule %s\n", r)
	}
	return guest.File{Path: ConfDir + "/" + c.Name + ".conf", Mode: "0644", Content: b.String()}, nil
}

// Apply adds to b what up does for p: when on, install the service and
// the files of p's clusters and remove the stale ones it observed; when
// off, remove the service, its files and its routes.
func Apply(b *guest.Batch, p Plan, kind netip.Prefix, mac netip.Addr) error {
	if !p.On {
		b.Sh(Off)
		return nil
	}
	clusters := p.Clusters
	keep := []string{}
	b.Sh("confs=0")
	for _, c := range clusters {
		f, err := Conf(c, kind, mac)
		if err != nil {
			return err
		}
		if err := b.Put(f, "confs"); err != nil {
			return err
		}
		keep = append(keep, f.Path)
	}
	// A stale file goes only as observed: a create that wrote it again
	// meanwhile keeps it.
	for _, f := range p.Stale {
		name, _ := strings.CutSuffix(strings.TrimPrefix(f, ConfDir+"/"), ".conf")
		sum := p.sums[f]
		if !clusterName.MatchString(name) || slices.Contains(keep, f) || !sha.MatchString(sum) {
			continue // read from the VM: only a conf file of a cluster name
		}
		b.Sh(fmt.Sprintf(`if [ "$(sha256sum <%[1]s/%[2]s.conf 2>/dev/null | cut -c1-64)" = %[3]s ]; then rm -f -- %[1]s/%[2]s.conf; confs=1; fi`, ConfDir, name, sum))
	}
	return install(b)
}

// Add adds to b what routes c too (cluster create), and runs a pass.
func Add(b *guest.Batch, c Cluster, kind netip.Prefix, mac netip.Addr) error {
	f, err := Conf(c, kind, mac)
	if err != nil {
		return err
	}
	b.Sh("confs=0")
	if err := b.Put(f, "confs"); err != nil {
		return err
	}
	return install(b)
}

// Forget is the shell that stops routing clusters names (cluster delete):
// their files go and a pass deletes their routes. Nothing happens where
// podRouting never routed them.
func Forget(names []string) (string, error) {
	var b strings.Builder
	for _, n := range names {
		if !clusterName.MatchString(n) {
			return "", fmt.Errorf("%q is not a cluster name marina makes", n)
		}
		fmt.Fprintf(&b, "if [ -f %[1]s/%[2]s.conf ]; then rm -f -- %[1]s/%[2]s.conf; podnet=1; fi\n", ConfDir, n)
	}
	fmt.Fprintf(&b, "if [ \"${podnet:-}\" = 1 ] && [ -x %[1]s ]; then %[1]s once || true; fi\n", ScriptPath)
	return b.String(), nil
}

// install writes the script and the unit, (re)starts the service when
// they changed or it does not run, and runs a pass now when anything
// changed ($confs), so routes are there when marina returns.
func install(b *guest.Batch) error {
	b.Sh("reload=0")
	for _, f := range []guest.File{{Path: ScriptPath, Mode: "0755", Content: script}, {Path: UnitPath, Mode: "0644", Content: unit}} {
		if err := b.Put(f, "reload"); err != nil {
			return err
		}
	}
	b.Sh(fmt.Sprintf(`if [ "$reload" = 1 ]; then systemctl daemon-reload; fi
if [ "$(systemctl is-enabled %[1]s 2>/dev/null)" != enabled ]; then systemctl enable %[1]s; fi
if [ "$reload" = 1 ] || [ "$(systemctl is-active %[1]s 2>/dev/null)" != active ]; then systemctl restart %[1]s; fi
# A pass that does not finish fails nothing: the service passes again.
if [ "$confs" = 1 ] || [ "$reload" = 1 ]; then %[2]s once || echo "marina-podnet: the pass did not finish; the service routes on its next one" >&2; fi`, UnitName, ScriptPath))
	return nil
}

// Off removes what podRouting installed, routes with Proto included; it
// leaves the nodes' chains, which only exempt addresses no route then
// brings (and which a node restart clears).
var Off = fmt.Sprintf(`if [ -f %[1]s ] || [ -d %[2]s ] || [ -f %[3]s ]; then
	systemctl disable --now %[4]s 2>/dev/null || true
	rm -f -- %[1]s %[3]s
	rm -rf -- %[2]s /run/marina-podnet
	systemctl daemon-reload
fi
ip -4 route flush root 10.0.0.0/8 proto %[5]d 2>/dev/null || true`, UnitPath, ConfDir, ScriptPath, UnitName, Proto)

const unit = `[Unit]
Description=marina: route the clusters' pod and service ranges (network.podRouting)
Documentation=https://github.com/bcollard/marina
After=docker.service marina-network.service
Wants=docker.service

[Service]
ExecStart=` + ScriptPath + `
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
`

var script = strings.NewReplacer(
	"@CONF@", ConfDir, "@PROTO@", fmt.Sprint(Proto), "@CHAIN@", Chain,
	"@BRIDGE@", docker.KindBridge, "@NET@", docker.KindNetwork,
).Replace(scriptText)
