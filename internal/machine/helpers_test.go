package machine

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

var errBoom = errors.New("boom")

type hostRoute = host.Route

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// exitNodesOn stops every node container when call is made, as a VM's or
// Docker's restart does; Docker does not start them again by itself.
func exitNodesOn(f *sessiontest.World, call string) {
	f.Before = func(c string) {
		if c == call {
			f.Mu.Lock()
			for i := range f.NodeContainers {
				f.NodeContainers[i].State = "exited"
			}
			f.Mu.Unlock()
		}
	}
}

// inOrder fails t unless each of want appears in log after the one before.
func inOrder(t *testing.T, log string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(log[at:], w)
		if i < 0 {
			t.Fatalf("%q not after %d in:\n%s", w, at, log)
		}
		at += i + len(w)
	}
}
