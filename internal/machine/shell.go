package machine

import (
	"context"

	"github.com/bcollard/marina/internal/session"
)

// Shell opens a shell in the VM, or runs args there.
func Shell(ctx context.Context, e *session.Env, args []string) error {
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true})
	if err != nil {
		return err
	}
	defer s.Close()
	code, err := s.VM.Shell(ctx, s.Name, args, e.Stdin, e.Stdout, e.Stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return &session.ExitError{Code: code}
	}
	return nil
}
