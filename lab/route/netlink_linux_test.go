//go:build linux

package main

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// The kernel table over netlink, in a network namespace made for this
// test alone: the machine's routes, and the lab's, are never touched.
func TestKernelTableInAPrivateNetns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test makes a network namespace (root)")
	}
	if os.Geteuid() != 0 {
		t.Skip("making a network namespace needs root")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// This thread moves to the new namespace and is never unlocked, so
		// it ends with this goroutine: nothing else runs in that namespace.
		// Commands started from it (ip) are forked from it and share it.
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			t.Errorf("unshare the network namespace: %v", err)
			return
		}
		kernelTable(t)
	}()
	<-done
}

func kernelTable(t *testing.T) {
	sh := func(args ...string) string {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Errorf("%v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// The Mac's side of vzNAT, as in the lab.
	sh("ip", "link", "set", "lo", "up")
	sh("ip", "link", "add", "bridge100", "type", "bridge")
	sh("ip", "addr", "add", "192.168.64.1/24", "dev", "bridge100")
	sh("ip", "link", "set", "bridge100", "up")
	kindNet := netip.MustParsePrefix("172.30.0.0/16")
	first := netip.MustParseAddr("172.30.0.1")
	lima0 := netip.MustParseAddr("192.168.64.2")
	moved := netip.MustParseAddr("192.168.64.3")
	k := kernel{}
	is := func(err, want error, what string) {
		t.Helper()
		if !errors.Is(err, want) && !(err == nil && want == nil) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}

	_, err := k.get(first)
	is(err, syscall.ESRCH, "get with no route")
	is(k.add(kindNet, lima0), nil, "add")
	if got := sh("ip", "route", "show", "172.30.0.0/16"); got != "172.30.0.0/16 via 192.168.64.2 dev bridge100 proto static" {
		t.Errorf("after add: %q", got)
	}
	is(k.add(kindNet, lima0), syscall.EEXIST, "add again")
	e, err := k.get(first)
	if err != nil || e.dst != kindNet || e.gw != lima0 || e.ifname != "bridge100" || e.mtu != 1500 || e.kernel {
		t.Errorf("get: %+v, %v", e, err)
	}
	e, err = k.get(netip.MustParseAddr("192.168.64.7"))
	if err != nil || e.dst != netip.MustParsePrefix("192.168.64.0/24") || e.gw.IsValid() || !e.kernel {
		t.Errorf("get on the bridge's own network: %+v, %v", e, err)
	}
	is(k.change(kindNet, moved), nil, "change")
	if got := sh("ip", "route", "show", "172.30.0.0/16"); !strings.HasPrefix(got, "172.30.0.0/16 via 192.168.64.3 dev bridge100") {
		t.Errorf("after change: %q", got)
	}
	is(k.del(kindNet, lima0), syscall.ESRCH, "delete through a gateway the route no longer has")
	is(k.del(kindNet, moved), nil, "delete")
	if got := sh("ip", "route", "show", "172.30.0.0/16"); got != "" {
		t.Errorf("after delete: %q", got)
	}
	is(k.del(kindNet, netip.Addr{}), syscall.ESRCH, "delete a missing route")
	is(k.change(kindNet, lima0), syscall.ESRCH, "change a missing route")
	is(k.add(kindNet, netip.MustParseAddr("10.9.9.9")), syscall.ENETUNREACH, "add through a gateway on no network")

	// The whole command, as marina runs it.
	r := routeCmd(k, 0, "-n", "add", "-net", "172.30.0.0/16", "192.168.64.2")
	if r.stdout != "add net 172.30.0.0: gateway 192.168.64.2\n" || r.code != 0 {
		t.Errorf("route add: %+v", r)
	}
	r = routeCmd(k, 501, "-n", "get", "172.30.0.1")
	if !strings.Contains(r.stdout, "destination: 172.30.0.0\n       mask: 255.255.0.0\n    gateway: 192.168.64.2\n  interface: bridge100\n") {
		t.Errorf("route get: %+v", r)
	}
}
