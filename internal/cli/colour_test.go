//go:build unix

package cli

import (
	"context"
	"image/color"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
)

// onTerminal makes this test binary marina itself (TestMain), so that a
// test can run it on a pseudo-terminal with its real stdout.
const onTerminal = "MARINA_CLI_ON_TERMINAL"

func TestMain(m *testing.M) {
	if os.Getenv(onTerminal) != "" {
		os.Exit(Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// doctor's tags are coloured on a terminal (FAIL red, WARN yellow, OK
// green, SKIP plain), and not with NO_COLOR, TERM=dumb or a pipe: asserted
// on the cells a terminal emulator shows, and on the pipe's bytes.
func TestDoctorColour(t *testing.T) {
	home := isolate(t)
	bin := filepath.Join(home, "limactl")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'limactl version 1.2.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LIMACTL", bin)
	t.Setenv("NO_COLOR", "")
	for _, c := range []struct {
		name, env string
		colour    bool
	}{
		{"a terminal", "TERM=xterm-256color", true},
		{"NO_COLOR", "NO_COLOR=1", false},
		{"TERM=dumb", "TERM=dumb", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			em := onPTY(t, 100, 40, c.env, "doctor")
			want := map[string]color.Color{"[FAIL]": ansi.Red, "[WARN]": ansi.Yellow, "[OK]": ansi.Green, "[SKIP]": nil}
			for tag, fg := range want {
				x, y, ok := find(em, tag)
				if !ok {
					t.Fatalf("no %s on the screen:\n%s", tag, em.String())
				}
				got := em.CellAt(x+1, y).Style.Fg
				if !c.colour {
					fg = nil
				}
				if !sameColour(got, fg) {
					t.Errorf("%s is drawn in %v, want %v", tag, got, fg)
				}
			}
		})
	}
	t.Run("a pipe", func(t *testing.T) {
		t.Setenv("TERM", "xterm-256color")
		out, _, _ := runCLI(t, "doctor")
		if strings.Contains(out, "\x1b") || !strings.Contains(out, "[FAIL] limactl") {
			t.Errorf("doctor into a pipe:\n%q", out)
		}
	})
}

func sameColour(a, b color.Color) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	r1, g1, b1, _ := a.RGBA()
	r2, g2, b2, _ := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2
}

// find is where s starts on the emulator's screen.
func find(em *vt.Emulator, s string) (x, y int, ok bool) {
	for y, line := range strings.Split(em.String(), "\n") {
		if i := strings.Index(line, s); i >= 0 {
			return len([]rune(line[:i])), y, true
		}
	}
	return 0, 0, false
}

// onPTY runs marina args on a cols×rows pseudo-terminal (stdin, stdout
// and stderr), with env added, and returns the screen once it exits.
func onPTY(t *testing.T, cols, rows int, env string, args ...string) *vt.Emulator {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), onTerminal+"=1", env)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	em := vt.NewEmulator(cols, rows)
	defer em.Close()
	go func() { _, _ = io.Copy(ptmx, em) }() // a terminal answers queries on the input
	var mu sync.Mutex
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			_, _ = em.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("marina did not end on the terminal")
	}
	<-read
	return em
}
