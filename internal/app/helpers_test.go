package app

import (
	"net/netip"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

type hostRoute = host.Route

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// mustMade is marina's record of the routes it made, in the fixture's home.
func mustMade(t *testing.T, f *sessiontest.World) *host.Made {
	t.Helper()
	m, err := host.LoadMade(f.Env.Paths.Routes(), session.HostOwn(config.Default(), true))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// defaultCorefileSum is the sum of marina-dns's Corefile for the default
// config and label key, as the VM has it once marina wrote it.
func defaultCorefileSum(t *testing.T, key []byte) string {
	specs, err := dns.Specs(config.Default(), key)
	if err != nil {
		t.Fatal(err)
	}
	return specs[1].FileSum()
}
