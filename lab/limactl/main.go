// Command limactl is the lab's stand-in for Lima's limactl: it implements
// the part of Lima's CLI that marina uses, with the same arguments, output
// formats and instance folder layout, on top of the lab's namespaces.
//
// "Booting" an instance starts sshd and dockerd in the lab's guest
// namespaces (lab/lab _boot), writes the ssh.config Lima writes, and
// forwards the guest's Docker socket over ssh as Lima's hostagent does.
// Templates are loaded and validated with Lima's own code, so a template
// Lima would reject is rejected here too.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docker/go-units"
	"github.com/lima-vm/lima/v2/cmd/limactl/editflags"
	"github.com/lima-vm/lima/v2/pkg/limatype"
	"github.com/lima-vm/lima/v2/pkg/limayaml"
	"github.com/lima-vm/lima/v2/pkg/yqutil"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

const version = "2.1.4"

// lab is what lab/lab up writes next to this binary.
type lab struct {
	Script string `json:"script"`
	// Plumbing is the root-owned wrapper a non-root limactl runs the
	// script's plumbing through, with sudo.
	Plumbing     string `json:"plumbing"`
	GuestIP      string `json:"guestIP"`
	GuestUser    string `json:"guestUser"`
	IdentityFile string `json:"identityFile"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintf(os.Stderr, "level=fatal msg=%q\n", err.Error())
		os.Exit(1)
	}
}

type exitError struct{ code int }

func (e *exitError) Error() string { return "exit " + strconv.Itoa(e.code) }

func run(args []string) error {
	// Global flags Lima accepts anywhere before the command.
	var rest []string
	for _, a := range args {
		switch {
		case a == "--version" || a == "-v":
			fmt.Println("limactl version " + version)
			return nil
		case a == "--tty=false" || a == "-y" || a == "--yes" || a == "--debug":
		default:
			rest = append(rest, a)
		}
	}
	if len(rest) == 0 {
		return errors.New("usage: limactl COMMAND")
	}
	home := os.Getenv("LIMA_HOME")
	if home == "" {
		home = filepath.Join(os.Getenv("HOME"), ".lima")
	}
	l, err := loadLab()
	if err != nil {
		return err
	}
	f := &fake{home: home, lab: l}
	cmd, cargs := rest[0], rest[1:]
	switch cmd {
	case "list", "ls":
		return f.list(cargs)
	case "start":
		return f.start(cargs)
	case "stop":
		return f.stop(cargs)
	case "delete", "remove", "rm":
		return f.delete(cargs)
	case "shell":
		return f.shell(cargs)
	case "info":
		fmt.Printf(`{"version":%q,"limaHome":%q}`+"\n", version, home)
		return nil
	}
	return fmt.Errorf("unknown command %q for \"limactl\" (the lab's limactl implements list, start, stop, delete, shell, info)", cmd)
}

func loadLab() (lab, error) {
	exe, err := os.Executable()
	if err != nil {
		return lab{}, err
	}
	b, err := os.ReadFile(exe + ".lab")
	if err != nil {
		return lab{}, fmt.Errorf("this limactl belongs to the marina lab and needs %s.lab (run lab/lab up): %w", exe, err)
	}
	var l lab
	return l, json.Unmarshal(b, &l)
}

type fake struct {
	home string
	lab  lab
}

func (f *fake) dir(name string) string { return filepath.Join(f.home, name) }

// instance is one entry of `limactl list --json`, with Lima's field names.
type instance struct {
	Name          string `json:"name"`
	Hostname      string `json:"hostname"`
	Status        string `json:"status"`
	Dir           string `json:"dir"`
	VMType        string `json:"vmType"`
	Arch          string `json:"arch"`
	CPUs          int    `json:"cpus"`
	Memory        int64  `json:"memory"`
	Disk          int64  `json:"disk"`
	SSHLocalPort  int    `json:"sshLocalPort"`
	SSHConfigFile string `json:"sshConfigFile"`
	HostAgentPID  int    `json:"hostAgentPID,omitempty"`
	LimaVersion   string `json:"limaVersion"`
}

func (f *fake) inspect(name string) (*instance, *limatype.LimaYAML, error) {
	dir := f.dir(name)
	b, err := os.ReadFile(filepath.Join(dir, "lima.yaml"))
	if err != nil {
		return nil, nil, err
	}
	y, err := limayaml.Load(context.Background(), b, filepath.Join(dir, "lima.yaml"))
	if err != nil {
		return nil, nil, err
	}
	in := &instance{
		Name: name, Hostname: "lima-" + name, Status: "Stopped", Dir: dir,
		VMType: deref(y.VMType), Arch: deref(y.Arch), CPUs: derefInt(y.CPUs),
		SSHLocalPort: 22, SSHConfigFile: filepath.Join(dir, "ssh.config"), LimaVersion: version,
	}
	in.Memory, _ = units.RAMInBytes(deref(y.Memory))
	in.Disk, _ = units.RAMInBytes(deref(y.Disk))
	if pid, ok := alive(filepath.Join(dir, "ha.pid")); ok {
		in.Status, in.HostAgentPID = "Running", pid
	}
	return in, y, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(i *int) int {
	if i == nil {
		return 0
	}
	return *i
}

func alive(pidfile string) (int, bool) {
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false
	}
	// EPERM: the process is there, another user's.
	err = syscall.Kill(pid, 0)
	return pid, err == nil || errors.Is(err, syscall.EPERM)
}

func (f *fake) names() []string {
	ents, _ := os.ReadDir(f.home)
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), "_") {
			if _, err := os.Stat(filepath.Join(f.home, e.Name(), "lima.yaml")); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

func (f *fake) list(args []string) error {
	asJSON := false
	var want []string
	for _, a := range args {
		switch {
		case a == "--json" || a == "--format=json":
			asJSON = true
		case strings.HasPrefix(a, "-"):
		default:
			want = append(want, a)
		}
	}
	names := f.names()
	if len(want) > 0 {
		var sel []string
		for _, w := range want {
			found := false
			for _, n := range names {
				if n == w {
					sel, found = append(sel, n), true
				}
			}
			if !found {
				fmt.Fprintf(os.Stderr, "level=warning msg=\"No instance matching %s found.\"\n", w)
				return &exitError{1}
			}
		}
		names = sel
	}
	if len(names) == 0 {
		fmt.Fprintln(os.Stderr, `level=warning msg="No instance found. Run `+"`limactl create`"+` to create an instance."`)
		return nil
	}
	if !asJSON {
		fmt.Printf("%-10s %-9s %-6s %-6s %-8s %-8s\n", "NAME", "STATUS", "ARCH", "CPUS", "MEMORY", "DISK")
	}
	for _, n := range names {
		in, _, err := f.inspect(n)
		if err != nil {
			return err
		}
		if asJSON {
			b, _ := json.Marshal(in)
			fmt.Println(string(b))
		} else {
			fmt.Printf("%-10s %-9s %-6s %-6d %-8s %-8s\n", in.Name, in.Status, in.Arch, in.CPUs, units.BytesSize(float64(in.Memory)), units.BytesSize(float64(in.Disk)))
		}
	}
	return nil
}

func (f *fake) start(args []string) error {
	// Lima's own flag set and its translation of the edit flags into yq
	// expressions: --cpus, --memory (GiB), --disk (GiB), --set, … parse
	// or fail here exactly as they do in limactl start.
	cmd := &cobra.Command{Use: "start"}
	cmd.Flags().String("name", "", "")
	cmd.Flags().Bool("tty", false, "")
	editflags.RegisterCreate(cmd, "")
	if err := cmd.ParseFlags(args); err != nil {
		return err
	}
	fl := cmd.Flags()
	name, _ := fl.GetString("name")
	var source string
	if rest := fl.Args(); len(rest) > 0 {
		source = rest[0]
	}
	if source == "-" || strings.HasSuffix(source, ".yaml") {
		if name == "" {
			return errors.New("--name is required when the template comes from stdin")
		}
		var b []byte
		var err error
		if source == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(source)
		}
		if err != nil {
			return err
		}
		exprs, err := editflags.YQExpressions(fl, true, nil)
		if err != nil {
			return err
		}
		if len(exprs) > 0 {
			if b, err = yqutil.EvaluateExpression(context.Background(), yqutil.Join(exprs), b); err != nil {
				return err
			}
		}
		if err := f.create(name, b); err != nil {
			return err
		}
	} else {
		name = source
		if _, err := os.Stat(filepath.Join(f.dir(name), "lima.yaml")); err != nil {
			return fmt.Errorf("instance %q does not exist, run `limactl create %s` to create a new instance", name, name)
		}
		exprs, err := editflags.YQExpressions(fl, false, nil)
		if err != nil {
			return err
		}
		if err := f.set(name, exprs); err != nil {
			return err
		}
	}
	return f.boot(name)
}

func (f *fake) create(name string, template []byte) error {
	dir := f.dir(name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("instance %q already exists (%q)", name, dir)
	}
	y, err := limayaml.Load(context.Background(), template, filepath.Join(dir, "lima.yaml"))
	if err != nil {
		return err
	}
	if err := limayaml.Validate(y, true); err != nil {
		return fmt.Errorf("the template of %q is invalid: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "level=info msg=\"Creating an instance %q\" instance=%s\n", name, name)
	return os.WriteFile(filepath.Join(dir, "lima.yaml"), template, 0o644)
}

// set applies the edit flags' yq expressions to an existing instance's
// lima.yaml as Lima does (limactl start's
// applyYQExpressionToExistingInstance): Lima's yq evaluation, then its
// loader and validator, then the file is written — whether or not the
// instance runs (a running one then only says it is running already).
func (f *fake) set(name string, exprs []string) error {
	if len(exprs) == 0 {
		return nil
	}
	p := filepath.Join(f.dir(name), "lima.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	yq := yqutil.Join(exprs)
	out, err := yqutil.EvaluateExpression(context.Background(), yq, b)
	if err != nil {
		return fmt.Errorf("failed to apply yq expression %q to instance %q: %w", yq, name, err)
	}
	y, err := limayaml.Load(context.Background(), out, p)
	if err != nil {
		return err
	}
	if err := limayaml.Validate(y, true); err != nil {
		return fmt.Errorf("failed to apply yq expression %q to instance %q: the YAML is invalid: %w", yq, name, err)
	}
	return os.WriteFile(p, out, 0o644)
}

// forwardsLoopback is Lima's hostagent's decision for a TCP listener on
// the guest's 127.0.0.1 at port (pkg/hostagent's forwardingAddresses): the
// rules are the two ssh ignore rules, the instance's (defaults filled by
// Lima's loader) and a default forward of 127.0.0.1; the first that
// matches decides.
func forwardsLoopback(rules []limatype.PortForward, port int) bool {
	all := []limatype.PortForward{{GuestIP: net.IPv4zero, GuestPort: 22, Ignore: true}}
	all = append(all, rules...)
	all = append(all, limatype.PortForward{})
	loopback := net.IPv4(127, 0, 0, 1)
	for i := range all {
		r := all[i]
		if i == 0 || i == len(all)-1 {
			limayaml.FillPortForwardDefaults(&r, "", limatype.User{}, nil)
		}
		if r.GuestSocket != "" || (r.Proto != limatype.ProtoAny && r.Proto != limatype.ProtoTCP) {
			continue
		}
		if port < r.GuestPortRange[0] || port > r.GuestPortRange[1] {
			continue
		}
		if !loopback.Equal(r.GuestIP) && !(r.GuestIP.IsUnspecified() && !*r.GuestIPMustBeZero) {
			continue
		}
		return !r.Ignore
	}
	return false
}

// The API ports marina's clusters publish (slots 1–99). Lima mirrors every
// port a guest process listens on as it appears; this stand-in forwards
// these from the start, which is all marina's loopback mode relies on.
const firstAPIPort, lastAPIPort = 7001, 7099

func (f *fake) sshConfig(name string) string {
	dir := f.dir(name)
	return fmt.Sprintf(`# This SSH config file can be passed to 'ssh -F'.
# This file is created by the marina lab's limactl, the way Lima writes it.
Host lima-%s
  IdentityFile "%s"
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  NoHostAuthenticationForLocalhost yes
  PreferredAuthentications publickey
  Compression no
  BatchMode yes
  IdentitiesOnly yes
  Ciphers "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
  User %s
  ControlMaster auto
  ControlPath "%s/ssh.sock"
  ControlPersist yes
  Hostname %s
  Port 22
`, name, f.lab.IdentityFile, f.lab.GuestUser, dir, f.lab.GuestIP)
}

func (f *fake) boot(name string) error {
	in, y, err := f.inspect(name)
	if err != nil {
		return err
	}
	if in.Status == "Running" {
		fmt.Fprintf(os.Stderr, "level=info msg=\"The instance %q is already running. Run `limactl shell %s` to open the shell.\"\n", name, name)
		return nil
	}
	dir := f.dir(name)
	fmt.Fprintf(os.Stderr, "level=info msg=\"Starting the instance %q with VM driver %q\"\n", name, in.VMType)
	// Lima's host agent reports each boot requirement as it waits for it
	// (its log lines, quoted as logrus quotes them); marina shows them.
	hostagent := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "level=info msg=%q\n", "[hostagent] "+fmt.Sprintf(format, args...))
	}
	requirement := func(kind string, i, n int, desc string, fn func() error) error {
		hostagent("Waiting for the %s requirement %d of %d: %q", kind, i, n, desc)
		if err := fn(); err != nil {
			return err
		}
		hostagent("The %s requirement %d of %d is satisfied", kind, i, n)
		return nil
	}
	// Lima's hostagent starts its DNS server before the VM; the guest's
	// only nameserver (lab/lab vm_resolver).
	if err := f.labCmd(append([]string{"_resolver"}, resolverHosts(name, y)...)...); err != nil {
		return fmt.Errorf("start the host resolver: %w", err)
	}
	if err := requirement("essential", 1, 2, "ssh", func() error { return f.labCmd("_boot") }); err != nil {
		return fmt.Errorf("boot the lab guest: %w", err)
	}
	_ = requirement("essential", 2, 2, "user session is ready for ssh", func() error { return nil })
	// Lima shares these folders over virtiofs; the lab bind-mounts them
	// into the guest's mount namespace.
	for _, m := range y.Mounts {
		mode := "ro"
		if m.Writable != nil && *m.Writable {
			mode = "rw"
		}
		mp := m.Location
		if m.MountPoint != nil && *m.MountPoint != "" {
			mp = *m.MountPoint
		}
		if err := f.labCmd("_mount", m.Location, mp, mode); err != nil {
			return fmt.Errorf("mount %s: %w", m.Location, err)
		}
	}
	cfg := filepath.Join(dir, "ssh.config")
	if err := os.WriteFile(cfg, []byte(f.sshConfig(name)), 0o600); err != nil {
		return err
	}
	// Lima's hostagent forwards unix sockets with ssh -L; so does this one.
	fwd := []string{"-F", cfg, "-N", "-T", "-o", "ControlMaster=no", "-o", "ControlPath=none",
		"-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes", "-o", "ServerAliveInterval=5"}
	var socks []string
	for _, r := range y.PortForwards {
		if r.GuestSocket != "" && r.HostSocket != "" && !r.Reverse {
			fwd = append(fwd, "-L", r.HostSocket+":"+r.GuestSocket)
			socks = append(socks, r.HostSocket)
		}
	}
	for p := firstAPIPort; p <= lastAPIPort; p++ {
		if forwardsLoopback(y.PortForwards, p) {
			fwd = append(fwd, "-L", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", p, p))
		}
	}
	// A rule for one port of the guest's 127.0.0.1 (marina's push
	// registry's) is forwarded as it says, where Lima's walk decides so.
	for _, r := range y.PortForwards {
		g := r.GuestPortRange
		if r.Ignore || r.GuestSocket != "" || g[0] == 0 || g[0] != g[1] || (g[0] >= firstAPIPort && g[0] <= lastAPIPort) {
			continue
		}
		if forwardsLoopback(y.PortForwards, g[0]) {
			host := r.HostPortRange[0]
			if host == 0 {
				host = g[0]
			}
			fwd = append(fwd, "-L", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", host, g[0]))
		}
	}
	fwd = append(fwd, "lima-"+name)
	logf, err := os.OpenFile(filepath.Join(dir, "ha.stderr.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("ssh", fwd...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlive this limactl, as Lima's hostagent does
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range socks {
		for {
			if _, err := os.Stat(s); err == nil {
				break
			}
			if syscall.Kill(pid, 0) != nil || time.Now().After(deadline) {
				b, _ := os.ReadFile(filepath.Join(dir, "ha.stderr.log"))
				return fmt.Errorf("forwarding %s failed:\n%s", s, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ha.pid"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return err
	}
	_ = requirement("final", 1, 1, "boot scripts must have finished", func() error { return nil })
	fmt.Fprintf(os.Stderr, "level=info msg=\"READY. Run `limactl shell %s` to open the shell.\"\n", name)
	return nil
}

// labHostName is what lab/lab vm_resolver accepts as a name.
var labHostName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)

// The user-mode network's addresses Lima's host resolver answers with
// (pkg/networks: SlirpGateway is the Mac, SlirpIPAddress the guest).
const (
	slirpGateway   = "192.168.5.2"
	slirpIPAddress = "192.168.5.15"
)

// resolverHosts is what Lima's hostagent answers, NAME=ADDRESS, sorted:
// hostResolver.hosts with host.lima.internal (the Mac) and the instance's
// host name added, each name a value names resolved to its address (as
// Lima's lookupCnameToHost does within the table); none when the resolver
// is off. A name Lima would resolve on the Mac is left out: nothing here
// answers for the Mac's DNS.
func resolverHosts(name string, y *limatype.LimaYAML) []string {
	if y.HostResolver.Enabled == nil || !*y.HostResolver.Enabled {
		return nil
	}
	hosts := map[string]string{}
	for k, v := range y.HostResolver.Hosts {
		hosts[strings.ToLower(k)] = strings.ToLower(v)
	}
	hosts["host.lima.internal"] = slirpGateway
	hosts["lima-"+name] = slirpIPAddress
	var out []string
	for k, v := range hosts {
		for i := 0; i < 8 && net.ParseIP(v) == nil && hosts[v] != ""; i++ {
			v = hosts[v]
		}
		// The lab's resolver answers IPv4 for plain host names only.
		ip := net.ParseIP(v)
		if ip == nil || ip.To4() == nil || !labHostName.MatchString(k) {
			fmt.Fprintf(os.Stderr, "limactl (lab): the lab's host resolver does not answer %s (%s)\n", k, v)
			continue
		}
		out = append(out, k+"="+ip.To4().String())
	}
	sort.Strings(out)
	return out
}

func (f *fake) labCmd(args ...string) error {
	argv := append([]string{f.lab.Script}, args...)
	// The lab's plumbing needs root. Run by the lab's Mac user (lab/lab
	// mac-user), this limactl gets it through the lab's sudo rule for its
	// wrapper alone; Lima on a Mac needs no root for a VM.
	if os.Geteuid() != 0 {
		argv = append([]string{"sudo", "-n", f.lab.Plumbing}, args...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func (f *fake) halt(name string) error {
	f.unplug(name)
	return f.labCmd("_halt")
}

// unplug is the Mac's side of a stopping VM: its hostagent, the shared ssh
// connection and the forwarded sockets go.
func (f *fake) unplug(name string) {
	dir := f.dir(name)
	if pid, ok := alive(filepath.Join(dir, "ha.pid")); ok {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	// Close the shared ssh connection, as a stopping VM does.
	_ = exec.Command("ssh", "-F", filepath.Join(dir, "ssh.config"), "-O", "exit", "lima-"+name).Run()
	_, y, err := f.inspect(name)
	if err == nil {
		for _, r := range y.PortForwards {
			if r.HostSocket != "" {
				_ = os.Remove(r.HostSocket)
			}
		}
	}
	_ = os.Remove(filepath.Join(dir, "ha.pid"))
	_ = os.Remove(filepath.Join(dir, "ssh.sock"))
}

func (f *fake) stop(args []string) error {
	name := lastArg(args)
	in, _, err := f.inspect(name)
	if err != nil {
		return fmt.Errorf("unable to load instance %s: %w", name, err)
	}
	if in.Status != "Running" {
		return fmt.Errorf("expected status %q, got %q", "Running", in.Status)
	}
	fmt.Fprintf(os.Stderr, "level=info msg=\"Sending SIGINT to hostagent process %d\"\n", in.HostAgentPID)
	return f.halt(name)
}

func (f *fake) delete(args []string) error {
	force := false
	var names []string
	for _, a := range args {
		switch a {
		case "-f", "--force":
			force = true
		default:
			if !strings.HasPrefix(a, "-") {
				names = append(names, a)
			}
		}
	}
	for _, name := range names {
		in, _, err := f.inspect(name)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "level=warning msg=\"Ignoring non-existent instance\" instance=%s\n", name)
			continue
		}
		if err != nil {
			return err
		}
		if in.Status == "Running" {
			if !force {
				return fmt.Errorf("expected status %q, got %q (maybe use `limactl stop -f`?)", "Stopped", in.Status)
			}
			// Lima kills a running VM it is forced to delete; _wipe
			// does so to the guest.
			f.unplug(name)
		}
		// A deleted instance loses its disk: the guest starts over.
		if err := f.labCmd("_wipe"); err != nil {
			return err
		}
		if err := os.RemoveAll(f.dir(name)); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "level=info msg=\"Deleted %q (%q)\" instance=%s\n", name, f.dir(name), name)
	}
	return nil
}

func (f *fake) shell(args []string) error {
	var name string
	var cmdArgs []string
	workdir := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if name == "" {
			switch {
			case strings.HasPrefix(a, "--workdir="):
				workdir = strings.TrimPrefix(a, "--workdir=")
				continue
			case a == "--workdir" && i+1 < len(args):
				workdir = args[i+1]
				i++
				continue
			case strings.HasPrefix(a, "-"):
				continue
			}
			name = a
			continue
		}
		if a == "--" && len(cmdArgs) == 0 {
			continue
		}
		cmdArgs = append(cmdArgs, a)
	}
	in, _, err := f.inspect(name)
	if err != nil {
		return fmt.Errorf("unable to load instance %s: %w", name, err)
	}
	if in.Status != "Running" {
		return fmt.Errorf("instance %q is stopped, run `limactl start %s` to start the instance", name, name)
	}
	// Lima runs the command in a login shell, each argument quoted.
	remote := `exec "$SHELL" --login`
	if len(cmdArgs) > 0 {
		q := make([]string, len(cmdArgs))
		for i, a := range cmdArgs {
			q[i] = shellQuote(a)
		}
		remote = `exec "$SHELL" --login -c ` + shellQuote(strings.Join(q, " "))
	}
	if workdir != "" {
		remote = "cd " + shellQuote(workdir) + " || exit 1 ; " + remote
	}
	sshArgs := []string{"-F", filepath.Join(f.dir(name), "ssh.config")}
	if term.IsTerminal(int(os.Stdout.Fd())) {
		sshArgs = append(sshArgs, "-t")
	}
	sshArgs = append(sshArgs, "lima-"+name, "--", remote)
	cmd := exec.Command("ssh", sshArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &exitError{ee.ExitCode()}
		}
		return err
	}
	return nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func lastArg(args []string) string {
	for i := len(args) - 1; i >= 0; i-- {
		if !strings.HasPrefix(args[i], "-") {
			return args[i]
		}
	}
	return ""
}
