package fleet

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Task is one cluster to create and the clusters it needs first. A
// dependency that is no task (it exists already) counts as done.
type Task struct {
	Name      string
	DependsOn []string
}

// State is where a task is.
type State string

const (
	Pending State = "pending"
	Running State = "running"
	Done    State = "created"
	Failed  State = "failed"
	Skipped State = "skipped"
)

// Scheduler decides which tasks start when. It is a plain state machine,
// with no clock and no goroutines: Run drives it with real creates, and
// the tests with simulated ones.
//
// A task is ready when each of its dependencies is done. Next starts ready
// tasks while places are free, so no place idles while a ready task waits;
// among ready tasks it prefers the one with the longest chain of
// dependents behind it (then manifest order), which is what shortens the
// whole run when places are scarce.
type Scheduler struct {
	strategy Strategy
	order    []string
	tasks    map[string]*task
	failed   bool
}

type task struct {
	Task
	index      int
	state      State
	reason     string
	dependents []string
	chain      int // the longest path of dependents from here, itself counted
}

// NewScheduler makes a scheduler for tasks, which must not depend on each
// other in a circle (Load refuses those).
func NewScheduler(tasks []Task, strategy Strategy) *Scheduler {
	s := &Scheduler{strategy: strategy, tasks: map[string]*task{}}
	for i, t := range tasks {
		s.order = append(s.order, t.Name)
		s.tasks[t.Name] = &task{Task: t, index: i, state: Pending}
	}
	// In task order, so that who is skipped for what never depends on
	// the order of a map.
	for _, n := range s.order {
		for _, d := range s.tasks[n].DependsOn {
			if dt, ok := s.tasks[d]; ok {
				dt.dependents = append(dt.dependents, n)
			}
		}
	}
	var chain func(*task) int
	chain = func(t *task) int {
		if t.chain > 0 {
			return t.chain
		}
		best := 0
		for _, d := range t.dependents {
			best = max(best, chain(s.tasks[d]))
		}
		t.chain = best + 1
		return t.chain
	}
	for _, t := range s.tasks {
		chain(t)
	}
	return s
}

// Ready lists the pending tasks whose dependencies are all done, best
// first.
func (s *Scheduler) Ready() []string {
	if s.strategy == FailFast && s.failed {
		return nil
	}
	var out []*task
	for _, n := range s.order {
		t := s.tasks[n]
		if t.state != Pending {
			continue
		}
		ok := true
		for _, d := range t.DependsOn {
			if dt, isTask := s.tasks[d]; isTask && dt.state != Done {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].chain > out[j].chain })
	names := make([]string, len(out))
	for i, t := range out {
		names[i] = t.Name
	}
	return names
}

// Next starts up to free ready tasks and returns them.
func (s *Scheduler) Next(free int) []string {
	ready := s.Ready()
	if len(ready) > free {
		ready = ready[:max(free, 0)]
	}
	for _, n := range ready {
		s.tasks[n].state = Running
	}
	return ready
}

// Finish records how a running task ended. A failure skips the tasks that
// can no longer start: its dependents, and under FailFast every task not
// started. Each names the failure: a dependent says its dependency
// failed; under FailFast every other task says the failure stopped the
// fleet; under ContinueOnError a dependent further down names the
// dependency that was skipped before it.
func (s *Scheduler) Finish(name string, err error) {
	t := s.tasks[name]
	if err == nil {
		t.state = Done
		return
	}
	t.state = Failed
	t.reason = err.Error()
	s.failed = true
	next := s.skip(t.dependents, fmt.Sprintf("dependency %q failed", name))
	if s.strategy == FailFast {
		s.Stop(fmt.Sprintf("not started: cluster %s failed, and the fleet's strategy is %s", name, FailFast))
		return
	}
	// Breadth first: a task that depends on the failure itself names it,
	// even when it also waits behind a dependent skipped for it.
	for len(next) > 0 {
		var after []*task
		for _, dt := range next {
			after = append(after, s.skip(dt.dependents, fmt.Sprintf("dependency %q was skipped", dt.Name))...)
		}
		next = after
	}
}

// skip marks the pending tasks among names skipped, for reason, and
// returns them.
func (s *Scheduler) skip(names []string, reason string) []*task {
	var out []*task
	for _, n := range names {
		if dt := s.tasks[n]; dt.state == Pending {
			dt.state, dt.reason = Skipped, reason
			out = append(out, dt)
		}
	}
	return out
}

// Stop skips every task not started, for reason.
func (s *Scheduler) Stop(reason string) {
	for _, n := range s.order {
		if t := s.tasks[n]; t.state == Pending {
			t.state, t.reason = Skipped, reason
		}
	}
}

// Active reports whether a task runs or can still start.
func (s *Scheduler) Active() bool {
	running := false
	for _, t := range s.tasks {
		if t.state == Running {
			running = true
		}
	}
	return running || len(s.Ready()) > 0
}

// State is where task name is, and why it was skipped or failed.
func (s *Scheduler) State(name string) (State, string) {
	t := s.tasks[name]
	return t.state, t.reason
}

// Chain is the length of the longest chain of dependents behind a task,
// itself included.
func (s *Scheduler) Chain(name string) int { return s.tasks[name].chain }

// Outcome is how one task of a Run ended.
type Outcome struct {
	Name   string
	State  State
	Reason string // why it failed or was skipped
	Err    error
	Start  time.Time
	End    time.Time
}

// Run creates the tasks, at most parallel at once, calling create for
// each from its own goroutine. When ctx ends nothing new starts; the
// creates in flight get the ended ctx and finish (rolling back) before Run
// returns. Outcomes are in the tasks' order.
func Run(ctx context.Context, tasks []Task, parallel int, strategy Strategy, now func() time.Time, create func(ctx context.Context, name string) error) []Outcome {
	s := NewScheduler(tasks, strategy)
	parallel = max(parallel, 1)
	type result struct {
		name string
		err  error
		end  time.Time
	}
	results := make(chan result)
	out := map[string]*Outcome{}
	for _, t := range tasks {
		out[t.Name] = &Outcome{Name: t.Name}
	}
	running := 0
	stopped := false
	for {
		if !stopped && ctx.Err() != nil {
			stopped = true
			s.Stop("not started: interrupted")
		}
		if !stopped {
			for _, n := range s.Next(parallel - running) {
				running++
				out[n].Start = now()
				go func() {
					err := create(ctx, n)
					results <- result{n, err, now()}
				}()
			}
		}
		if running == 0 {
			break
		}
		select {
		case r := <-results:
			running--
			out[r.name].End, out[r.name].Err = r.end, r.err
			s.Finish(r.name, r.err)
		case <-ctx.Done():
			if !stopped {
				stopped = true
				s.Stop("not started: interrupted")
			}
			r := <-results
			running--
			out[r.name].End, out[r.name].Err = r.end, r.err
			s.Finish(r.name, r.err)
		}
	}
	s.Stop("not started")
	list := make([]Outcome, 0, len(tasks))
	for _, t := range tasks {
		o := out[t.Name]
		o.State, o.Reason = s.State(t.Name)
		list = append(list, *o)
	}
	return list
}
