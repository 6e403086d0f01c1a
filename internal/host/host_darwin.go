package host

import (
	"context"
	"errors"
	"net/netip"

	"github.com/bcollard/marina/internal/run"
)

var osCommands = darwinCommands

func (h *Host) lookup(ctx context.Context, addr netip.Addr) (*Route, error) {
	out, err := h.Run.Output(ctx, run.Cmd{Args: []string{"/sbin/route", "-n", "get", addr.String()}})
	var re *run.Error
	if err != nil && errors.As(err, &re) {
		// "not in table" is an answer, on stderr with a non-zero exit.
		return ParseRouteGet(string(out) + re.Stderr)
	}
	if err != nil {
		return nil, err
	}
	return ParseRouteGet(string(out))
}
