// Package e2e runs marina against the lab (lab/lab): a real Docker Engine
// 29, real sshd and iptables in a "vm" namespace, the fake limactl, and
// marina itself in a "mac" namespace.
//
// TestMain brings a fresh lab up, then runs the tests inside the mac
// namespace (re-executing this test binary through `lab/lab mac`), and takes
// the lab down afterwards, whatever happened. Set MARINA_LAB_KEEP=1 to
// leave the lab up for a look.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

const inside = "MARINA_LAB_INSIDE"

var (
	skipReason string
	labScript  string
	marinaBin  string
)

func TestMain(m *testing.M) {
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	labScript = filepath.Join(repo, "lab", "lab")
	if os.Getenv(inside) == "1" {
		marinaBin = os.Getenv("MARINA_BIN")
		code := m.Run()
		stopKubeAPI() // kube_test.go's shared API server, if a test started it
		os.Exit(code)
	}
	flag.Parse()
	if testing.Short() {
		skipReason = "-short runs the fast tier only; the lab tier runs without it"
		os.Exit(m.Run())
	}
	if os.Geteuid() != 0 {
		skipReason = "the lab needs root (network and mount namespaces); run the tests as root, as CI does"
		os.Exit(m.Run())
	}
	os.Exit(outside(repo))
}

// outside prepares the lab, runs the tests in the mac namespace and always
// takes the lab down.
func outside(repo string) int {
	// One lab per machine: a second test run waits for the first.
	lock := flock.New("/run/marina-lab.lock")
	if ok, _ := lock.TryLock(); !ok {
		fmt.Fprintln(os.Stderr, "another lab test run holds /run/marina-lab.lock; waiting for it")
		if err := lock.Lock(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	defer lock.Unlock()
	tmp, err := os.MkdirTemp("", "marina-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// The lab's Mac user runs this marina too (macUser).
	if err := os.Chmod(tmp, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	marina := filepath.Join(tmp, "marina")
	build := exec.Command("go", "build", "-o", marina, "./cmd/marina")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build marina:", err)
		return 1
	}
	lab := func(args ...string) error {
		c := exec.Command(labScript, args...)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		return c.Run()
	}
	down := func() {
		if os.Getenv("MARINA_LAB_KEEP") == "1" {
			fmt.Fprintln(os.Stderr, "MARINA_LAB_KEEP=1: the lab stays up; `lab/lab down` removes it")
			return
		}
		_ = lab("down")
	}
	// A fresh lab: whatever an earlier run left behind goes first.
	_ = lab("down")
	if err := lab("up"); err != nil {
		fmt.Fprintln(os.Stderr, "lab up:", err)
		down()
		return 1
	}
	self, _ := os.Executable()
	args := append([]string{"mac", self}, os.Args[1:]...)
	c := exec.Command(labScript, args...)
	c.Env = append(os.Environ(), inside+"=1", "MARINA_BIN="+marina)
	// Inside, HOME is the lab Mac user's: keep using this machine's Go
	// caches for the builds the tests make.
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if out, err := exec.Command("go", "env", v).Output(); err == nil {
			c.Env = append(c.Env, v+"="+strings.TrimSpace(string(out)))
		}
	}
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	// On SIGINT/SIGTERM, let the tests end and still clean up.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	code := 0
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	} else {
		go func() {
			if s, ok := <-sig; ok && c.Process != nil {
				_ = c.Process.Signal(s)
			}
		}()
		if err := c.Wait(); err != nil {
			code = 1
			if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() > 0 {
				code = ee.ExitCode()
			}
		}
	}
	down()
	return code
}

// needLab skips when the lab cannot run here.
func needLab(t testing.TB) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// result is one marina run.
type result struct {
	stdout, stderr string
	code           int
}

// marina runs the marina binary in the mac namespace, as root: with
// marina's Linux (ip) route code.
func marina(t testing.TB, args ...string) result {
	t.Helper()
	return runResult(marinaBin, args...)
}

// userMarina runs marina as the lab Mac's unprivileged user, with the
// macOS route code (MARINA_ROUTE_STYLE=bsd) driving the BSD route(8)
// stand-in at /sbin/route through sudo (lab/lab mac-user).
func userMarina(t testing.TB, args ...string) result {
	t.Helper()
	return macUser(t, append([]string{marinaBin}, args...)...)
}

// mustUserMarina runs marina as the Mac's user and fails the test when it
// fails.
func mustUserMarina(t testing.TB, args ...string) result {
	t.Helper()
	return succeeded(t, userMarina(t, args...), "marina "+strings.Join(args, " ")+" (as the Mac's user)")
}

// macUser runs argv in the mac namespace as the lab Mac's user.
func macUser(t testing.TB, argv ...string) result {
	t.Helper()
	return runResult(labScript, append([]string{"mac-user"}, argv...)...)
}

func runResult(name string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		r.code = -1
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			r.code = ee.ExitCode()
		}
	}
	return r
}

// mustMarina runs marina and fails the test when it fails.
func mustMarina(t testing.TB, args ...string) result {
	t.Helper()
	return succeeded(t, marina(t, args...), "marina "+strings.Join(args, " "))
}

// shownStatus runs marina status (args start with status or st): it exits 1
// when it shows something broken, after its whole report, which a test
// that looks at one part of it accepts; any other failure ends the test.
func shownStatus(t testing.TB, args ...string) result {
	t.Helper()
	r := marina(t, args...)
	if r.code != 0 && (r.code != 1 || !strings.Contains(r.stderr, "ERROR: status shows ")) {
		t.Fatalf("marina %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// succeeded is r, or the end of the test with what the command said.
func succeeded(t testing.TB, r result, what string) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
	}
	return r
}

// labCmd runs lab/lab with args and returns its combined output.
func labCmd(t testing.TB, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(labScript, args...).CombinedOutput()
	return string(out), err
}
