package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// DownOptions are the flags of marina down.
type DownOptions struct {
	DryRun      bool
	RemoveRoute bool
}

// Down stops the VM; it keeps everything in it.
func Down(ctx context.Context, e *Env, opts DownOptions) error {
	v, l, in, err := e.vmState(ctx, true)
	if err != nil {
		return err
	}
	name := v.Name
	running := in != nil && in.Status == vm.StatusRunning
	var steps []Step
	if running {
		steps = append(steps, Step{Do: "stop VM " + name, Reason: "clusters, images and caches are kept; `marina up` starts it again"})
	}
	var unroute []routeRemoval
	if opts.RemoveRoute {
		if unroute, err = routeRemovals(ctx, e, v); err != nil {
			return err
		}
		for _, r := range unroute {
			steps = append(steps, r.step())
		}
	}
	if len(steps) == 0 || opts.DryRun {
		state := "does not exist"
		if in != nil {
			state = "is " + in.Status
		}
		printPlan(e, steps, "VM "+name+" "+state)
		return nil
	}
	if running {
		if err := e.step("Stopping VM "+name, "Stopped VM "+name, func() error { return l.Stop(ctx, name) }); err != nil {
			return err
		}
	}
	return removeRoutes(ctx, e, unroute)
}

// routeRemoval is one host route marina made and will delete, with the
// record it is forgotten from.
type routeRemoval struct {
	status host.RouteStatus
	argv   []string
	made   *host.Made
}

func (r routeRemoval) step() Step {
	return Step{Do: "remove the host's route to " + r.status.Want.String() + " via " + r.status.Found.Gateway.String() + ": " + run.Quote(r.argv)}
}

// routeRemovals are the host routes to delete: of the networks marina
// routed (its record) and the config's network.cidr (when the config is
// valid), only a route of exactly that network through a gateway marina
// recorded when it added the route. Any other route is reported and left
// alone; the default route never qualifies.
func routeRemovals(ctx context.Context, e *Env, v config.Lenient) ([]routeRemoval, error) {
	made, err := host.LoadMade(e.Paths.Routes())
	if err != nil {
		return nil, err
	}
	nets := made.Networks()
	if v.Err == nil {
		p := netip.MustParsePrefix(v.Config.Network.CIDR) // validated
		if !slices.Contains(nets, p) {
			nets = append(nets, p)
		}
	} else {
		e.UI.Warnf("network.cidr is not read from an invalid config: only the routes marina recorded in %s are looked at", e.Paths.Routes())
	}
	h := e.Host()
	var out []routeRemoval
	for _, p := range nets {
		rs, err := h.RouteStatus(ctx, p, netip.Addr{}, made.Gateways(p)...)
		if err != nil {
			return nil, err
		}
		if argv := host.RouteRemove(rs); argv != nil {
			out = append(out, routeRemoval{status: rs, argv: argv, made: made})
		} else if rs.Found != nil && rs.Found.Dest == p {
			e.UI.Warnf("the host's route to %s (%s) is not one marina recorded making: it is left as it is (if it is a leftover: `sudo %s`)", p, rs.Found, run.Quote(host.DeleteCommand(p, rs.Found.Gateway)))
		}
	}
	return out, nil
}

func removeRoutes(ctx context.Context, e *Env, rs []routeRemoval) error {
	for _, r := range rs {
		err := e.step("Removing the host's route to "+r.status.Want.String(), "", func() error { return e.Host().Privileged(ctx, r.argv) })
		if err != nil {
			return err
		}
		if err := r.made.Forget(r.status.Want); err != nil {
			return err
		}
	}
	return nil
}

// DestroyOptions are the flags of marina destroy.
type DestroyOptions struct {
	Yes    bool
	DryRun bool
}

// Destroy deletes the VM and everything in it. The registry cache on the
// Mac and the config are kept.
func Destroy(ctx context.Context, e *Env, opts DestroyOptions) error {
	v, l, in, err := e.vmState(ctx, true)
	if err != nil {
		return err
	}
	name := v.Name
	sock := e.socket(name)
	var steps []Step
	if in != nil {
		steps = append(steps, Step{Do: fmt.Sprintf("delete VM %s (%s) and its disk, with every cluster and image in it", name, in.Status)})
	}
	removeSock := staleSocket(sock, in)
	if removeSock {
		steps = append(steps, Step{Do: "remove the Docker socket " + sock})
	}
	unroute, err := routeRemovals(ctx, e, v)
	if err != nil {
		return err
	}
	for _, r := range unroute {
		steps = append(steps, r.step())
	}
	if len(steps) == 0 {
		fmt.Fprintf(e.Stdout, "No changes: VM %s does not exist.\n", name)
		return nil
	}
	if opts.DryRun {
		printPlan(e, steps, "")
		return nil
	}
	if in != nil && !opts.Yes {
		if !e.TTY {
			return fmt.Errorf("marina destroy deletes VM %s with every cluster in it and needs a confirmation: run it in a terminal, or pass -y", name)
		}
		q := fmt.Sprintf("Delete VM %s and every cluster and image in it? (the registry cache in %s is kept)", name, e.Paths.RegistryCache())
		if !ui.Confirm(e.Stdin, e.Stderr, q) {
			return errors.New("nothing was deleted")
		}
	}
	if in != nil {
		if err := e.step("Deleting VM "+name, "Deleted VM "+name, func() error { return l.Delete(ctx, name) }); err != nil {
			return err
		}
	}
	// Lima leaves the forwarded socket behind when the VM goes away; one
	// that still answers belongs to another VM of the same name (another
	// MARINA_HOME) and stays.
	if removeSock || (in != nil && staleSocket(sock, nil)) {
		if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", sock, err)
		}
	}
	return removeRoutes(ctx, e, unroute)
}

// staleSocket reports whether the Docker socket at sock is a leftover
// marina may remove: a socket that nothing answers on. in is this home's
// VM: while it exists, its socket is its own.
func staleSocket(sock string, in *vm.Instance) bool {
	st, err := os.Lstat(sock)
	if err != nil || st.Mode()&os.ModeSocket == 0 || in != nil {
		return false
	}
	return !socketAnswers(sock)
}

// socketAnswers reports whether something accepts connections on sock.
func socketAnswers(sock string) bool {
	c, err := net.DialTimeout("unix", sock, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Shell opens a shell in the VM, or runs args there.
func Shell(ctx context.Context, e *Env, args []string) error {
	v, l, in, err := e.vmState(ctx, true)
	if err != nil {
		return err
	}
	name := v.Name
	if in == nil || in.Status != vm.StatusRunning {
		return notRunning(name, in)
	}
	c := l.ShellCmd(name, args)
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.Stdin, e.Stdout, e.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &ExitError{Code: ee.ExitCode()}
		}
		return err
	}
	return nil
}

// ExitError ends marina with Code and no message of its own (the command
// it ran already said what went wrong).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }
