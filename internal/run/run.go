// Package run executes host processes and reports failures with the command
// line and what the process said, so errors can be acted on.
package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Cmd is one process to run.
type Cmd struct {
	Args  []string
	Env   []string // added to the current environment
	Stdin io.Reader
	// Stream, when set, also receives stdout and stderr as they come
	// (for long steps shown with --debug).
	Stream io.Writer
}

// Error is a process that could not start or exited non-zero.
type Error struct {
	Args     []string
	ExitCode int // -1 when the process did not run to an exit
	Stderr   string
	Err      error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("`%s` failed", Quote(e.Args))
	if e.ExitCode >= 0 {
		msg += fmt.Sprintf(" (exit status %d)", e.ExitCode)
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if s := Tail(e.Stderr, 10); s != "" {
		msg += ":\n" + s
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Runner runs processes, logging each one to Log when it is set.
type Runner struct {
	Log func(format string, args ...any)
}

// Output runs c and returns its stdout. A non-zero exit is an *Error that
// carries stderr.
func (r Runner) Output(ctx context.Context, c Cmd) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	cmd.Stdin = c.Stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if c.Stream != nil {
		cmd.Stdout = io.MultiWriter(&out, c.Stream)
		cmd.Stderr = io.MultiWriter(&errb, c.Stream)
	}
	// A child that leaves a grandchild holding our pipes must not hang us.
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	if r.Log != nil {
		r.Log("ran %s (%s)", Quote(c.Args), time.Since(start).Round(time.Millisecond))
	}
	if err != nil {
		e := &Error{Args: c.Args, ExitCode: -1, Stderr: errb.String(), Err: err}
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			e.ExitCode = ee.ExitCode()
		}
		if ctx.Err() != nil {
			e.Err = ctx.Err()
			e.ExitCode = -1
		}
		return out.Bytes(), e
	}
	return out.Bytes(), nil
}

// Buffer is a bytes.Buffer that several goroutines may write at once: a
// Cmd's Stream gets stdout and stderr from two copying goroutines.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Quote renders argv the way a shell user would type it.
func Quote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a POSIX shell when it needs quoting.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Tail returns the last n non-empty lines of s, indented for an error.
func Tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, "  "+strings.TrimRight(l, "\r"))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
