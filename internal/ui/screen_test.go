//go:build unix

package ui

import (
	"fmt"
	"io"

	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
)

// screen is a real pseudo-terminal of a given size whose output a
// terminal emulator renders into a grid of cells: what a person sees.
type screen struct {
	t    *testing.T
	tty  *os.File
	pty  *os.File
	mu   sync.Mutex
	em   *vt.Emulator
	done chan struct{}
}

func newScreen(t *testing.T, cols, rows int) *screen {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		t.Fatal(err)
	}
	s := &screen{t: t, tty: tty, pty: ptmx, em: vt.NewEmulator(cols, rows), done: make(chan struct{})}
	s.em.SetScrollbackSize(1000)
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			s.mu.Lock()
			_, _ = s.em.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	// A terminal answers the queries a program sends (its colours, the
	// cursor's place) on the program's input.
	go func() { _, _ = io.Copy(ptmx, s.em) }()
	t.Cleanup(func() { s.em.Close(); ptmx.Close(); tty.Close() })
	return s
}

// ui is a smart UI on the terminal, sized as the terminal says.
func (s *screen) ui() *UI {
	u := New(s.tty, true, false)
	u.SetSize(TermSize(s.tty))
	return u
}

// settle waits for what was written to reach the emulator.
func (s *screen) settle() { time.Sleep(150 * time.Millisecond) }

// lines are the screen's rows, trailing blanks cut.
func (s *screen) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for y := range s.em.Height() {
		var b strings.Builder
		for x := 0; x < s.em.Width(); x++ {
			if c := s.em.CellAt(x, y); c != nil && c.Content != "" {
				b.WriteString(c.Content)
			} else {
				b.WriteString(" ")
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// scrolled are the rows that scrolled off the top, oldest first.
func (s *screen) scrolled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.em.Scrollback().Lines() {
		out = append(out, strings.TrimRight(l.String(), " "))
	}
	return out
}

func (s *screen) String() string {
	return strings.Join(append(append(s.scrolled(), "-- screen --"), s.lines()...), "\n")
}

// A step whose label and stage are far wider than the terminal keeps to
// one row while it spins (a wrapped row is not cleared by the next frame,
// and each frame left one behind), and ends as one line that says it all.
func TestLongStepKeepsToOneRow(t *testing.T) {
	label := "Creating VM marina (the first boot downloads Ubuntu and installs Docker: a few minutes)"
	stage := "[hostagent] Waiting for the essential requirement 1 of 2: \"ssh\" to be reachable on 127.0.0.1:60022"
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			s := newScreen(t, size[0], size[1])
			u := s.ui()
			u.Start(label)
			time.Sleep(250 * time.Millisecond)
			u.Stage(stage)
			time.Sleep(250 * time.Millisecond)
			s.settle()
			// While it runs: one row, cut to the width with an ellipsis.
			if got := s.lines(); len(got) != 1 || !strings.HasSuffix(got[0], "…") || len([]rune(got[0])) > size[0]-1 || len(s.scrolled()) != 0 {
				t.Errorf("while running, the screen is:\n%s", s)
			}
			u.End(true)
			s.settle()
			end := " ✓ " + label
			var got string
			for _, l := range s.lines() {
				got += l
			}
			if got != end || len(s.scrolled()) != 0 {
				t.Errorf("the screen is:\n%s\nwant only %q, wrapped", s, end)
			}
		})
	}
}

// A board of 12 clusters keeps one row per cluster, cut to the width,
// and no more rows than the screen has while they run (the rest summed
// up); at the end every cluster is on the screen or above it once.
func TestBoardOfTwelveHoldsOnTheScreen(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			s := newScreen(t, size[0], size[1])
			u := s.ui()
			b := u.NewBoard(time.Now)
			var rows []*Row
			for i := range 12 {
				rows = append(rows, b.Add(fmt.Sprintf("cluster-%02d", i)))
			}
			for i, r := range rows[:8] {
				r.Begin()
				r.UI().Start(fmt.Sprintf("Installing MetalLB v0.15.2 and waiting for its controller and speakers in cluster-%02d", i))
			}
			time.Sleep(250 * time.Millisecond)
			rows[0].Finish(true, "created in slot 1")
			rows[1].Finish(false, "failed: installing MetalLB: the speaker daemonset never became ready")
			time.Sleep(250 * time.Millisecond)
			s.settle()
			mid := s.lines()
			if len(mid) > size[1]-1 {
				t.Errorf("while running the board takes %d rows of %d:\n%s", len(mid), size[1], s)
			}
			for _, l := range mid {
				if len([]rune(l)) > size[0]-1 {
					t.Errorf("row wider than the screen: %q", l)
				}
			}
			if size[1] < 14 && !strings.Contains(strings.Join(mid, "\n"), "more (") {
				t.Errorf("the rows that do not fit are not summed up:\n%s", s)
			}
			for _, r := range rows[2:] {
				r.Begin()
				r.Finish(true, "created")
			}
			b.Stop()
			s.settle()
			all := append(s.scrolled(), s.lines()...)
			for i := range 12 {
				name := fmt.Sprintf("cluster-%02d", i)
				n := 0
				for _, l := range all {
					if strings.Contains(l, name+" ") || strings.HasSuffix(l, name) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s is shown %d times:\n%s", name, n, s)
				}
			}
			if !strings.Contains(strings.Join(all, "\n"), " ✗ cluster-01") {
				t.Errorf("the failure is not on the screen:\n%s", s)
			}
		})
	}
}

// The terminal after a step that printed a line, then ended: the line
// stays above, the spinner's row is gone.
func TestLineAboveSpinner(t *testing.T) {
	s := newScreen(t, 40, 10)
	u := s.ui()
	u.Start("Starting VM marina")
	time.Sleep(150 * time.Millisecond)
	u.Warnf("vm.rosetta: true is ignored on this Mac, which is not Apple silicon")
	u.End(true)
	s.settle()
	got := strings.Join(s.lines(), "\n")
	want := "WARNING: vm.rosetta: true is ignored on\nthis Mac, which is not Apple silicon\n ✓ Starting VM marina"
	if got != want {
		t.Errorf("the screen is:\n%s\nwant:\n%s", got, want)
	}
}

// A line the UI prints while a Board it made is drawn (a guest round
// trip's debug line, a warning) goes above the board, which is drawn again
// whole under it: the line is not overwritten, and no row is left twice.
func TestLineAboveBoard(t *testing.T) {
	s := newScreen(t, 60, 12)
	u := New(s.tty, true, true)
	u.SetSize(TermSize(s.tty))
	b := u.NewBoard(time.Now)
	kind, mlb := b.Add("kind"), b.Add("MetalLB")
	kind.Begin()
	kind.UI().Start("Creating cluster dev")
	mlb.Begin()
	mlb.UI().Start("Installing MetalLB")
	time.Sleep(250 * time.Millisecond)
	u.Debugf("ran ssh lima-marina (40ms)")
	u.Warnf("careful")
	time.Sleep(250 * time.Millisecond)
	s.settle()
	lines := s.lines()
	if len(lines) != 4 || lines[0] != "debug: ran ssh lima-marina (40ms)" || lines[1] != "WARNING: careful" ||
		!strings.Contains(lines[2], "kind") || !strings.Contains(lines[3], "MetalLB") {
		t.Errorf("the screen is:\n%s", s)
	}
	b.Stop()
	// Once the board stopped, lines are the UI's own again.
	u.Warnf("after")
	s.settle()
	if lines := s.lines(); lines[len(lines)-1] != "WARNING: after" || len(lines) != 5 {
		t.Errorf("after the board, the screen is:\n%s", s)
	}
}
