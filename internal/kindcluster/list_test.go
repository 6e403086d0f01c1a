package kindcluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

// With no config file yet there is no VM yet: a command that needs it
// running exits 3, as for a VM not created, and says how to make one.
func TestNoConfigIsNoVM(t *testing.T) {
	f := sessiontest.New(t)
	_, err := List(context.Background(), f.Env, "")
	exit, ok := errors.AsType[*session.ExitError](err)
	if !ok || exit.Code != session.ExitNotRunning || !strings.Contains(err.Error(), "marina up") {
		t.Fatalf("ListClusters without a config = %v", err)
	}
}
