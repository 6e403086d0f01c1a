// Package session is the world one marina command sees: its Env (paths,
// terminal, streams), the Session it opens once (the config as far as it
// reads it, the VM, and the narrow ports to the guest, Docker, the host and
// each cluster), and marina's exit statuses. The feature packages run their
// observe → plan → apply over it; nothing here parses flags or prints a
// result.
package session

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/ui"
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
	// Marina is this marina's version, for the VM's provisioning record.
	Marina string

	// Deps makes the outside world's parts (the CLI wires production's,
	// tests a fake world).
	Deps Deps

	// parent and key are set on a member's Env (see member): what it
	// would leave behind is recorded on the parent under key.
	parent *Env
	key    string

	mu       sync.Mutex
	leftover map[string]string
}

// SetLeftover records what an interrupted marina would leave behind now,
// with the command that removes it ("" when nothing): the CLI prints it
// when a second signal ends the wait for a rollback.
func (e *Env) SetLeftover(s string) {
	if e.parent != nil {
		e.parent.setLeftover(e.key, s)
		return
	}
	e.setLeftover("", s)
}

func (e *Env) setLeftover(key, s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leftover == nil {
		e.leftover = map[string]string{}
	}
	if s == "" {
		delete(e.leftover, key)
		return
	}
	e.leftover[key] = s
}

// Member is an Env for one of several jobs that run at once, such as a
// fleet's creates: its steps go to u, its results nowhere (the command
// reports them), and what it would leave behind joins e's.
func (e *Env) Member(key string, u *ui.UI) *Env {
	return &Env{
		Paths: e.Paths, UI: u, Getenv: e.Getenv,
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: e.Stderr,
		HostArch: e.HostArch, Marina: e.Marina, Deps: e.Deps, parent: e, key: key,
	}
}

// Abandon lets go of what must not outlive a marina that stops at once,
// without its deferred clean-ups: the kubectl lock of a kubeconfig edit.
func Abandon() { kubeconfig.ReleaseLocks() }

// Leftover is what SetLeftover last said, for every job still running.
func (e *Env) Leftover() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := slices.Sorted(maps.Keys(e.leftover))
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = e.leftover[k]
	}
	return strings.Join(out, "; ")
}

// NewEnv builds an Env for this process; wire makes its Deps (the CLI's
// production wiring), from the Env itself.
func NewEnv(paths config.Paths, u *ui.UI, tty bool, wire func(*Env) Deps) *Env {
	e := &Env{
		Paths: paths, UI: u, Getenv: os.Getenv,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		TTY: tty, HostArch: runtime.GOARCH,
	}
	e.Deps = wire(e)
	return e
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

// GuestCalls is the number of guest round trips this process made.
func (e *Env) GuestCalls() int64 { return e.Deps.Calls() }

// Step runs fn as one step of output: a spinner or a line while it runs,
// then a tick or a cross; done, when set, is the label a success ends with.
func (e *Env) Step(label, done string, fn func() error) error {
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

// KubeconfigTarget is the kubeconfig marina merges into.
func (e *Env) KubeconfigTarget() string { return kubeconfig.Target(e.Getenv, e.Paths.Home) }

// KubeconfigFiles are the kubeconfigs kubectl reads, the target first.
func (e *Env) KubeconfigFiles() []string { return kubeconfig.Files(e.Getenv, e.Paths.Home) }

// KubeOwner is this marina home, as the kubeconfig entries and files it
// writes name it (kubeconfig.Owner); legacy lets the operation take those
// an older marina marked without a home: only for clusters the user named.
func (e *Env) KubeOwner(legacy bool) kubeconfig.Owner {
	home, err := filepath.Abs(e.Paths.Dir)
	if err != nil {
		home = e.Paths.Dir
	}
	return kubeconfig.Owner{Home: filepath.Clean(home), Legacy: legacy}
}

// WarnHost warns about the settings of the valid config l that this Mac
// cannot honour (vm.rosetta off Apple silicon): they stop nothing, so they
// are said once, as the command reads the config. Open calls it for the
// commands that read the config strictly (up, cluster create, …); the
// lenient ones (status, down, destroy, …) leave vm.rosetta alone.
func (e *Env) WarnHost(l config.Lenient) {
	if l.File == "" {
		l.File = e.Paths.Config
	}
	for _, w := range l.HostWarnings(e.HostArch) {
		e.UI.Warnf("%s", w)
	}
}
