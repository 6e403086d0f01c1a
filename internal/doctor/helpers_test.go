package doctor

import (
	"net/netip"

	"github.com/bcollard/marina/internal/host"
)

type hostRoute = host.Route

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
