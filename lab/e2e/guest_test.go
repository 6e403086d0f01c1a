package e2e

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/vm"
)

func runEnv(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	c := exec.Command(name, args...)
	c.Env = append(c.Environ(), env...)
	out, err := c.CombinedOutput()
	return string(out), err
}

// logSink records what a guest logs.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) log(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func limactl() *vm.Limactl {
	return &vm.Limactl{Bin: "limactl", LimaHome: filepath.Join(marinaHome(), "lima"), Run: run.Runner{}}
}

// The guest channel of a running lab VM, used directly.
func testGuestChannel(t *testing.T) {
	ctx := context.Background()
	var logs logSink
	g := &vm.SSHGuest{Name: "marina", Dir: instDir(), Limactl: limactl(), Log: logs.log}

	t.Run("stdout, stderr and exit status come back apart", func(t *testing.T) {
		res, err := g.Run(ctx, vm.Script{Name: "three streams", Body: "echo out; echo err >&2; exit 3"})
		if string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.ExitCode != 3 {
			t.Errorf("result = %q, %q, %d", res.Stdout, res.Stderr, res.ExitCode)
		}
		var se *vm.ScriptError
		if !errors.As(err, &se) || se.ExitCode != 3 || !strings.Contains(err.Error(), "three streams failed in the VM") || !strings.Contains(err.Error(), "err") {
			t.Errorf("error = %v", err)
		}
		if !strings.Contains(logs.String(), "via ssh") {
			t.Errorf("the fast path did not use ssh:\n%s", logs.String())
		}
	})

	t.Run("root through sudo, user otherwise", func(t *testing.T) {
		res, err := g.Run(ctx, vm.Script{Name: "whoami", Body: "id -un", Root: true})
		if err != nil || strings.TrimSpace(string(res.Stdout)) != "root" {
			t.Errorf("root script ran as %q (%v)", res.Stdout, err)
		}
		res, err = g.Run(ctx, vm.Script{Name: "whoami", Body: "id -un"})
		if err != nil || strings.TrimSpace(string(res.Stdout)) != "lima" {
			t.Errorf("user script ran as %q (%v)", res.Stdout, err)
		}
	})

	t.Run("the script arrives byte for byte", func(t *testing.T) {
		data := "quotes ' \" ` $HOME \\n back\\slash ünïcode\n" + strings.Repeat("x", 1<<20) + "\nend"
		body := "cat <<'MARINA_EOF' | head -c -1 | sha256sum\n" + data + "\nMARINA_EOF\n"
		res, err := g.Run(ctx, vm.Script{Name: "checksum", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%x", sha256.Sum256([]byte(data)))
		if got := strings.Fields(string(res.Stdout)); len(got) == 0 || got[0] != want {
			t.Errorf("guest saw %q, want %s", res.Stdout, want)
		}
	})

	t.Run("every call is counted", func(t *testing.T) {
		before := g.Calls()
		for i := 0; i < 3; i++ {
			if _, err := g.Run(ctx, vm.Script{Name: "true", Body: "true"}); err != nil {
				t.Fatal(err)
			}
		}
		if got := g.Calls() - before; got != 3 {
			t.Errorf("3 runs counted as %d", got)
		}
	})

	t.Run("cancelling the context ends the remote command", func(t *testing.T) {
		const marker = "sleep 3171"
		running := func() bool { return exec.Command("pgrep", "-f", marker).Run() == nil }
		if running() {
			t.Fatal("a stray sleep is already running")
		}
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := g.Run(cctx, vm.Script{Name: "long sleep", Body: "sleep 3171; echo finished", Root: true})
			done <- err
		}()
		waitFor(t, 15*time.Second, "the remote sleep to start", running)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run after cancel = %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
		waitFor(t, 10*time.Second, "the remote sleep to end", func() bool { return !running() })
	})

	t.Run("falls back to limactl shell without ssh.config", func(t *testing.T) {
		var fl logSink
		fb := &vm.SSHGuest{Name: "marina", Dir: t.TempDir(), Limactl: limactl(), Log: fl.log}
		res, err := fb.Run(ctx, vm.Script{Name: "fallback", Body: "echo via-limactl; id -un", Root: true})
		if err != nil || string(res.Stdout) != "via-limactl\nroot\n" {
			t.Errorf("fallback = %q, %v", res.Stdout, err)
		}
		if !strings.Contains(fl.String(), "via limactl") {
			t.Errorf("fallback did not use limactl shell:\n%s", fl.String())
		}
	})
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
