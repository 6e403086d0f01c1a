package kindcluster

import (
	"context"
	"errors"
	"testing"

	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

// With no config file yet a command that needs the VM looks for the one
// up would make, of the defaults' name: when it is not there, marina
// exits 3 and says how to make it, as for any VM not created.
func TestNoConfigIsNoVM(t *testing.T) {
	f := sessiontest.New(t)
	f.Instance = nil
	_, err := List(context.Background(), f.Env, "")
	exit, ok := errors.AsType[*session.ExitError](err)
	if !ok || exit.Code != session.ExitNotRunning || err.Error() != "VM marina has not been created yet: run `marina up`" {
		t.Fatalf("ListClusters without a config = %v", err)
	}
	// A VM of that name that runs is the one: its clusters are listed.
	f = sessiontest.New(t)
	f.Cluster("dev", 1, "https://127.0.0.1:7001")
	if rows, err := List(context.Background(), f.Env, ""); err != nil || len(rows) != 1 {
		t.Fatalf("ListClusters without a config, VM running = %v, %v", rows, err)
	}
}
