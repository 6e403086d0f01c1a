//go:build !darwin

package host

import (
	"context"
	"net/netip"

	"github.com/bcollard/marina/internal/run"
)

// Linux serves the lab: ip(8) stands in for route(8).
var osCommands = linuxCommands

func (h *Host) lookup(ctx context.Context, addr netip.Addr) (*Route, error) {
	out, err := h.Run.Output(ctx, run.Cmd{Args: []string{"ip", "-4", "-j", "route", "show", "match", addr.String()}})
	if err != nil {
		return nil, err
	}
	return ParseIPRoute(string(out))
}
