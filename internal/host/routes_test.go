package host

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func routeSet(rs []Route) string {
	var out []string
	for _, r := range rs {
		s := r.Dest.String()
		if r.Gateway.IsValid() {
			s += " via " + r.Gateway.String()
		}
		s += " on " + r.Interface
		if r.Cloned {
			s += " (cloned)"
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

// The two formats macOS netstat -rn has had: without Refs and Use (macOS
// 11.3 and later) and with them, each with marina's route, a VPN's routes
// inside the kind network, and what a Mac's table holds besides.
func TestParseNetstat(t *testing.T) {
	for _, c := range []struct {
		file               string
		overlapping, shady string
	}{
		{"netstat-rn-vpn.txt",
			"0.0.0.0/0 via 192.168.1.1 on en0\n0.0.0.0/0 on utun4\n172.30.0.0/16 via 192.168.64.3 on bridge100\n172.30.1.200/32 via 192.168.64.3 on bridge100 (cloned)\n172.30.5.0/24 via 10.8.0.1 on utun4\n172.30.9.7/32 via 192.168.1.1 on en0 (cloned)",
			// A host route cloned through the default route before marina's
			// route was there keeps sending that address off the Mac.
			"172.30.5.0/24 via 10.8.0.1 on utun4\n172.30.9.7/32 via 192.168.1.1 on en0 (cloned)"},
		{"netstat-rn-catalina.txt",
			"0.0.0.0/0 via 10.10.10.1 on en0\n128.0.0.0/1 via 100.64.0.1 on utun2\n172.16.0.0/12 via 100.64.0.1 on utun2\n172.30.0.0/16 via 192.168.64.3 on bridge100\n172.30.8.0/22 on utun2",
			"172.30.8.0/22 on utun2"},
	} {
		all, err := ParseNetstat(read(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		for _, r := range all {
			if r.Dest.Addr().String() == "192.168.1.1" && r.Dest.Bits() == 32 && !r.Gateway.IsValid() && r.Interface == "en0" {
				continue // 192.168.1.1/32 link#11: a network route of one address
			}
			if strings.Contains(r.Interface, ":") || !r.Dest.Addr().Is4() {
				t.Errorf("%s: read %+v", c.file, r)
			}
		}
		ov := overlapping(kindNet, all)
		if got := routeSet(ov); got != c.overlapping {
			t.Errorf("%s: overlapping\n%s\nwant\n%s", c.file, got, c.overlapping)
		}
		if got := routeSet(Shadows(kindNet, lima0, ov)); got != c.shady {
			t.Errorf("%s: shadows\n%s\nwant\n%s", c.file, got, c.shady)
		}
	}
}

func TestParseNetstatDestinations(t *testing.T) {
	for in, want := range map[string]string{
		"default": "0.0.0.0/0", "0/1": "0.0.0.0/1", "128.0/1": "128.0.0.0/1",
		"172.30": "172.30.0.0/16", "172.30.5/24": "172.30.5.0/24", "172.30/17": "172.30.0.0/17",
		"10": "10.0.0.0/8", "10.10.10/24": "10.10.10.0/24", "127": "127.0.0.0/8",
		"192.168.64": "192.168.64.0/24", "192.168.0/16": "192.168.0.0/16", "224.0.0/4": "224.0.0.0/4",
		"172.30.1.200": "172.30.1.200/32", "255.255.255.255/32": "255.255.255.255/32",
	} {
		got, err := parseNetname(in)
		if err != nil || got.String() != want {
			t.Errorf("%q: %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1.2.3.4.5", "256", "172.30/33", "172.30/-1", "fe80::1", "172.030", "a.b", "172.30&0xffff0000", "172..30", "link#4"} {
		if p, err := parseNetname(bad); err == nil {
			t.Errorf("%q read as %v", bad, p)
		}
	}
}

// A table marina cannot read whole is an error, never a partial list that
// could leave out the route that matters.
func TestParseNetstatRefusesGarbage(t *testing.T) {
	for _, bad := range []string{
		"",
		"netstat: sysctl: Operation not permitted\n",
		"Routing tables\n\nInternet:\nDest Gw\n",
		"Routing tables\n\nInternet:\nDestination        Gateway            Flags               Netif Expire\n172.30\n",
		"Routing tables\n\nInternet:\nDestination        Gateway            Flags               Netif Expire\nbogus  1.2.3.4  UGSc  en0\n",
	} {
		if rs, err := ParseNetstat(bad); err == nil {
			t.Errorf("%q read as %v", bad, rs)
		}
	}
}

func TestParseIPRoutes(t *testing.T) {
	all, err := ParseIPRoutes(read(t, "ip-route-show.json"))
	if err != nil {
		t.Fatal(err)
	}
	via := netip.MustParseAddr("192.168.64.2")
	ov := overlapping(kindNet, all)
	want := "0.0.0.0/0 via 192.168.1.1 on eth0\n172.30.0.0/16 via 192.168.64.2 on bridge100\n172.30.1.0/24 on vpn0\n172.30.200.0/24 on blackhole\n172.30.9.7/32 via 192.168.64.2 on bridge100"
	if got := routeSet(ov); got != want {
		t.Errorf("overlapping\n%s\nwant\n%s", got, want)
	}
	// A route inside the network through the VM itself shadows nothing.
	if got, want := routeSet(Shadows(kindNet, via, ov)), "172.30.1.0/24 on vpn0\n172.30.200.0/24 on blackhole"; got != want {
		t.Errorf("shadows\n%s\nwant\n%s", got, want)
	}
	// The one the kernel picks for the first address is still the longest.
	r, err := ParseIPRoute(read(t, "ip-route-show.json"))
	if err != nil || r.Dest.String() != "172.30.9.7/32" {
		t.Errorf("ParseIPRoute: %+v, %v", r, err)
	}
}

// With the VM down its address is unknown: a route through a gateway
// marina recorded is still marina's, not a shadow.
func TestShadowsWithoutLima0(t *testing.T) {
	gw := netip.MustParseAddr("192.168.64.3")
	rs := []Route{
		{Dest: kindNet, Gateway: gw, Interface: "bridge100"},
		{Dest: netip.MustParsePrefix("172.30.1.200/32"), Gateway: gw, Interface: "bridge100", Cloned: true},
		{Dest: netip.MustParsePrefix("172.30.5.0/24"), Gateway: netip.MustParseAddr("10.8.0.1"), Interface: "utun4"},
		{Dest: netip.MustParsePrefix("172.16.0.0/12"), Gateway: netip.MustParseAddr("10.8.0.1"), Interface: "utun4"},
		{Dest: netip.MustParsePrefix("172.31.0.0/24"), Interface: "en5"},
	}
	if got, want := routeSet(Shadows(kindNet, netip.Addr{}, rs, gw)), "172.30.5.0/24 via 10.8.0.1 on utun4"; got != want {
		t.Errorf("shadows %q, want %q", got, want)
	}
	if got := routeSet(Shadows(kindNet, netip.Addr{}, rs)); !strings.Contains(got, "172.30.1.200/32") {
		t.Errorf("with no record a clone through an unknown gateway is a shadow: %q", got)
	}
}

// Each style lists routes with its own tool: ip(8) on Linux, netstat(1)
// by its full path on a Mac.
func TestOverlappingStyles(t *testing.T) {
	dir := t.TempDir()
	script := func(name, wantArgs, file string) string {
		p := filepath.Join(dir, name)
		body := "#!/bin/sh\n[ \"$*\" = \"" + wantArgs + "\" ] || { echo \"unexpected: $*\" >&2; exit 99; }\ncat " + filepath.Join(dir, file) + "\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, f := range []string{"netstat-rn-vpn.txt", "ip-route-show.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(read(t, f)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := netstatPath
	netstatPath = script("netstat", "-rn -f inet", "netstat-rn-vpn.txt")
	t.Cleanup(func() { netstatPath = old })
	rs, err := (&Host{Style: BSD}).Overlapping(context.Background(), kindNet)
	if err != nil || len(Shadows(kindNet, lima0, rs)) != 2 {
		t.Errorf("bsd: %v, %v", rs, err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(script("ip", "-4 -j route show", "ip-route-show.json"), filepath.Join(bin, "ip")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	rs, err = (&Host{Style: Linux}).Overlapping(context.Background(), kindNet)
	if err != nil || len(rs) != 5 {
		t.Errorf("linux: %v, %v", rs, err)
	}
}

func FuzzParseNetstat(f *testing.F) {
	for _, name := range []string{"netstat-rn-vpn.txt", "netstat-rn-catalina.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, out string) {
		rs, err := ParseNetstat(out)
		if err != nil {
			return
		}
		for _, r := range rs {
			if !r.Dest.IsValid() || !r.Dest.Addr().Is4() || r.Dest != r.Dest.Masked() {
				t.Fatalf("read a destination that is no IPv4 network: %+v", r)
			}
			if r.Gateway.IsValid() && !r.Gateway.Is4() {
				t.Fatalf("read a gateway that is no IPv4 address: %+v", r)
			}
		}
	})
}

// A refusal is an answer; what macOS's Local Network privacy setting
// gives a program it keeps out is no answer, or EHOSTUNREACH at once.
func TestReachedAndBlocked(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := netip.MustParseAddrPort(l.Addr().String())
	if err := Dial(context.Background(), open, time.Second); !Reached(err) || Blocked(err) {
		t.Errorf("an open port: %v", err)
	}
	l.Close()
	err = Dial(context.Background(), open, time.Second) // closed now: refused
	if !Reached(err) || Blocked(err) {
		t.Errorf("a closed port: %v (reached %v, blocked %v)", err, Reached(err), Blocked(err))
	}
	unreach := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}
	if Reached(unreach) || !Blocked(unreach) {
		t.Errorf("EHOSTUNREACH: reached %v, blocked %v", Reached(unreach), Blocked(unreach))
	}
	// No answer at all has other causes (a firewall that drops): not taken
	// for the privacy setting, which answers at once.
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	if Reached(timeout) || Blocked(timeout) {
		t.Errorf("a timeout: reached %v, blocked %v", Reached(timeout), Blocked(timeout))
	}
	other := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
	if Reached(other) || Blocked(other) {
		t.Errorf("ENETUNREACH (no route at all) is not the privacy setting: reached %v, blocked %v", Reached(other), Blocked(other))
	}
}
