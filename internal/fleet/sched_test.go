package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/fleet"
)

// run is one simulated run of a Scheduler: when each task started and
// ended on a simulated clock, and when the last one ended.
type run struct {
	s          *fleet.Scheduler
	start, end map[string]int
	order      []string // the tasks in the order they started
	makespan   int
	failedAt   int // when the first failure ended; -1: none failed
}

// simulate drives a Scheduler as Run does, with a simulated clock: each
// task takes dur[name], places bounds how many run at once (0: no bound),
// and a task in fail fails when it ends. At every event it checks what
// the scheduler promises: no place idles while a task is ready, no task
// starts before its dependencies are done, Active says whether anything
// is left to wait for.
func simulate(t *testing.T, tasks []fleet.Task, dur map[string]int, places int, strategy fleet.Strategy, fail map[string]bool) run {
	t.Helper()
	s := fleet.NewScheduler(tasks, strategy)
	r := run{s: s, start: map[string]int{}, end: map[string]int{}, failedAt: -1}
	deps := map[string][]string{}
	for _, tk := range tasks {
		deps[tk.Name] = tk.DependsOn
	}
	running := map[string]int{} // name → when it ends
	now := 0
	for {
		free := len(tasks)
		if places > 0 {
			free = places - len(running)
		}
		for _, n := range s.Next(free) {
			if _, again := r.start[n]; again {
				t.Fatalf("%s started twice\n%s", n, describeDAG(tasks, dur))
			}
			for _, d := range deps[n] {
				if _, isTask := deps[d]; !isTask {
					continue
				}
				if st, _ := s.State(d); st != fleet.Done {
					t.Fatalf("%s started at %d while its dependency %s is %s\n%s", n, now, d, st, describeDAG(tasks, dur))
				}
			}
			r.start[n], running[n] = now, now+dur[n]
			r.order = append(r.order, n)
		}
		if places > 0 && len(running) > places {
			t.Fatalf("%d tasks run on %d places at %d", len(running), places, now)
		}
		if ready := s.Ready(); len(ready) > 0 && (places == 0 || len(running) < places) {
			t.Fatalf("at %d %d of %d places are busy while %v are ready\n%s", now, len(running), places, ready, describeDAG(tasks, dur))
		}
		if s.Active() != (len(running) > 0) {
			t.Fatalf("at %d Active() = %v with %d running", now, s.Active(), len(running))
		}
		if len(running) == 0 {
			break
		}
		now = slices.Min(slices.Collect(maps.Values(running)))
		var ending []string
		for n, e := range running {
			if e == now {
				ending = append(ending, n)
			}
		}
		slices.Sort(ending)
		for _, n := range ending {
			delete(running, n)
			r.end[n] = now
			var err error
			if fail[n] {
				err = fmt.Errorf("%s broke", n)
				if r.failedAt < 0 {
					r.failedAt = now
				}
			}
			s.Finish(n, err)
		}
	}
	r.makespan = now
	for _, tk := range tasks {
		if st, _ := s.State(tk.Name); st == fleet.Pending || st == fleet.Running {
			t.Fatalf("%s is still %s when nothing runs\n%s", tk.Name, st, describeDAG(tasks, dur))
		}
	}
	return r
}

// randomDAG is 1 to 12 tasks, each depending on earlier ones with a
// density drawn per graph (from none to nearly all), sometimes on a
// cluster that is no task; then shuffled, since a manifest need not list
// dependencies first. Names are t00…t11, none a substring of another.
func randomDAG(r *rand.Rand) ([]fleet.Task, map[string]int) {
	n := 1 + r.IntN(12)
	p := r.Float64() * 0.7
	tasks := make([]fleet.Task, n)
	dur := map[string]int{}
	for i := range tasks {
		name := fmt.Sprintf("t%02d", i)
		var deps []string
		for j := range i {
			if r.Float64() < p {
				deps = append(deps, fmt.Sprintf("t%02d", j))
			}
		}
		if r.IntN(8) == 0 {
			deps = append(deps, "existing")
		}
		tasks[i] = fleet.Task{Name: name, DependsOn: deps}
		dur[name] = 1 + r.IntN(20)
	}
	r.Shuffle(n, func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	return tasks, dur
}

// criticalPath is the longest chain of dependencies by summed duration:
// no schedule is shorter.
func criticalPath(tasks []fleet.Task, dur map[string]int) int {
	deps := map[string][]string{}
	for _, tk := range tasks {
		deps[tk.Name] = tk.DependsOn
	}
	memo := map[string]int{}
	var finish func(string) int
	finish = func(n string) int {
		if v, ok := memo[n]; ok {
			return v
		}
		best := 0
		for _, d := range deps[n] {
			if _, isTask := deps[d]; isTask {
				best = max(best, finish(d))
			}
		}
		memo[n] = best + dur[n]
		return memo[n]
	}
	cp := 0
	for _, tk := range tasks {
		cp = max(cp, finish(tk.Name))
	}
	return cp
}

func total(dur map[string]int) int {
	sum := 0
	for _, d := range dur {
		sum += d
	}
	return sum
}

func describeDAG(tasks []fleet.Task, dur map[string]int) string {
	var b strings.Builder
	for _, tk := range tasks {
		fmt.Fprintf(&b, "  %s (%d) after %v\n", tk.Name, dur[tk.Name], tk.DependsOn)
	}
	return b.String()
}

// With a place for every task, each starts the moment its dependencies
// are done, so the run takes exactly its critical path.
func TestSchedUnlimited(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		tasks, dur := randomDAG(rng)
		r := simulate(t, tasks, dur, 0, fleet.FailFast, nil)
		if cp := criticalPath(tasks, dur); r.makespan != cp {
			t.Fatalf("makespan %d, critical path %d\n%s", r.makespan, cp, describeDAG(tasks, dur))
		}
		for _, tk := range tasks {
			if st, _ := r.s.State(tk.Name); st != fleet.Done {
				t.Fatalf("%s is %s\n%s", tk.Name, st, describeDAG(tasks, dur))
			}
		}
	}
}

// With few places the simulator checks at every event that none idles
// while a task is ready; the makespan then lies between the two lower
// bounds (critical path, work per place) and Graham's bound for any
// schedule that never idles: (total + (places-1)·critical path) / places.
func TestSchedPlaces(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for places := 1; places <= 4; places++ {
		for range 1000 {
			tasks, dur := randomDAG(rng)
			r := simulate(t, tasks, dur, places, fleet.FailFast, nil)
			cp, work := criticalPath(tasks, dur), total(dur)
			if r.makespan < cp || r.makespan*places < work || r.makespan*places > work+(places-1)*cp {
				t.Fatalf("%d places: makespan %d, critical path %d, total %d\n%s", places, r.makespan, cp, work, describeDAG(tasks, dur))
			}
			if places == 1 && r.makespan != work {
				t.Fatalf("one place: makespan %d, total %d", r.makespan, work)
			}
		}
	}
}

// The longest chain of dependents goes first. x1 and x2 come first in
// the manifest, but a heads a chain of three: started first, the chain
// ends at 3 on two places; started in manifest order it would end at 4.
func TestSchedPriority(t *testing.T) {
	tasks := []fleet.Task{{Name: "x1"}, {Name: "x2"}, {Name: "a"}, {Name: "b", DependsOn: []string{"a"}}, {Name: "c", DependsOn: []string{"b"}}}
	dur := map[string]int{"x1": 1, "x2": 1, "a": 1, "b": 1, "c": 1}
	s := fleet.NewScheduler(tasks, fleet.FailFast)
	for n, want := range map[string]int{"a": 3, "b": 2, "c": 1, "x1": 1, "x2": 1} {
		if got := s.Chain(n); got != want {
			t.Errorf("Chain(%s) = %d, want %d", n, got, want)
		}
	}
	if got := s.Ready(); !slices.Equal(got, []string{"a", "x1", "x2"}) {
		t.Errorf("Ready() = %v, want the chain's head, then manifest order", got)
	}
	one := simulate(t, tasks, dur, 1, fleet.FailFast, nil)
	if want := []string{"a", "b", "x1", "x2", "c"}; !slices.Equal(one.order, want) {
		t.Errorf("one place starts %v, want %v", one.order, want)
	}
	two := simulate(t, tasks, dur, 2, fleet.FailFast, nil)
	if two.makespan != 3 || two.start["c"] != 2 {
		t.Errorf("two places: makespan %d (c at %d), want 3: %v", two.makespan, two.start["c"], two.start)
	}
}

// FailFast: a's failure at 1 starts nothing more; slow, already running,
// finishes; everything not started says it was a's failure.
func TestSchedFailFast(t *testing.T) {
	tasks := []fleet.Task{{Name: "a"}, {Name: "slow"}, {Name: "x"}, {Name: "b", DependsOn: []string{"a"}}, {Name: "c", DependsOn: []string{"b"}}}
	dur := map[string]int{"a": 1, "slow": 5, "x": 1, "b": 1, "c": 1}
	r := simulate(t, tasks, dur, 2, fleet.FailFast, map[string]bool{"a": true})
	if !slices.Equal(r.order, []string{"a", "slow"}) || r.makespan != 5 {
		t.Fatalf("started %v, makespan %d: want a and slow only, until 5", r.order, r.makespan)
	}
	want := map[string]fleet.State{"a": fleet.Failed, "slow": fleet.Done, "x": fleet.Skipped, "b": fleet.Skipped, "c": fleet.Skipped}
	for n, w := range want {
		st, reason := r.s.State(n)
		if st != w {
			t.Errorf("%s is %s, want %s", n, st, w)
		}
		if st == fleet.Skipped && !strings.Contains(reason, "a failed") && !strings.Contains(reason, `"a" failed`) {
			t.Errorf("%s skipped for %q, which does not name a's failure", n, reason)
		}
	}
	if _, reason := r.s.State("a"); reason != "a broke" {
		t.Errorf("a failed for %q, want its error", reason)
	}
}

// FailFast on random graphs: from the first failure on nothing starts,
// what runs finishes, and every task not started names the failure.
func TestSchedFailFastRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		tasks, dur := randomDAG(rng)
		bad := tasks[rng.IntN(len(tasks))].Name
		r := simulate(t, tasks, dur, 1+rng.IntN(4), fleet.FailFast, map[string]bool{bad: true})
		for _, tk := range tasks {
			st, reason := r.s.State(tk.Name)
			start, started := r.start[tk.Name]
			switch {
			case started && start >= r.failedAt && r.failedAt >= 0:
				t.Fatalf("%s started at %d, after %s failed at %d\n%s", tk.Name, start, bad, r.failedAt, describeDAG(tasks, dur))
			case started && tk.Name != bad && st != fleet.Done:
				t.Fatalf("%s ran and is %s", tk.Name, st)
			case !started && (st != fleet.Skipped || !strings.Contains(reason, bad)):
				t.Fatalf("%s never started: %s %q, want skipped naming %s\n%s", tk.Name, st, reason, bad, describeDAG(tasks, dur))
			}
		}
	}
}

// ContinueOnError skips the failure's dependents, near and far, and
// nothing else: x runs. d depends on a directly, so it names a even
// though it also waits behind c, which was skipped.
func TestSchedContinueOnError(t *testing.T) {
	tasks := []fleet.Task{
		{Name: "a"},
		{Name: "b", DependsOn: []string{"a"}},
		{Name: "c", DependsOn: []string{"b"}},
		{Name: "d", DependsOn: []string{"a", "c"}},
		{Name: "x"},
	}
	dur := map[string]int{"a": 2, "b": 1, "c": 1, "d": 1, "x": 3}
	want := map[string]string{
		"a": "failed a broke",
		"b": `skipped dependency "a" failed`,
		"c": `skipped dependency "b" was skipped`,
		"d": `skipped dependency "a" failed`,
		"x": "created ",
	}
	// Every run, not just most: the reasons must not depend on map order.
	for range 20 {
		r := simulate(t, tasks, dur, 1, fleet.ContinueOnError, map[string]bool{"a": true})
		for n, w := range want {
			st, reason := r.s.State(n)
			if got := string(st) + " " + reason; got != w {
				t.Fatalf("%s: %q, want %q", n, got, w)
			}
		}
		if !slices.Equal(r.order, []string{"a", "x"}) {
			t.Fatalf("started %v, want a then x", r.order)
		}
	}
}

// ContinueOnError on random graphs with random failures: a task is
// skipped exactly when one of its dependencies failed or was skipped,
// and its reason names such a dependency; every other task runs.
func TestSchedContinueOnErrorRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 1000 {
		tasks, dur := randomDAG(rng)
		fail := map[string]bool{}
		for _, tk := range tasks {
			fail[tk.Name] = rng.IntN(5) == 0
		}
		r := simulate(t, tasks, dur, 1+rng.IntN(4), fleet.ContinueOnError, fail)
		// What each task must end as, worked out along the dependencies.
		deps := map[string][]string{}
		for _, tk := range tasks {
			deps[tk.Name] = tk.DependsOn
		}
		memo := map[string]fleet.State{}
		var expect func(string) fleet.State
		expect = func(n string) fleet.State {
			if st, ok := memo[n]; ok {
				return st
			}
			st := fleet.Done
			if fail[n] {
				st = fleet.Failed
			}
			for _, d := range deps[n] {
				if _, isTask := deps[d]; isTask && expect(d) != fleet.Done {
					st = fleet.Skipped
				}
			}
			memo[n] = st
			return st
		}
		for _, tk := range tasks {
			st, reason := r.s.State(tk.Name)
			if w := expect(tk.Name); st != w {
				t.Fatalf("%s is %s, want %s\n%s", tk.Name, st, w, describeDAG(tasks, dur))
			}
			if st != fleet.Skipped {
				continue
			}
			ok := false
			for _, d := range tk.DependsOn {
				if _, isTask := deps[d]; !isTask {
					continue
				}
				ds, _ := r.s.State(d)
				ok = ok || (ds == fleet.Failed && reason == fmt.Sprintf("dependency %q failed", d)) ||
					(ds == fleet.Skipped && reason == fmt.Sprintf("dependency %q was skipped", d))
			}
			if !ok {
				t.Fatalf("%s skipped for %q, which names none of its failed or skipped dependencies %v", tk.Name, reason, tk.DependsOn)
			}
		}
	}
}

// A dependency that is no task is a cluster that exists: done.
func TestSchedOutsideDependency(t *testing.T) {
	s := fleet.NewScheduler([]fleet.Task{
		{Name: "a", DependsOn: []string{"existing"}},
		{Name: "b", DependsOn: []string{"a", "also-existing"}},
	}, fleet.FailFast)
	if got := s.Next(5); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Next = %v, want a alone", got)
	}
	if got := s.Next(5); len(got) != 0 {
		t.Fatalf("b started before a finished: %v", got)
	}
	s.Finish("a", nil)
	if got := s.Next(5); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Next = %v, want b", got)
	}
	s.Finish("b", nil)
	if s.Active() {
		t.Error("active with everything done")
	}
}

// Next never starts more than it is given places for, nor any for none.
func TestSchedNextBound(t *testing.T) {
	s := fleet.NewScheduler([]fleet.Task{{Name: "a"}, {Name: "b"}, {Name: "c"}}, fleet.FailFast)
	for _, free := range []int{-1, 0} {
		if got := s.Next(free); len(got) != 0 {
			t.Errorf("Next(%d) = %v", free, got)
		}
	}
	if got := s.Next(2); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Next(2) = %v", got)
	}
	s.Stop("not started: interrupted")
	if st, reason := s.State("c"); st != fleet.Skipped || reason != "not started: interrupted" {
		t.Errorf("c after Stop: %s %q", st, reason)
	}
	if st, _ := s.State("a"); st != fleet.Running {
		t.Errorf("Stop changed a running task to %s", st)
	}
}

// clock is a fake now for Run: every reading is later than the one
// before, from whichever goroutine.
type clock struct{ n atomic.Int64 }

func (c *clock) now() time.Time { return time.Unix(1_700_000_000, c.n.Add(1)) }

// Run never has more than parallel creates at once, and fills that many
// when it can. The creates are held open until the test lets one go, so
// the count is of creates truly in flight, not of how fast they are.
func TestRunParallel(t *testing.T) {
	const n = 9
	for _, parallel := range []int{0, 1, 3, 9, 20} {
		t.Run(fmt.Sprint(parallel), func(t *testing.T) {
			var tasks []fleet.Task
			release := map[string]chan struct{}{}
			for i := range n {
				name := fmt.Sprintf("c%d", i)
				tasks = append(tasks, fleet.Task{Name: name})
				release[name] = make(chan struct{})
			}
			var cur, peak atomic.Int32
			// Buffered: a create Run should not have started still
			// counts, and does not block.
			started := make(chan string, n)
			create := func(ctx context.Context, name string) error {
				c := cur.Add(1)
				for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
				}
				started <- name
				<-release[name]
				cur.Add(-1)
				return nil
			}
			var clk clock
			done := make(chan []fleet.Outcome)
			go func() { done <- fleet.Run(context.Background(), tasks, parallel, fleet.FailFast, clk.now, create) }()
			limit := max(parallel, 1)
			var held []string
			for finished := 0; finished < n; finished++ {
				// Wait until every place is taken (or every task left is).
				for len(held) < min(limit, n-finished) {
					held = append(held, <-started)
				}
				close(release[held[0]])
				held = held[1:]
			}
			outs := <-done
			if p := int(peak.Load()); p != min(limit, n) {
				t.Errorf("at most %d creates ran at once, want %d", p, min(limit, n))
			}
			// Run stamps a start before the create's goroutine runs, so
			// the outcomes' times show a create too many even when its
			// goroutine was late to count itself.
			if o := overlap(outs); o > limit {
				t.Errorf("Run had %d creates started and not ended at once, parallel %d", o, parallel)
			}
			for i, o := range outs {
				if o.Name != tasks[i].Name || o.State != fleet.Done || o.Err != nil || !o.Start.Before(o.End) {
					t.Errorf("outcome %d: %+v", i, o)
				}
			}
		})
	}
}

// overlap is how many of the outcomes' [Start, End] spans cover one
// instant at most.
func overlap(outs []fleet.Outcome) int {
	type edge struct {
		at time.Time
		d  int
	}
	var es []edge
	for _, o := range outs {
		if !o.Start.IsZero() {
			es = append(es, edge{o.Start, 1}, edge{o.End, -1})
		}
	}
	slices.SortFunc(es, func(a, b edge) int { return a.at.Compare(b.at) })
	cur, most := 0, 0
	for _, e := range es {
		cur += e.d
		most = max(most, cur)
	}
	return most
}

// Run's outcomes come in task order, whatever order the creates end in,
// with a dependent started after its dependency ended; under FailFast a
// failure leaves the rest unstarted, without times.
func TestRunOutcomes(t *testing.T) {
	errBoom := errors.New("boom")
	tasks := []fleet.Task{{Name: "late", DependsOn: []string{"early"}}, {Name: "early"}, {Name: "bad"}, {Name: "after", DependsOn: []string{"bad"}}}
	var clk clock
	outs := fleet.Run(context.Background(), tasks, 2, fleet.ContinueOnError, clk.now, func(ctx context.Context, name string) error {
		if name == "bad" {
			return errBoom
		}
		return nil
	})
	byName := map[string]fleet.Outcome{}
	for i, o := range outs {
		if o.Name != tasks[i].Name {
			t.Fatalf("outcome %d is %s, want %s", i, o.Name, tasks[i].Name)
		}
		byName[o.Name] = o
	}
	if l, e := byName["late"], byName["early"]; l.State != fleet.Done || !l.Start.After(e.End) {
		t.Errorf("late %s, started %v, early ended %v", l.State, l.Start, e.End)
	}
	if b := byName["bad"]; b.State != fleet.Failed || !errors.Is(b.Err, errBoom) || b.Reason != "boom" || b.End.IsZero() {
		t.Errorf("bad: %+v", b)
	}
	if a := byName["after"]; a.State != fleet.Skipped || a.Reason != `dependency "bad" failed` || !a.Start.IsZero() || !a.End.IsZero() {
		t.Errorf("after: %+v", a)
	}

	// One at a time, bad (first in the manifest) fails and nothing else starts.
	outs = fleet.Run(context.Background(), []fleet.Task{{Name: "bad"}, {Name: "other"}}, 1, fleet.FailFast, clk.now, func(ctx context.Context, name string) error {
		if name != "bad" {
			t.Errorf("%s started after bad failed", name)
		}
		return errBoom
	})
	if o := outs[1]; o.State != fleet.Skipped || !strings.Contains(o.Reason, "cluster bad failed") || !o.Start.IsZero() {
		t.Errorf("other: %+v", o)
	}
}

// Cancelling ctx mid-run starts nothing new; the two creates in flight
// see the cancelled ctx, and what they return is recorded.
func TestRunInterrupted(t *testing.T) {
	tasks := []fleet.Task{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d", DependsOn: []string{"a"}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan string, len(tasks)) // a create too many does not block
	proceed := make(chan struct{})
	var mu sync.Mutex
	seen := map[string]error{} // the ctx error each create saw
	var clk clock
	done := make(chan []fleet.Outcome)
	go func() {
		done <- fleet.Run(ctx, tasks, 2, fleet.ContinueOnError, clk.now, func(ctx context.Context, name string) error {
			started <- name
			<-proceed
			mu.Lock()
			seen[name] = ctx.Err()
			mu.Unlock()
			return ctx.Err()
		})
	}()
	first := []string{<-started, <-started}
	slices.Sort(first)
	cancel()
	close(proceed)
	outs := <-done
	close(started)
	for n := range started {
		first = append(first, n)
	}
	if !slices.Equal(first, []string{"a", "b"}) || len(seen) != 2 {
		t.Fatalf("started %v, creates that returned: %v", first, seen)
	}
	for _, o := range outs {
		switch o.Name {
		case "a", "b":
			if !errors.Is(seen[o.Name], context.Canceled) || o.State != fleet.Failed || !errors.Is(o.Err, context.Canceled) || o.Start.IsZero() || !o.End.After(o.Start) {
				t.Errorf("%s: saw %v, outcome %+v", o.Name, seen[o.Name], o)
			}
		default:
			if o.State != fleet.Skipped || o.Reason != "not started: interrupted" || !o.Start.IsZero() {
				t.Errorf("%s: %+v", o.Name, o)
			}
		}
	}
}

// A ctx already done starts nothing at all.
func TestRunCancelledBefore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var clk clock
	outs := fleet.Run(ctx, []fleet.Task{{Name: "a"}, {Name: "b"}}, 2, fleet.FailFast, clk.now, func(ctx context.Context, name string) error {
		t.Errorf("%s started", name)
		return nil
	})
	for _, o := range outs {
		if o.State != fleet.Skipped || o.Reason != "not started: interrupted" {
			t.Errorf("%s: %+v", o.Name, o)
		}
	}
}
