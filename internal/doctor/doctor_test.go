package doctor

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"

	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
)

func doctorRun(f *sessiontest.World, opts Options) Report {
	f.T.Helper()
	r, err := Run(context.Background(), f.Env, opts)
	if err != nil {
		f.T.Fatalf("doctor: %v\n%s", err, f.Stderr.String())
	}
	return r
}

// findCheck is the report's check called name (the test ends without one).
func findCheck(t *testing.T, r Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s in:\n%s", name, reportText(r))
	return Check{}
}

func reportText(r Report) string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "[%s] %s: %s\n", c.Status, c.Name, c.Finding)
		if c.Fix != "" {
			fmt.Fprintf(&b, "    Fix: %s\n", c.Fix)
		}
	}
	b.WriteString(r.Summary.Line)
	return b.String()
}

// statuses is "name=status" for every check, in order.
func statuses(r Report) string {
	var out []string
	for _, c := range r.Checks {
		out = append(out, c.Name+"="+string(c.Status))
	}
	return strings.Join(out, " ")
}

// notOK checks that exactly the checks want names ("name=status") are
// not OK, that each that warns or fails has a Fix line, and returns them.
func notOK(t *testing.T, r Report, want ...string) []Check {
	t.Helper()
	var got []string
	var out []Check
	for _, c := range r.Checks {
		if c.Status != OK {
			got = append(got, c.Name+"="+string(c.Status))
			out = append(out, c)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("not OK: %v, want %v\n%s", got, want, reportText(r))
	}
	for _, c := range out {
		if c.Fix == "" && c.Status != Skip {
			t.Errorf("%s is %s without a Fix line", c.Name, c.Status)
		}
	}
	return out
}

// The healthy lab: every check OK, in the documented order, in one guest
// round trip, and nothing changed.
func TestDoctorHealthyLab(t *testing.T) {
	f := sessiontest.Healthy(t)
	r := doctorRun(f, Options{})
	want := "config=ok limactl=ok vm=ok guest=ok docker=ok kind-network=ok forwarding=ok firewall=ok boot=ok route=ok dns=ok pod-routing=ok " +
		"mirror registry-dockerio=ok mirror registry-quayio=ok mirror registry-gcrio=ok mirror registry-us-docker-pkgdev=ok mirror registry-us-central1-docker-pkgdev=ok push registry=ok " +
		"cluster dev=ok inotify=ok disk=ok rosetta-host=ok rosetta-vm=ok local-network=ok"
	if got := statuses(r); got != want {
		t.Errorf("checks:\n%s\nwant:\n%s\n%s", got, want, reportText(r))
	}
	if r.Failed() || r.Summary.Line != "24 OK" || r.Summary.OK != 24 {
		t.Errorf("summary %+v", r.Summary)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("%d guest round trips, want 1: %v", len(got), got)
	}
	if got := append(append(f.Called("host.privileged"), f.Called("docker.run")...), f.Called("guest.run")...); len(got) != 0 {
		t.Errorf("doctor changed: %v", got)
	}
	// The probes asked for are the configured mirrors' upstreams.
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, "mirror ") && !strings.Contains(c.Finding, "answers from its container") {
			t.Errorf("%s: %s", c.Name, c.Finding)
		}
	}
	if c := findCheck(t, r, "route"); !strings.Contains(c.Finding, "172.30.0.0/16 → present (via 192.168.64.3)") {
		t.Errorf("route: %s", c.Finding)
	}
}

// -o json is the same report as data: every check, each with its four
// fields, and the summary; a stopped VM's checks are all listed too.
func TestDoctorJSONListsEveryCheck(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		f := sessiontest.Healthy(t)
		if stopped {
			f.Instance.Status = vm.StatusStopped
		}
		r := doctorRun(f, Options{})
		var b bytes.Buffer
		if err := ui.Render(&b, "json", r); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Checks  []map[string]any `json:"checks"`
			Summary map[string]any   `json:"summary"`
		}
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, b.String())
		}
		if len(got.Checks) != len(r.Checks) || len(got.Checks) < 18 {
			t.Fatalf("stopped=%v: %d checks in JSON, %d in the report", stopped, len(got.Checks), len(r.Checks))
		}
		for i, c := range got.Checks {
			for _, k := range []string{"name", "status", "finding", "fix"} {
				if _, ok := c[k]; !ok {
					t.Errorf("check %d lacks %q: %v", i, k, c)
				}
			}
			if c["name"] != r.Checks[i].Name || !slices.Contains([]any{"ok", "warn", "fail", "skip"}, c["status"]) {
				t.Errorf("check %d: %v", i, c)
			}
		}
		if got.Summary["line"] != r.Summary.Line || got.Summary["fail"] != float64(r.Summary.Fail) {
			t.Errorf("summary %v, want %+v", got.Summary, r.Summary)
		}
	}
}

// A VM that is not running fails its check with up's advice; every check
// that needs it is listed as skipped, saying why, and costs no round trip.
func TestDoctorVMNotRunning(t *testing.T) {
	for _, c := range []struct {
		status, finding, fix string
	}{
		{"", "VM marina does not exist", "marina up"},
		{vm.StatusStopped, "VM marina is stopped", "marina up"},
		{vm.StatusBroken, "Lima reports VM marina as Broken (disk missing)", "marina destroy && marina up"},
		{"Starting", `VM marina is "Starting"`, "wait for Lima to finish with it, then: marina up"},
	} {
		f := sessiontest.Healthy(t)
		if c.status == "" {
			f.Instance = nil
		} else {
			f.Instance.Status, f.Instance.Errors = c.status, []string{"disk missing"}
		}
		r := doctorRun(f, Options{})
		v := findCheck(t, r, "vm")
		if v.Status != Fail || !strings.Contains(v.Finding, c.finding) || v.Fix != c.fix {
			t.Errorf("%q: %+v", c.status, v)
		}
		if !r.Failed() {
			t.Errorf("%q: not failed", c.status)
		}
		for _, n := range []string{"guest", "docker", "firewall", "route", "dns", "mirrors", "clusters", "disk", "rosetta-vm", "local-network"} {
			if s := findCheck(t, r, n); s.Status != Skip || !strings.Contains(s.Finding, "VM marina is not running") {
				t.Errorf("%q: %s: %+v", c.status, n, s)
			}
		}
		if r.Summary.Fail != 1 || !strings.Contains(r.Summary.Line, "1 failed") || !strings.Contains(r.Summary.Line, "skipped") {
			t.Errorf("%q: summary %+v", c.status, r.Summary)
		}
		if got := f.Called("guest."); len(got) != 0 {
			t.Errorf("%q: guest calls %v", c.status, got)
		}
	}
}

func TestDoctorLimactl(t *testing.T) {
	f := sessiontest.Healthy(t)
	f.Env.Deps.VM = func() (session.VM, error) {
		return nil, errors.New("limactl was not found on your PATH: marina runs its VM with Lima; install Lima 2.x: `brew install lima`")
	}
	r := doctorRun(f, Options{})
	if c := findCheck(t, r, "limactl"); c.Status != Fail || c.Fix != "brew install lima" || !strings.Contains(c.Finding, "not found") {
		t.Errorf("no limactl: %+v", c)
	}
	if c := findCheck(t, r, "vm"); c.Status != Skip || !strings.Contains(c.Finding, "limactl") {
		t.Errorf("vm without limactl: %+v", c)
	}
	f = sessiontest.Healthy(t)
	f.Fail["vm.version"] = errors.New("Lima 1.2.0 is too old: marina needs Lima 2.0 or later; upgrade it: `brew upgrade lima`")
	r = doctorRun(f, Options{})
	if c := findCheck(t, r, "limactl"); c.Status != Fail || c.Fix != "brew upgrade lima" || !strings.Contains(c.Finding, "1.2.0 is too old") {
		t.Errorf("old limactl: %+v", c)
	}
}

func TestDoctorConfig(t *testing.T) {
	// No file: the defaults, and a warning; the rest is checked.
	f := sessiontest.Healthy(t)
	if err := os.Remove(f.Env.Paths.Config); err != nil {
		t.Fatal(err)
	}
	r := doctorRun(f, Options{})
	notOK(t, r, "config=warn")
	if c := findCheck(t, r, "config"); !strings.Contains(c.Finding, "checking against the defaults") || c.Fix != "marina up (writes the default config)" {
		t.Errorf("no config: %+v", c)
	}
	if r.Failed() {
		t.Error("a missing config alone failed doctor")
	}
	// vm.name readable, the rest not: what needs the config is skipped.
	f = sessiontest.Healthy(t)
	if err := os.WriteFile(f.Env.Paths.Config, []byte("vm:\n  name: marina\nnetwork:\n  cidr: 172.30.0.0/33\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = doctorRun(f, Options{})
	if c := findCheck(t, r, "config"); c.Status != Fail || c.Fix != "marina config edit" || !strings.Contains(c.Finding, "network.cidr") {
		t.Errorf("bad config: %+v", c)
	}
	for _, n := range []string{"kind-network", "forwarding", "firewall", "boot", "route", "dns", "mirrors"} {
		if c := findCheck(t, r, n); c.Status != Skip || !strings.Contains(c.Finding, "config") {
			t.Errorf("%s with a bad config: %+v", n, c)
		}
	}
	if c := findCheck(t, r, "vm"); c.Status != OK {
		t.Errorf("the VM is still checked: %+v", c)
	}
}

// A guest that does not answer is not Docker's failure: Docker, asked
// once and answering a moment after the guest failed, is reported as it
// answered (observe stops only a wait for Docker, not its one question).
func TestDoctorDockerAnswersWhileTheGuestFails(t *testing.T) {
	f := sessiontest.Healthy(t)
	f.Fail["guest.observe"] = &vm.SSHError{Name: "observe the VM", Stderr: "Permission denied (publickey)."}
	f.Before = func(call string) {
		if call == "docker.version" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	r := doctorRun(f, Options{})
	if c := findCheck(t, r, "docker"); c.Status == Fail || strings.Contains(c.Finding, "context canceled") {
		t.Errorf("docker, which answered: %+v", c)
	}
}

func TestDoctorGuestChannel(t *testing.T) {
	f := sessiontest.Healthy(t)
	f.Fail["guest.observe"] = errors.New("observe the VM: cannot reach the VM over ssh (is it running? try `marina up`):\nConnection refused")
	r := doctorRun(f, Options{})
	if c := findCheck(t, r, "guest"); c.Status != Fail || !strings.Contains(c.Finding, "cannot reach the VM over ssh") || c.Fix != "marina down && marina up" {
		t.Errorf("guest: %+v", c)
	}
	for _, n := range []string{"forwarding", "firewall", "boot", "route", "cluster", "inotify", "disk", "rosetta-vm"} {
		name := n
		if n == "cluster" {
			name = "clusters"
		}
		if c := findCheck(t, r, name); c.Status != Skip || !strings.Contains(c.Finding, "the guest does not answer") {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if c := findCheck(t, r, "docker"); c.Status != OK {
		t.Errorf("docker is judged on its own: %+v", c)
	}
}

func TestDoctorDocker(t *testing.T) {
	for _, active := range []string{"inactive", "active"} {
		f := sessiontest.Healthy(t)
		f.Fail["docker.version"] = errors.New("error during connect: EOF")
		f.Doctor.Net = func(st *guest.NetState) { st.Forwarding = false }
		f.Doctor.Health = &guest.Health{Docker: active, InotifyWatches: 524288, InotifyInstances: 512, Disk: guest.Disk{Known: true, Used: 1, Avail: 9}}
		r := doctorRun(f, Options{})
		c := findCheck(t, r, "docker")
		switch active {
		case "inactive":
			if c.Status != Fail || c.Finding != "Docker is not running in the VM (docker.service is inactive)" || c.Fix != "marina shell -- sudo systemctl start docker" {
				t.Errorf("docker stopped: %+v", c)
			}
		default:
			if c.Status != Fail || !strings.Contains(c.Finding, "does not answer on unix://") || !strings.Contains(c.Finding, "EOF") || !strings.HasPrefix(c.Fix, "marina down && marina up") {
				t.Errorf("socket gone: %+v", c)
			}
		}
		for _, n := range []string{"kind-network", "dns", "mirrors", "clusters"} {
			if s := findCheck(t, r, n); s.Status != Skip || !strings.Contains(s.Finding, "Docker does not answer") {
				t.Errorf("%s: %+v", n, s)
			}
		}
		// The rules cannot be re-applied without Docker's chain: no repair,
		// and the fix says what comes first.
		if s := findCheck(t, r, "forwarding"); s.Status != Fail || s.repair != repairNone || s.Fix != "start Docker first (see docker), then: marina doctor --fix" {
			t.Errorf("forwarding with Docker down: %+v", s)
		}
	}
}

func TestDoctorKindNetwork(t *testing.T) {
	f := sessiontest.Healthy(t)
	f.Network = nil
	r := doctorRun(f, Options{})
	if c := findCheck(t, r, "kind-network"); c.Status != Fail || c.Fix != "marina up" || c.Finding != "there is no Docker network kind" {
		t.Errorf("no network: %+v", c)
	}
	// The rules hang on the network's bridge: up makes both.
	f = sessiontest.Healthy(t)
	f.Network = nil
	f.Doctor.Net = func(st *guest.NetState) { delete(st.Chains, "filter MARINA-FORWARD") }
	r = doctorRun(f, Options{})
	if c := findCheck(t, r, "firewall"); c.Status != Fail || c.repair != repairNone || !strings.HasPrefix(c.Fix, "marina up") {
		t.Errorf("rules without the network: %+v", c)
	}
	f = sessiontest.Healthy(t)
	f.Network.Options = maps.Clone(f.Network.Options)
	delete(f.Network.Options, "com.docker.network.bridge.trusted_host_interfaces")
	f.Network.Managed = false
	r = doctorRun(f, Options{})
	c := findCheck(t, r, "kind-network")
	if c.Status != Fail || !strings.Contains(c.Finding, "trusted_host_interfaces") || !strings.Contains(c.Finding, "not made by marina") || !strings.Contains(c.Fix, "recreate") {
		t.Errorf("foreign network: %+v", c)
	}
}

// Each break of the guest's routing fails its own check, with the repair
// --fix makes for it, and nothing else.
func TestDoctorGuestRouting(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*guest.NetState)
		check  string
		says   string
	}{
		{"forwarding off", func(st *guest.NetState) { st.Forwarding = false }, "forwarding", "the VM does not forward IPv4: IPv4 forwarding (net.ipv4.ip_forward)"},
		{"chains flushed", func(st *guest.NetState) {
			delete(st.Chains, "filter MARINA-FORWARD")
			delete(st.Chains, "nat MARINA-POSTROUTING")
		}, "firewall", "6 of marina's firewall checks fail"},
		{"jump not first", func(st *guest.NetState) {
			st.Chains["filter DOCKER-USER"] = append([]string{"-A DOCKER-USER -j RETURN"}, st.Chains["filter DOCKER-USER"]...)
		}, "firewall", "jump into marina's rules (-t filter -A DOCKER-USER -j MARINA-FORWARD"},
		{"a stale rule", func(st *guest.NetState) {
			st.Chains["filter MARINA-FORWARD"] = append(st.Chains["filter MARINA-FORWARD"], "-A MARINA-FORWARD -s 10.0.0.0/8 -j ACCEPT")
		}, "firewall", "stale rule (-t filter -A MARINA-FORWARD -s 10.0.0.0/8 -j ACCEPT)"},
		{"FORWARD accepts", func(st *guest.NetState) { st.Policies["filter FORWARD"] = "ACCEPT" }, "firewall", "-t filter -P FORWARD DROP"},
		{"drop-in missing", func(st *guest.NetState) { st.Sums[guest.DropInPath] = "" }, "boot", "installed " + guest.DropInPath},
		{"unit disabled", func(st *guest.NetState) { st.Enabled = false }, "boot", guest.UnitName + " enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.Healthy(t)
			f.Doctor.Net = c.change
			r := doctorRun(f, Options{})
			want := []string{c.check + "=fail"}
			if c.check != "boot" {
				// What goes from this host through the VM waits for it.
				want = append(want, "dns=skip", "cluster dev=skip")
			}
			got := notOK(t, r, want...)
			if dns := findCheck(t, r, "dns"); c.check != "boot" && !strings.Contains(dns.Finding, "(see "+c.check+")") {
				t.Errorf("dns: %+v", dns)
			}
			if len(got) > 0 {
				if !strings.Contains(got[0].Finding, c.says) || !strings.HasPrefix(got[0].Fix, "marina doctor --fix") || got[0].repair != repairNet {
					t.Errorf("%+v", got[0])
				}
			}
		})
	}
}

func TestDoctorRoute(t *testing.T) {
	gw := mustAddr("192.168.64.3")
	for _, c := range []struct {
		name    string
		setup   func(f *sessiontest.World)
		status  Status
		finding string
		fix     string
		repair  bool
	}{
		{"missing", func(f *sessiontest.World) { f.Route = nil }, Fail,
			"172.30.0.0/16 → missing (the host would send it along the default route via 192.168.1.1 on en0)",
			"marina doctor --fix (runs: sudo ip route replace 172.30.0.0/16 via 192.168.64.3)", true},
		{"wrong gateway", func(f *sessiontest.World) {
			f.Route.Gateway = mustAddr("192.168.64.7")
			if err := f.MustMade().Add(f.Network.Subnet, mustAddr("192.168.64.7")); err != nil {
				f.T.Fatal(err)
			}
		}, Fail, "wrong gateway (via 192.168.64.7; the VM's lima0 is 192.168.64.3)",
			"marina doctor --fix (runs: sudo ip route replace 172.30.0.0/16 via 192.168.64.3)", true},
		{"foreign", func(f *sessiontest.World) {
			f.Route.Gateway = mustAddr("192.168.64.9")
		}, Fail, "taken by 172.30.0.0/16 via 192.168.64.9 on bridge100, a route marina did not make",
			"if it is a leftover: sudo ip route del 172.30.0.0/16 via 192.168.64.9; else choose another network.cidr (marina config edit)", false},
		{"a VPN's /24 inside it", func(f *sessiontest.World) {
			f.Doctor.Table = []host.Route{
				{Dest: mustPrefix("0.0.0.0/0"), Gateway: mustAddr("192.168.1.1"), Interface: "en0"},
				{Dest: f.Network.Subnet, Gateway: gw, Interface: "bridge100"},
				{Dest: mustPrefix("172.30.5.0/24"), Gateway: mustAddr("10.8.0.1"), Interface: "utun4"},
				{Dest: mustPrefix("10.8.0.0/16"), Gateway: mustAddr("10.8.0.1"), Interface: "utun4"},
			}
		}, Fail, "172.30.0.0/16 → present (via 192.168.64.3), but 172.30.5.0/24 via 10.8.0.1 on utun4 take part of it: those addresses do not reach the VM (a VPN?)",
			"disconnect the VPN that routes them, or remove a leftover: sudo ip route del 172.30.5.0/24 via 10.8.0.1; or choose another network.cidr (marina config edit)", false},
		{"a VPN's route of the first addresses", func(f *sessiontest.World) {
			f.Route = &hostRoute{Dest: mustPrefix("172.30.0.0/24"), Interface: "utun4"}
		}, Fail, "172.30.0.0/16 → shadowed by 172.30.0.0/24 on utun4", "sudo ip route del 172.30.0.0/24", false},
		{"a VPN's /24 over the local DNS", func(f *sessiontest.World) {
			f.Doctor.Table = []host.Route{
				{Dest: f.Network.Subnet, Gateway: gw, Interface: "bridge100"},
				{Dest: mustPrefix("172.30.255.0/24"), Interface: "utun4"},
			}
		}, Fail, "but 172.30.255.0/24 on utun4 take part of it", "sudo ip route del 172.30.255.0/24", false},
		{"a route inside it through the VM itself", func(f *sessiontest.World) {
			f.Doctor.Table = []host.Route{
				{Dest: f.Network.Subnet, Gateway: gw, Interface: "bridge100"},
				{Dest: mustPrefix("172.30.1.200/32"), Gateway: gw, Interface: "bridge100", Cloned: true},
			}
		}, OK, "present (via 192.168.64.3); no other route inside it", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.Healthy(t)
			c.setup(f)
			r := doctorRun(f, Options{})
			rc := findCheck(t, r, "route")
			if rc.Status != c.status || !strings.Contains(rc.Finding, c.finding) || !strings.Contains(rc.Fix, c.fix) || (rc.repair == repairRoute) != c.repair {
				t.Errorf("%+v\nwant %s %q fix %q repair %v", rc, c.status, c.finding, c.fix, c.repair)
			}
			if c.status == OK {
				notOK(t, r)
				return
			}
			// The lookup goes over the route: the DNS check waits for it,
			// unless the route that takes part of the network leaves the
			// DNS server's address alone.
			d := findCheck(t, r, "dns")
			if c.name == "a VPN's /24 inside it" {
				if d.Status != OK {
					t.Errorf("dns with 172.30.255.53 still routed to the VM: %+v", d)
				}
			} else if d.Status != Skip || !strings.Contains(d.Finding, "route") {
				t.Errorf("dns: %+v", d)
			}
		})
	}
}

func TestDoctorDNS(t *testing.T) {
	f := sessiontest.Healthy(t)
	for i := range f.Mirrors {
		if f.Mirrors[i].Name == dns.EtcdName {
			f.Mirrors[i].State = "exited"
		}
	}
	r := doctorRun(f, Options{})
	if c := findCheck(t, r, "dns"); c.Status != Fail || !strings.Contains(c.Finding, "marina-dns-etcd at 172.30.255.52 is exited") || c.Fix != "marina up" {
		t.Errorf("etcd exited: %+v", c)
	}
	f = sessiontest.Healthy(t)
	f.Fail["host.query"] = errors.New("read udp: i/o timeout")
	r = doctorRun(f, Options{})
	if c := findCheck(t, r, "dns"); c.Status != Fail || !strings.Contains(c.Finding, "lookup of marina-probe.demo.internal at 172.30.255.53 failed: read udp: i/o timeout") || !strings.Contains(c.Fix, "docker logs") {
		t.Errorf("lookup fails: %+v", c)
	}
	f = sessiontest.Healthy(t)
	if err := os.Remove(f.ResolverFile("demo.internal")); err != nil {
		t.Fatal(err)
	}
	r = doctorRun(f, Options{})
	if c := findCheck(t, r, "dns"); c.Status != Fail || !strings.Contains(c.Finding, "resolver file") || !strings.Contains(c.Finding, "missing") || c.Fix != "marina up" {
		t.Errorf("no resolver file: %+v", c)
	}
}

func TestDoctorMirrors(t *testing.T) {
	f := sessiontest.Healthy(t)
	for i := range f.Mirrors {
		switch f.Mirrors[i].Name {
		case "registry-quayio":
			f.Mirrors[i].State = "exited"
		case "registry-gcrio":
			f.Mirrors[i].Labels = maps.Clone(f.Mirrors[i].Labels)
			f.Mirrors[i].Labels[registry.LabelConfig] = "sha256:from-before"
		}
	}
	f.Mirrors = slices.DeleteFunc(f.Mirrors, func(c docker.Container) bool { return c.Name == "registry-us-docker-pkgdev" })
	f.Mirrors = append(f.Mirrors, docker.Container{ID: "x", Name: "registry-old", State: "running", Labels: map[string]string{registry.LabelMirror: "registry-old"}})
	f.Doctor.Upstreams = map[string]guest.UpstreamResult{"registry-dockerio": {Detail: "dial: line 1: registry-1.docker.io: Name or service not known"}}
	r := doctorRun(f, Options{})
	for name, want := range map[string]struct {
		status       Status
		finding, fix string
	}{
		"mirror registry-dockerio":                  {Warn, "serving from its cache: its upstream registry-1.docker.io:443 does not answer from its container (dial: line 1: registry-1.docker.io: Name or service not known", "getent hosts registry-1.docker.io"},
		"mirror registry-quayio":                    {Fail, "its container registry-quayio is exited", "marina up (starts it again)"},
		"mirror registry-gcrio":                     {Warn, "but its configuration changed", "marina up (recreates it)"},
		"mirror registry-us-docker-pkgdev":          {Fail, "there is no container for mirror registry-us-docker-pkgdev", "marina up"},
		"mirror registry-us-central1-docker-pkgdev": {OK, "its upstream us-central1-docker.pkg.dev:443 answers from its container", ""},
		"mirror registry-old":                       {Warn, "container registry-old is a mirror no longer in the config", "marina up (removes it)"},
	} {
		c := findCheck(t, r, name)
		if c.Status != want.status || !strings.Contains(c.Finding, want.finding) || !strings.Contains(c.Fix, want.fix) || c.repair != repairNone {
			t.Errorf("%s: %+v\nwant %+v", name, c, want)
		}
	}
}

func TestDoctorClusters(t *testing.T) {
	certErr := fmt.Errorf("Get \"https://192.168.64.3:7001/version\": %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}})
	for _, c := range []struct {
		name    string
		setup   func(f *sessiontest.World)
		status  Status
		finding string
		fix     string
		stale   bool
	}{
		{"stale kubeconfig", func(f *sessiontest.World) {
			f.NodeContainers = nil
			f.Cluster("dev", 1, "https://192.168.64.9:7001")
		}, Fail, "dev.kubeconfig names https://192.168.64.9:7001, but the cluster's API server is at https://192.168.64.3:7001 (lima0 moved?)",
			"marina doctor --fix (or: marina kubeconfig merge dev)", true},
		{"no kubeconfig", func(f *sessiontest.World) {
			path, _ := f.Env.Paths.Kubeconfig("dev")
			os.Remove(path)
		}, Fail, "cluster dev has no kubeconfig at", "marina kubeconfig merge dev", true},
		{"certificate", func(f *sessiontest.World) { f.Doctor.KubeErr = map[string]error{"dev": certErr} }, Fail,
			"the API server at https://192.168.64.3:7001 has a certificate", "marina kubeconfig merge dev", false},
		{"no answer", func(f *sessiontest.World) {
			f.Doctor.KubeErr = map[string]error{"dev": errors.New("dial tcp 192.168.64.3:7001: connect: connection refused")}
		}, Fail, "the API server does not answer at https://192.168.64.3:7001: dial tcp", "marina shell -- docker logs --tail 50 dev-control-plane", false},
		{"no pool", func(f *sessiontest.World) { f.Doctor.NoPool = map[string]bool{"dev": true} }, Fail,
			"MetalLB has no IPAddressPool marina", "marina cluster delete dev && marina cluster create dev", false},
		{"another pool", func(f *sessiontest.World) { f.Doctor.Pools = map[string][]string{"dev": {"172.30.9.1-172.30.9.7"}} }, Warn,
			"holds 172.30.9.1-172.30.9.7, not slot 1's 172.30.1.1-172.30.1.7, 172.30.1.16-172.30.1.254", "marina cluster create dev", false},
		{"nodes stopped", func(f *sessiontest.World) { f.NodeContainers[0].State = "exited" }, Fail,
			"its nodes do not all run: dev-control-plane not running", "marina cluster start dev", false},
		{"stopped with marina cluster stop", func(f *sessiontest.World) {
			f.NodeContainers[0].State = "exited"
			rec, _ := f.Env.Paths.StoppedRecord("dev")
			if err := os.MkdirAll(filepath.Dir(rec), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rec, []byte(`{"labels":{}}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, Skip, "stopped with marina cluster stop: `marina cluster start dev` starts it", "", false},
		{"a cluster made with the API on the VM's loopback", func(f *sessiontest.World) {
			f.NodeContainers = nil
			f.Cluster("dev", 1, "https://127.0.0.1:7001")
			f.NodeContainers[0].APIHosts = map[int]string{7001: "127.0.0.1"}
		}, OK, "answers at https://127.0.0.1:7001", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.Healthy(t)
			c.setup(f)
			r := doctorRun(f, Options{})
			cc := findCheck(t, r, "cluster dev")
			if cc.Status != c.status || !strings.Contains(cc.Finding, c.finding) || !strings.Contains(cc.Fix, c.fix) || (cc.repair == repairKubeconfig) != c.stale {
				t.Errorf("%+v\nwant %s %q %q stale %v", cc, c.status, c.finding, c.fix, c.stale)
			}
			if c.stale && len(f.Called("kube dev version")) != 0 {
				t.Error("the API was called at a stale address")
			}
		})
	}
}

func TestDoctorInotifyAndDisk(t *testing.T) {
	for _, c := range []struct {
		name          string
		watches, inst int
		used, avail   int64
		check         string
		status        Status
		finding, fix  string
	}{
		{"few watches", 8192, 512, 50, 50, "inotify", Warn, "max_user_watches 8192, max_user_instances 512: kind needs 524288 and 512", "sudo sysctl -w fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=512"},
		{"few instances", 524288, 128, 50, 50, "inotify", Warn, "max_user_instances 128", "sysctl -w"},
		{"unreadable", 0, 0, 50, 50, "inotify", Warn, "could not be read", "sysctl fs.inotify"},
		{"disk 9% free", 524288, 512, 91, 9, "disk", Warn, "9.0% free", "docker image prune -a"},
		{"disk 1.5% free", 524288, 512, 985, 15, "disk", Fail, "1.5% free", "raise vm.disk"},
		{"disk 10% free", 524288, 512, 90, 10, "disk", OK, "10.0% free", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.Healthy(t)
			f.Doctor.Health = &guest.Health{Docker: "active", InotifyWatches: c.watches, InotifyInstances: c.inst, Disk: guest.Disk{Known: true, Mount: "/", Used: c.used << 20, Avail: c.avail << 20}}
			r := doctorRun(f, Options{})
			if c.status == OK {
				notOK(t, r)
			} else {
				notOK(t, r, c.check+"="+string(c.status))
			}
			got := findCheck(t, r, c.check)
			if got.Status != c.status || !strings.Contains(got.Finding, c.finding) || !strings.Contains(got.Fix, c.fix) {
				t.Errorf("%+v", got)
			}
			// Warnings alone do not fail doctor.
			if r.Failed() != (c.status == Fail) {
				t.Errorf("failed = %v with %s", r.Failed(), c.status)
			}
		})
	}
}

func TestDoctorRosetta(t *testing.T) {
	for _, c := range []struct {
		name                    string
		os, arch                string
		installed, want, binfmt bool
		created                 bool
		host, vm                Status
		hostFinding, vmFinding  string
		hostFix, vmFix          string
	}{
		{"set, installed, registered", "darwin", "arm64", true, true, true, true, OK, OK, "is installed", "is registered", "", ""},
		{"set, not installed", "darwin", "arm64", false, true, false, true, Fail, Fail, "vm.rosetta is set, but Rosetta 2 is not installed", "is missing: x86_64 images do not run",
			"softwareupdate --install-rosetta --agree-to-license", "marina down && marina up"},
		{"set, VM made without it", "darwin", "arm64", true, true, false, false, OK, Fail, "is installed", "the VM was created without Rosetta", "", "marina destroy && marina up"},
		{"unset, registered", "darwin", "arm64", true, false, true, false, OK, Warn, "is installed", "vm.rosetta is off, but", "", "set vm.rosetta: true"},
		{"unset, absent", "darwin", "arm64", false, false, false, false, OK, OK, "vm.rosetta is off, so nothing needs it", "no Rosetta binfmt entry", "", ""},
		{"an Intel Mac", "darwin", "amd64", false, true, false, false, OK, OK, "N/A: not an Apple silicon Mac", "N/A", "", ""},
		{"Linux", "linux", "arm64", false, true, false, false, OK, OK, "N/A: not a Mac", "N/A", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.Healthy(t)
			f.Config(func(cfg *config.Config) { cfg.VM.Rosetta = c.want })
			f.Doctor.OS, f.Doctor.Rosetta, f.Env.HostArch = c.os, c.installed, c.arch
			f.Doctor.Health = &guest.Health{Docker: "active", InotifyWatches: 524288, InotifyInstances: 512, Disk: guest.Disk{Known: true, Used: 1, Avail: 1}, RosettaBinfmt: c.binfmt}
			if c.created {
				// The VM's lima.yaml is the template of the config now.
				cfg, err := config.Load(f.Env.Paths)
				if err != nil {
					t.Fatal(err)
				}
				tmpl, err := machine.Template(f.Env, cfg)
				if err != nil {
					t.Fatal(err)
				}
				f.Instance.Dir = t.TempDir()
				if err := os.WriteFile(filepath.Join(f.Instance.Dir, "lima.yaml"), tmpl, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := doctorRun(f, Options{})
			h, v := findCheck(t, r, "rosetta-host"), findCheck(t, r, "rosetta-vm")
			if h.Status != c.host || !strings.Contains(h.Finding, c.hostFinding) || h.Fix != c.hostFix {
				t.Errorf("host: %+v", h)
			}
			if v.Status != c.vm || !strings.Contains(v.Finding, c.vmFinding) || !strings.HasPrefix(v.Fix, c.vmFix) {
				t.Errorf("vm: %+v", v)
			}
		})
	}
}

func TestDoctorLocalNetwork(t *testing.T) {
	unreach := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		name, os, term string
		dial           error
		status         Status
		finding, fix   string
	}{
		{"blocked", "darwin", "iTerm.app", unreach, Fail, "macOS's Local Network privacy setting keeps iTerm off the local networks", "System Settings → Privacy & Security → Local Network: turn it on for iTerm"},
		// No answer has other causes than the privacy setting: a warning
		// that does not send the user to System Settings.
		{"no answer", "darwin", "", timeout, Warn, "cannot connect to the kind bridge's gateway 172.30.0.1", "marina status"},
		{"refused is an answer", "darwin", "Apple_Terminal", refused, OK, "reaches the kind bridge's gateway 172.30.0.1", ""},
		{"Linux", "linux", "", unreach, OK, "N/A: macOS only", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.Healthy(t)
			f.Doctor.OS, f.Doctor.Dial, f.Vars["TERM_PROGRAM"] = c.os, c.dial, c.term
			r := doctorRun(f, Options{})
			got := findCheck(t, r, "local-network")
			if got.Status != c.status || !strings.Contains(got.Finding, c.finding) || !strings.Contains(got.Fix, c.fix) {
				t.Errorf("%+v", got)
			}
			if dials := f.Called("host.dial"); (c.os == "darwin") != (len(dials) == 1) {
				t.Errorf("dials: %v", dials)
			}
		})
	}
	// Blocked: the DNS lookup and the direct-mode clusters fail the same
	// way, and are skipped with where to look instead of blamed.
	f := sessiontest.Healthy(t)
	f.Doctor.OS, f.Doctor.Dial = "darwin", unreach
	r := doctorRun(f, Options{})
	if got := findCheck(t, r, "dns"); got.Status != Skip || !strings.Contains(got.Finding, "see local-network") {
		t.Errorf("dns while blocked: %+v", got)
	}
	// Without marina's kind network the gateway is not the VM's: no dial.
	f = sessiontest.Healthy(t)
	f.Doctor.OS, f.Doctor.Dial = "darwin", unreach
	f.Network = nil
	r = doctorRun(f, Options{})
	if got := findCheck(t, r, "local-network"); got.Status != Skip || len(f.Called("host.dial")) != 0 {
		t.Errorf("without the kind network: %+v", got)
	}
	// No route: nothing to try.
	f = sessiontest.Healthy(t)
	f.Route = nil
	r = doctorRun(f, Options{})
	if got := findCheck(t, r, "local-network"); got.Status != Skip || len(f.Called("host.dial")) != 0 {
		t.Errorf("without the route: %+v", got)
	}
}

// brokenForFix breaks the three things --fix repairs: forwarding, the
// host route, a kubeconfig; the fakes make the repairs real.
func brokenForFix(t *testing.T) *sessiontest.World {
	f := sessiontest.Healthy(t)
	f.Doctor.Net = func(st *guest.NetState) { st.Forwarding = false }
	f.Route = nil
	// No route, so no record of one: what --fix adds, it records itself.
	if err := os.Remove(f.Env.Paths.Routes()); err != nil {
		t.Fatal(err)
	}
	f.NodeContainers = nil
	f.Cluster("dev", 1, "https://192.168.64.9:7001")
	f.Scripts["export kubeconfigs"] = vm.Result{Stdout: []byte(f.Export("dev"))}
	f.Before = func(call string) {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		switch {
		case call == "guest.run install the VM's routing rules":
			f.Doctor.Net = nil
		case strings.HasPrefix(call, "host.privileged ip route replace 172.30.0.0/16 via 192.168.64.3"):
			f.Route = &hostRoute{Dest: mustPrefix("172.30.0.0/16"), Gateway: f.Lima0.Addr(), Interface: "bridge100"}
		}
	}
	return f
}

// --fix prints the report and its repairs first, makes them (each safe:
// the network script, marina's own route, the kubeconfig) and checks
// again.
func TestDoctorFixRepairs(t *testing.T) {
	f := brokenForFix(t)
	var first *Report
	r := doctorRun(f, Options{Fix: true, Before: func(r Report) { first = &r }})
	if first == nil {
		t.Fatal("the first report was not shown before the repairs")
	}
	notOK(t, *first, "forwarding=fail", "route=fail", "dns=skip", "cluster dev=fail", "local-network=skip")
	if len(first.Repairs) != 3 {
		t.Errorf("planned: %q", first.Repairs)
	}
	notOK(t, r)
	if r.Failed() || len(r.Repairs) != 3 {
		t.Errorf("after --fix: %s\nrepairs %q", reportText(r), r.Repairs)
	}
	for _, rp := range r.Repairs {
		if strings.Contains(rp, "failed") {
			t.Errorf("repair %q", rp)
		}
	}
	if got := f.Called("guest."); strings.Join(got, ",") != "guest.observe,guest.run install the VM's routing rules,guest.run export kubeconfigs,guest.observe" {
		t.Errorf("guest round trips: %v", got)
	}
	if body := f.Bodies["install the VM's routing rules"]; !strings.Contains(body, guest.ScriptPath) || !strings.Contains(body, "systemctl enable "+guest.UnitName) {
		t.Errorf("the network script was not installed and run:\n%s", body)
	}
	if got := f.Called("host.privileged"); len(got) != 1 || got[0] != "host.privileged ip route replace 172.30.0.0/16 via 192.168.64.3" {
		t.Errorf("privileged: %v", got)
	}
	if gws := f.MustMade().Gateways(mustPrefix("172.30.0.0/16")); len(gws) != 1 || gws[0] != f.Lima0.Addr() {
		t.Errorf("the route marina made is not recorded: %v", gws)
	}
	path, _ := f.Env.Paths.Kubeconfig("dev")
	kc, _ := os.ReadFile(path)
	if s, _ := kubeconfig.Server(kc); s != "https://192.168.64.3:7001" {
		t.Errorf("dev's kubeconfig names %s", s)
	}
}

// --fix --dry-run lists the repairs and changes nothing.
func TestDoctorFixDryRun(t *testing.T) {
	f := brokenForFix(t)
	path, _ := f.Env.Paths.Kubeconfig("dev")
	before, _ := os.ReadFile(path)
	r := doctorRun(f, Options{Fix: true, DryRun: true, Before: func(Report) { t.Error("Before called on a dry run") }})
	notOK(t, r, "forwarding=fail", "route=fail", "dns=skip", "cluster dev=fail", "local-network=skip")
	want := []string{
		"install and run the VM's network script (/usr/local/sbin/marina-network, marina-network.service, the docker.service drop-in): forwarding",
		"route 172.30.0.0/16 to the VM: sudo ip route replace 172.30.0.0/16 via 192.168.64.3",
		"export the kubeconfigs of dev again (API servers at https://192.168.64.3:7001)",
	}
	if !slices.Equal(r.Repairs, want) {
		t.Errorf("repairs:\n%q\nwant\n%q", r.Repairs, want)
	}
	if got := append(f.Called("guest.run"), f.Called("host.privileged")...); len(got) != 0 {
		t.Errorf("a dry run changed: %v", got)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a dry run rewrote the kubeconfig")
	}
}

// What is not safe to repair is named, never touched: a VPN's route, a
// stopped mirror, a missing pool, a full disk.
func TestDoctorFixLeavesTheRestAlone(t *testing.T) {
	f := sessiontest.Healthy(t)
	f.Doctor.Table = []host.Route{
		{Dest: f.Network.Subnet, Gateway: f.Lima0.Addr(), Interface: "bridge100"},
		{Dest: mustPrefix("172.30.5.0/24"), Gateway: mustAddr("10.8.0.1"), Interface: "utun4"},
	}
	f.Mirrors[0].State = "exited"
	f.Doctor.NoPool = map[string]bool{"dev": true}
	f.Doctor.Health = &guest.Health{Docker: "active", InotifyWatches: 524288, InotifyInstances: 512, Disk: guest.Disk{Known: true, Used: 99, Avail: 1}}
	r := doctorRun(f, Options{Fix: true, Before: func(Report) { t.Error("nothing to repair, yet Before was called") }})
	if len(r.Repairs) != 0 || !r.Failed() {
		t.Errorf("repairs %q, failed %v", r.Repairs, r.Failed())
	}
	if got := append(append(f.Called("guest.run"), f.Called("host.privileged")...), f.Called("docker.")...); len(slices.DeleteFunc(got, func(c string) bool {
		return strings.HasPrefix(c, "docker.version") || strings.HasPrefix(c, "docker.list") || strings.HasPrefix(c, "docker.inspect") || strings.HasPrefix(c, "docker.kind-nodes")
	})) != 0 {
		t.Errorf("changed: %v", got)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("round trips: %v", got)
	}
}

// A repair that fails is reported; the others are made all the same.
func TestDoctorFixGoesOnAfterAFailure(t *testing.T) {
	f := brokenForFix(t)
	f.Fail["host.privileged"] = errors.New("sudo: a password is required")
	f.Before = func(call string) {
		if call == "guest.run install the VM's routing rules" {
			f.Mu.Lock()
			f.Doctor.Net = nil
			f.Mu.Unlock()
		}
	}
	r := doctorRun(f, Options{Fix: true})
	if len(r.Repairs) != 3 || !strings.Contains(r.Repairs[1], "failed: sudo: a password is required") {
		t.Errorf("repairs %q", r.Repairs)
	}
	notOK(t, r, "route=fail", "dns=skip", "local-network=skip")
	if !strings.Contains(f.Stderr.String(), "a password is required") {
		t.Errorf("the failure was not shown:\n%s", f.Stderr.String())
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// A cluster whose API is on the VM's loopback is reached through Lima's
// port mirroring, not the VM's forwarding: it is checked all the same.
func TestDoctorLoopbackClusterWithoutForwarding(t *testing.T) {
	f := sessiontest.Healthy(t)
	f.Cluster("lo", 2, "https://127.0.0.1:7002")
	f.NodeContainers[len(f.NodeContainers)-1].APIHosts = map[int]string{7002: "127.0.0.1"}
	f.Doctor.Net = func(st *guest.NetState) { st.Forwarding = false }
	r := doctorRun(f, Options{})
	notOK(t, r, "forwarding=fail", "dns=skip", "cluster dev=skip")
	if c := findCheck(t, r, "cluster lo"); c.Status != OK || !strings.Contains(c.Finding, "answers at https://127.0.0.1:7002") {
		t.Errorf("loopback cluster: %+v", c)
	}
}

// A value in etcd that is no DNS record turns the local DNS's check into a
// warning naming it; records that read fine leave it passing, and so does
// an etcd that did not answer root (the lookup judges the server).
func TestDoctorReportsMalformedDNSValues(t *testing.T) {
	kv := func(k, v string) string {
		return fmt.Sprintf(`{"key":%q,"value":%q}`, base64.StdEncoding.EncodeToString([]byte(k)), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	good := `{"kvs":[` + kv("/skydns/internal/demo/dev/shop/web/1a2b3c4d", `{"host":"172.30.1.1"}`) + `]}`
	bad := `{"kvs":[` + kv("/skydns/internal/demo/dev/shop/web/1a2b3c4d", `{"host":"172.30.1.1"}`) + "," + kv("/skydns/internal/demo/dev/junk/0", "not json") + `]}`
	for what, c := range map[string]struct {
		records []byte
		want    Status
	}{
		"no answer":   {nil, OK},
		"records":     {[]byte(good), OK},
		"a bad value": {[]byte(bad), Warn},
	} {
		f := sessiontest.Healthy(t)
		f.Doctor.Records = c.records
		chk := findCheck(t, doctorRun(f, Options{}), checkDNS)
		if chk.Status != c.want {
			t.Errorf("%s: %s %s", what, chk.Status, chk.Finding)
		}
		if c.want == Warn && (!strings.Contains(chk.Finding, `"/skydns/internal/demo/dev/junk/0"`) || !strings.Contains(chk.Fix, "external-dns-etcd")) {
			t.Errorf("%s: %+v", what, chk)
		}
	}
}

// A VM provisioned by another marina is a warning on the Docker check,
// with what differs and the fix, and changes nothing.
func TestDoctorSaysTheVMIsBehind(t *testing.T) {
	f := sessiontest.Healthy(t)
	p := guest.Provisioned("v0.1.0", "marina", "28.5.1")
	p.Record.Script = strings.Repeat("0", 64)
	f.Provisioning = &p
	r := doctorRun(f, Options{})
	c := findCheck(t, r, "docker")
	if c.Status != Warn || !strings.Contains(c.Finding, "Docker 29.1.0 answers on unix://") || !strings.Contains(c.Finding, "; the VM is provisioned by marina v0.1.0 (this is v9.9.9)") || !strings.HasPrefix(c.Fix, "marina up") {
		t.Errorf("docker: %+v", c)
	}
	if r.Failed() || len(f.Called("guest.run")) != 0 {
		t.Errorf("doctor failed or changed the VM:\n%s", reportText(r))
	}
}

// pod-routing: off says so; on, a VPN's route inside the pod space fails
// with the way out, and the routes marina would add are named missing.
func TestDoctorPodRouting(t *testing.T) {
	f := sessiontest.Healthy(t)
	f.Config(func(cfg *config.Config) { cfg.Network.PodRouting = true })
	gw := f.Route.Gateway
	f.Doctor.Table = []host.Route{
		{Dest: mustPrefix("0.0.0.0/0"), Gateway: mustAddr("192.168.1.1"), Interface: "en0"},
		{Dest: f.Network.Subnet, Gateway: gw, Interface: "bridge100"},
		{Dest: mustPrefix("10.5.0.0/16"), Gateway: mustAddr("10.99.0.1"), Interface: "utun4"},
	}
	c := findCheck(t, doctorRun(f, Options{}), "pod-routing")
	if c.Status != Fail || !strings.Contains(c.Finding, "10.5.0.0/16 via 10.99.0.1 on utun4") || !strings.Contains(c.Fix, "disconnect the VPN") {
		t.Errorf("a VPN's route: %+v", c)
	}
	f.Doctor.Table = f.Doctor.Table[:2]
	c = findCheck(t, doctorRun(f, Options{}), "pod-routing")
	if c.Status != Fail || !strings.Contains(c.Finding, "host routes: 0 of 11 present") || !strings.Contains(c.Finding, "marina-podnet.service not running") || c.Fix != "marina up" {
		t.Errorf("nothing routed yet: %+v", c)
	}
}
