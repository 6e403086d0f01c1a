package main

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/host"
)

type fakeTable struct {
	es  []entry
	err error
}

func (f fakeTable) routes() ([]entry, error) { return f.es, f.err }

// Destinations as macOS prints them (network_cmds route.c): the captures
// in internal/host/testdata have each form.
func TestNetname(t *testing.T) {
	for p, want := range map[string]string{
		"172.30.0.0/16":   "172.30",
		"172.30.5.0/24":   "172.30.5/24",
		"172.30.0.0/17":   "172.30/17",
		"10.0.0.0/8":      "10",
		"10.10.10.0/24":   "10.10.10/24",
		"10.8.0.0/16":     "10.8/16",
		"127.0.0.0/8":     "127",
		"169.254.0.0/16":  "169.254",
		"192.168.64.0/24": "192.168.64",
		"192.168.0.0/16":  "192.168.0/16", // class C: three octets
		"224.0.0.0/4":     "224.0.0/4",
		"0.0.0.0/1":       "0/1",
		"128.0.0.0/1":     "128.0/1",
		"172.30.1.128/25": "172.30.1.128/25",
	} {
		if got := netname(netip.MustParsePrefix(p)); got != want {
			t.Errorf("%s prints as %q, want %q", p, got, want)
		}
	}
}

// What the stand-in prints, marina's macOS parser reads back as the same
// routes: the stand-in proves marina's code, not a parser of its own.
func TestMarinaReadsIt(t *testing.T) {
	es := []entry{
		{dst: netip.MustParsePrefix("0.0.0.0/0"), gw: netip.MustParseAddr("192.168.1.1"), ifname: "eth0", ifindex: 2},
		{dst: netip.MustParsePrefix("172.30.0.0/16"), gw: netip.MustParseAddr("192.168.64.2"), ifname: "bridge100", ifindex: 5},
		{dst: netip.MustParsePrefix("172.30.1.0/24"), ifname: "vpn0", ifindex: 9},
		{dst: netip.MustParsePrefix("172.30.7.9/32"), gw: netip.MustParseAddr("10.99.0.1"), ifname: "vpn0", ifindex: 9},
		{dst: netip.MustParsePrefix("192.168.64.0/24"), ifname: "bridge100", ifindex: 5, kernel: true},
		{dst: netip.MustParsePrefix("10.0.0.0/8"), gw: netip.MustParseAddr("10.99.0.1"), ifname: "vpn0", ifindex: 9},
		{dst: netip.MustParsePrefix("0.0.0.0/1"), gw: netip.MustParseAddr("10.99.0.1"), ifname: "vpn0", ifindex: 9},
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-rn", "-f", "inet"}, fakeTable{es: es}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got, err := host.ParseNetstat(out.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got) != len(es) {
		t.Fatalf("read %d routes back, printed %d:\n%s", len(got), len(es), out.String())
	}
	for _, e := range es {
		found := false
		for _, r := range got {
			found = found || (r.Dest == e.dst && r.Gateway == e.gw && r.Interface == e.ifname)
		}
		if !found {
			t.Errorf("%v via %v on %s was not read back from:\n%s", e.dst, e.gw, e.ifname, out.String())
		}
	}
}

func TestArguments(t *testing.T) {
	for _, args := range [][]string{{"-rn"}, {"-nr", "-f", "inet"}, {"-r", "-n"}} {
		var out, errb bytes.Buffer
		if code := run(args, fakeTable{}, &out, &errb); code != 0 || !strings.Contains(out.String(), "Internet:\nDestination") {
			t.Errorf("%v: exit %d, %q %q", args, code, out.String(), errb.String())
		}
	}
	for _, args := range [][]string{{}, {"-r"}, {"-rn", "-f", "inet6"}, {"-an"}, {"-rn", "-f"}} {
		var out, errb bytes.Buffer
		if code := run(args, fakeTable{}, &out, &errb); code != 64 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-rn"}, fakeTable{err: errors.New("boom")}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "boom") {
		t.Errorf("a failed read: exit %d, %q", code, errb.String())
	}
}
