package machine

import (
	"errors"
	"net/netip"

	"github.com/bcollard/marina/internal/host"
)

var errBoom = errors.New("boom")

type hostRoute = host.Route

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
