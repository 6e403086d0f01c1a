package dockerctx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/vm"
)

// The variables of the docker CLI that choose the daemon.
const (
	envDockerHost    = "DOCKER_HOST"
	envDockerContext = "DOCKER_CONTEXT"
)

// EnvOptions are the flags of marina docker-env.
type EnvOptions struct {
	Unset bool
	// Shell is bash, zsh, fish or powershell; "" picks the one $SHELL
	// names (bash when it names another).
	Shell string
}

// Env is the shell commands that point docker at the VM's Docker
// (DOCKER_HOST), or with Unset that stop doing so, one line each. Only
// those go to stdout, which is meant for eval; what is wrong goes to
// stderr.
func Env(ctx context.Context, e *session.Env, opts EnvOptions) (session.Result, error) {
	sh, err := pickShell(opts.Shell, e.Getenv("SHELL"))
	if err != nil {
		return session.Result{}, err
	}
	self := "marina docker-env"
	if opts.Shell != "" {
		self += " --shell " + string(sh)
	}
	if opts.Unset {
		// Unset works without a readable config: vm.name only tells
		// whether DOCKER_HOST was marina's.
		if name, sock, err := dockerTarget(e, false); err == nil {
			if h := e.Getenv(envDockerHost); h != "" && !sameSocket(h, sock) {
				e.UI.Warnf("DOCKER_HOST is %s, not VM %s's socket: it is unset all the same", h, name)
			}
		}
		return session.Result{Lines: []string{
			sh.unset(envDockerHost),
			"# Stop pointing docker at marina's VM in this shell: run",
			"#   " + sh.apply(self+" --unset"),
		}}, nil
	}
	name, sock, err := dockerTarget(e, true)
	if err != nil {
		return session.Result{}, err
	}
	if err := checkPrintable(sock); err != nil {
		return session.Result{}, err
	}
	warnReach(ctx, e, name, sock)
	// The docker CLI turns TLS on for DOCKER_HOST when this is set (to
	// anything), and fails before it dials for want of certificates.
	if e.Getenv("DOCKER_TLS_VERIFY") != "" {
		e.UI.Warnf("DOCKER_TLS_VERIFY is set: docker would ask for TLS on VM %s's socket, which speaks none, and fail; unset it: `unset DOCKER_TLS_VERIFY`", name)
	}
	return session.Result{Lines: []string{
		sh.set(envDockerHost, "unix://"+sock),
		"# Docker in VM " + name + ". Point docker at it in this shell: run",
		"#   " + sh.apply(self),
		"# or in every shell, as Docker's current context: marina docker-context",
	}}, nil
}

// shell is a shell docker-env prints for.
type shell string

const (
	shBash       shell = "bash"
	shZsh        shell = "zsh"
	shFish       shell = "fish"
	shPowerShell shell = "powershell"
)

var shells = []shell{shBash, shZsh, shFish, shPowerShell}

// pickShell is flag's shell, or the one login names (bash when it names
// none of them).
func pickShell(flag, login string) (shell, error) {
	if flag != "" {
		for _, s := range shells {
			if flag == string(s) {
				return s, nil
			}
		}
		return "", session.Usagef("--shell %q is not a shell marina prints for: use bash, zsh, fish or powershell", flag)
	}
	switch filepath.Base(login) {
	case "zsh":
		return shZsh, nil
	case "fish":
		return shFish, nil
	case "pwsh", "powershell":
		return shPowerShell, nil
	}
	return shBash, nil
}

// set is the command that exports name=value.
func (s shell) set(name, value string) string {
	switch s {
	case shFish:
		return "set -gx " + name + " " + fishQuote(value) + ";"
	case shPowerShell:
		return "$Env:" + name + " = " + psQuote(value)
	}
	return "export " + name + "=" + run.ShellQuote(value)
}

// unset is the command that removes name from the environment.
func (s shell) unset(name string) string {
	switch s {
	case shFish:
		return "set -e " + name + ";"
	case shPowerShell:
		return "Remove-Item Env:\\" + name + " -ErrorAction SilentlyContinue"
	}
	return "unset " + name
}

// apply is how the shell runs what cmd prints.
func (s shell) apply(cmd string) string {
	switch s {
	case shFish:
		return cmd + " | source"
	case shPowerShell:
		return "& " + cmd + " | Invoke-Expression"
	}
	return `eval "$(` + cmd + `)"`
}

// fishQuote quotes v for fish: in single quotes only \ and ' are special.
func fishQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// psQuote quotes v for PowerShell: in single quotes nothing is special but
// the quote itself, doubled; PowerShell takes the typographic single
// quotes for one too.
func psQuote(v string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range v {
		switch r {
		case '\'', '\u2018', '\u2019', '\u201a', '\u201b':
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// checkPrintable refuses a socket path with a control character: no
// quoting keeps a newline out of a comment line, or a terminal's escape
// out of the user's screen.
func checkPrintable(sock string) error {
	for _, r := range sock {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("the Docker socket path %q holds a control character (from HOME): marina prints no shell code for it; set HOME to a plain path", sock)
		}
	}
	return nil
}

// dockerTarget is the VM's name and its forwarded Docker socket, from
// vm.name alone (problems elsewhere in the config are warnings when warn
// is set).
func dockerTarget(e *session.Env, warn bool) (name, sock string, err error) {
	v, err := e.VMName(warn)
	if errors.Is(err, config.ErrNotFound) && !e.Paths.Named {
		// No config yet: the VM up would make has the defaults' name.
		v, err = config.Lenient{Name: config.Default().VM.Name}, nil
	}
	if err != nil {
		return "", "", err
	}
	files, err := e.Paths.VM(v.Name)
	if err != nil {
		return "", "", err
	}
	return v.Name, files.DockerSocket, nil
}

// sameSocket reports whether the DOCKER_HOST value host is unix socket
// sock.
func sameSocket(host, sock string) bool {
	p, ok := strings.CutPrefix(host, "unix://")
	return ok && filepath.Clean(p) == filepath.Clean(sock)
}

// warnReach warns when nothing answers on the VM's socket yet, with what
// brings it up.
func warnReach(ctx context.Context, e *session.Env, name, sock string) {
	l, err := e.Deps.VM()
	if err == nil {
		in, gerr := l.Get(ctx, name)
		switch {
		case gerr != nil:
			err = gerr
		case in == nil:
			e.UI.Warnf("VM %s has not been created yet, so nothing answers on %s: run `marina up`", name, sock)
			return
		case in.Status != vm.StatusRunning:
			e.UI.Warnf("VM %s is %s, so nothing answers on %s: start it with `marina up`", name, in.Status, sock)
			return
		}
	}
	if err != nil {
		e.UI.Warnf("cannot tell whether VM %s runs (%v); `marina status` shows it", name, err)
	}
	st, serr := os.Stat(sock)
	switch {
	case errors.Is(serr, os.ErrNotExist):
		e.UI.Warnf("%s does not exist: the VM's Docker socket is not forwarded; `marina up` forwards it again (`marina doctor` tells why it went)", sock)
	case serr != nil:
		e.UI.Warnf("%s: %v", sock, serr)
	case st.Mode()&os.ModeSocket == 0:
		e.UI.Warnf("%s is not a socket (%s): move it away, then `marina up` forwards the VM's Docker socket there", sock, st.Mode().Type())
	default:
		d := net.Dialer{Timeout: 2 * time.Second}
		c, derr := d.DialContext(ctx, "unix", sock)
		if derr != nil {
			e.UI.Warnf("nothing answers on %s (%v): `marina up` forwards the VM's Docker socket again", sock, derr)
			return
		}
		c.Close()
	}
}

// ContextOptions are the flags of marina docker-context.
type ContextOptions struct {
	Unset  bool
	DryRun bool
}

// UseContext makes a Docker context named after the VM, with the VM's
// socket as its docker endpoint, and makes it Docker's current context;
// with Unset it makes default current again, if the current one is
// marina's.
func UseContext(ctx context.Context, e *session.Env, opts ContextOptions) (session.Result, error) {
	dir := Dir(e.Getenv, e.Paths.Home)
	if opts.Unset {
		return unsetDockerContext(e, dir, opts.DryRun)
	}
	name, sock, err := dockerTarget(e, true)
	if err != nil {
		return session.Result{}, err
	}
	if err := CheckName(name); err != nil {
		return session.Result{}, fmt.Errorf("vm.name %s cannot name a Docker context (%w): set another vm.name (`marina config edit`)", name, err)
	}
	st, err := Read(dir, name)
	if err != nil {
		return session.Result{}, err
	}
	host := "unix://" + sock
	p, err := st.Ensure(name, host, "Docker in marina's VM "+name)
	var foreign *ForeignError
	if errors.As(err, &foreign) {
		return session.Result{}, fmt.Errorf("%w, in %s: marina never overwrites a context it did not make. Remove or rename that one (`docker context rm %s`; `docker context export %s` keeps a copy first), or give marina's VM another vm.name (`marina config edit`)", err, st.Path(name), name, name)
	}
	if err != nil {
		return session.Result{}, err
	}
	warnReach(ctx, e, name, sock)
	warnDockerEnv(e, name)
	if opts.DryRun {
		var steps []session.Step
		switch {
		case p.Create:
			steps = append(steps, session.Step{Do: fmt.Sprintf("create Docker context %s with docker endpoint %s (%s)", name, host, st.Path(name))})
		case p.Write:
			steps = append(steps, session.Step{Do: fmt.Sprintf("change the docker endpoint of Docker context %s to %s", name, host), Reason: "it is " + orDash(p.Was)})
		}
		if p.Use {
			steps = append(steps, session.Step{Do: fmt.Sprintf("make %s Docker's current context in %s", name, st.ConfigFile), Reason: "it is " + p.From})
		}
		return session.Planned(steps, fmt.Sprintf("Docker context %s is current, with docker endpoint %s", name, host)), nil
	}
	if p.None() {
		return session.Said("Docker context %s is already current, with docker endpoint %s: nothing to change.", name, host), nil
	}
	if err := st.Apply(p); err != nil {
		return session.Result{}, fmt.Errorf("%w\nRun marina docker-context again once that is fixed: it carries on from where it stopped", err)
	}
	var res session.Result
	switch {
	case p.Create:
		res.Add("Created Docker context %s with docker endpoint %s.", name, host)
	case p.Write:
		res.Add("Changed the docker endpoint of Docker context %s to %s (it was %s).", name, host, orDash(p.Was))
	}
	if p.Use {
		res.Add("Docker's current context is now %s (it was %s): docker talks to VM %s. `marina docker-context --unset` switches back.", name, p.From, name)
	} else {
		res.Add("Docker context %s was already current.", name)
	}
	return res, nil
}

func unsetDockerContext(e *session.Env, dir string, dryRun bool) (session.Result, error) {
	st, err := Read(dir, Default)
	if err != nil {
		return session.Result{}, err
	}
	if env := e.Getenv(envDockerContext); env != "" && env != Default {
		e.UI.Warnf("DOCKER_CONTEXT is %s: it picks the context whatever %s says; unset it: `unset DOCKER_CONTEXT`", env, st.ConfigFile)
	}
	cur := st.Current
	if cur == Default {
		if dryRun {
			return session.Planned(nil, "Docker's current context is default"), nil
		}
		return session.Said("Docker's current context is already default: nothing to change."), nil
	}
	if c := st.CurrentContext; c == nil || !c.Marina {
		what := "a context marina did not make"
		if c == nil {
			what = "a context that does not exist"
		}
		return session.Said("Docker's current context is %s, %s: it is left as it is (`docker context use default` switches by hand).", cur, what), nil
	}
	if dryRun {
		return session.Planned([]session.Step{{Do: fmt.Sprintf("make default Docker's current context in %s", st.ConfigFile), Reason: "it is " + cur + ", which marina made; the context itself stays"}}, ""), nil
	}
	if err := st.UseDefault(); err != nil {
		return session.Result{}, err
	}
	return session.Said("Docker's current context is default again (it was %s). Context %s stays: `docker --context %s …` still reaches the VM; `docker context rm %s` removes it.", cur, cur, cur, cur), nil
}

// warnDockerEnv warns about the variables that would keep docker away
// from context name.
func warnDockerEnv(e *session.Env, name string) {
	if h := e.Getenv(envDockerHost); h != "" {
		e.UI.Warnf("DOCKER_HOST is set (%s): it overrides every Docker context, so docker does not use context %s while it is set; unset it: `unset DOCKER_HOST` (or `eval \"$(marina docker-env --unset)\"`)", h, name)
	}
	if c := e.Getenv(envDockerContext); c != "" && c != name {
		e.UI.Warnf("DOCKER_CONTEXT is %s: it picks that context over the current one; unset it: `unset DOCKER_CONTEXT`", c)
	}
}

func orDash(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
