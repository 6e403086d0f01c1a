package ui

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// A real terminal (a pseudo-terminal's far end) is smart, unless NO_COLOR
// is set (to anything) or TERM is dumb or unset.
func TestIsSmartTerminalOnATerminal(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tty := openPTY(t)
	for _, c := range []struct {
		env   map[string]string
		smart bool
	}{
		{map[string]string{"TERM": "xterm-256color"}, true},
		{map[string]string{"TERM": "xterm-256color", "NO_COLOR": "1"}, false},
		{map[string]string{"TERM": "xterm-256color", "NO_COLOR": "0"}, false},
		{map[string]string{"TERM": "dumb"}, false},
		{map[string]string{}, false},
	} {
		if got := IsSmartTerminal(tty, env(c.env)); got != c.smart {
			t.Errorf("a terminal with %v: smart %v, want %v", c.env, got, c.smart)
		}
	}
}

// openPTY opens a pseudo-terminal and returns its terminal end.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}
