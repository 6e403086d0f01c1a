package session_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

// The session reads what a command needs and no more.
func TestOpenReadsOnlyWhatIsNeeded(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	s, err := session.Open(context.Background(), f.Env, session.Needs{Config: session.VMOnly})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := f.Log(); got != "vm.get marina" {
		t.Errorf("calls:\n%s", got)
	}
	f.Calls = nil
	f.Instance.Status = vm.StatusStopped
	if _, err := session.Open(context.Background(), f.Env, session.Needs{Config: session.Strict, Running: true, Lima0: true, Clusters: true}); err == nil || !strings.Contains(err.Error(), "VM marina is Stopped: start it with `marina up`") {
		t.Errorf("error = %v", err)
	}
	if got := f.Log(); got != "vm.get marina" {
		t.Errorf("calls for a stopped VM:\n%s", got)
	}
	// A config marina up refuses: vm.name still opens the session.
	if err := os.WriteFile(f.Env.Paths.Config, []byte("vm:\n  cpus: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := session.Open(context.Background(), f.Env, session.Needs{Config: session.Strict}); err == nil {
		t.Error("strict open of an invalid config")
	}
	s, err = session.Open(context.Background(), f.Env, session.Needs{Config: session.VMOnlyQuiet})
	if err != nil || s.File.Err == nil || s.Name != "marina" {
		t.Errorf("lenient open: %v, %+v", err, s)
	}
}
