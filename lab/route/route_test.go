package main

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bcollard/marina/internal/host"
)

// fakeTable records the changes asked of it and answers with its routes.
type fakeTable struct {
	routes []entry
	// always answers every lookup with routes[0], as the captures do (one
	// of them answers 172.30.0.1 with 0.0.0.0/1).
	always bool
	err    error // what every change answers, when set
	calls  []string
}

func (f *fakeTable) get(addr netip.Addr) (entry, error) {
	if f.always {
		return f.routes[0], nil
	}
	best := -1
	for i, e := range f.routes {
		if e.dst.Contains(addr) && (best < 0 || e.dst.Bits() > f.routes[best].dst.Bits()) {
			best = i
		}
	}
	if best < 0 {
		return entry{}, syscall.ESRCH
	}
	return f.routes[best], nil
}

func (f *fakeTable) record(op string, p netip.Prefix, gw netip.Addr) error {
	c := op + " " + p.String()
	if gw.IsValid() {
		c += " " + gw.String()
	}
	f.calls = append(f.calls, c)
	return f.err
}

func (f *fakeTable) add(p netip.Prefix, gw netip.Addr) error    { return f.record("add", p, gw) }
func (f *fakeTable) change(p netip.Prefix, gw netip.Addr) error { return f.record("change", p, gw) }
func (f *fakeTable) del(p netip.Prefix, gw netip.Addr) error    { return f.record("del", p, gw) }

type result struct {
	stdout, stderr string
	code           int
}

func routeCmd(t table, euid int, args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, t, euid, &out, &errb)
	return result{out.String(), errb.String(), code}
}

func capture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "host", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// trimLines drops trailing blanks: route.c ends the metrics line with
// "%8d%c\n" (a blank for an unlocked metric), which the captures lost.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// `route -n get` prints what a Mac printed in the captures marina's parser
// is tested with, for the same routes, and marina reads it the same way.
func TestGetPrintsAsMacOS(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	for _, c := range []struct {
		file string
		e    entry
	}{
		{"route-get-ours.txt", entry{dst: p("172.30.0.0/16"), gw: a("192.168.64.3"), ifname: "bridge100", mtu: 1500}},
		{"route-get-wrong-gateway.txt", entry{dst: p("172.30.0.0/16"), gw: a("192.168.64.7"), ifname: "bridge100", mtu: 1500}},
		{"route-get-missing.txt", entry{dst: p("0.0.0.0/0"), gw: a("192.168.1.1"), ifname: "en0", mtu: 1500}},
		{"route-get-split-default.txt", entry{dst: p("0.0.0.0/1"), gw: a("10.8.0.1"), ifname: "utun5", mtu: 1400}},
		{"route-get-utun.txt", entry{dst: p("172.30.0.0/24"), gw: a("100.64.0.1"), ifname: "utun4", mtu: 1380}},
		{"route-get-vpn-same.txt", entry{dst: p("172.30.0.0/16"), gw: a("100.64.0.1"), ifname: "utun4", mtu: 1380}},
		{"route-get-vpn-broad.txt", entry{dst: p("172.16.0.0/12"), ifname: "utun3", mtu: 1400}},
	} {
		t.Run(c.file, func(t *testing.T) {
			r := routeCmd(&fakeTable{routes: []entry{c.e}, always: true}, 501, "-n", "get", "172.30.0.1")
			want := capture(t, c.file)
			if r.code != 0 || r.stderr != "" || trimLines(r.stdout) != want {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", r.code, r.stderr, r.stdout, want)
			}
			if !strings.HasSuffix(r.stdout, "         0 \n") {
				t.Errorf("the metrics line does not end as route.c prints it (\"%%8d%%c\\n\"): %q", r.stdout)
			}
			got, err := host.ParseRouteGet(r.stdout)
			exp, _ := host.ParseRouteGet(want)
			if err != nil || got == nil || *got != *exp {
				t.Errorf("marina reads %+v, %v; from the capture %+v", got, err, exp)
			}
		})
	}
}

// No route at all: the complaint on stderr, nothing on stdout, and exit
// status 0, as network_cmds' route.c does after any get.
func TestGetNotInTable(t *testing.T) {
	r := routeCmd(&fakeTable{}, 501, "-n", "get", "172.30.0.1")
	if r.code != 0 || r.stdout != "" || r.stderr != capture(t, "route-get-no-route.txt") {
		t.Errorf("no route: %+v", r)
	}
	if got, err := host.ParseRouteGet(r.stdout + r.stderr); got != nil || err != nil {
		t.Errorf("marina reads %+v, %v", got, err)
	}
	// A network is found only as a route of exactly that network.
	f := &fakeTable{routes: []entry{{dst: netip.MustParsePrefix("172.16.0.0/12"), ifname: "utun3"}}}
	if r := routeCmd(f, 501, "-n", "get", "172.30.0.0/16"); r.stdout != "" || !strings.Contains(r.stderr, "not in table") {
		t.Errorf("a broader route answered for a network: %+v", r)
	}
}

// add, change and delete say what they did on stdout, and when the kernel
// refuses, complain on stderr and still exit 0.
func TestChanges(t *testing.T) {
	for _, c := range []struct {
		args           []string
		err            error
		call           string
		stdout, stderr string
	}{
		{[]string{"-n", "add", "-net", "172.30.0.0/16", "192.168.64.2"}, nil, "add 172.30.0.0/16 192.168.64.2",
			"add net 172.30.0.0: gateway 192.168.64.2\n", ""},
		{[]string{"-n", "add", "-net", "172.30.0.0/16", "192.168.64.2"}, syscall.EEXIST, "add 172.30.0.0/16 192.168.64.2",
			"add net 172.30.0.0: gateway 192.168.64.2: File exists\n", "route: writing to routing socket: File exists\n"},
		{[]string{"-n", "add", "-net", "172.30.0.0/16", "10.9.9.9"}, syscall.ENETUNREACH, "add 172.30.0.0/16 10.9.9.9",
			"add net 172.30.0.0: gateway 10.9.9.9: Network is unreachable\n", "route: writing to routing socket: Network is unreachable\n"},
		{[]string{"-n", "change", "-net", "172.30.0.0/16", "192.168.70.2"}, nil, "change 172.30.0.0/16 192.168.70.2",
			"change net 172.30.0.0: gateway 192.168.70.2\n", ""},
		{[]string{"-n", "change", "-net", "172.30.0.0/16", "192.168.70.2"}, syscall.ESRCH, "change 172.30.0.0/16 192.168.70.2",
			"change net 172.30.0.0: gateway 192.168.70.2: not in table\n", "route: writing to routing socket: not in table\n"},
		{[]string{"-n", "delete", "-net", "172.30.0.0/16", "192.168.64.2"}, nil, "del 172.30.0.0/16 192.168.64.2",
			"delete net 172.30.0.0: gateway 192.168.64.2\n", ""},
		{[]string{"-n", "delete", "-net", "172.30.0.0/16"}, syscall.ESRCH, "del 172.30.0.0/16",
			"delete net 172.30.0.0: not in table\n", "route: writing to routing socket: not in table\n"},
		// Host bits go, as the kernel masks them; the message keeps what was typed.
		{[]string{"add", "-net", "10.1.2.3/8", "192.168.64.2"}, nil, "add 10.0.0.0/8 192.168.64.2",
			"add net 10.1.2.3: gateway 192.168.64.2\n", ""},
		{[]string{"-n", "add", "-host", "10.1.2.3", "192.168.64.2"}, nil, "add 10.1.2.3/32 192.168.64.2",
			"add host 10.1.2.3: gateway 192.168.64.2\n", ""},
	} {
		f := &fakeTable{err: c.err}
		r := routeCmd(f, 0, c.args...)
		if r.code != 0 || r.stdout != c.stdout || r.stderr != c.stderr || strings.Join(f.calls, ";") != c.call {
			t.Errorf("route %s (kernel: %v): exit %d, stdout %q, stderr %q, calls %q\nwant stdout %q, stderr %q, calls %q",
				strings.Join(c.args, " "), c.err, r.code, r.stdout, r.stderr, f.calls, c.stdout, c.stderr, c.call)
		}
	}
}

// Only root changes the routing table (exit 77, EX_NOPERM); anyone may
// look a route up. This is what makes marina's sudo necessary in the lab.
func TestChangesNeedRoot(t *testing.T) {
	for _, cmd := range []string{"add", "change", "delete"} {
		f := &fakeTable{}
		r := routeCmd(f, 501, "-n", cmd, "-net", "172.30.0.0/16", "192.168.64.2")
		if r.code != exNoPerm || r.stderr != "route: must be root to alter routing table\n" || r.stdout != "" || len(f.calls) != 0 {
			t.Errorf("%s as a user: %+v, calls %v", cmd, r, f.calls)
		}
	}
	f := &fakeTable{routes: []entry{{dst: netip.MustParsePrefix("172.30.0.0/16"), gw: netip.MustParseAddr("192.168.64.2")}}}
	if r := routeCmd(f, 501, "-n", "get", "172.30.0.1"); r.code != 0 || !strings.Contains(r.stdout, "gateway: 192.168.64.2") {
		t.Errorf("get as a user: %+v", r)
	}
}

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, exUsage, usageLine},
		{[]string{"-n"}, exUsage, usageLine},
		{[]string{"-n", "frob"}, exUsage, "route: bad keyword: frob\n" + usageLine},
		{[]string{"-x", "get", "1.2.3.4"}, exUsage, "route: illegal option -- x\n"},
		{[]string{"-n", "add", "-net", "172.30.0.0/16", "lima"}, exNoHost, "route: bad address: lima\n"},
		{[]string{"-n", "add", "-net", "172.30.0.0/40", "192.168.64.2"}, exNoHost, "route: bad address: 172.30.0.0/40\n"},
		{[]string{"-n", "add", "-net", "172.30.0.0/16", "192.168.64.2", "255.255.0.0"}, exUsage, "not implemented"},
		{[]string{"-n", "add", "-net", "172.30.0.0/16", "-interface", "bridge100"}, exUsage, "not implemented"},
		{[]string{"-n", "flush"}, exUsage, "not implemented"},
	} {
		f := &fakeTable{}
		r := routeCmd(f, 0, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || len(f.calls) != 0 {
			t.Errorf("route %s: %+v, calls %v; want exit %d and %q", strings.Join(c.args, " "), r, f.calls, c.code, c.stderr)
		}
	}
}

func TestParseDest(t *testing.T) {
	for _, c := range []struct {
		s        string
		net      bool
		want     string
		wantHost bool
	}{
		{"default", false, "0.0.0.0/0", false},
		{"172.30.0.0/16", true, "172.30.0.0/16", false},
		{"172.30.0.1", false, "172.30.0.1/32", true},
		{"172.30.0.0", false, "172.30.0.0/16", false}, // its host part is zero
		{"10.0.0.0", true, "10.0.0.0/8", false},
		{"192.168.64.0", true, "192.168.64.0/24", false},
	} {
		p, isHost, err := parseDest(c.s, c.net, false)
		if err != nil || p.String() != c.want || isHost != c.wantHost {
			t.Errorf("%s: %s host %v, %v; want %s host %v", c.s, p, isHost, err, c.want, c.wantHost)
		}
	}
}
