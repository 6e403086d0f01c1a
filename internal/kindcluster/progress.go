package kindcluster

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// kindPart names kind's own work among a create's parts.
const kindPart = "kind"

// progress shows the parts of a create that run at once (kind and each
// add-on) and times every step of them. On its own a create draws them on
// a Board, one row per part; inside a fleet, whose row is all a cluster
// has, they share that row as one step whose label says what runs.
type progress struct {
	mu    sync.Mutex
	now   func() time.Time
	start time.Time
	// phases are every step that ended, in the order they ended.
	phases []ui.StepTime

	board  *ui.Board
	rows   map[string]*ui.Row
	begun  map[string]bool
	failed map[string]bool

	row     *ui.UI            // inside a fleet's row
	running []string          // parts with a step open there, in order
	labels  map[string]string // and their steps
}

func newProgress(e *session.Env, start time.Time, parts []string) *progress {
	p := &progress{now: time.Now, start: start, rows: map[string]*ui.Row{}, begun: map[string]bool{}, failed: map[string]bool{}, labels: map[string]string{}}
	if e.UI.InRow() {
		p.row = e.UI
		return p
	}
	p.board = e.UI.NewBoard(time.Now)
	for _, name := range parts {
		p.rows[name] = p.board.Add(name)
	}
	return p
}

// done records a step of part that began at since.
func (p *progress) done(part, label string, since time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phases = append(p.phases, ui.StepTime{Step: part + ": " + label, Start: since.Sub(p.start).Seconds(), Seconds: p.now().Sub(since).Seconds(), OK: ok})
}

// step runs fn as a step of part, labelled label.
func (p *progress) step(part, label string, fn func() error) error {
	since := p.now()
	var err error
	if p.board != nil {
		r := p.rows[part]
		p.mu.Lock()
		if r == nil { // a part not named at the start
			r = p.board.Add(part)
			p.rows[part] = r
		}
		first := !p.begun[part]
		p.begun[part] = true
		p.mu.Unlock()
		if first {
			r.Begin()
		}
		u := r.UI()
		u.Start(label)
		err = fn()
		u.End(err == nil)
		if err != nil {
			p.mu.Lock()
			p.failed[part] = true
			p.mu.Unlock()
		}
	} else {
		p.open(part, label)
		err = fn()
		p.close(part, err == nil)
	}
	p.done(part, label, since, err == nil)
	return err
}

// open and close keep the fleet's row's one step: open while any part
// runs a step, labelled with what runs.
func (p *progress) open(part, label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.labels[part] = label
	p.running = append(p.running, part)
	if len(p.running) == 1 {
		p.row.Start(p.rowLabel())
		return
	}
	p.row.Relabel(p.rowLabel())
}

func (p *progress) close(part string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.running {
		if r == part {
			p.running = append(p.running[:i], p.running[i+1:]...)
			break
		}
	}
	if len(p.running) == 0 || !ok {
		p.row.End(ok)
		p.running = nil
		return
	}
	p.row.Relabel(p.rowLabel())
}

func (p *progress) rowLabel() string {
	var ls []string
	for _, r := range p.running {
		ls = append(ls, p.labels[r])
	}
	return strings.Join(ls, " · ")
}

// stages records the stages of part (kind's own, timed by the VM's
// clock) as steps of part, which began at began. The VM's clock is not
// the Mac's: each stage is placed by its distance from the first, which
// began as part did (the script's set-up before kind takes a moment).
func (p *progress) stages(part string, began time.Time, stages []guest.Stage) {
	if len(stages) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	first := stages[0].Start
	for _, st := range stages {
		p.phases = append(p.phases, ui.StepTime{Step: part + ": " + st.Name, Start: (began.Sub(p.start) + st.Start.Sub(first)).Seconds(),
			Seconds: st.End.Sub(st.Start).Seconds(), OK: true})
	}
}

// show is the add-ons' Show.
func (p *progress) show() addons.Show {
	return func(addon, label string, fn func() error) error { return p.step(addon, label, fn) }
}

// stop ends the board: each row with how its part ended.
func (p *progress) stop(ok bool) {
	if p.board == nil {
		return
	}
	p.mu.Lock()
	rows := make(map[string]*ui.Row, len(p.rows))
	for k, v := range p.rows {
		rows[k] = v
	}
	failed := p.failed
	p.mu.Unlock()
	for part, r := range rows {
		switch {
		case failed[part]:
			r.Finish(false, "failed")
		case ok:
			r.Finish(true, "done")
		default:
			r.Finish(false, "stopped")
		}
	}
	p.board.Stop()
}

// times are the steps that ended, in the order they began.
func (p *progress) times() []ui.StepTime {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]ui.StepTime(nil), p.phases...)
	slices.SortStableFunc(out, func(a, b ui.StepTime) int { return cmp.Compare(a.Start, b.Start) })
	return out
}
