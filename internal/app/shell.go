package app

import (
	"context"
)

// Shell opens a shell in the VM, or runs args there.
func Shell(ctx context.Context, e *Env, args []string) error {
	s, err := Open(ctx, e, Needs{Config: vmOnly, Running: true})
	if err != nil {
		return err
	}
	defer s.Close()
	code, err := s.VM.Shell(ctx, s.Name, args, e.Stdin, e.Stdout, e.Stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}
