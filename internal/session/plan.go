package session

import "fmt"

// Step is one change a plan makes, printable for --dry-run.
type Step struct {
	Do     string // what, as a sentence
	Reason string // why, when it is not obvious
}

// String is the step as the plan prints it: what, and why in brackets.
func (s Step) String() string {
	if s.Reason == "" {
		return s.Do
	}
	return s.Do + " (" + s.Reason + ")"
}

// PrintPlan prints a --dry-run plan, or that there is nothing to do
// (none says why).
func (e *Env) PrintPlan(steps []Step, none string) {
	if len(steps) == 0 {
		fmt.Fprintf(e.Stdout, "No changes: %s.\n", none)
		return
	}
	fmt.Fprintln(e.Stdout, "Plan (--dry-run, nothing was changed):")
	for _, s := range steps {
		fmt.Fprintf(e.Stdout, "  - %s\n", s)
	}
}
