package host

import (
	"context"
	"net/netip"
	"strings"

	"github.com/bcollard/marina/internal/run"
)

// routePath is route(8) on a Mac, always called by its full path (sudo
// rules name it so). Tests point it at a stand-in; the lab puts its
// stand-in (lab/route) at this very path in the Mac user's mount namespace.
var routePath = "/sbin/route"

// macOS: route(8). Not persistent; the route goes with the vzNAT bridge
// when the VM stops, and marina up puts it back.
var darwinCommands = commands{
	add: func(p netip.Prefix, gw netip.Addr) []string {
		return []string{routePath, "-n", "add", "-net", p.String(), gw.String()}
	},
	change: func(p netip.Prefix, gw netip.Addr) []string {
		return []string{routePath, "-n", "change", "-net", p.String(), gw.String()}
	},
	del: func(p netip.Prefix, gw netip.Addr) []string {
		argv := []string{routePath, "-n", "delete", "-net", p.String()}
		if gw.IsValid() {
			argv = append(argv, gw.String())
		}
		return argv
	},
}

var bsdTool = routeTool{commands: darwinCommands, lookup: bsdLookup, list: listNetstat, refused: routeRefused}

// bsdLookup asks `route -n get ADDR`. With no route at all macOS route(8)
// prints "route: writing to routing socket: not in table" on stderr and
// exits 0 (network_cmds route.c: newroute exits 0 after any `get`), so
// stderr is looked at too; the route itself is parsed from stdout alone.
func bsdLookup(ctx context.Context, r run.Runner, addr netip.Addr) (*Route, error) {
	var said run.Buffer // stdout and stderr, for "not in table" only
	out, err := r.Output(ctx, run.Cmd{Args: []string{routePath, "-n", "get", addr.String()}, Stream: &said})
	if strings.Contains(said.String(), "not in table") {
		// Other BSDs exit non-zero with the same words: the same answer.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseRouteGet(string(out))
}

// routeRefused finds route(8)'s complaints: add, change and delete exit 0
// even when the kernel refuses them, printing "route: writing to routing
// socket: File exists" (or "not in table", …) on stderr, and
// "add net 172.30.0.0: gateway 192.168.64.2: File exists" on stdout.
func routeRefused(said string) string {
	var msgs []string
	for _, l := range strings.Split(said, "\n") {
		if strings.HasPrefix(l, "route: ") {
			msgs = append(msgs, l)
		}
	}
	return strings.Join(msgs, "\n")
}
