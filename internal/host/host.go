package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/ui"
)

// Host changes the Mac's routing table. Commands that need root go through
// sudo, and only when something must change; the exact command is printed
// before sudo asks for a password.
type Host struct {
	Run run.Runner
	// TTY is true when sudo may ask for a password on the terminal.
	TTY    bool
	Stdin  io.Reader
	Stderr io.Writer
	// Root is true when marina already runs as root: no sudo.
	Root bool
	// UI, when set, is the progress on the terminal: sudo gets the
	// terminal to itself (ui.UI.Aside) while it may ask for a password.
	UI *ui.UI
	// Style is the routing tool marina drives; empty means the platform's.
	Style Style
	// styleErr is why the setting of StyleEnv was refused: every lookup
	// and change then fails with it rather than guess.
	styleErr error
}

// Style is how a host's routing table is read and changed.
type Style string

// The styles marina knows.
const (
	// BSD is macOS: route(8) at /sbin/route, and its `route -n get` output.
	BSD Style = "bsd"
	// Linux is ip(8).
	Linux Style = "linux"
)

// StyleEnv overrides the platform's style (darwin: bsd, anything else:
// linux). The lab sets MARINA_ROUTE_STYLE=bsd for the Mac user it runs
// marina as, so that on Linux marina drives the lab's BSD route(8)
// stand-in at /sbin/route with the very code a Mac runs (lab/README.md).
const StyleEnv = "MARINA_ROUTE_STYLE"

// New returns the Host for this process. Its style is the platform's
// unless StyleEnv says otherwise; a value it does not know makes Lookup
// and Privileged fail with the reason (New itself cannot fail).
func New(r run.Runner, tty bool, stdin io.Reader, stderr io.Writer) *Host {
	h := &Host{Run: r, TTY: tty, Stdin: stdin, Stderr: stderr, Root: os.Geteuid() == 0}
	h.Style, h.styleErr = chooseStyle(runtime.GOOS, os.Getenv(StyleEnv))
	return h
}

// chooseStyle is the style for platform goos and the setting of StyleEnv.
func chooseStyle(goos, setting string) (Style, error) {
	switch Style(setting) {
	case BSD, Linux:
		return Style(setting), nil
	case "":
		return platformStyle(goos), nil
	}
	return platformStyle(goos), fmt.Errorf("%s=%q is not a route style marina knows: set it to bsd (route(8), as on a Mac) or linux (ip(8)), or unset it to use this platform's (%s)", StyleEnv, setting, platformStyle(goos))
}

func platformStyle(goos string) Style {
	if goos == "darwin" {
		return BSD
	}
	return Linux
}

// tool is the style's way of reading and changing routes.
func (h *Host) tool() routeTool {
	s := h.Style
	if s == "" {
		s = platformStyle(runtime.GOOS)
	}
	if s == BSD {
		return bsdTool
	}
	return linuxTool
}

// routeTool is one style: the commands that change a route, how the route
// for an address is looked up, and how a change that "succeeded" tells
// that it did not.
type routeTool struct {
	commands
	lookup func(ctx context.Context, r run.Runner, addr netip.Addr) (*Route, error)
	// list reads the whole IPv4 routing table.
	list func(ctx context.Context, r run.Runner) ([]Route, error)
	// refused returns what the command said when it refused the change
	// although it exited 0 ("" when it did not).
	refused func(said string) string
}

// Lookup returns the route the host uses today for the first host of want
// (nil when there is none).
func (h *Host) Lookup(ctx context.Context, want netip.Prefix) (*Route, error) {
	if h.styleErr != nil {
		return nil, h.styleErr
	}
	return h.tool().lookup(ctx, h.Run, FirstHost(want))
}

// RouteFix is the command that makes the route right, nil when it is right
// or cannot be fixed by marina (shadowed by a more specific route).
func (h *Host) RouteFix(s RouteStatus) []string { return h.tool().fix(s) }

// DeleteCommand is the command that deletes the route to p through gw,
// for a person to run.
func (h *Host) DeleteCommand(p netip.Prefix, gw netip.Addr) []string { return h.tool().del(p, gw) }

// RouteRemove is the command that deletes the kind network's route, nil
// when there is no route of exactly that network.
func (h *Host) RouteRemove(s RouteStatus) []string { return h.tool().remove(s) }

// Privileged runs argv as root: directly when marina is root, else through
// sudo after printing the command. Without a terminal sudo may not ask, and
// the error gives the command to run by hand.
func (h *Host) Privileged(ctx context.Context, argv []string) error {
	if h.styleErr != nil {
		return h.styleErr
	}
	// What the command says, to catch route(8) refusing a change with
	// exit status 0.
	var said run.Buffer
	if h.Root {
		if _, err := h.Run.Output(ctx, run.Cmd{Args: argv, Stream: &said}); err != nil {
			return err
		}
		return h.refused(argv, said.String())
	}
	back := h.aside(argv)
	defer back()
	// sudo -n first, on a terminal too: with marina's sudoers drop-in
	// (marina sudoers), or sudo's own cached credentials, nothing asks.
	var first run.Buffer
	_, err := h.Run.Output(ctx, run.Cmd{Args: append([]string{"sudo", "-n"}, argv...), Stream: &first})
	var re *run.Error
	bySudo := errors.As(err, &re) && sudoSaid(re.Stderr)
	switch {
	case err == nil:
		return h.refused(argv, first.String())
	case !bySudo:
		return err // the command's own failure, with what it said
	case h.TTY && mustAsk(re.Stderr):
		// sudo did not run it: ask on the terminal.
	case h.TTY:
		// sudo said something else and may have run it: not again.
		return err
	case strings.Contains(re.Stderr, "sudo: a password is required"):
		return fmt.Errorf("%w\nsudo needs a password and there is no terminal to ask on: run `sudo %s` yourself, then the same marina command again (`marina sudoers --install` lets marina run it without one)", err, run.Quote(argv))
	default:
		// sudo itself refused (not in sudoers, requiretty, …).
		return fmt.Errorf("%w\nsudo refused to run it without a terminal: run `sudo %s` yourself, then the same marina command again", err, run.Quote(argv))
	}
	cmd := exec.CommandContext(ctx, "sudo", argv...)
	// One writer for both, so that exec writes to it from one goroutine.
	out := io.MultiWriter(h.Stderr, &said)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = h.Stdin, out, out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("`sudo %s` failed (exit status %d)", run.Quote(argv), ee.ExitCode())
		}
		return fmt.Errorf("`sudo %s`: %w", run.Quote(argv), err)
	}
	return h.refused(argv, said.String())
}

// aside says, on a line of its own, what sudo is about to run, with the
// spinner stopped until back: sudo's password prompt must stay on the
// screen while it waits.
func (h *Host) aside(argv []string) (back func()) {
	say := "marina runs: sudo " + run.Quote(argv)
	if h.UI == nil {
		fmt.Fprintln(h.Stderr, say)
		return func() {}
	}
	return h.UI.Aside(say)
}

// mustAsk reports whether sudo -n refused for want of a password or a
// terminal, before running anything.
func mustAsk(stderr string) bool {
	for _, m := range []string{"a password is required", "a terminal is required", "you must have a tty"} {
		if strings.Contains(stderr, m) {
			return true
		}
	}
	return false
}

// sudoSaid reports whether sudo itself complained: its messages start
// with "sudo:", route(8)'s with "route:".
func sudoSaid(stderr string) bool {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "sudo:") {
			return true
		}
	}
	return false
}

// refused is the error for a command that exited 0 and yet said it
// changed nothing.
func (h *Host) refused(argv []string, said string) error {
	if msg := h.tool().refused(said); msg != "" {
		return fmt.Errorf("`%s` changed nothing (it exits 0 even then):\n%s\n`marina status` shows the route the host has now", run.Quote(argv), run.Tail(msg, 5))
	}
	return nil
}

// SourceFor is the address this host sends from to reach addr: the Mac's
// own address on the vzNAT network, the one the VM sees its packets come
// from. Nothing is sent (a UDP socket only picks a route).
func SourceFor(addr netip.Addr) (netip.Addr, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 9)))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("find this host's address towards the VM (%s): %w", addr, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}
