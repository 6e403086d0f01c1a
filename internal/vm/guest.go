package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bcollard/marina/internal/run"
)

// Script is a shell script to run in the guest. Scripts are rendered by
// marina from validated values; data travels inside them, quoted.
type Script struct {
	Name string // what it does, for errors and --debug
	Body string // bash source
	Root bool   // run as root through sudo
}

// Result is what a script printed and how it exited.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// Guest runs scripts inside the VM. Every call is one round trip, counted.
type Guest interface {
	Run(ctx context.Context, s Script) (Result, error)
	Calls() int64
}

// SSHGuest reaches the guest with the system ssh and the ssh.config Lima
// writes for the instance, sharing Lima's ControlMaster connection. That
// skips what `limactl shell` pays per call (a limactl start, instance
// inspection and an `ssh -V`); `limactl shell` is the fallback when ssh or
// the config is missing.
type SSHGuest struct {
	Name    string
	Dir     string // the instance folder, holding ssh.config and ssh.sock
	Limactl *Limactl
	Log     func(format string, args ...any)
	calls   atomic.Int64
}

// Calls is the number of round trips made so far.
func (g *SSHGuest) Calls() int64 { return g.calls.Load() }

// remoteWrapper runs on the guest. It reads a length line and that many
// bytes of script from stdin, runs the script in its own process group, and
// keeps reading stdin: when the session ends early (marina was interrupted,
// its context cancelled, ssh killed) stdin reaches EOF and the script's
// whole process group is killed, so nothing is left running in the VM.
const remoteWrapper = `IFS= read -r n || exit 125
f=$(mktemp) || exit 125
head -c "$n" >"$f"
[ "$(wc -c <"$f")" -eq "$n" ] || { rm -f "$f"; echo "marina: script truncated in transit" >&2; exit 125; }
exec 3<&0
setsid bash "$f" </dev/null &
p=$!
setsid sh -c 'cat >/dev/null; kill -TERM -"$1" 2>/dev/null' sh "$p" <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$p"
rc=$?
kill -TERM -"$w" 2>/dev/null
rm -f "$f"
exit "$rc"`

// exitWrapper is the status remoteWrapper uses for its own failures.
const exitWrapper = 125

// Run runs s in the guest and returns its output. A script that exits
// non-zero is an error that carries its stderr; Result is filled either way.
func (g *SSHGuest) Run(ctx context.Context, s Script) (Result, error) {
	g.calls.Add(1)
	start := time.Now()
	remote := "sh -c " + run.ShellQuote(remoteWrapper)
	if s.Root {
		remote = "sudo -n " + remote
	}
	args, err := g.command(ctx, remote)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	if g.Limactl != nil {
		cmd.Env = append(os.Environ(), "LIMA_HOME="+g.Limactl.LimaHome)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("%s: start ssh: %w", s.Name, err)
	}
	// The pipe stays open after the script is sent: closing it is how the
	// guest learns the session is gone. Wait closes it when ssh exits.
	go func() {
		_, _ = io.WriteString(stdin, strconv.Itoa(len(s.Body))+"\n"+s.Body)
	}()
	err = cmd.Wait()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: cmd.ProcessState.ExitCode()}
	if g.Log != nil {
		g.Log("guest round trip %d: %s (%s via %s, exit %d)", g.calls.Load(), s.Name, time.Since(start).Round(time.Millisecond), filepath.Base(args[0]), res.ExitCode)
	}
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("%s: %w", s.Name, ctx.Err())
	case err == nil:
		return res, nil
	case res.ExitCode == 255:
		return res, &SSHError{Name: s.Name, Stderr: stderr.String()}
	case res.ExitCode == exitWrapper:
		return res, fmt.Errorf("%s: the guest could not run the script:\n%s", s.Name, run.Tail(stderr.String(), 5))
	default:
		return res, &ScriptError{Name: s.Name, ExitCode: res.ExitCode, Stderr: stderr.String()}
	}
}

// SSHError is a guest that ssh could not reach (ssh's exit status 255).
type SSHError struct {
	Name   string
	Stderr string // ssh's
}

// sshFinal are what OpenSSH prints when trying again cannot help: the
// guest's sshd refuses the key, the host key is not the one expected, or
// the key itself is unusable. A refused or timed-out connection is not
// among them: sshd may be starting.
var sshFinal = []string{
	"Permission denied",
	"Host key verification failed",
	"REMOTE HOST IDENTIFICATION HAS CHANGED",
	"Too many authentication failures",
	"no mutual signature algorithm",
	"UNPROTECTED PRIVATE KEY FILE",
	"invalid format",
}

// Final reports whether trying again cannot help.
func (e *SSHError) Final() bool {
	for _, s := range sshFinal {
		if strings.Contains(e.Stderr, s) {
			return true
		}
	}
	return false
}

func (e *SSHError) Error() string {
	if e.Final() {
		return fmt.Sprintf("%s: the VM's sshd refuses marina (ssh: authentication or host key failed; trying again cannot help):\n%s\nmarina reaches the VM with Lima's key in $MARINA_HOME/lima/_config (~/.marina/lima/_config by default): if it changed since the VM was made, put the old key back, or recreate the VM (marina destroy, then marina up)", e.Name, run.Tail(e.Stderr, 5))
	}
	return fmt.Sprintf("%s: cannot reach the VM over ssh (is it running? try `marina up`):\n%s", e.Name, run.Tail(e.Stderr, 5))
}

// FinalSSH reports whether err is an ssh failure that trying again cannot
// cure.
func FinalSSH(err error) bool {
	e, ok := errors.AsType[*SSHError](err)
	return ok && e.Final()
}

// ScriptError is a guest script that ran and failed.
type ScriptError struct {
	Name     string
	ExitCode int
	Stderr   string
}

func (e *ScriptError) Error() string {
	msg := fmt.Sprintf("%s failed in the VM (exit status %d)", e.Name, e.ExitCode)
	if t := run.Tail(e.Stderr, 10); t != "" {
		msg += ":\n" + t
	}
	return msg
}

// command returns the argv that runs remote in the guest.
func (g *SSHGuest) command(ctx context.Context, remote string) ([]string, error) {
	cfg := filepath.Join(g.Dir, "ssh.config")
	if ssh, err := exec.LookPath("ssh"); err == nil {
		if _, err := os.Stat(cfg); err == nil {
			host := "lima-" + strings.NewReplacer(".", "-", "_", "-").Replace(g.Name)
			if err := g.ensureMaster(ctx, ssh, cfg, host); err != nil && g.Log != nil {
				g.Log("no shared ssh connection (%v); connecting directly", err)
			}
			// ControlMaster=no: use Lima's master when it is there, never
			// become one (a master outlives us and would hold our pipes).
			return []string{ssh, "-F", cfg, "-T", "-o", "ControlMaster=no", "-o", "LogLevel=ERROR", host, "--", remote}, nil
		}
	}
	if g.Limactl == nil {
		return nil, errors.New("no ssh.config for the VM and no limactl to fall back on")
	}
	// limactl shell quotes each argument and runs them in a login shell.
	return []string{g.Limactl.Bin, "shell", "--tty=false", g.Name, "--", "sh", "-c", remote}, nil
}

// ensureMaster starts Lima's shared ssh connection when its socket is
// missing (the first call after the VM booted), detached from our pipes.
func (g *SSHGuest) ensureMaster(ctx context.Context, ssh, cfg, host string) error {
	if _, err := os.Stat(filepath.Join(g.Dir, "ssh.sock")); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, ssh, "-F", cfg, "-f", "-N", "-o", "ControlMaster=auto", "-o", "ControlPersist=yes", "-o", "LogLevel=ERROR", host)
	// The master lives on in the background with our stderr: give it a
	// file, not a pipe that Wait would wait on.
	errf, err := os.CreateTemp("", "marina-ssh-*.log")
	if err != nil {
		return err
	}
	defer os.Remove(errf.Name())
	defer errf.Close()
	cmd.Stderr = errf
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(errf.Name())
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(msg)))
	}
	return nil
}
