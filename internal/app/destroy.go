package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// DestroyOptions are the flags of marina destroy.
type DestroyOptions struct {
	Yes    bool
	DryRun bool
}

// Destroy deletes the VM and everything in it. The registry cache on the
// Mac and the config are kept.
func Destroy(ctx context.Context, e *Env, opts DestroyOptions) error {
	s, err := Open(ctx, e, Needs{Config: vmOnly})
	if err != nil {
		return err
	}
	defer s.Close()
	name, in := s.Name, s.Instance
	sock := s.socket()
	var steps []Step
	if in != nil {
		steps = append(steps, Step{Do: fmt.Sprintf("delete VM %s (%s) and its disk, with every cluster and image in it", name, in.Status)})
	}
	removeSock := staleSocket(sock, in)
	if removeSock {
		steps = append(steps, Step{Do: "remove the Docker socket " + sock})
	}
	unroute, err := routeRemovals(ctx, s)
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
		if err := e.step("Deleting VM "+name, "Deleted VM "+name, func() error { return s.VM.Delete(ctx, name) }); err != nil {
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
	return removeRoutes(ctx, s, unroute)
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
