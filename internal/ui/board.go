package ui

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Board shows several jobs that run at once, one line each: its name, its
// current step and how long the job has run. On a capable terminal the
// lines are redrawn in place; elsewhere each step's start and end is a
// plain line of its own, prefixed with the job's name.
type Board struct {
	mu    sync.Mutex
	w     io.Writer
	smart bool
	debug bool
	now   func() time.Time
	rows  []*Row
	width int // of the names
	drawn int // lines drawn last time
	stop  chan struct{}
	done  chan struct{}
	// size is the terminal's, when known: rows are cut to its width, and
	// the board to its height.
	size Size
	// owner is the UI the board was made from: its lines go above the
	// board until Stop.
	owner *UI
}

// Row is one job of a Board.
type Row struct {
	b      *Board
	name   string
	start  time.Time
	label  string
	mark   string // "" while running, ✓ or ✗ at the end
	ended  time.Time
	active bool
	since  time.Time
	steps  []StepTime
}

// StepTime is one step a row went through and how long it took.
type StepTime struct {
	Step string `json:"step"`
	// Start is when it began, in seconds from the start of its job.
	Start   float64 `json:"start"`
	Seconds float64 `json:"seconds"`
	OK      bool    `json:"ok"`
}

// NewBoard returns a board on w (stderr); smart redraws it in place.
func NewBoard(w io.Writer, smart, debug bool, now func() time.Time) *Board {
	return &Board{w: w, smart: smart, debug: debug, now: now}
}

// Add adds a job's row, waiting until Begin.
func (b *Board) Add(name string) *Row {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := &Row{b: b, name: name, label: "waiting"}
	b.rows = append(b.rows, r)
	b.width = max(b.width, len(name))
	return r
}

// Begin starts the row's clock.
func (r *Row) Begin() {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	r.start = r.b.now()
	r.label = "starting"
	r.b.startSpinLocked()
}

// Finish ends the row with a last word, ok or not.
func (r *Row) Finish(ok bool, label string) {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	r.closeStepLocked(ok)
	r.mark, r.label, r.ended = "✓", label, b.now()
	if !ok {
		r.mark = "✗"
	}
	if r.start.IsZero() {
		r.start = r.ended
	}
	if !b.smart {
		fmt.Fprintf(b.w, " %s %-*s  %s%s\n", r.mark, b.width, r.name, label, r.elapsedLocked())
		return
	}
	b.drawLocked()
}

// Times are the steps the row went through.
func (r *Row) Times() []StepTime {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return append([]StepTime(nil), r.steps...)
}

// UI is a UI whose steps and lines go to this row.
func (r *Row) UI() *UI { return &UI{row: r, debug: r.b.debug} }

// Stop ends the redrawing, leaving the rows as they are.
func (b *Board) Stop() {
	b.mu.Lock()
	stop, done := b.stop, b.done
	b.stop, b.done = nil, nil
	b.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.smart {
		b.drawFrameLocked(0, true) // the last time: every row, to stay
	}
	if u := b.owner; u != nil {
		u.mu.Lock()
		if u.board == b {
			u.board = nil
		}
		u.mu.Unlock()
	}
}

func (b *Board) startSpinLocked() {
	if !b.smart || b.stop != nil {
		return
	}
	b.stop, b.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		frame := 0
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				b.mu.Lock()
				frame++
				b.drawFrameLocked(frame, false)
				b.mu.Unlock()
			}
		}
	}(b.stop, b.done)
}

func (b *Board) drawLocked() { b.drawFrameLocked(0, false) }

// drawFrameLocked redraws the board in place. Each row is cut to the
// terminal's width (a row that wraps moves every row under it), and
// while jobs run the board keeps to the screen's height: the rows that
// do not fit are summed up on a last line. all draws every row, for the
// last time.
func (b *Board) drawFrameLocked(frame int, all bool) {
	cols, lines := 0, 0
	if b.size != nil {
		cols, lines = b.size()
	}
	shown, more := b.rows, ""
	if !all && lines > 1 && len(b.rows) > lines-1 {
		shown, more = b.fitLocked(lines - 2)
	}
	var s strings.Builder
	if b.drawn > 0 {
		fmt.Fprintf(&s, "\x1b[%dA", b.drawn)
	}
	for _, r := range shown {
		mark := r.mark
		switch {
		case mark != "":
		case r.start.IsZero():
			mark = "·"
		default:
			mark = frames[frame%len(frames)]
		}
		line := fitLine(cols, fmt.Sprintf(" %s %-*s  ", mark, b.width, r.name), r.label, r.elapsedLocked())
		if r.mark != "" { // coloured once cut: its codes take no columns
			line = strings.Replace(line, r.mark, Mark(r.mark == "✓", true), 1)
		}
		fmt.Fprintf(&s, "\r\x1b[2K%s\n", line)
	}
	b.drawn = len(shown)
	if more != "" {
		fmt.Fprintf(&s, "\r\x1b[2K%s\n", fit(more, cols-1))
		b.drawn++
	}
	s.WriteString("\x1b[J") // what an earlier, longer frame left below
	io.WriteString(b.w, s.String())
}

// fitLocked picks n rows to show, in their order: the running first,
// then the failed, the waiting and the done; the others are summed up.
func (b *Board) fitLocked(n int) ([]*Row, string) {
	rank := func(r *Row) int {
		switch {
		case r.mark == "" && !r.start.IsZero():
			return 0
		case r.mark == "✗":
			return 1
		case r.mark == "":
			return 2
		}
		return 3
	}
	keep := map[*Row]bool{}
	for want := 0; want <= 3 && len(keep) < n; want++ {
		for _, r := range b.rows {
			if rank(r) == want && len(keep) < n {
				keep[r] = true
			}
		}
	}
	var shown []*Row
	var done, waiting, running, failed int
	for _, r := range b.rows {
		if keep[r] {
			shown = append(shown, r)
			continue
		}
		switch rank(r) {
		case 0:
			running++
		case 1:
			failed++
		case 2:
			waiting++
		default:
			done++
		}
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{running, "running"}, {failed, "failed"}, {waiting, "waiting"}, {done, "done"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return shown, fmt.Sprintf("   +%d more (%s)", len(b.rows)-len(shown), strings.Join(parts, ", "))
}

func (r *Row) elapsedLocked() string {
	switch {
	case r.start.IsZero():
		return ""
	case !r.ended.IsZero():
		return " (" + round(r.ended.Sub(r.start)) + ")"
	}
	return " (" + round(r.b.now().Sub(r.start)) + ")"
}

func round(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// line prints a message of row r above the board.
func (r *Row) line(msg string) { r.b.above(r.name + ": " + msg) }

// above prints line above the board, which is drawn again under it.
func (b *Board) above(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.smart && b.drawn > 0 {
		fmt.Fprintf(b.w, "\x1b[%dA\r\x1b[J", b.drawn)
		b.drawn = 0
	}
	fmt.Fprintln(b.w, line)
	if b.smart {
		b.drawLocked()
	}
}

func (r *Row) startStep(label string) {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	r.closeStepLocked(true)
	r.label, r.active, r.since = label, true, b.now()
	if !b.smart {
		fmt.Fprintf(b.w, " • %-*s  %s …\n", b.width, r.name, label)
	}
}

func (r *Row) relabel(label string) {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.active {
		r.label = label
	}
}

func (r *Row) endStep(ok bool) {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if !r.active {
		return
	}
	r.closeStepLocked(ok)
	if !b.smart {
		mark := "✓"
		if !ok {
			mark = "✗"
		}
		fmt.Fprintf(b.w, " %s %-*s  %s (%s)\n", mark, b.width, r.name, r.steps[len(r.steps)-1].Step, round(time.Duration(r.steps[len(r.steps)-1].Seconds*float64(time.Second))))
	}
}

func (r *Row) closeStepLocked(ok bool) {
	if !r.active {
		return
	}
	r.active = false
	r.steps = append(r.steps, StepTime{Step: r.label, Start: r.since.Sub(r.start).Seconds(), Seconds: r.b.now().Sub(r.since).Seconds(), OK: ok})
}
