package app

import (
	"context"
	"fmt"
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

// ExitError ends marina with Code and no message of its own (the command
// it ran already said what went wrong).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }
