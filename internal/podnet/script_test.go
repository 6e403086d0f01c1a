package podnet

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakes stand in for docker and ip in a pass of the script: docker's
// answers come from files, ip keeps the routing table in one.
const fakes = `
timeout() { shift; "$@"; }
docker() {
	case "$1" in
	ps) cat "$T/ps" ;;
	inspect) cat "$T/inspect" 2>/dev/null ;;
	exec)
		if [ "$2" = -i ]; then echo "rules $3" >>"$T/log"; cat >/dev/null; [ "$3" != "${NONE:-}" ] || return 3; return 0; fi
		echo "kubectl $2" >>"$T/log"; cat "$T/kubectl-$2" ;;
	esac
}
date() { if [ "${1:-}" = +%s ]; then echo "$NOW"; else command date "$@"; fi; }
ip() {
	if [ "$1" = -N ]; then shift; fi
	local args="$*"
	case "$args" in
	"-4 route show proto 200 root 10.0.0.0/8") grep ' proto 200$' "$T/routes" | sed 's/ proto 200$//' ;;
	"-4 route show exact "*) grep "^$5 " "$T/routes" || true ;;
	"-4 route replace "*) grep -v "^$4 " "$T/routes" >"$T/r"; echo "$4 via $6 dev $8 proto 200" >>"$T/r"; mv "$T/r" "$T/routes" ;;
	"-4 route del "*) grep -v "^$4 .* proto 200$" "$T/routes" >"$T/r"; mv "$T/r" "$T/routes" ;;
	*) echo "unexpected ip $args" >&2; return 1 ;;
	esac
}
`

// A pass routes each running node's podCIDR (as its cluster's API says,
// inside the cluster's range) to the node and the service range to the
// first worker; it leaves routes of someone else's alone, even of the same
// destination, and deletes only its own that no cluster wants.
func TestScriptPass(t *testing.T) {
	dir := t.TempDir()
	w := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Cluster{{"dev", 1}, {"ops", 2}} {
		f, err := Conf(c, kindNet, mac)
		if err != nil {
			t.Fatal(err)
		}
		w("conf/"+c.Name+".conf", f.Content)
	}
	id := func(c byte) string { return strings.Repeat(string(c), 64) }
	w("ps", id('a')+"\n"+id('b')+"\n"+id('c')+"\n"+id('d')+"\n")
	w("inspect", strings.Join([]string{
		id('a') + " dev control-plane /dev-control-plane 2026-12-06T06:00:00Z 172.30.128.6",
		id('b') + " dev worker /dev-worker 2026-12-06T06:00:00Z 172.30.128.7",
		id('c') + " ops control-plane /ops-control-plane 2026-12-06T06:00:00Z 172.30.128.8",
		id('d') + " kind control-plane /kind-control-plane 2026-12-06T06:00:00Z 172.30.128.9", // no conf: not marina's
	}, "\n")+"\n")
	w("kubectl-"+id('a'), "dev-control-plane 10.11.0.0/24\ndev-worker 10.99.0.0/24\ndev-worker 10.11.1.0/24\n")
	w("kubectl-"+id('c'), "ops-control-plane 10.12.0.0/24\n")
	w("routes", strings.Join([]string{
		"10.1.0.0/16 dev d0 proto kernel",                      // someone else's, where dev's services would go
		"10.50.0.0/24 via 172.30.128.20 dev br-kind proto 200", // marina's, of a cluster gone
		"10.51.0.0/24 via 192.168.5.9 dev eth0 proto static",   // someone else's
		"10.12.0.0/24 via 172.30.128.30 dev br-kind proto 200", // marina's, to ops' old address
	}, "\n")+"\n")
	w("log", "")
	helpers := script[strings.Index(script, "set -u -o pipefail"):strings.Index(script, "exec 9>")]
	// The nodes started at 06:00:00 UTC (1796536800); a pass runs at now.
	const started = 1796536800
	now, none := started+3600, ""
	run := func() string {
		t.Helper()
		cmd := exec.Command("bash", "-c", helpers+fakes+`conf=$T/conf state=$T/state; pass`)
		cmd.Env = append(os.Environ(), "T="+dir, "NOW="+strconv.Itoa(now), "NONE="+none)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pass: %v\n%s", err, out)
		}
		return string(out)
	}
	said := run()
	routes, _ := os.ReadFile(filepath.Join(dir, "routes"))
	for _, want := range []string{
		"10.1.0.0/16 dev d0 proto kernel\n",
		"10.51.0.0/24 via 192.168.5.9 dev eth0 proto static\n",
		"10.11.0.0/24 via 172.30.128.6 dev br-kind proto 200\n",
		"10.11.1.0/24 via 172.30.128.7 dev br-kind proto 200\n",
		"10.12.0.0/24 via 172.30.128.8 dev br-kind proto 200\n",
		"10.2.0.0/16 via 172.30.128.8 dev br-kind proto 200\n",
	} {
		if !strings.Contains(string(routes), want) {
			t.Errorf("routes lack %q:\n%s", want, routes)
		}
	}
	for _, gone := range []string{"10.50.0.0/24", "10.99.0.0/24", "172.30.128.9", "172.30.128.30"} {
		if strings.Contains(string(routes), gone) {
			t.Errorf("routes still have %s:\n%s", gone, routes)
		}
	}
	if !strings.Contains(said, "10.1.0.0/16 is routed by someone else in the VM") {
		t.Errorf("the pass did not say why dev's services are not routed:\n%s", said)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	if got := strings.Count(string(log), "rules "); got != 3 || strings.Contains(string(log), id('d')) {
		t.Errorf("node rules set %d times (want 3, none in the cluster marina does not route):\n%s", got, log)
	}
	// A second pass asks no API server and sets no rules again: the node
	// ranges and the rules are known, for this minute.
	w("log", "")
	run()
	if log, _ := os.ReadFile(filepath.Join(dir, "log")); len(log) != 0 {
		t.Errorf("a second pass did %s", log)
	}
	// The next minute the rules are checked again, the ranges still known.
	now += 60
	run()
	if log, _ := os.ReadFile(filepath.Join(dir, "log")); strings.Count(string(log), "rules ") != 3 || strings.Contains(string(log), "kubectl") {
		t.Errorf("a pass a minute later did:\n%s", log)
	}
	// A node with no masquerade chain: tried again every pass while it is
	// young, every minute once it is not.
	for _, c := range []struct {
		age   int
		tries int
	}{{60, 2}, {600, 1}} {
		now, none = started+c.age, id('c')
		_ = os.RemoveAll(filepath.Join(dir, "state"))
		w("log", "")
		said := run()
		run()
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		if got := strings.Count(string(log), "rules "+id('c')); got != c.tries || !strings.Contains(said, "ops-control-plane has no KIND-MASQ-AGENT or KUBE-POSTROUTING chain") {
			t.Errorf("a node %d s old with no masquerade: its rules tried %d times in two passes, want %d; said %q", c.age, got, c.tries, said)
		}
	}
	now, none = started+3600, ""
	// Docker answers ps but not inspect (a time limit): the pass fails
	// and changes no route, rather than taking every node for gone.
	before, _ := os.ReadFile(filepath.Join(dir, "routes"))
	inspect, _ := os.ReadFile(filepath.Join(dir, "inspect"))
	_ = os.Remove(filepath.Join(dir, "inspect"))
	cmd := exec.Command("bash", "-c", helpers+fakes+`conf=$T/conf state=$T/state; pass`)
	cmd.Env = append(os.Environ(), "T="+dir, "NOW="+strconv.Itoa(now))
	if err := cmd.Run(); err == nil {
		t.Error("a pass whose docker inspect failed succeeded")
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "routes")); string(after) != string(before) {
		t.Errorf("a pass whose docker inspect failed changed the routes:\n%s\nwas:\n%s", after, before)
	}
	w("inspect", string(inspect))
	// dev-worker goes: its route goes on the next pass, and the service
	// range moves to the control plane.
	w("inspect", strings.Join([]string{
		id('a') + " dev control-plane /dev-control-plane 2026-12-06T06:00:00Z 172.30.128.6",
		id('c') + " ops control-plane /ops-control-plane 2026-12-06T06:00:00Z 172.30.128.8",
	}, "\n")+"\n")
	run()
	routes, _ = os.ReadFile(filepath.Join(dir, "routes"))
	if strings.Contains(string(routes), "10.11.1.0/24") || !strings.Contains(string(routes), "10.11.0.0/24 via 172.30.128.6") {
		t.Errorf("after dev-worker went:\n%s", routes)
	}
}
