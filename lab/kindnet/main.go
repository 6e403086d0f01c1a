// Command lab-kindnet is the lab's stand-in for kindnetd, the CNI daemon
// kind v0.33.0 installs by default (docker.io/kindest/kindnetd), whose
// source module the module proxy here does not serve. It runs in kind's
// own kindnet DaemonSet, unchanged: host network, /etc/cni/net.d,
// /run/xtables.lock and /lib/modules from the node, NET_RAW and NET_ADMIN,
// the kindnet ServiceAccount (it only lists nodes). Of the manifest's
// environment it reads HOST_IP, POD_SUBNET and CONTROL_PLANE_ENDPOINT;
// POD_IP, the same address on the host network, is not needed. As
// kindnetd, it reaches the API server at CONTROL_PLANE_ENDPOINT (kind sets
// it to the control plane's host:port) rather than at the kubernetes
// Service, whose address works only once kube-proxy has written its rules:
// a new node would otherwise wait for that, and for a request to time out,
// before it is Ready. Its image is a Debian bookworm
// root with iproute2 and iptables (nft), this binary at /bin/kindnetd as
// the entrypoint, run with no arguments.
//
// It does what kindnetd does, as kind's own source has it (kind commit
// 69b56db7, the kindest/kindnetd:v20260820-69b56db7 image kind v0.33.0
// installs, images/kindnetd/cmd/kindnetd):
//   - every 5 seconds (kindnetd: 10, main.go:271) it writes
//     /etc/cni/net.d/10-kindnet.conflist once its own node (the one whose
//     InternalIP is HOST_IP) has a pod range: ptp links (ipMasq false) and
//     host-local addresses from that range, then portmap (cni.go:81-121);
//   - and routes every other node's IPv4 pod range via that node's
//     InternalIP (`ip route replace`: a route of that range through
//     another gateway goes), leaving routes of nodes that are gone, as
//     kindnetd's syncRoute does (routes.go:27-69);
//   - at its start and every 60 seconds (masq.go, main.go:193,208) it
//     makes sure of the nat chain KIND-MASQ-AGENT: `-d <POD_SUBNET entry>
//     -j RETURN` for each entry, then `-j MASQUERADE`, and the POSTROUTING
//     rule `-m addrtype ! --dst-type LOCAL -j KIND-MASQ-AGENT`, each with
//     kindnetd's comment and appended only when missing; it never flushes
//     or removes a rule, so a rule someone else inserted in the chain
//     stays (marina's exemptions for other clusters' ranges rely on it).
//     A failed sync is tried again on the next round, and never ends it
//     (kindnetd retries after 60 s and panics after three failures).
//
// It does nothing of kindnetd's beyond that: no network policies, no NRI
// plugin (the manifest's /var/run/nri mount is unused), no IPv6 (IPv6 pod
// ranges and POD_SUBNET entries are ignored). Its routes, file and rules
// stay when it stops, so pods keep their network while the DaemonSet
// rolls.
//
// It exits non-zero only when its environment is wrong (HOST_IP or
// POD_SUBNET missing or malformed, not in a pod, ip or iptables missing);
// an API or command error is logged and tried again on the next round.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	confFile   = "/etc/cni/net.d/10-kindnet.conflist"
	interval   = 5 * time.Second
	masqEvery  = 60 * time.Second // kindnetd's masquerade resync
	apiTimeout = 10 * time.Second
	cmdTimeout = 30 * time.Second
)

func main() {
	log.SetFlags(log.LstdFlags)
	log.SetPrefix("lab-kindnet: ")
	if len(os.Args) > 1 {
		bad("takes no arguments")
	}

	hostIP, err := netip.ParseAddr(strings.TrimSpace(os.Getenv("HOST_IP")))
	if err != nil {
		bad(fmt.Sprintf("HOST_IP %q is not an IP address (the DaemonSet sets it from status.hostIP)", os.Getenv("HOST_IP")))
	}
	podSubnets, err := parsePodSubnets(os.Getenv("POD_SUBNET"))
	if err != nil {
		bad(err.Error())
	}
	if len(podSubnets) == 0 {
		bad(fmt.Sprintf("POD_SUBNET %q has no IPv4 entry, and this stand-in networks IPv4 only", os.Getenv("POD_SUBNET")))
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		bad(err.Error())
	}
	cfg.UserAgent = "lab-kindnet"
	if ep := strings.TrimSpace(os.Getenv("CONTROL_PLANE_ENDPOINT")); ep != "" {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			bad(fmt.Sprintf("CONTROL_PLANE_ENDPOINT %q is not host:port (kind sets it to the control plane's)", ep))
		}
		cfg.Host = "https://" + ep
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		bad(err.Error())
	}

	a := &agent{
		client:     client,
		hostIP:     hostIP.Unmap(),
		podSubnets: podSubnets,
		ip:         findBin("ip"),
		iptables:   findBin("iptables"),
		confPath:   confFile,
		added:      map[netip.Prefix]netip.Addr{},
		notes:      map[string]string{},
	}
	log.Printf("starting: host IP %s, pod subnets %s, %s, %s", a.hostIP, joinPrefixes(podSubnets), a.ip, a.iptables)

	// SIGTERM is how the kubelet stops it; leave at once, changing nothing.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		a.round(ctx)
		select {
		case <-ctx.Done():
			log.Print("stopping")
			return
		case <-tick.C:
		}
	}
}

// bad reports a wrong environment and exits: nothing a retry would fix.
func bad(msg string) {
	log.Print(msg)
	os.Exit(2)
}

// findBin finds a program on PATH or, should the image not set PATH, in
// the usual folders; a missing one is a broken image.
func findBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	bad(name + " not found (the image should carry it)")
	return ""
}

// agent is the state between rounds.
type agent struct {
	client       kubernetes.Interface
	hostIP       netip.Addr
	podSubnets   []netip.Prefix
	ip, iptables string
	confPath     string // the conflist to write
	// added is the routes this process put in, by destination, so that
	// each is logged once.
	added map[netip.Prefix]netip.Addr
	// masqAt is when the masquerade rules were last made sure of (zero:
	// not yet, or the last try failed).
	masqAt time.Time
	// notes is the last waiting message per subject, so that a wait is
	// said once rather than every round.
	notes map[string]string
}

func (a *agent) round(ctx context.Context) {
	if now := time.Now(); now.Sub(a.masqAt) >= masqEvery {
		a.masqAt = now
		if err := a.syncMasq(ctx); err != nil {
			a.masqAt = time.Time{} // the next round tries again
			if ctx.Err() == nil {
				log.Printf("masquerade: %v (next round retries)", err)
			}
		}
	}
	lctx, cancel := context.WithTimeout(ctx, apiTimeout)
	// ResourceVersion "0": the API server's cache is recent enough.
	list, err := a.client.CoreV1().Nodes().List(lctx, metav1.ListOptions{ResourceVersion: "0"})
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			log.Printf("listing nodes: %v (next round retries)", err)
		}
		return
	}
	if err := a.syncConf(list.Items); err != nil {
		log.Printf("%s: %v (next round retries)", a.confPath, err)
	}
	a.syncRoutes(ctx, list.Items)
}

// note logs msg for subject unless it was the last thing said about it;
// an empty msg clears the subject.
func (a *agent) note(subject, msg string) {
	if a.notes[subject] == msg {
		return
	}
	a.notes[subject] = msg
	if msg != "" {
		log.Print(msg)
	}
}

func (a *agent) syncConf(nodes []corev1.Node) error {
	n := ownNode(nodes, a.hostIP)
	if n == nil {
		a.note("conf", fmt.Sprintf("waiting for a node with InternalIP %s before writing %s", a.hostIP, a.confPath))
		return nil
	}
	cidrs := podCIDRs4(n)
	if len(cidrs) == 0 {
		a.note("conf", fmt.Sprintf("waiting for node %s to get an IPv4 podCIDR before writing %s", n.Name, a.confPath))
		return nil
	}
	a.note("conf", "")
	mtu := a.mtu()
	b, err := conflistBytes(cidrs, mtu)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(a.confPath); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := writeAtomic(a.confPath, b, 0o644); err != nil {
		return err
	}
	log.Printf("wrote %s: node %s, pod range %s, mtu %d", a.confPath, n.Name, joinPrefixes(cidrs), mtu)
	return nil
}

// mtu is the MTU of the interface of the node's default route (the host
// network is the pod's), or 1500 when that cannot be read.
func (a *agent) mtu() int {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		a.note("mtu", fmt.Sprintf("MTU %d: %v", defaultMTU, err))
		return defaultMTU
	}
	dev := defaultRouteDev(string(b))
	if dev == "" {
		a.note("mtu", fmt.Sprintf("MTU %d: no IPv4 default route", defaultMTU))
		return defaultMTU
	}
	ifc, err := net.InterfaceByName(dev)
	if err != nil || ifc.MTU <= 0 {
		a.note("mtu", fmt.Sprintf("MTU %d: interface %s: %v", defaultMTU, dev, err))
		return defaultMTU
	}
	a.note("mtu", "")
	return ifc.MTU
}

// writeAtomic replaces path with b through a file in the same folder, so
// that the container runtime, which watches the folder, never reads half a
// file. The temporary name ends in .tmp, an extension CNI loaders skip.
func writeAtomic(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".lab-kindnet-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func (a *agent) syncRoutes(ctx context.Context, nodes []corev1.Node) {
	want := desiredRoutes(nodes, a.hostIP)
	dsts := make([]netip.Prefix, 0, len(want))
	for dst := range want {
		dsts = append(dsts, dst)
	}
	sortPrefixes(dsts)
	for _, dst := range dsts {
		gw := want[dst]
		// Every round, not only on a change: a route someone removed comes
		// back. Replacing a route with itself changes nothing.
		if _, err := a.run(ctx, a.ip, "route", "replace", dst.String(), "via", gw.String()); err != nil {
			if ctx.Err() == nil {
				log.Printf("route %s via %s: %v (next round retries)", dst, gw, err)
			}
			continue
		}
		if prev, ok := a.added[dst]; !ok || prev != gw {
			log.Printf("route %s via %s (node %s)", dst, gw, nodeNameOf(nodes, gw))
			a.added[dst] = gw
		}
	}
}

func nodeNameOf(nodes []corev1.Node, ip netip.Addr) string {
	if n := ownNode(nodes, ip); n != nil {
		return n.Name
	}
	return "?"
}

// syncMasq makes sure of the chain, its rules and the POSTROUTING jump as
// kindnetd does: each appended when missing (go-iptables' AppendUnique),
// nothing flushed or removed. Like kindnetd's, a POD_SUBNET entry added
// after the chain was made lands after the MASQUERADE, too late.
func (a *agent) syncMasq(ctx context.Context) error {
	if _, err := a.iptablesNat(ctx, "-S", masqChain); err != nil {
		if _, err := a.iptablesNat(ctx, "-N", masqChain); err != nil {
			return err
		}
		log.Printf("created nat chain %s", masqChain)
	}
	for _, r := range masqRules(a.podSubnets) {
		if _, err := a.iptablesNat(ctx, append([]string{"-C", masqChain}, r...)...); err != nil {
			if _, err := a.iptablesNat(ctx, append([]string{"-A", masqChain}, r...)...); err != nil {
				return err
			}
			log.Printf("appended to nat chain %s: %s", masqChain, strings.Join(r, " "))
		}
	}
	if _, err := a.iptablesNat(ctx, append([]string{"-C", "POSTROUTING"}, masqJump...)...); err != nil {
		if _, err := a.iptablesNat(ctx, append([]string{"-A", "POSTROUTING"}, masqJump...)...); err != nil {
			return err
		}
		log.Printf("added nat POSTROUTING rule: %s", strings.Join(masqJump, " "))
	}
	return nil
}

// iptablesNat runs iptables on the nat table, waiting up to 5 seconds for
// the xtables lock that kube-proxy shares (/run/xtables.lock).
func (a *agent) iptablesNat(ctx context.Context, args ...string) (string, error) {
	return a.run(ctx, a.iptables, append([]string{"-w", "5", "-t", "nat"}, args...)...)
}

// run runs a program and returns its standard output; its error carries
// the standard error.
func (a *agent) run(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		} else {
			msg = err.Error() + ": " + msg
		}
		return stdout.String(), errors.New(filepath.Base(bin) + " " + strings.Join(args, " ") + ": " + msg)
	}
	return stdout.String(), nil
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
