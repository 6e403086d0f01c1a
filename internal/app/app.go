// Package app runs marina's commands as observe → plan → apply over the
// packages that each own one concern (config, vm, guest, docker, …). The
// CLI parses flags and calls into it; nothing here parses flags.
package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// Env is what every command works with.
type Env struct {
	Paths  config.Paths
	UI     *ui.UI
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// TTY reports whether stdin is an interactive terminal (for prompts).
	TTY bool
	// HostArch is the Mac's architecture (runtime.GOARCH).
	HostArch string

	guest *vm.SSHGuest

	mu       sync.Mutex
	leftover string
}

// SetLeftover records what an interrupted marina would leave behind now,
// with the command that removes it ("" when nothing): the CLI prints it
// when a second signal ends the wait for a rollback.
func (e *Env) SetLeftover(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leftover = s
}

// Abandon lets go of what must not outlive a marina that stops at once,
// without its deferred clean-ups: the kubectl lock of a kubeconfig edit.
func Abandon() { kubeconfig.ReleaseLocks() }

// Leftover is what SetLeftover last said.
func (e *Env) Leftover() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leftover
}

// NewEnv builds an Env for this process.
func NewEnv(paths config.Paths, u *ui.UI, tty bool) *Env {
	return &Env{
		Paths: paths, UI: u, Getenv: os.Getenv,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		TTY: tty, HostArch: runtime.GOARCH,
	}
}

// Config loads and validates the config file.
func (e *Env) Config() (config.Config, error) {
	return config.Load(e.Paths)
}

// VMName reads vm.name alone, for commands that need nothing else from
// the config (and the strict reading with it): problems elsewhere in the
// file become warnings when warn is set.
func (e *Env) VMName(warn bool) (config.Lenient, error) {
	v, err := config.LoadVMName(e.Paths)
	if warn {
		for _, w := range v.Warnings() {
			e.UI.Warnf("%s (marina up refuses the config until this is fixed)", w)
		}
	}
	return v, err
}

// Limactl returns the limactl driver for marina's LIMA_HOME.
func (e *Env) Limactl() (*vm.Limactl, error) {
	bin, err := vm.FindLimactl(e.Getenv)
	if err != nil {
		return nil, err
	}
	l := &vm.Limactl{Bin: bin, LimaHome: e.Paths.LimaHome(), Run: run.Runner{Log: e.UI.Debugf}}
	if w := e.UI.Writer("lima: "); w != nil {
		l.Stream = w
	}
	return l, nil
}

// Host returns the host-side route manager.
func (e *Env) Host() *host.Host {
	return host.New(run.Runner{Log: e.UI.Debugf}, e.TTY, e.Stdin, e.Stderr)
}

// Guest returns the command channel into VM name (one per process, so the
// round-trip count covers the whole command).
func (e *Env) Guest(l *vm.Limactl, name string) *vm.SSHGuest {
	if e.guest == nil {
		// name was validated when the config was read.
		files, _ := e.Paths.VM(name)
		e.guest = &vm.SSHGuest{Name: name, Dir: files.InstanceDir, Limactl: l, Log: e.UI.Debugf}
	}
	return e.guest
}

// socket is the forwarded Docker socket of VM name (validated with the
// config).
func (e *Env) socket(name string) string {
	files, _ := e.Paths.VM(name)
	return files.DockerSocket
}

// GuestCalls is the number of guest round trips this process made.
func (e *Env) GuestCalls() int64 {
	if e.guest == nil {
		return 0
	}
	return e.guest.Calls()
}

// step runs fn as one step of output: a spinner or a line while it runs,
// then a tick or a cross; done, when set, is the label a success ends with.
func (e *Env) step(label, done string, fn func() error) error {
	e.UI.Start(label)
	if err := fn(); err != nil {
		e.UI.End(false)
		return err
	}
	if done != "" {
		e.UI.Relabel(done)
	}
	e.UI.End(true)
	return nil
}

// vmState reads vm.name (see VMName) and looks the VM up: what status,
// down, destroy and shell start from. in is nil when the VM does not
// exist.
func (e *Env) vmState(ctx context.Context, warn bool) (v config.Lenient, l *vm.Limactl, in *vm.Instance, err error) {
	if v, err = e.VMName(warn); err != nil {
		return
	}
	if l, err = e.Limactl(); err != nil {
		return
	}
	in, err = l.Get(ctx, v.Name)
	return
}

// strictVM is vmState for commands that act on more than the VM: the whole
// config must be valid.
func (e *Env) strictVM(ctx context.Context) (cfg config.Config, l *vm.Limactl, in *vm.Instance, err error) {
	if cfg, err = e.Config(); err != nil {
		return
	}
	if l, err = e.Limactl(); err != nil {
		return
	}
	in, err = l.Get(ctx, cfg.VM.Name)
	return
}

// notRunning is the error of commands that need the VM up.
func notRunning(name string, in *vm.Instance) error {
	if in == nil {
		return fmt.Errorf("VM %s does not exist: create it with `marina up`", name)
	}
	return fmt.Errorf("VM %s is %s: start it with `marina up`", name, in.Status)
}
