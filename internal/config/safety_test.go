package config

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/slot"
)

// Every later step's refusals are config errors: what the Corefile edit
// would refuse after kind ran is refused at load.
func TestResolversTheCorefileRefuses(t *testing.T) {
	many := make([]string, 16)
	for i := range many {
		many[i] = fmt.Sprintf("10.0.0.%d", i+1)
	}
	for what, r := range map[string]DNSResolver{
		"port 0":       {Domain: "corp.example.com", Resolvers: []string{"10.0.0.53:0"}},
		"16 resolvers": {Domain: "corp.example.com", Resolvers: many},
		"ipv6 zone":    {Domain: "corp.example.com", Resolvers: []string{"fe80::1%en0"}},
		"reverse zone": {Domain: "in-addr.arpa", Resolvers: []string{"10.0.0.53"}},
	} {
		c := Default()
		c.Kind.CustomDNSResolvers = []DNSResolver{r}
		if probs := Validate(c, testPaths(t)); len(probs) == 0 {
			t.Errorf("%s: accepted", what)
		}
	}
}

// No form of remoteURL gets its password into a message.
func TestRemoteURLPasswordNeverShows(t *testing.T) {
	for _, raw := range []string{
		"https://bot:hunter2@quay.io/%zz", "bot:hunter2@quay.io", "https://bot:hunter2@quay.io",
		"//bot:hunter2@quay.io", "bot:hunter2@quay.io/path", "ftp://bot:hunter2@quay.io", "https://bot:hunter2@@quay.io",
	} {
		c := Default()
		c.Registries.Mirrors = []Mirror{{Name: "m", Port: 5000, RemoteURL: raw}}
		probs := Validate(c, testPaths(t))
		if len(probs) == 0 {
			t.Errorf("%q accepted", raw)
		}
		for _, p := range probs {
			if strings.Contains(p.Msg, "hunter2") {
				t.Errorf("%q: %s", raw, p.Msg)
			}
		}
	}
}

// network.cidr may equal no slot's service or pod range (a check of the
// service ranges alone must fail this test).
func TestCIDRClearOfEverySlotRange(t *testing.T) {
	for n := slot.Min; n <= slot.Max; n++ {
		for _, p := range []netip.Prefix{slot.ServiceSubnet(n), slot.PodSubnet(n)} {
			c := Default()
			// The /16 that holds the range.
			c.Network.CIDR = netip.PrefixFrom(p.Addr(), 16).Masked().String()
			found := false
			for _, pr := range Validate(c, testPaths(t)) {
				found = found || (pr.Path == "network.cidr" && strings.Contains(pr.Msg, fmt.Sprintf("slot %d", n)))
			}
			if !found {
				t.Errorf("slot %d: network.cidr %s (over %s) accepted", n, c.Network.CIDR, p)
			}
		}
	}
}

// S9: a FIFO in place of config.yaml is refused at once, naming it (it
// used to hang marina in open(2)).
func TestConfigFIFORefused(t *testing.T) {
	dir := t.TempDir()
	p := Paths{Dir: dir, Config: filepath.Join(dir, "config.yaml")}
	if err := syscall.Mkfifo(p.Config, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(p); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), p.Config+" is not a regular file") {
			t.Errorf("Load: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load still waits on the FIFO after 5 s")
	}
}
