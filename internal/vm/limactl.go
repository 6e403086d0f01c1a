// Package vm drives marina's Lima VM through the limactl CLI: its template,
// its lifecycle and the command channel into the guest.
package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/bcollard/marina/internal/run"
)

// Lima instance states as limactl reports them.
const (
	StatusRunning = "Running"
	StatusStopped = "Stopped"
	StatusBroken  = "Broken"
)

// MinLima is the oldest Lima marina works with.
var MinLima = [3]int{2, 0, 0}

const installHint = "install Lima 2.x: `brew install lima` (https://lima-vm.io/docs/installation/)"

// Limactl runs the limactl CLI against marina's own LIMA_HOME.
type Limactl struct {
	Bin      string
	LimaHome string
	Run      run.Runner
	// Stream, when set, receives limactl's progress output of long
	// operations (create, start).
	Stream io.Writer
	// Progress, when set, gets each boot stage limactl reports while an
	// instance boots (BootStage).
	Progress func(stage string)
}

// stream is where a booting limactl's output goes besides marina's
// buffers: Stream and the stages for Progress.
func (l *Limactl) stream() io.Writer {
	var ws []io.Writer
	if l.Stream != nil {
		ws = append(ws, l.Stream)
	}
	if l.Progress != nil {
		ws = append(ws, &stageWriter{fn: l.Progress})
	}
	switch len(ws) {
	case 0:
		return nil
	case 1:
		return ws[0]
	}
	return io.MultiWriter(ws...)
}

// FindLimactl locates limactl: $LIMACTL when set, else the PATH.
func FindLimactl(getenv func(string) string) (string, error) {
	if p := getenv("LIMACTL"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("limactl")
	if err != nil {
		return "", fmt.Errorf("limactl was not found on your PATH: marina runs its VM with Lima; %s", installHint)
	}
	return p, nil
}

// Instance is the part of `limactl list --json` marina reads.
type Instance struct {
	Name          string   `json:"name"`
	Status        string   `json:"status"`
	Dir           string   `json:"dir"`
	VMType        string   `json:"vmType"`
	Arch          string   `json:"arch"`
	CPUs          int      `json:"cpus"`
	Memory        int64    `json:"memory"`
	Disk          int64    `json:"disk"`
	SSHConfigFile string   `json:"sshConfigFile"`
	Message       string   `json:"message,omitempty"`
	Errors        []string `json:"errors,omitempty"`
}

func (l *Limactl) cmd(args ...string) run.Cmd {
	return run.Cmd{Args: append([]string{l.Bin}, args...), Env: []string{"LIMA_HOME=" + l.LimaHome}}
}

// Version returns limactl's version and checks it is new enough.
func (l *Limactl) Version(ctx context.Context) (string, error) {
	v, err := l.version(ctx)
	if err != nil {
		return "", err
	}
	if err := checkVersion(v); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]), nil
}

// FoundVersion returns limactl's version however old it is, and, apart,
// why marina cannot use it (marina version reports both).
func (l *Limactl) FoundVersion(ctx context.Context) (version string, tooOld, err error) {
	v, err := l.version(ctx)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]), checkVersion(v), nil
}

func (l *Limactl) version(ctx context.Context) ([3]int, error) {
	out, err := l.Run.Output(ctx, l.cmd("--version"))
	if err != nil {
		return [3]int{}, fmt.Errorf("cannot run limactl: %w; %s", err, installHint)
	}
	return parseVersion(string(out))
}

// checkVersion says why Lima v is too old for marina, if it is.
func checkVersion(v [3]int) error {
	if less(v, MinLima) {
		return fmt.Errorf("Lima %d.%d.%d is too old: marina needs Lima %d.%d or later; upgrade it: `brew upgrade lima`",
			v[0], v[1], v[2], MinLima[0], MinLima[1])
	}
	return nil
}

var versionRe = regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)`)

func parseVersion(s string) ([3]int, error) {
	m := versionRe.FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, fmt.Errorf("cannot read a version from `limactl --version` (%q): %s", strings.TrimSpace(s), installHint)
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, nil
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Get returns the instance called name, or nil when it does not exist.
func (l *Limactl) Get(ctx context.Context, name string) (*Instance, error) {
	// Listing every instance (rather than `list NAME`) makes "not there" an
	// empty answer instead of an error exit.
	out, err := l.Run.Output(ctx, l.cmd("list", "--json", "--tty=false"))
	if err != nil {
		return nil, fmt.Errorf("list Lima instances: %w", err)
	}
	insts, err := ParseList(out)
	if err != nil {
		return nil, err
	}
	for i := range insts {
		if insts[i].Name == name {
			return &insts[i], nil
		}
	}
	return nil, nil
}

// ParseList decodes `limactl list --json`: one JSON object per line.
func ParseList(out []byte) ([]Instance, error) {
	var insts []Instance
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // each line carries the whole config
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var in Instance
		if err := json.Unmarshal(line, &in); err != nil {
			return nil, fmt.Errorf("read `limactl list --json` output: %w", err)
		}
		insts = append(insts, in)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read `limactl list --json` output: %w", err)
	}
	return insts, nil
}

// Create makes and boots a new instance from template (passed on stdin).
func (l *Limactl) Create(ctx context.Context, name string, template []byte) error {
	c := l.cmd("start", "--tty=false", "--name="+name, "-")
	c.Stdin = bytes.NewReader(template)
	c.Stream = l.stream()
	if _, err := l.Run.Output(ctx, c); err != nil {
		return fmt.Errorf("create VM %s: %w", name, err)
	}
	return nil
}

// Edits are changes applied to a stopped instance as it starts.
type Edits struct {
	CPUs   int    // 0: unchanged
	Memory string // "": unchanged
	Disk   string // "": unchanged; Lima can only grow a disk
	// Set are yq expressions for the instance's lima.yaml (limactl
	// --set), such as PortForwardsEdit's.
	Set []string
}

func (e Edits) flags() []string {
	var f []string
	if e.CPUs > 0 {
		f = append(f, "--cpus="+strconv.Itoa(e.CPUs))
	}
	// limactl's --memory and --disk take a number of GiB; the config's
	// sizes carry their unit, so they go as lima.yaml values.
	if e.Memory != "" {
		f = append(f, "--set=.memory = "+strconv.Quote(e.Memory))
	}
	if e.Disk != "" {
		f = append(f, "--set=.disk = "+strconv.Quote(e.Disk))
	}
	for _, x := range e.Set {
		f = append(f, "--set="+x)
	}
	return f
}

// Start boots an existing instance, applying edits first.
func (l *Limactl) Start(ctx context.Context, name string, edits Edits) error {
	args := append([]string{"start", "--tty=false"}, edits.flags()...)
	c := l.cmd(append(args, name)...)
	c.Stream = l.stream()
	if _, err := l.Run.Output(ctx, c); err != nil {
		return fmt.Errorf("start VM %s: %w", name, err)
	}
	return nil
}

// Stop shuts an instance down.
func (l *Limactl) Stop(ctx context.Context, name string) error {
	if _, err := l.Run.Output(ctx, l.cmd("stop", "--tty=false", name)); err != nil {
		return fmt.Errorf("stop VM %s: %w", name, err)
	}
	return nil
}

// Delete removes an instance and its disk, stopping it first if needed.
func (l *Limactl) Delete(ctx context.Context, name string) error {
	if _, err := l.Run.Output(ctx, l.cmd("delete", "--tty=false", "--force", name)); err != nil {
		return fmt.Errorf("delete VM %s: %w", name, err)
	}
	return nil
}

// Shell runs an interactive `limactl shell` in VM name (args, when given,
// instead of a login shell) on the given streams. code is the exit status
// of what ran in the VM; err is set only when limactl itself could not run.
func (l *Limactl) Shell(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int, err error) {
	c := l.ShellCmd(name, args)
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return ee.ExitCode(), nil
		}
		return 0, err
	}
	return 0, nil
}

// ShellCmd is the command line of an interactive `limactl shell`.
func (l *Limactl) ShellCmd(name string, args []string) run.Cmd {
	a := []string{"shell", name}
	if len(args) > 0 {
		a = append(a, "--")
		a = append(a, args...)
	}
	return l.cmd(a...)
}
