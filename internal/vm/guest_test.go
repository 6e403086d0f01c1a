package vm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/run"
)

// An ssh failure is an *SSHError; one that trying again cannot help (the
// guest's sshd refuses the key, a changed host key) is Final, and says
// so and what to do, while a refused connection is not. The ssh that runs
// is a stand-in on PATH printing what OpenSSH prints, through Run's own
// code path.
func TestSSHErrors(t *testing.T) {
	for _, c := range []struct {
		stderr string
		final  bool
		says   string
	}{
		{"lima@127.0.0.1: Permission denied (publickey).", true, "refuses marina"},
		{"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification failed.", true, "put the old key back"},
		{"ssh: connect to host 127.0.0.1 port 60022: Connection refused", false, "is it running?"},
		{"kex_exchange_identification: read: Connection reset by peer", false, "cannot reach the VM over ssh"},
	} {
		dir := t.TempDir()
		bin := filepath.Join(dir, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		script := "#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' " + run.ShellQuote(c.stderr) + " >&2\nexit 255\n"
		if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"ssh.config", "ssh.sock"} {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("PATH", bin)
		g := &SSHGuest{Name: "marina", Dir: dir}
		_, err := g.Run(context.Background(), Script{Name: "observe the VM", Body: "true"})
		if e, ok := errors.AsType[*SSHError](err); !ok || e.Final() != c.final || FinalSSH(err) != c.final {
			t.Errorf("%q: %T %v, want final=%v", c.stderr, err, err, c.final)
			continue
		}
		if !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "observe the VM") {
			t.Errorf("%q: the error says %q", c.stderr, err)
		}
	}
}
