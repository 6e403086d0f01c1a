package e2e

import (
	"bufio"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/dns"
)

const (
	echoImage = "marina-lab/echo:1"
	lnImage   = "marina-lab/ln:1"
)

var (
	toolsMu sync.Mutex
	toolBin = map[string]string{} // lab tool → the folder it was built in
)

// importEcho imports lab/echo as echoImage.
func importEcho(t *testing.T) { t.Helper(); importTool(t, "echo", echoImage) }

// importTool builds lab/<name> as a static binary (once) and imports it
// into the guest's Docker as a FROM-scratch image when the VM lacks it
// (nothing can be pulled in the lab).
func importTool(t *testing.T, name, image string) {
	t.Helper()
	toolsMu.Lock()
	dir := toolBin[name]
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		repo := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		d, err := os.MkdirTemp("", "marina-"+name+"-")
		if err != nil {
			toolsMu.Unlock()
			t.Fatal(err)
		}
		b := exec.Command("go", "build", "-o", filepath.Join(d, name), "./lab/"+name)
		b.Dir, b.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := b.CombinedOutput(); err != nil {
			toolsMu.Unlock()
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
		dir, toolBin[name] = d, d
	}
	toolsMu.Unlock()
	if _, err := labCmd(t, "docker", "image", "inspect", image); err == nil {
		return
	}
	sh := "tar -C " + dir + " -c " + name + " | " + labScript + ` docker import -c 'ENTRYPOINT ["/` + name + `"]' - ` + image
	if out, err := exec.Command("sh", "-c", sh).CombinedOutput(); err != nil {
		t.Fatalf("import %s: %v\n%s", name, err, out)
	}
}

func labDocker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := labCmd(t, append([]string{"docker"}, args...)...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// inGuest runs a shell command as root in the guest.
func inGuest(t *testing.T, script string) string {
	t.Helper()
	out, err := labCmd(t, "vm", "sh", "-c", script)
	if err != nil {
		t.Fatalf("in the guest: %s: %v\n%s", script, err, out)
	}
	return out
}

// serveEcho runs an echo server on network and returns its address there.
func serveEcho(t *testing.T, name, network string) string {
	t.Helper()
	importEcho(t)
	labDocker(t, "run", "-d", "--restart", "always", "--name", name, "--network", network, echoImage, "serve", ":8080")
	t.Cleanup(func() { _, _ = labCmd(t, "docker", "rm", "-f", name) })
	return containerIP(t, name, network)
}

func containerIP(t testing.TB, name, network string) string {
	t.Helper()
	var ip string
	waitFor(t, 20*time.Second, name+"'s address", func() bool {
		out, err := labCmd(t, "docker", "inspect", "-f", "{{(index .NetworkSettings.Networks \""+network+"\").IPAddress}}", name)
		ip = strings.TrimSpace(out)
		return err == nil && net.ParseIP(ip) != nil
	})
	return ip
}

// addVIP makes container name answer for vip too, as a MetalLB speaker
// makes a node answer for a LoadBalancer address: an address that is not
// any container's, so Docker's per-container rules do not know it.
func addVIP(t *testing.T, name, vip string) {
	t.Helper()
	pid := labDocker(t, "inspect", "-f", "{{.State.Pid}}", name)
	if out, err := exec.Command("nsenter", "-t", pid, "-n", "ip", "addr", "add", vip+"/32", "dev", "eth0").CombinedOutput(); err != nil {
		t.Fatalf("add %s to %s: %v\n%s", vip, name, err, out)
	}
}

var peerRe = regexp.MustCompile(`^peer ([0-9.]+):\d+ local ([0-9.]+):\d+`)

// dialFromMac connects from the mac namespace (where this test runs) and
// returns the peer address the server saw.
func dialFromMac(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	m := peerRe.FindStringSubmatch(line)
	if m == nil {
		return "", &net.AddrError{Err: "unexpected answer " + line, Addr: addr}
	}
	return m[1], nil
}

// listenOnMac accepts connections in the mac namespace and reports each
// peer address.
func listenOnMac(t *testing.T) (string, <-chan string) {
	t.Helper()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	peers := make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			peers <- host
			_, _ = c.Write([]byte("peer " + c.RemoteAddr().String() + " local " + c.LocalAddr().String() + "\n"))
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port, peers
}

// dialFromContainer connects from a new container on network to addr and
// returns the peer address the Mac-side server saw (empty on failure).
func dialFromContainer(t *testing.T, network, addr string, peers <-chan string) string {
	t.Helper()
	out, err := labCmd(t, "docker", "run", "--rm", "--network", network, echoImage, "dial", addr)
	if err != nil {
		t.Logf("dial from %s to %s: %v %s", network, addr, err, out)
		return ""
	}
	select {
	case p := <-peers:
		return p
	case <-time.After(3 * time.Second):
		return ""
	}
}

// firewall is the guest's filter and nat tables without counters.
func firewall(t *testing.T) string {
	t.Helper()
	out := inGuest(t, "iptables-save -t filter; iptables-save -t nat")
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		keep = append(keep, regexp.MustCompile(`\[\d+:\d+\]`).ReplaceAllString(l, ""))
	}
	return strings.Join(keep, "\n")
}

func marinaRules(t *testing.T) string {
	t.Helper()
	var keep []string
	for _, l := range strings.Split(firewall(t), "\n") {
		if strings.Contains(l, "MARINA") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func TestNetwork(t *testing.T) {
	needLab(t)
	// No mirrors: they would try the internet, and share the network.
	writeConfig(t, "registries:\n  mirrors: []\n")
	mustMarina(t, "up")
	t.Cleanup(func() { marina(t, "destroy", "-y") })

	macPeer := "192.168.64.1"

	t.Run("Docker 29 blocks routed traffic without marina's network options and rules", func(t *testing.T) {
		// A network made as Docker makes it by default, routed from the Mac
		// the way marina routes the kind network.
		labDocker(t, "network", "create", "--subnet", "172.31.0.0/16", "plain")
		t.Cleanup(func() { _, _ = labCmd(t, "docker", "network", "rm", "plain") })
		if out, err := exec.Command("ip", "route", "replace", "172.31.0.0/16", "via", "192.168.64.2").CombinedOutput(); err != nil {
			t.Fatalf("route: %v %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "route", "del", "172.31.0.0/16").Run() })
		ip := serveEcho(t, "plain-srv", "plain")
		addVIP(t, "plain-srv", "172.31.1.200")
		br := strings.TrimSpace(inGuest(t, "ip -o -4 addr show to 172.31.0.1/32 | awk '{print $2}'"))

		// Docker's raw-table DROP stops the container address; its filter
		// DROP stops the MetalLB-style address.
		if p, err := dialFromMac(ip + ":8080"); err == nil {
			t.Errorf("reached the container %s without marina (peer %s): Docker's protection is not in place", ip, p)
		}
		if p, err := dialFromMac("172.31.1.200:8080"); err == nil {
			t.Errorf("reached the VIP without marina (peer %s)", p)
		}
		if !strings.Contains(inGuest(t, "iptables -t raw -S PREROUTING"), "-d "+ip+"/32 ! -i "+br+" -j DROP") {
			t.Errorf("no raw DROP rule for %s", ip)
		}

		// A DOCKER-USER accept alone opens the VIP but not the container:
		// the raw DROP still holds until lima0 is a trusted interface.
		rule := "-s 192.168.64.0/24 -d 172.31.0.0/16 -i lima0 -o " + br + " -j ACCEPT"
		inGuest(t, "iptables -I DOCKER-USER 1 "+rule)
		defer inGuest(t, "iptables -D DOCKER-USER "+rule)
		if p, err := dialFromMac("172.31.1.200:8080"); err != nil || p != macPeer {
			t.Errorf("VIP with a DOCKER-USER accept: peer %q, %v", p, err)
		}
		if p, err := dialFromMac(ip + ":8080"); err == nil {
			t.Errorf("reached the container without the trusted interface (peer %s)", p)
		}

		// Without the NAT exemption Docker masquerades the container's
		// connection to the Mac behind the VM's address.
		port, peers := listenOnMac(t)
		if p := dialFromContainer(t, "plain", macPeer+":"+port, peers); p != "192.168.64.2" {
			t.Errorf("from a plain container the Mac saw %q, want the VM's masquerading address 192.168.64.2", p)
		}
	})

	// The server the rest of the test talks to lives as long as the test.
	srvIP := serveEcho(t, "kind-srv", "kind")
	addVIP(t, "kind-srv", "172.30.1.200")

	t.Run("the Mac reaches containers and MetalLB addresses and is seen as itself", func(t *testing.T) {
		if !strings.HasPrefix(srvIP, "172.30.128.") {
			t.Errorf("Docker gave the container %s, outside the dynamic range 172.30.128.0/18", srvIP)
		}
		for _, addr := range []string{srvIP, "172.30.1.200"} {
			p, err := dialFromMac(addr + ":8080")
			if err != nil {
				t.Errorf("Mac → %s: %v", addr, err)
			} else if p != macPeer {
				t.Errorf("Mac → %s: the server saw %s, want the Mac's own %s", addr, p, macPeer)
			}
		}
	})

	t.Run("a container reaches the Mac with its own address", func(t *testing.T) {
		port, peers := listenOnMac(t)
		out, err := labCmd(t, "docker", "run", "-d", "--network", "kind", "--name", "kind-client", echoImage, "serve", ":1")
		if err != nil {
			t.Fatalf("%v %s", err, out)
		}
		labDocker(t, "rm", "-f", "kind-client")
		p := dialFromContainer(t, "kind", macPeer+":"+port, peers)
		if !strings.HasPrefix(p, "172.30.") {
			t.Errorf("the Mac saw %q, want the container's own 172.30.x.y address (no SNAT)", p)
		}
	})

	t.Run("status shows the route and every rule", func(t *testing.T) {
		r := mustMarina(t, "status", "-v")
		for _, want := range []string{"=== Host route ===\n  172.30.0.0/16 → present (via 192.168.64.2)", "=== Guest network ===", "✓ kind network: 172.30.0.0/16 on br-kind"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "✗") {
			t.Errorf("status shows a failing check:\n%s", r.stdout)
		}
	})

	t.Run("up three times gives identical rules", func(t *testing.T) {
		var sets []string
		for i := 0; i < 3; i++ {
			mustMarina(t, "up")
			sets = append(sets, firewall(t))
		}
		if sets[0] != sets[1] || sets[1] != sets[2] {
			t.Errorf("rules differ between runs:\n%s\n---\n%s\n---\n%s", sets[0], sets[1], sets[2])
		}
		if n := strings.Count(sets[2], "-j MARINA-FORWARD"); n != 1 {
			t.Errorf("%d jumps into MARINA-FORWARD", n)
		}
	})

	t.Run("missing rules show in status and up puts them back", func(t *testing.T) {
		inGuest(t, "iptables -F MARINA-FORWARD")
		if _, err := dialFromMac(srvIP + ":8080"); err == nil {
			t.Error("reached the container with marina's rules flushed")
		}
		r := marina(t, "status", "-v")
		if r.code != 1 || !strings.Contains(r.stdout, "✗ Mac → kind network") || !strings.Contains(r.stdout, "=== Host route ===") {
			t.Errorf("status -v with the rules flushed: exit %d, want 1 and the missing rule:\n%s%s", r.code, r.stdout, r.stderr)
		}
		// At a glance: the network's line is ✗ and says what puts it back.
		r = marina(t, "status")
		if r.code != 1 || !regexp.MustCompile(`(?m)^✗ network  .*: `+"`marina up` puts it back$").MatchString(r.stdout) || !strings.Contains(r.stdout, "✓ route    172.30.0.0/16 → present") {
			t.Errorf("status with the rules flushed: exit %d, want 1 and a ✗ network line:\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "install and apply the VM's routing rules") {
			t.Errorf("dry run does not plan the repair:\n%s", r.stdout)
		}
		mustMarina(t, "up")
		if p, err := dialFromMac(srvIP + ":8080"); err != nil || p != macPeer {
			t.Errorf("after up: peer %q, %v", p, err)
		}
	})

	t.Run("the FORWARD policy is DROP after up, and status shows when it is not", func(t *testing.T) {
		if p := forwardPolicy(t); p != "DROP" {
			t.Errorf("FORWARD policy after up: %s", p)
		}
		inGuest(t, "iptables -P FORWARD ACCEPT")
		r := marina(t, "status", "-v")
		if r.code != 1 || !strings.Contains(r.stdout, "✗ the VM forwards nothing it is not told to") {
			t.Errorf("status with FORWARD ACCEPT: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
		}
		mustMarina(t, "up")
		if p := forwardPolicy(t); p != "DROP" {
			t.Errorf("FORWARD policy after up: %s", p)
		}
	})

	t.Run("a Docker restart runs the drop-in and the rules are back", func(t *testing.T) {
		// With forwarding already on, Docker leaves the policy alone: only
		// marina's drop-in can set it back to DROP.
		inGuest(t, "sysctl -q -w net.ipv4.ip_forward=1; iptables -P FORWARD ACCEPT")
		defer func() {
			if p := forwardPolicy(t); p != "DROP" {
				t.Errorf("FORWARD policy after a Docker restart: %s", p)
			}
		}()
		before := marinaRules(t)
		// Docker puts its MASQUERADE rule back above marina's on start;
		// the drop-in, run as systemd runs it, puts marina's first again.
		inGuest(t, "systemctl restart docker")
		if got := marinaRules(t); got != before {
			t.Errorf("rules after a Docker restart:\n%s\nwant:\n%s", got, before)
		}
		first := strings.Split(strings.TrimSpace(inGuest(t, "iptables -t nat -S POSTROUTING")), "\n")[1]
		if first != "-A POSTROUTING -j MARINA-POSTROUTING" {
			t.Errorf("first POSTROUTING rule after the restart: %s", first)
		}
		srvIP = containerIP(t, "kind-srv", "kind")
		addVIP(t, "kind-srv", "172.30.1.200")
		if p, err := dialFromMac("172.30.1.200:8080"); err != nil || p != macPeer {
			t.Errorf("VIP after the restart: peer %q, %v", p, err)
		}
	})

	t.Run("a reboot brings the rules back without marina", func(t *testing.T) {
		before := marinaRules(t)
		mustMarina(t, "down")
		// The lab's shutdown flushes the guest's firewall as a reboot does.
		if out, _ := labCmd(t, "vm", "sh", "-c", "iptables -S | grep -c MARINA || true"); strings.TrimSpace(out) != "0" {
			t.Fatalf("rules survived the shutdown: %s", out)
		}
		if out, err := runEnv(t, []string{"LIMA_HOME=" + filepath.Join(marinaHome(), "lima")}, "limactl", "start", "--tty=false", "marina"); err != nil {
			t.Fatalf("limactl start: %v\n%s", err, out)
		}
		if got := marinaRules(t); got != before {
			t.Errorf("rules after boot:\n%s\nwant:\n%s", got, before)
		}
		// The lab's reboot leaves FORWARD ACCEPT with forwarding on, as a
		// marina VM boots: the boot unit sets DROP.
		if p := forwardPolicy(t); p != "DROP" {
			t.Errorf("FORWARD policy after boot: %s", p)
		}
		for _, unit := range []string{"/etc/systemd/system/marina-network.service", "/etc/systemd/system/docker.service"} {
			out, err := labCmd(t, "vm", "systemd-analyze", "verify", "--man=no", unit)
			if err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
			}
		}
	})

	t.Run("nothing else on the vzNAT network reaches the kind network", func(t *testing.T) {
		mustMarina(t, "up")
		srvIP := containerIP(t, "kind-srv", "kind")
		addVIP(t, "kind-srv", "172.30.1.200")
		dial := intruder(t)
		for _, addr := range []string{srvIP + ":8080", "172.30.1.200:8080"} {
			if err := dial(addr); err == nil {
				t.Errorf("another VM on the vzNAT network reached %s", addr)
			}
			if p, err := dialFromMac(addr); err != nil || p != macPeer {
				t.Errorf("the Mac → %s: peer %q, %v", addr, p, err)
			}
		}
		// Control: with an accept for it, the same VM gets through; so it
		// is marina's rules that keep it out, not the lab.
		inGuest(t, "iptables -I MARINA-FORWARD 1 -s "+intruderIP+" -j ACCEPT")
		err := dial(srvIP + ":8080")
		inGuest(t, "iptables -D MARINA-FORWARD -s "+intruderIP+" -j ACCEPT")
		if err != nil {
			t.Errorf("with an accept rule the other VM still cannot reach %s: %v (the test proves nothing)", srvIP, err)
		}
	})

	// From here marina runs as on a Mac: as the Mac's unprivileged user,
	// with its macOS route code, against the BSD route(8) stand-in at
	// /sbin/route, changing the route through sudo (lab/lab mac-user).
	asMacUser(t)

	t.Run("a route of the kind network marina did not make is left alone", func(t *testing.T) {
		// marina's own route, made by root's marina through ip(8) and
		// recorded: the Mac's code removes it.
		r := mustUserMarina(t, "down", "--remove-route")
		wantSudo(t, r, "down --remove-route", "/sbin/route -n delete -net 172.30.0.0/16 192.168.64.2", rmResolver())
		wantResolver(t, false)
		// A VPN's route of exactly the kind network, through another host.
		if out, err := exec.Command("ip", "route", "replace", "172.30.0.0/16", "via", intruderIP).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "route", "del", "172.30.0.0/16", "via", intruderIP).Run() })
		before := kindRoute(t)
		r = mustUserMarina(t, "up")
		if !strings.Contains(r.stderr, "taken by 172.30.0.0/16 via "+intruderIP) {
			t.Errorf("up does not report the foreign route:\n%s", r.stderr)
		}
		// The way out it names is the Mac's command.
		if hint := "`sudo /sbin/route -n delete -net 172.30.0.0/16 " + intruderIP + "`"; !strings.Contains(r.stderr, hint) {
			t.Errorf("up does not name %s:\n%s", hint, r.stderr)
		}
		// The resolver file is written all the same: lookups wait for the
		// route like any other packet.
		wantSudo(t, r, "up with a foreign route", installResolver())
		wantResolver(t, true)
		if got := kindRoute(t); got != before {
			t.Errorf("up changed the foreign route: %q, was %q", got, before)
		}
		for _, args := range [][]string{{"down", "--remove-route", "--dry-run"}, {"destroy", "--dry-run"}} {
			r := mustUserMarina(t, args...)
			if strings.Contains(r.stdout, "remove the host's route") {
				t.Errorf("%v plans to remove the foreign route:\n%s", args, r.stdout)
			}
			wantSudo(t, r, strings.Join(args, " "))
		}
		r = mustUserMarina(t, "down", "--remove-route")
		wantSudo(t, r, "down --remove-route with a foreign route", rmResolver())
		if got := kindRoute(t); got != before {
			t.Errorf("down --remove-route removed the foreign route: %q", got)
		}
		_ = exec.Command("ip", "route", "del", "172.30.0.0/16", "via", intruderIP).Run()
		r = mustUserMarina(t, "up")
		wantSudo(t, r, "up with no route", "/sbin/route -n add -net 172.30.0.0/16 192.168.64.2", installResolver())
		wantResolver(t, true)
		wantKindRoute(t, "192.168.64.2")
	})

	t.Run("a new lima0 address moves the route and the rules", func(t *testing.T) {
		r := mustUserMarina(t, "up")
		wantSudo(t, r, "a no-op up")
		srvIP := containerIP(t, "kind-srv", "kind") // the reboot may have moved it
		moveLima0(t)
		r = userMarina(t, "status")
		if r.code != 1 || !strings.Contains(r.stdout, "172.30.0.0/16 → wrong gateway (via 192.168.64.2; the VM's lima0 is 192.168.70.2)") {
			t.Errorf("status after the change: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
		}
		wantSudo(t, r, "status")
		r = mustUserMarina(t, "up")
		wantSudo(t, r, "up after lima0 moved", "/sbin/route -n change -net 172.30.0.0/16 192.168.70.2")
		wantKindRoute(t, "192.168.70.2")
		r = mustUserMarina(t, "status")
		if !strings.Contains(r.stdout, "172.30.0.0/16 → present (via 192.168.70.2)") || strings.Contains(r.stdout, "✗") {
			t.Errorf("status after up:\n%s", r.stdout)
		}
		rules := marinaRules(t)
		if strings.Contains(rules, "192.168.64.") || !strings.Contains(rules, "-d 192.168.70.1/32 -o lima0 -j ACCEPT") {
			t.Errorf("rules after the change:\n%s", rules)
		}
		if p, err := dialFromMac(srvIP + ":8080"); err != nil || p != "192.168.70.1" {
			t.Errorf("Mac → container after the change: peer %q, %v", p, err)
		}
	})

	t.Run("down --remove-route and destroy remove the route", func(t *testing.T) {
		// lima0 is back at 192.168.64.2; the route may still go through
		// 192.168.70.2, where the kernel left it.
		var want []string
		if before := kindRoute(t); before != "" {
			gw := strings.Fields(before)[2]
			want = []string{"/sbin/route -n delete -net 172.30.0.0/16 " + gw}
		}
		r := mustUserMarina(t, "down", "--remove-route")
		wantSudo(t, r, "down --remove-route", append(want, rmResolver())...)
		wantResolver(t, false)
		if got := kindRoute(t); got != "" {
			t.Errorf("route after down --remove-route: %s", got)
		}
		r = mustUserMarina(t, "up")
		wantSudo(t, r, "up", "/sbin/route -n add -net 172.30.0.0/16 192.168.64.2", installResolver())
		wantKindRoute(t, "192.168.64.2")
		r = mustUserMarina(t, "destroy", "-y")
		wantSudo(t, r, "destroy", "/sbin/route -n delete -net 172.30.0.0/16 192.168.64.2", rmResolver())
		wantResolver(t, false)
		if got := kindRoute(t); got != "" {
			t.Errorf("route after destroy: %s", got)
		}
	})
}

// asMacUser makes the rest of the test run marina as the lab Mac's user:
// root's marina stops the VM it started first (its processes are not the
// user's to stop), then the home becomes the user's, as a Mac's home is.
// When the test ends, the user's marina destroys what it made and the
// home goes back to root for the tests that follow.
func asMacUser(t *testing.T) {
	t.Helper()
	mustMarina(t, "down")
	uid, gid := macUserIDs(t)
	if uid == 0 {
		t.Fatal("the lab's Mac user is root: the sudo path would not run")
	}
	chownTree(t, home(), uid, gid)
	t.Cleanup(func() {
		userMarina(t, "destroy", "-y")
		chownTree(t, home(), 0, 0)
	})
}

// macUserIDs are the uid and gid of the lab Mac's user, as it sees them.
func macUserIDs(t *testing.T) (int, int) {
	t.Helper()
	var ids []int
	for _, flag := range []string{"-u", "-g"} {
		r := macUser(t, "id", flag)
		n, err := strconv.Atoi(strings.TrimSpace(r.stdout))
		if r.code != 0 || err != nil {
			t.Fatalf("id %s as the Mac's user: %+v", flag, r)
		}
		ids = append(ids, n)
	}
	return ids[0], ids[1]
}

func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		t.Fatalf("chown %s to %d:%d: %v", root, uid, gid, err)
	}
}

// resolverPath is the lab Mac's resolver file for marina's zone (its
// /etc/resolver stand-in, MARINA_RESOLVER_DIR).
func resolverPath() string { return filepath.Join(labRoot(), "mac", "resolver", "demo.internal") }

// installResolver and rmResolver are the sudo commands that write and
// remove it.
func installResolver() string {
	return "/usr/bin/install -m 0644 " + filepath.Join(marinaHome(), "resolver", "demo.internal") + " " + resolverPath()
}
func rmResolver() string { return "/bin/rm -f " + resolverPath() }

// wantResolver checks the resolver file is there (and sends the zone to
// marina-dns) or is gone.
func wantResolver(t *testing.T, present bool) {
	t.Helper()
	b, err := os.ReadFile(resolverPath())
	switch {
	case !present && err == nil:
		t.Errorf("%s is still there:\n%s", resolverPath(), b)
	case present && err != nil:
		t.Errorf("no resolver file: %v", err)
	case present && !strings.HasSuffix(string(b), "\nnameserver 172.30.255.53\n"):
		t.Errorf("%s:\n%s", resolverPath(), b)
	}
}

// sudoLines are the commands marina said it runs through sudo.
func sudoLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "marina runs: sudo "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// wantSudo checks that marina printed exactly these sudo commands, and
// none when nothing on the Mac had to change.
func wantSudo(t *testing.T, r result, what string, want ...string) {
	t.Helper()
	if got := sudoLines(r.stderr); !slices.Equal(got, want) {
		t.Errorf("%s ran through sudo %q, want %q\nstderr:\n%s", what, got, want, r.stderr)
	}
}

// kindRoute is the mac namespace's route of the kind network, as the
// kernel has it ("" for none).
func kindRoute(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "route", "show", "172.30.0.0/16").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route show: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// wantKindRoute checks the kind network's route is the one the BSD route
// stand-in adds (a static route) through gw, and only it.
func wantKindRoute(t *testing.T, gw string) {
	t.Helper()
	if got, want := kindRoute(t), "172.30.0.0/16 via "+gw+" dev bridge100 proto static"; got != want {
		t.Errorf("the kind network's route: %q, want %q", got, want)
	}
}

// forwardPolicy is the guest's FORWARD policy.
func forwardPolicy(t *testing.T) string {
	t.Helper()
	first, _, _ := strings.Cut(strings.TrimSpace(inGuest(t, "iptables -S FORWARD")), "\n")
	return strings.TrimPrefix(first, "-P FORWARD ")
}

// intruderIP is another VM on the Mac's vzNAT network.
const intruderIP = "192.168.64.9"

// intruder plugs another "VM" into the Mac's vzNAT bridge (bridge100):
// network namespace marina-intruder at 192.168.64.9/24 on a port of its
// own, routing the kind network to the VM's lima0 as a neighbour on that
// network could. It returns a dial from there: nil when a TCP connection
// to addr opens.
func intruder(t *testing.T) func(addr string) error {
	t.Helper()
	const ns = "marina-intruder"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", args, err, out)
		}
	}
	_ = exec.Command("ip", "netns", "del", ns).Run()
	run("ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	// The test runs in the Mac's namespace: the new port is created here.
	run("ip", "link", "add", "vmnet9", "type", "veth", "peer", "name", "eth0", "netns", ns)
	run("ip", "link", "set", "vmnet9", "master", "bridge100", "up")
	run("ip", "-n", ns, "addr", "add", intruderIP+"/24", "dev", "eth0")
	run("ip", "-n", ns, "link", "set", "eth0", "up")
	run("ip", "-n", ns, "link", "set", "lo", "up")
	run("ip", "-n", ns, "route", "add", "172.30.0.0/16", "via", vmIP)
	return func(addr string) error {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		out, err := exec.Command("nsenter", "--net=/run/netns/"+ns, "timeout", "3", "bash", "-c", `exec 3<>"/dev/tcp/$0/$1"`, host, port).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w %s", err, out)
		}
		return nil
	}
}

// A kind network marina did not make is reported with the way out, and
// left alone.
func TestKindNetworkConflict(t *testing.T) {
	needLab(t)
	writeConfig(t, "registries:\n  image: "+registryImage()+"\n  mirrors:\n    - name: registry-lab\n      port: 5060\n      remoteURL: https://lab-upstream:5443\n")
	mustMarina(t, "up")
	t.Cleanup(func() { marina(t, "destroy", "-y") })
	importEcho(t)
	// What kind itself creates when it finds no network, with a node on it.
	labDocker(t, "rm", "-f", "registry-lab", "marina-registry", dns.EtcdName, dns.ServerName)
	labDocker(t, "network", "rm", "kind")
	labDocker(t, "network", "create", "-o", "com.docker.network.bridge.enable_ip_masquerade=true", "kind")
	labDocker(t, "run", "-d", "--name", "node", "--network", "kind", echoImage, "serve", ":8080")
	id := labDocker(t, "network", "inspect", "-f", "{{.Id}}", "kind")
	rules := marinaRules(t)

	r := marina(t, "up")
	if r.code == 0 {
		t.Fatal("up accepted a foreign kind network")
	}
	for _, want := range []string{
		`the Docker network "kind" in VM marina is not the one marina needs`,
		"subnet is 172.18.0.0/16, not 172.30.0.0/16",
		`option com.docker.network.bridge.trusted_host_interfaces is "", not "lima0"`,
		"it was not created by marina",
		"marina changed nothing",
		"the 1 container on it is lost",
		"marina shell -- kind delete clusters --all",
		"marina shell -- sh -c 'docker rm -f $(docker ps -aq --filter network=kind) 2>/dev/null; docker network rm kind'",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("error lacks %q:\n%s", want, r.stderr)
		}
	}
	if got := labDocker(t, "network", "inspect", "-f", "{{.Id}}", "kind"); got != id {
		t.Error("the network was replaced")
	}
	if got := marinaRules(t); got != rules {
		t.Errorf("rules changed:\n%s\nwas:\n%s", got, rules)
	}
	// Following the steps gets marina's network back.
	mustMarina(t, "shell", "--", "sh", "-c", "docker rm -f $(docker ps -aq --filter network=kind) 2>/dev/null; docker network rm kind")
	mustMarina(t, "up")
	if got := labDocker(t, "network", "inspect", "-f", "{{(index .IPAM.Config 0).Subnet}}", "kind"); got != "172.30.0.0/16" {
		t.Errorf("kind network after up: %s", got)
	}
}

// moveLima0 gives the VM's lima0 192.168.70.2/24 (the Mac's bridge
// 192.168.70.1), as a new vzNAT lease would: another address in another
// network. The lab's own addresses come back when the test ends.
func moveLima0(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		for _, cmd := range [][]string{
			{"ip", "-n", "marina-vm", "addr", "flush", "dev", "lima0"},
			{"ip", "-n", "marina-vm", "addr", "add", "192.168.64.2/24", "dev", "lima0"},
			{"ip", "-n", "marina-vm", "route", "replace", "default", "via", "192.168.64.1"},
			{"ip", "-n", "marina-mac", "addr", "del", "192.168.70.1/24", "dev", "bridge100"},
		} {
			_ = exec.Command(cmd[0], cmd[1:]...).Run()
		}
	})
	for _, cmd := range [][]string{
		{"ip", "-n", "marina-mac", "addr", "add", "192.168.70.1/24", "dev", "bridge100"},
		{"ip", "-n", "marina-vm", "addr", "flush", "dev", "lima0"},
		{"ip", "-n", "marina-vm", "addr", "add", "192.168.70.2/24", "dev", "lima0"},
		{"ip", "-n", "marina-vm", "route", "replace", "default", "via", "192.168.70.1"},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", cmd, err, out)
		}
	}
}
