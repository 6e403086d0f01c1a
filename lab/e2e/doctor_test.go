package e2e

// marina doctor against the lab: a healthy lab passes every check; then
// one thing at a time is broken, as it breaks on a Mac, and the check that
// covers it fails (or warns) with the right Fix line and exit status, while
// `doctor --fix` repairs what is safe to repair and nothing else. One
// cluster, on the stand-in node image; the real kind, Docker 29, iptables,
// sshd, ip(8) and (as the Mac's user) the BSD route(8) and netstat(1)
// stand-ins.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// doctorReport is marina doctor -o json.
type doctorReport struct {
	Checks []struct {
		Name, Status, Finding, Fix string
	}
	Summary struct {
		OK, Warn, Fail, Skip int
		Line                 string
	}
	Repairs []string
}

func (r doctorReport) check(t *testing.T, name string) (status, finding, fix string) {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c.Status, c.Finding, c.Fix
		}
	}
	t.Fatalf("no check %s in %+v", name, r.Checks)
	return
}

func (r doctorReport) String() string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "[%s] %s: %s\n", c.Status, c.Name, c.Finding)
		if c.Fix != "" {
			fmt.Fprintf(&b, "      Fix: %s\n", c.Fix)
		}
	}
	b.WriteString(r.Summary.Line)
	return b.String()
}

// doctor runs marina doctor -o json (as root, or as the Mac's user) and
// reads its report.
func doctor(t *testing.T, user bool, args ...string) (doctorReport, result) {
	t.Helper()
	argv := append([]string{"doctor", "-o", "json"}, args...)
	var r result
	if user {
		r = userMarina(t, argv...)
	} else {
		r = marina(t, argv...)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor -o json (exit %d) is not JSON: %v\nstdout:\n%s\nstderr:\n%s", r.code, err, r.stdout, r.stderr)
	}
	return rep, r
}

// inotifyOK is what the inotify check must say here: the lab's guest
// shares this machine's kernel, whose limits the lab does not change.
func inotifyOK(t *testing.T) string {
	t.Helper()
	var v [2]int
	for i, f := range []string{"max_user_watches", "max_user_instances"} {
		b, err := os.ReadFile("/proc/sys/fs/inotify/" + f)
		if err != nil {
			t.Fatal(err)
		}
		v[i], _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if v[0] >= 524288 && v[1] >= 512 {
		return "ok"
	}
	return "warn"
}

// wantDoctor checks the report: the checks named in want have that status
// (and a Fix line when not OK), every other one is OK (inotify: as this
// machine's limits say), and the exit status follows the failures.
func wantDoctor(t *testing.T, rep doctorReport, r result, want map[string]string) {
	t.Helper()
	inotify := inotifyOK(t)
	failed := false
	seen := map[string]bool{}
	for _, c := range rep.Checks {
		seen[c.Name] = true
		w, ok := want[c.Name]
		switch {
		case ok:
		case c.Name == "inotify":
			w = inotify
		default:
			w = "ok"
		}
		if c.Status != w {
			t.Errorf("%s is %s, want %s: %s (fix: %s)", c.Name, c.Status, w, c.Finding, c.Fix)
		}
		if (c.Status == "warn" || c.Status == "fail") && c.Fix == "" {
			t.Errorf("%s is %s without a Fix line", c.Name, c.Status)
		}
		failed = failed || c.Status == "fail"
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("no check %s in the report:\n%s", n, rep)
		}
	}
	if wantCode := map[bool]int{false: 0, true: 1}[failed]; r.code != wantCode {
		t.Errorf("exit %d, want %d\n%s\nstderr:\n%s", r.code, wantCode, rep, r.stderr)
	}
	if t.Failed() {
		t.Logf("report:\n%s", rep)
	}
}

// healthy checks that doctor finds nothing wrong.
func healthy(t *testing.T, user bool) doctorReport {
	t.Helper()
	rep, r := doctor(t, user)
	wantDoctor(t, rep, r, nil)
	return rep
}

// fixed runs doctor --fix, which must report repairs and end healthy,
// and then a plain doctor, which must find nothing to repair.
func fixed(t *testing.T, user bool, repairs ...string) result {
	t.Helper()
	rep, r := doctor(t, user, "--fix")
	wantDoctor(t, rep, r, nil)
	for _, want := range repairs {
		found := false
		for _, got := range rep.Repairs {
			found = found || strings.Contains(got, want)
		}
		if !found {
			t.Errorf("--fix did not report the repair %q: %q", want, rep.Repairs)
		}
	}
	for _, got := range rep.Repairs {
		if strings.Contains(got, "failed") {
			t.Errorf("a repair failed: %s", got)
		}
	}
	if len(rep.Repairs) != len(repairs) {
		t.Errorf("--fix made %q, want only %q", rep.Repairs, repairs)
	}
	healthy(t, user)
	return r
}

func TestDoctor(t *testing.T) {
	needLab(t)
	t.Cleanup(func() { destroyAll(t) })
	writeConfig(t, "registries:\n  mirrors: []\n")
	mustMarina(t, "up")
	password := "pw-doctor"
	startUpstream(t, password)
	writeConfig(t, fmt.Sprintf(`kind:
  nodeVersion: v1.36.4
  nodeImages:
    v1.36.4: %s
registries:
  image: %s
  mirrors:
    - name: registry-lab
      port: 5060
      remoteURL: https://%s
      username: %s
      password: %q
`, nodeImage(t), registryImage(), upstreamHost, labUser, password))
	mustMarina(t, "up")

	t.Run("a healthy lab: every check OK in one guest round trip", func(t *testing.T) {
		rep, r := doctor(t, false, "--debug")
		wantDoctor(t, rep, r, nil)
		if n := tripCount(t, r.stderr); n != 1 {
			t.Errorf("doctor made %d guest round trips, want 1", n)
		}
		if _, f, _ := rep.check(t, "mirror registry-lab"); !strings.Contains(f, "its upstream lab-upstream:5443 answers from its container") {
			t.Errorf("mirror: %s", f)
		}
		if _, f, _ := rep.check(t, "route"); !strings.Contains(f, "172.30.0.0/16 → present (via 192.168.64.2); no other route inside it") {
			t.Errorf("route: %s", f)
		}
		// The text form: one line per check, the summary, exit 0.
		r = mustMarina(t, "doctor")
		for _, want := range []string{"[OK]   config", "[OK]   firewall", "[OK]   mirror registry-lab", rep.Summary.Line + "\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("text lacks %q:\n%s", want, r.stdout)
			}
		}
	})

	t.Run("-o json lists every check", func(t *testing.T) {
		rep, _ := doctor(t, false)
		var names []string
		for _, c := range rep.Checks {
			names = append(names, c.Name)
		}
		want := "config limactl vm guest docker kind-network forwarding firewall boot route dns pod-routing mirror registry-lab push registry clusters inotify disk rosetta-host rosetta-vm local-network"
		if got := strings.Join(names, " "); got != want {
			t.Errorf("checks: %s\nwant:   %s", got, want)
		}
		if rep.Summary.OK+rep.Summary.Warn+rep.Summary.Fail+rep.Summary.Skip != len(rep.Checks) {
			t.Errorf("summary %+v for %d checks", rep.Summary, len(rep.Checks))
		}
	})

	t.Run("Docker stopped in the VM", func(t *testing.T) {
		inGuest(t, "systemctl stop docker")
		rep, r := doctor(t, false)
		wantDoctor(t, rep, r, map[string]string{"docker": "fail", "kind-network": "skip", "dns": "skip", "mirrors": "skip", "clusters": "skip"})
		if _, f, fix := rep.check(t, "docker"); f != "Docker is not running in the VM (docker.service is inactive)" || fix != "marina shell -- sudo systemctl start docker" {
			t.Errorf("docker: %s / %s", f, fix)
		}
		// The fix it names; the drop-in puts marina's rules back.
		mustMarina(t, "shell", "--", "sudo", "systemctl", "start", "docker")
		labDocker(t, "start", "lab-upstream") // no restart policy: the test's own
		waitFor(t, time.Minute, "the mirror and the DNS to run again", func() bool {
			out, _ := labCmd(t, "docker", "ps", "--filter", "status=running", "--format", "{{.Names}}")
			return strings.Contains(out, "registry-lab") && strings.Contains(out, "marina-dns\n") && strings.Contains(out, "marina-dns-etcd")
		})
		// Docker brings its containers back one by one after a start:
		// give the lab a moment to settle before the one healthy report.
		waitFor(t, 30*time.Second, "doctor to find the lab healthy again", func() bool {
			_, r := doctor(t, false)
			return r.code == 0
		})
		healthy(t, false)
	})

	t.Run("a mirror stopped, then its upstream gone", func(t *testing.T) {
		labDocker(t, "stop", "registry-lab")
		rep, r := doctor(t, false)
		wantDoctor(t, rep, r, map[string]string{"mirror registry-lab": "fail"})
		if _, f, fix := rep.check(t, "mirror registry-lab"); f != "its container registry-lab is exited" || fix != "marina up (starts it again)" {
			t.Errorf("stopped mirror: %s / %s", f, fix)
		}
		mustMarina(t, "up")
		healthy(t, false)

		// An upstream that does not answer is no failure: the mirror
		// serves its cache, and up says so once.
		labDocker(t, "stop", "lab-upstream")
		rep, r = doctor(t, false)
		wantDoctor(t, rep, r, map[string]string{"mirror registry-lab": "warn"})
		if _, f, fix := rep.check(t, "mirror registry-lab"); !strings.Contains(f, "serving from its cache: its upstream lab-upstream:5443 does not answer from its container") || !strings.Contains(fix, "getent hosts lab-upstream") {
			t.Errorf("upstream gone: %s / %s", f, fix)
		}
		up := mustMarina(t, "up")
		if got := up.stdout + up.stderr; strings.Count(got, "from the VM (lab-upstream:5443") != 1 || !strings.Contains(got, "images not in them cannot be pulled") {
			t.Errorf("up with the upstream gone said:\n%s", got)
		}
		labDocker(t, "start", "lab-upstream")
		waitFor(t, 30*time.Second, "lab-upstream", func() bool {
			rep, _ := doctor(t, false)
			s, _, _ := rep.check(t, "mirror registry-lab")
			return s == "ok"
		})
	})

	t.Run("the disk fills up", func(t *testing.T) {
		// A small file system over /var/lib/docker in the guest's mount
		// namespace for the while: dockerd keeps its open files on the
		// one below.
		inGuest(t, "mount -t tmpfs -o size=64m marina-doctor-disk /var/lib/docker")
		t.Cleanup(func() { _, _ = labCmd(t, "vm", "umount", "/var/lib/docker") })
		inGuest(t, "fallocate -l 59M /var/lib/docker/fill")
		rep, r := doctor(t, false)
		wantDoctor(t, rep, r, map[string]string{"disk": "warn"})
		if _, f, fix := rep.check(t, "disk"); !strings.Contains(f, "% free on /var/lib/docker") || !strings.Contains(f, "under 10%") || !strings.Contains(fix, "docker image prune -a") {
			t.Errorf("disk over 90%%: %s / %s", f, fix)
		}
		inGuest(t, "fallocate -l 63M /var/lib/docker/fill")
		rep, r = doctor(t, false)
		wantDoctor(t, rep, r, map[string]string{"disk": "fail"})
		if _, f, _ := rep.check(t, "disk"); !strings.Contains(f, "under 2%") {
			t.Errorf("disk over 98%%: %s", f)
		}
		inGuest(t, "umount /var/lib/docker")
		healthy(t, false)
	})

	t.Run("the VM's routing breaks one part at a time; --fix repairs it", func(t *testing.T) {
		for _, c := range []struct {
			name, breakIt, check, finding string
		}{
			{"marina's chains flushed", "iptables -F MARINA-FORWARD && iptables -t nat -F MARINA-POSTROUTING", "firewall", "6 of marina's firewall checks fail"},
			{"a jump gone", "iptables -D DOCKER-USER -j MARINA-FORWARD", "firewall", "jump into marina's rules (-t filter -A DOCKER-USER -j MARINA-FORWARD"},
			{"forwarding off", "sysctl -q -w net.ipv4.ip_forward=0", "forwarding", "the VM does not forward IPv4"},
			{"the Docker drop-in gone", "rm /etc/systemd/system/docker.service.d/marina-network.conf", "boot", "installed /etc/systemd/system/docker.service.d/marina-network.conf"},
		} {
			t.Run(c.name, func(t *testing.T) {
				inGuest(t, c.breakIt)
				rep, r := doctor(t, false)
				want := map[string]string{c.check: "fail"}
				if c.check != "boot" {
					// The lookup goes through the VM: it waits for the fix.
					want["dns"] = "skip"
				}
				wantDoctor(t, rep, r, want)
				if _, f, fix := rep.check(t, c.check); !strings.Contains(f, c.finding) || !strings.HasPrefix(fix, "marina doctor --fix") {
					t.Errorf("%s: %s / %s", c.check, f, fix)
				}
				fixed(t, false, "install and run the VM's network script")
			})
		}
	})

	t.Run("--fix --dry-run names the repairs and changes nothing", func(t *testing.T) {
		inGuest(t, "iptables -F MARINA-FORWARD")
		before := marinaRules(t)
		rep, r := doctor(t, false, "--fix", "--dry-run")
		wantDoctor(t, rep, r, map[string]string{"firewall": "fail", "dns": "skip"})
		if len(rep.Repairs) != 1 || !strings.Contains(rep.Repairs[0], "install and run the VM's network script") {
			t.Errorf("repairs: %q", rep.Repairs)
		}
		if after := marinaRules(t); after != before {
			t.Errorf("a dry run changed the rules:\n%s\nwas:\n%s", after, before)
		}
		r = marina(t, "doctor", "--fix", "--dry-run")
		if r.code != 1 || !strings.Contains(r.stdout, "Repairs --fix would make (--dry-run, nothing was changed):\n  - install and run the VM's network script") {
			t.Errorf("text dry run: exit %d\n%s", r.code, r.stdout)
		}
		// The text form of --fix: the report, the repairs, the report again.
		r = mustMarina(t, "doctor", "--fix")
		for _, want := range []string{"[FAIL] firewall", "Repairing (--fix):\n  - install and run the VM's network script", "Checking again:\n", "[OK]   firewall"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("--fix text lacks %q:\n%s", want, r.stdout)
			}
		}
		healthy(t, false)
	})

	seedMetalLB(t)
	ctl := startControllers(t)
	ctl.add("dev", 7001)
	mustMarina(t, "cluster", "create", "dev")

	t.Run("a cluster: API, certificate, kubeconfig and MetalLB pool", func(t *testing.T) {
		rep := healthy(t, false)
		if _, f, _ := rep.check(t, "cluster dev"); !strings.Contains(f, "answers at https://"+vmIP+":7001, its certificate verified; MetalLB pool marina: 172.30.1.1-172.30.1.7, 172.30.1.16-172.30.1.254") {
			t.Errorf("cluster dev: %s", f)
		}
	})

	kcPath := filepath.Join(home(), ".kube", "marina", "dev.kubeconfig")
	t.Run("a kubeconfig naming an old address", func(t *testing.T) {
		b, err := os.ReadFile(kcPath)
		if err != nil {
			t.Fatal(err)
		}
		old := strings.Replace(string(b), "server: https://"+vmIP+":7001", "server: https://192.168.64.99:7001", 1)
		if old == string(b) {
			t.Fatalf("no server line in:\n%s", b)
		}
		if err := os.WriteFile(kcPath, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		rep, r := doctor(t, false)
		wantDoctor(t, rep, r, map[string]string{"cluster dev": "fail"})
		if _, f, fix := rep.check(t, "cluster dev"); !strings.Contains(f, "names https://192.168.64.99:7001, but the cluster's API server is at https://"+vmIP+":7001") || !strings.Contains(fix, "marina kubeconfig merge dev") {
			t.Errorf("stale kubeconfig: %s / %s", f, fix)
		}
		fixed(t, false, "export the kubeconfigs of dev again")
	})

	t.Run("MetalLB's pool gone", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kcPath)
		if err != nil {
			t.Fatal(err)
		}
		pools := dynamic.NewForConfigOrDie(cfg).Resource(poolGVR).Namespace("metallb-system")
		ctx := context.Background()
		pool, err := pools.Get(ctx, "marina", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pools.Delete(ctx, "marina", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rep, r := doctor(t, false, "--fix")
		wantDoctor(t, rep, r, map[string]string{"cluster dev": "fail"})
		if _, f, fix := rep.check(t, "cluster dev"); !strings.Contains(f, "MetalLB has no IPAddressPool marina") || !strings.Contains(fix, "marina cluster delete dev && marina cluster create dev") {
			t.Errorf("no pool: %s / %s", f, fix)
		}
		if len(rep.Repairs) != 0 {
			t.Errorf("--fix made %q for a missing pool", rep.Repairs)
		}
		pool.SetResourceVersion("")
		pool.SetUID("")
		pool.SetManagedFields(nil)
		pool.SetCreationTimestamp(metav1.Time{})
		if _, err := pools.Create(ctx, pool, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		healthy(t, false)
	})

	t.Run("the host route removed", func(t *testing.T) {
		if out, err := exec.Command("ip", "route", "del", "172.30.0.0/16").CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		rep, r := doctor(t, false)
		wantDoctor(t, rep, r, map[string]string{"route": "fail", "dns": "skip"})
		if _, f, fix := rep.check(t, "route"); !strings.Contains(f, "172.30.0.0/16 → missing") || fix != "marina doctor --fix (runs: sudo ip route replace 172.30.0.0/16 via "+vmIP+")" {
			t.Errorf("no route: %s / %s", f, fix)
		}
		fixed(t, false, "route 172.30.0.0/16 to the VM: sudo ip route replace 172.30.0.0/16 via "+vmIP)
		if got := kindRoute(t); !strings.HasPrefix(got, "172.30.0.0/16 via "+vmIP+" dev bridge100") {
			t.Errorf("the route after --fix: %q", got)
		}
	})

	t.Run("a route inside the kind network via another interface", func(t *testing.T) {
		vpn := vpnRoute(t)
		rep, r := doctor(t, false, "--fix")
		wantDoctor(t, rep, r, map[string]string{"route": "fail"})
		if _, f, fix := rep.check(t, "route"); !strings.Contains(f, "172.30.0.0/16 → present (via "+vmIP+"), but 172.30.1.0/24 on vpn0 take part of it") || !strings.Contains(fix, "sudo ip route del 172.30.1.0/24") {
			t.Errorf("shadowed: %s / %s", f, fix)
		}
		if len(rep.Repairs) != 0 {
			t.Errorf("--fix made %q for a route marina did not make", rep.Repairs)
		}
		if out, _ := exec.Command("ip", "route", "show", "172.30.1.0/24").Output(); !strings.Contains(string(out), "dev vpn0") {
			t.Errorf("--fix touched the other route: %q", out)
		}
		vpn()
		healthy(t, false)
	})

	t.Run("lima0 moves: route, rules and kubeconfig follow with --fix", func(t *testing.T) {
		// Cleanups run last first: the addresses come back, then up.
		t.Cleanup(func() { marina(t, "up") })
		moveLima0(t)
		rep, r := doctor(t, false)
		// The rules and the script that installs them name the Mac's old
		// address.
		wantDoctor(t, rep, r, map[string]string{"route": "fail", "firewall": "fail", "boot": "fail", "cluster dev": "fail", "dns": "skip"})
		if _, f, _ := rep.check(t, "route"); !strings.Contains(f, "wrong gateway (via "+vmIP+"; the VM's lima0 is 192.168.70.2)") {
			t.Errorf("route: %s", f)
		}
		if _, f, _ := rep.check(t, "cluster dev"); !strings.Contains(f, "but the cluster's API server is at https://192.168.70.2:7001") {
			t.Errorf("cluster: %s", f)
		}
		fixed(t, false, "install and run the VM's network script", "route 172.30.0.0/16 to the VM: sudo ip route replace 172.30.0.0/16 via 192.168.70.2", "export the kubeconfigs of dev again")
	})

	t.Run("as the Mac's user, with the macOS route and netstat code", func(t *testing.T) {
		mustMarina(t, "cluster", "delete", "dev")
		asMacUser(t)
		mustUserMarina(t, "up")
		labDocker(t, "start", "lab-upstream")
		waitFor(t, 30*time.Second, "the lab as the Mac's user", func() bool {
			rep, _ := doctor(t, true)
			s, _, _ := rep.check(t, "mirror registry-lab")
			return s == "ok"
		})
		healthy(t, true)

		vpn := vpnRoute(t)
		rep, r := doctor(t, true)
		wantDoctor(t, rep, r, map[string]string{"route": "fail"})
		if _, f, fix := rep.check(t, "route"); !strings.Contains(f, "but 172.30.1.0/24 on vpn0 take part of it") || !strings.Contains(fix, "sudo /sbin/route -n delete -net 172.30.1.0/24") {
			t.Errorf("shadowed, read by netstat: %s / %s", f, fix)
		}
		vpn()

		if out, err := exec.Command("ip", "route", "del", "172.30.0.0/16").CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		rep, r = doctor(t, true)
		wantDoctor(t, rep, r, map[string]string{"route": "fail", "dns": "skip"})
		add := "/sbin/route -n add -net 172.30.0.0/16 " + vmIP
		if _, _, fix := rep.check(t, "route"); fix != "marina doctor --fix (runs: sudo "+add+")" {
			t.Errorf("no route: %s", fix)
		}
		r = fixed(t, true, "route 172.30.0.0/16 to the VM: sudo "+add)
		wantSudo(t, r, "doctor --fix", add)
		wantKindRoute(t, vmIP)
	})
}

// vpnRoute routes 172.30.1.0/24, inside the kind network, through another
// interface of the Mac, as a VPN would; it returns what removes it.
func vpnRoute(t *testing.T) func() {
	t.Helper()
	undo := func() { _ = exec.Command("ip", "link", "del", "vpn0").Run() }
	undo()
	// A veth pair, both ends here: the lab's kernel has no dummy links.
	for _, cmd := range [][]string{
		{"ip", "link", "add", "vpn0", "type", "veth", "peer", "name", "vpn0peer"},
		{"ip", "addr", "add", "10.99.0.1/24", "dev", "vpn0"},
		{"ip", "link", "set", "vpn0peer", "up"},
		{"ip", "link", "set", "vpn0", "up"},
		{"ip", "route", "add", "172.30.1.0/24", "dev", "vpn0"},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			undo()
			t.Fatalf("%v: %v %s", cmd, err, out)
		}
	}
	t.Cleanup(undo)
	return undo
}
