package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A running VM whose sshd refuses marina's key, as after Lima's key was
// replaced: up fails within seconds with ssh's own words and what to do,
// not after sitting out Docker's two-minute wait (Lima's socket forward
// is down too, as it rides the same ssh).
func TestUnreachableGuest(t *testing.T) {
	needLab(t)
	t.Cleanup(func() {
		inGuest(t, `for f in /home/*.linux/.ssh/authorized_keys.aside; do [ -e "$f" ] && mv "$f" "${f%.aside}"; done; true`)
		destroyAll(t)
	})
	writeConfig(t, "registries:\n  mirrors: []\n")
	mustMarina(t, "up")

	// sshd refuses the key from now on; the connections made with it go.
	inGuest(t, `for f in /home/*.linux/.ssh/authorized_keys; do mv "$f" "$f.aside"; done`)
	if b, err := os.ReadFile(filepath.Join(instDir(), "ha.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	_ = exec.Command("ssh", "-F", filepath.Join(instDir(), "ssh.config"), "-O", "exit", "lima-marina").Run()

	start := time.Now()
	r := marina(t, "up")
	took := time.Since(start)
	if r.code == 0 {
		t.Fatalf("up with the guest refusing marina's key succeeded:\n%s", r.stderr)
	}
	for _, want := range []string{"Permission denied (publickey", "the VM's sshd refuses marina", "marina destroy, then marina up"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("up's error lacks %q:\n%s", want, r.stderr)
		}
	}
	if took > 10*time.Second {
		t.Errorf("up took %s to report the refused key, want under 10 s", took.Round(time.Millisecond))
	}
	t.Logf("up failed after %s", took.Round(time.Millisecond))
}
