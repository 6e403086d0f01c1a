// Package ui is marina's terminal output: kind-style step lines with a
// spinner on a capable terminal and plain lines elsewhere, debug logs that
// do not tear the spinner, prompts, and -o json|yaml rendering.
package ui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
	"sigs.k8s.io/yaml"
)

// UI writes progress and logs to one stream (stderr) and leaves stdout to
// command results.
type UI struct {
	mu     sync.Mutex
	w      io.Writer
	smart  bool // animate and colour
	debug  bool
	label  string
	stage  string    // the open step's current stage (Stage), if any
	since  time.Time // when the open step started
	now    func() time.Time
	stop   chan struct{}
	done   chan struct{}
	frame  int
	active bool
	// row, when set, is the Board row that shows this UI's steps.
	row *Row
	// board is a Board drawn on this UI's stream (NewBoard) until it
	// stops: lines go above it, or its redraw would overwrite them.
	board *Board
	// size is the terminal's, when known: the spinner's line is cut to it.
	size Size
}

// New returns a UI on w; smart turns on the spinner.
func New(w io.Writer, smart, debug bool) *UI {
	return &UI{w: w, smart: smart, debug: debug, now: time.Now}
}

// SetSize gives the UI its terminal's size (TermSize): the spinner's
// line, and a Board's rows, are cut to its width.
func (u *UI) SetSize(s Size) { u.size = s }

// dims is the terminal's columns and rows; 0 when not known.
func (u *UI) dims() (int, int) {
	if u.size == nil {
		return 0, 0
	}
	return u.size()
}

// InRow reports whether the UI shows its steps on a Board's row (a
// fleet's cluster), where a Board of its own cannot be drawn.
func (u *UI) InRow() bool { return u.row != nil }

// NewBoard is a Board on the UI's stream, terminal and settings.
func (u *UI) NewBoard(now func() time.Time) *Board {
	b := NewBoard(u.w, u.smart, u.debug, now)
	b.size = u.size
	if u.row == nil {
		b.owner = u
		u.mu.Lock()
		u.board = b
		u.mu.Unlock()
	}
	return b
}

// ShowElapsed is how long a step runs before its line shows for how long:
// a pull, a boot or a create, not the many steps that take a moment.
const ShowElapsed = 5 * time.Second

// IsSmartTerminal reports whether f is a terminal that can show a spinner:
// a TTY, TERM not dumb, NO_COLOR unset.
func IsSmartTerminal(f *os.File, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" || getenv("TERM") == "" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

var frames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Start begins a step, ending any step still open as a success.
func (u *UI) Start(label string) {
	label = Clean(label)
	if u.row != nil {
		u.row.startStep(label)
		return
	}
	u.End(true)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.label, u.stage, u.active, u.since = label, "", true, u.now()
	if !u.smart {
		fmt.Fprintf(u.w, " • %s …\n", label)
		return
	}
	u.stop, u.done = make(chan struct{}), make(chan struct{})
	u.drawLocked()
	go u.spin(u.stop, u.done)
}

func (u *UI) spin(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			u.mu.Lock()
			u.frame++
			u.drawLocked()
			u.mu.Unlock()
		}
	}
}

func (u *UI) drawLocked() {
	label := u.label
	if u.stage != "" {
		label += ": " + u.stage
	}
	// Cut to the width: a line that wraps is not cleared by \r\x1b[2K,
	// and each frame would leave a row behind.
	cols, _ := u.dims()
	fmt.Fprint(u.w, "\r\x1b[2K"+fitLine(cols, " "+frames[u.frame%len(frames)]+" ", label, u.elapsedLocked(" ")))
}

// elapsedLocked is how long the open step has run, after sep, once that
// is ShowElapsed or more; "" before.
func (u *UI) elapsedLocked(sep string) string {
	if u.since.IsZero() {
		return ""
	}
	d := u.now().Sub(u.since)
	if d < ShowElapsed {
		return ""
	}
	return sep + round(d)
}

// Stage shows what the open step is doing now, as a tool it runs reports
// it (Lima's boot requirements): on a terminal in the spinner's line, and
// elsewhere as a line of its own, so that a long step is never silent.
// Nothing happens when no step is open.
func (u *UI) Stage(stage string) {
	stage = Clean(stage)
	if u.row != nil {
		return // a Board's row shows its step and time already
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.active || stage == u.stage {
		return
	}
	u.stage = stage
	if u.smart {
		if u.stop != nil { // not while the terminal is aside
			u.drawLocked()
		}
		return
	}
	fmt.Fprintf(u.w, "   %s%s\n", stage, u.elapsedLocked(" · "))
}

// Relabel changes the open step's label, to end it with what it found.
func (u *UI) Relabel(label string) {
	label = Clean(label)
	if u.row != nil {
		u.row.relabel(label)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.active {
		u.label = label
	}
}

// End closes the open step with a tick or a cross. It does nothing when no
// step is open.
func (u *UI) End(ok bool) {
	if u.row != nil {
		u.row.endStep(ok)
		return
	}
	u.mu.Lock()
	if !u.active {
		u.mu.Unlock()
		return
	}
	stop, done := u.stop, u.done
	u.active = false
	u.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	mark := Mark(ok, u.smart)
	if u.smart {
		fmt.Fprintf(u.w, "\r\x1b[2K")
	}
	label := u.label
	if !ok && u.stage != "" {
		label += ": " + u.stage // where it failed
	}
	if e := u.elapsedLocked(""); e != "" {
		label += " (" + e + ")"
	}
	fmt.Fprintf(u.w, " %s %s\n", mark, label)
	u.stop, u.done, u.stage, u.since = nil, nil, "", time.Time{}
}

// Aside gives the terminal to something that may read it, such as sudo
// asking for a password: the spinner stops and its line is cleared, runs
// (what is about to run, and why) is said on a line of its own under the
// open step's label, and back draws the spinner again. Without a step
// open, or without a terminal, it only says runs.
func (u *UI) Aside(runs string) (back func()) {
	runs = CleanLines(runs)
	if u.row != nil {
		u.row.line(runs)
		return func() {}
	}
	u.mu.Lock()
	stop, done := u.stop, u.done
	spinning := u.active && u.smart && stop != nil
	u.stop, u.done = nil, nil
	u.mu.Unlock()
	if spinning {
		close(stop)
		<-done
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if spinning {
		fmt.Fprintf(u.w, "\r\x1b[2K • %s\n", u.label)
	}
	fmt.Fprintln(u.w, runs)
	if !spinning {
		return func() {}
	}
	return func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		if !u.active || u.stop != nil {
			return
		}
		u.stop, u.done = make(chan struct{}), make(chan struct{})
		u.drawLocked()
		go u.spin(u.stop, u.done)
	}
}

// Printf writes a line of output between steps.
func (u *UI) Printf(format string, args ...any) {
	u.line(fmt.Sprintf(format, args...))
}

// Warnf writes a warning.
func (u *UI) Warnf(format string, args ...any) {
	u.line("WARNING: " + fmt.Sprintf(format, args...))
}

// Debugf writes a debug line when --debug is on.
func (u *UI) Debugf(format string, args ...any) {
	if u.debug {
		u.line("debug: " + fmt.Sprintf(format, args...))
	}
}

// Smart reports whether the UI animates (a capable terminal).
func (u *UI) Smart() bool { return u.smart }

// Debug reports whether debug output is on.
func (u *UI) Debug() bool { return u.debug }

// line prints s, moving a running spinner out of the way and back. Its
// words may hold what came from the VM: each of its lines is cleaned
// (Clean); the line breaks marina puts between them stay.
func (u *UI) line(s string) {
	s = CleanLines(s)
	if u.row != nil {
		u.row.line(s)
		return
	}
	u.mu.Lock()
	if b := u.board; b != nil {
		u.mu.Unlock()
		b.above(s)
		return
	}
	defer u.mu.Unlock()
	// While the terminal is aside (u.stop is nil) nothing is drawn.
	spinning := u.active && u.smart && u.stop != nil
	if spinning {
		fmt.Fprint(u.w, "\r\x1b[2K")
	}
	fmt.Fprintln(u.w, s)
	if spinning {
		u.drawLocked()
	}
}

// Writer returns an io.Writer whose lines go through Debugf, for streaming
// a sub-process's output under --debug; nil when debug is off.
func (u *UI) Writer(prefix string) io.Writer {
	if !u.debug {
		return nil
	}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			u.Debugf("%s%s", prefix, sc.Text())
		}
	}()
	return pw
}

// Confirm asks a yes/no question on in and out; only "y" or "yes" is yes.
func Confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N] ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// Render writes v to w as json or yaml. Both come from v's json tags
// alone: yaml is the json converted by sigs.k8s.io/yaml (as kubectl's), so
// the two always have the same field names and leave out the same empty
// fields; yaml tags on a rendered type would be ignored.
func Render(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // `<` stays readable in hints and findings
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown output format %q: use text, json or yaml", format)
}
