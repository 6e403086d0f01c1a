//go:build unix

package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"github.com/bcollard/marina/internal/ui"
)

// helperEnv makes this test binary marina's process on a terminal
// (TestMain): a spinner step that adds the route through sudo.
const helperEnv = "MARINA_SUDO_ON_TERMINAL"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(addRouteOnTerminal())
	}
	os.Exit(m.Run())
}

// addRouteOnTerminal is what marina up does to add the route, on the
// terminal it was started on: the step's spinner runs, sudo asks for a
// password on /dev/tty, the step ends.
func addRouteOnTerminal() int {
	routePath = os.Getenv("MARINA_ROUTE")
	u := ui.New(os.Stderr, true, false)
	u.SetSize(ui.TermSize(os.Stderr))
	h := &Host{Style: BSD, TTY: true, Stdin: os.Stdin, Stderr: os.Stderr, UI: u}
	u.Start("Adding the host's route to 172.30.0.0/16 via 192.168.64.3")
	time.Sleep(300 * time.Millisecond)
	err := h.Privileged(context.Background(), h.RouteFix(Classify(kindNet, lima0, nil)))
	time.Sleep(300 * time.Millisecond) // the spinner is back
	u.End(err == nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sudo's password prompt stays on the screen while it waits, on a line
// under the step and the command it runs; the spinner does not draw over
// it, and comes back once sudo is done. Asserted on what an 80×24 and a
// 40×10 terminal show.
func TestSudoPromptStaysOnScreen(t *testing.T) {
	dir := t.TempDir()
	// A sudo that asks as sudo does: on /dev/tty, without echo.
	sudo := `#!/bin/sh
if [ "$1" = -n ]; then echo "sudo: a password is required" >&2; exit 1; fi
printf '[sudo] password for me: ' >/dev/tty
stty -echo </dev/tty
IFS= read -r pw </dev/tty
stty echo </dev/tty
printf '\n' >/dev/tty
[ "$pw" = secret ] || { echo "Sorry, try again." >&2; exit 1; }
exec "$@"
`
	if err := os.WriteFile(filepath.Join(dir, "sudo"), []byte(sudo), 0o755); err != nil {
		t.Fatal(err)
	}
	route := "#!/bin/sh\n[ \"$*\" = \"-n add -net 172.30.0.0/16 192.168.64.3\" ] || exit 99\necho 'add net 172.30.0.0: gateway 192.168.64.3'\n"
	if err := os.WriteFile(filepath.Join(dir, "route"), []byte(route), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"=1", "MARINA_ROUTE="+filepath.Join(dir, "route"),
				"PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "TERM=xterm-256color")
			ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(size[0]), Rows: uint16(size[1])})
			if err != nil {
				t.Skipf("no pseudo-terminals here: %v", err)
			}
			defer ptmx.Close()
			em := vt.NewEmulator(size[0], size[1])
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
			screen := func() string {
				mu.Lock()
				defer mu.Unlock()
				return em.String()
			}
			// The prompt shows, and stays while sudo waits.
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(screen(), "[sudo] password for me:") {
				if time.Now().After(deadline) {
					t.Fatalf("no password prompt on the screen:\n%s", screen())
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(400 * time.Millisecond) // four spinner frames
			waiting := screen()
			if !strings.Contains(waiting, "[sudo] password for me:") || strings.ContainsAny(waiting, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
				t.Errorf("while sudo waits the screen is:\n%s", waiting)
			}
			if _, err := ptmx.Write([]byte("secret\n")); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("marina's side: %v\n%s", err, screen())
			}
			<-read
			var got []string
			for _, l := range strings.Split(screen(), "\n") {
				got = append(got, strings.TrimRight(l, " "))
			}
			want := []string{
				" • Adding the host's route to 172.30.0.0/16 via 192.168.64.3",
				"marina runs: sudo " + filepath.Join(dir, "route") + " -n add -net 172.30.0.0/16 192.168.64.3",
				"[sudo] password for me:",
				"add net 172.30.0.0: gateway 192.168.64.3",
				" ✓ Adding the host's route to 172.30.0.0/16 via 192.168.64.3",
			}
			// What the terminal shows: the lines above, wrapped to its width.
			if joined, wantJoined := strings.Join(got, ""), strings.Join(want, ""); joined != wantJoined || bytes.ContainsAny([]byte(joined), "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
				t.Errorf("the screen is:\n%s\nwant (wrapped to %d columns):\n%s", strings.Join(got, "\n"), size[0], strings.Join(want, "\n"))
			}
		})
	}
}

// With marina's sudoers drop-in, sudo -n runs the command: on a terminal
// too nothing asks, and sudo runs once.
func TestSudoNFirstOnATerminal(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "sudo.log")
	sudo := "#!/bin/sh\necho \"$*\" >>" + log + "\nif [ \"$1\" = -n ]; then shift; exec \"$@\"; fi\necho asked >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "sudo"), []byte(sudo), 0o755); err != nil {
		t.Fatal(err)
	}
	route := "#!/bin/sh\necho 'add net 172.30.0.0: gateway 192.168.64.3'\n"
	if err := os.WriteFile(filepath.Join(dir, "route"), []byte(route), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	old := routePath
	routePath = filepath.Join(dir, "route")
	t.Cleanup(func() { routePath = old })
	var stderr bytes.Buffer
	h := &Host{Style: BSD, TTY: true, Stdin: strings.NewReader(""), Stderr: &stderr}
	if err := h.Privileged(context.Background(), h.RouteFix(Classify(kindNet, lima0, nil))); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, _ := os.ReadFile(log)
	if got := strings.TrimSpace(string(b)); got != "-n "+routePath+" -n add -net 172.30.0.0/16 192.168.64.3" || strings.Contains(stderr.String(), "asked") {
		t.Errorf("sudo ran as %q; stderr:\n%s", got, stderr.String())
	}
}
