package session

import (
	"errors"
	"fmt"

	"github.com/bcollard/marina/internal/ui"
	"k8s.io/apimachinery/pkg/labels"
)

// marina's exit statuses, the one place they are defined: the CLI maps
// every error to one of them (internal/cli), and the README's "Output and
// exit codes" and the root help list them. Scripts rely on them: never
// renumber one.
const (
	// ExitOK: the command did what it was asked, or a list found nothing.
	ExitOK = 0
	// ExitFailed: the command failed, could not look, or (status, doctor)
	// found something broken.
	ExitFailed = 1
	// ExitUsage: the command line is wrong (an unknown command or flag, a
	// wrong number of arguments, a flag value that does not parse or is
	// not one of its choices); nothing was done.
	ExitUsage = 2
	// ExitNotRunning: the command needs the VM running and it is not
	// (stopped, broken or not created); nothing was done.
	ExitNotRunning = 3
)

// ExitError ends marina with Code. Err, when set, is the message the CLI
// prints; without it the command has said what went wrong already (the
// shell's own exit status, doctor's report).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func (e *ExitError) Unwrap() error { return e.Err }

// Usage marks err as a mistake in the command line: marina exits
// ExitUsage.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// Usagef is Usage of a formatted error.
func Usagef(format string, args ...any) error { return Usage(fmt.Errorf(format, args...)) }

// Code is the exit status for err: 0 for nil, an ExitError's own code
// anywhere in its chain, else ExitFailed.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	if exit, ok := errors.AsType[*ExitError](err); ok {
		return exit.Code
	}
	return ExitFailed
}

// ParseSelector reads -l: a label selector (nil for none), or a usage
// error that shows how to write one.
func ParseSelector(s string) (labels.Selector, error) {
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, Usagef("-l %q is not a label selector: %v (write it like region=europe-west1,env!=prod)", s, err)
	}
	return sel, nil
}

// ErrCancelled is a confirmation the user declined: nothing was done, as
// asked, so marina says "Cancelled." and exits ExitOK (scripts pass -y).
// It is the picker's own (ui.ErrCancelled), so an empty pick is one too.
var ErrCancelled = ui.ErrCancelled
