package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"

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
	cfg, l, in, err := e.vmState(ctx)
	if err != nil {
		return err
	}
	name := cfg.VM.Name
	var steps []Step
	if in != nil && in.Status == vm.StatusRunning {
		steps = append(steps, Step{Do: "stop VM " + name, Reason: "clusters, images and caches are kept; `marina up` starts it again"})
	}
	var unroute []string
	if opts.RemoveRoute {
		if unroute, err = routeRemoval(ctx, e, cfg.Network.CIDR); err != nil {
			return err
		}
		if unroute != nil {
			steps = append(steps, Step{Do: "remove the host's route to " + cfg.Network.CIDR + ": " + run.Quote(unroute)})
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
	if in != nil && in.Status == vm.StatusRunning {
		if err := e.step("Stopping VM "+name, "Stopped VM "+name, func() error { return l.Stop(ctx, name) }); err != nil {
			return err
		}
	}
	return removeRoute(ctx, e, cfg.Network.CIDR, unroute)
}

// routeRemoval is the command that removes the kind network's host route,
// nil when there is none of exactly that network.
func routeRemoval(ctx context.Context, e *Env, cidr string) ([]string, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, nil // nothing marina could have routed
	}
	rs, err := e.Host().RouteStatus(ctx, p, netip.Addr{})
	if err != nil {
		return nil, err
	}
	return host.RouteRemove(rs), nil
}

func removeRoute(ctx context.Context, e *Env, cidr string, argv []string) error {
	if argv == nil {
		return nil
	}
	return e.step("Removing the host's route to "+cidr, "", func() error { return e.Host().Privileged(ctx, argv) })
}

// DestroyOptions are the flags of marina destroy.
type DestroyOptions struct {
	Yes    bool
	DryRun bool
}

// Destroy deletes the VM and everything in it. The registry cache on the
// Mac and the config are kept.
func Destroy(ctx context.Context, e *Env, opts DestroyOptions) error {
	cfg, l, in, err := e.vmState(ctx)
	if err != nil {
		return err
	}
	name := cfg.VM.Name
	sock := e.Paths.DockerSocket(name)
	var steps []Step
	if in != nil {
		steps = append(steps, Step{Do: fmt.Sprintf("delete VM %s (%s) and its disk, with every cluster and image in it", name, in.Status)})
	}
	if _, err := os.Lstat(sock); err == nil {
		steps = append(steps, Step{Do: "remove the Docker socket " + sock})
	}
	unroute, err := routeRemoval(ctx, e, cfg.Network.CIDR)
	if err != nil {
		return err
	}
	if unroute != nil {
		steps = append(steps, Step{Do: "remove the host's route to " + cfg.Network.CIDR + ": " + run.Quote(unroute)})
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
	// Lima leaves the forwarded socket behind when the VM goes away.
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", sock, err)
	}
	return removeRoute(ctx, e, cfg.Network.CIDR, unroute)
}

// Shell opens a shell in the VM, or runs args there.
func Shell(ctx context.Context, e *Env, args []string) error {
	cfg, l, in, err := e.vmState(ctx)
	if err != nil {
		return err
	}
	if in == nil || in.Status != vm.StatusRunning {
		return notRunning(cfg.VM.Name, in)
	}
	c := l.ShellCmd(cfg.VM.Name, args)
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
