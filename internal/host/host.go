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

	"github.com/bcollard/marina/internal/run"
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
	// Root is true when marina already runs as root (the lab): no sudo.
	Root bool
}

// New returns the Host for this process.
func New(r run.Runner, tty bool, stdin io.Reader, stderr io.Writer) *Host {
	return &Host{Run: r, TTY: tty, Stdin: stdin, Stderr: stderr, Root: os.Geteuid() == 0}
}

// Lookup returns the route the host uses today for the first host of want
// (nil when there is none).
func (h *Host) Lookup(ctx context.Context, want netip.Prefix) (*Route, error) {
	return h.lookup(ctx, FirstHost(want))
}

// RouteStatus looks up how the host routes want today; mine are the
// gateways marina recorded for it (see Classify).
func (h *Host) RouteStatus(ctx context.Context, want netip.Prefix, via netip.Addr, mine ...netip.Addr) (RouteStatus, error) {
	r, err := h.Lookup(ctx, want)
	if err != nil {
		return RouteStatus{}, err
	}
	return Classify(want, via, r, mine...), nil
}

// RouteFix is the command that makes the route right, nil when it is right
// or cannot be fixed by marina (shadowed by a more specific route).
func RouteFix(s RouteStatus) []string { return osCommands.fix(s) }

// DeleteCommand is the command that deletes the route to p through gw,
// for a person to run.
func DeleteCommand(p netip.Prefix, gw netip.Addr) []string { return osCommands.del(p, gw) }

// RouteRemove is the command that deletes the kind network's route, nil
// when there is no route of exactly that network.
func RouteRemove(s RouteStatus) []string { return osCommands.remove(s) }

// Privileged runs argv as root: directly when marina is root, else through
// sudo after printing the command. Without a terminal sudo may not ask, and
// the error gives the command to run by hand.
func (h *Host) Privileged(ctx context.Context, argv []string) error {
	if h.Root {
		_, err := h.Run.Output(ctx, run.Cmd{Args: argv})
		return err
	}
	fmt.Fprintf(h.Stderr, "marina runs: sudo %s\n", run.Quote(argv))
	if !h.TTY {
		_, err := h.Run.Output(ctx, run.Cmd{Args: append([]string{"sudo", "-n"}, argv...)})
		if err != nil {
			return fmt.Errorf("%w\nsudo needs a password and there is no terminal to ask on: run `sudo %s` yourself, then `marina up` again", err, run.Quote(argv))
		}
		return nil
	}
	cmd := exec.CommandContext(ctx, "sudo", argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = h.Stdin, h.Stderr, h.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("`sudo %s` failed (exit status %d)", run.Quote(argv), ee.ExitCode())
		}
		return fmt.Errorf("`sudo %s`: %w", run.Quote(argv), err)
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
