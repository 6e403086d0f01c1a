package machine

import (
	"context"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

// A guest whose sshd refuses marina's key fails up at once with ssh's
// own words: Docker's wait (Lima forwards its socket over the same ssh)
// is cancelled, not sat out, and the guest is not tried again.
func TestUpStopsAtOnceWhenSSHIsRefused(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.DockerHangs = true
	f.Fail["guest.observe"] = &vm.SSHError{Name: "observe the VM", Stderr: "lima@127.0.0.1: Permission denied (publickey)."}
	_, err := Up(context.Background(), f.Env, UpOptions{})
	if !vm.FinalSSH(err) || !strings.Contains(err.Error(), "Permission denied (publickey)") {
		t.Fatalf("Up = %v; want ssh's refusal", err)
	}
	if got := f.Called("docker.wait-ready cancelled"); len(got) != 1 {
		t.Errorf("Docker's wait was not cancelled when the guest failed for good: %v", f.Called("docker."))
	}
	if got := f.Called("guest.observe"); len(got) != 1 {
		t.Errorf("a final ssh error was tried %d times", len(got))
	}
}

// A refused connection (sshd still starting) is tried again, and up goes
// on once the guest answers.
func TestUpRetriesARefusedSSHConnection(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.DNSWarm()
	f.DefaultMirrorsRunning()
	f.RegistrySums = f.MirrorSums()
	f.Fail["guest.observe"] = &vm.SSHError{Name: "observe the VM", Stderr: "ssh: connect to host 127.0.0.1 port 60022: Connection refused"}
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("Up = %v\n%s", err, f.Stderr.String())
	}
	if got := f.Called("guest.observe"); len(got) != 2 {
		t.Errorf("the guest was observed %d times, want 2 (one refused, one answered)", len(got))
	}
}
