package host

import (
	"context"
	"net/netip"

	"github.com/bcollard/marina/internal/run"
)

// Linux: ip(8). The lab's root runs use it; its Mac user uses BSD.
var linuxCommands = commands{
	add: func(p netip.Prefix, gw netip.Addr) []string {
		return []string{"ip", "route", "replace", p.String(), "via", gw.String()}
	},
	change: func(p netip.Prefix, gw netip.Addr) []string {
		return []string{"ip", "route", "replace", p.String(), "via", gw.String()}
	},
	// With its gateway: ip deletes the route only if it still has it.
	del: func(p netip.Prefix, gw netip.Addr) []string {
		argv := []string{"ip", "route", "del", p.String()}
		if gw.IsValid() {
			argv = append(argv, "via", gw.String())
		}
		return argv
	},
}

// ip exits non-zero whenever it changes nothing.
var linuxTool = routeTool{commands: linuxCommands, lookup: ipLookup, list: listIP, refused: func(string) string { return "" }}

func ipLookup(ctx context.Context, r run.Runner, addr netip.Addr) (*Route, error) {
	out, err := r.Output(ctx, run.Cmd{Args: []string{"ip", "-4", "-j", "route", "show", "match", addr.String()}})
	if err != nil {
		return nil, err
	}
	return ParseIPRoute(string(out))
}
