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

// Plan is what a --dry-run found to do: its steps, or why there are none.
type Plan struct {
	Steps []Step
	None  string // why nothing is to do, when Steps is empty
}

// Result is what a command that changes things hands back when it is
// done, for cli to show: the plan under --dry-run, or what it did (or
// found already done), one sentence each. Feature packages return it
// rather than print, so one layer decides what reaches stdout.
type Result struct {
	Plan  *Plan
	Lines []string
}

// Planned is the Result of a --dry-run: steps, or none's reason.
func Planned(steps []Step, none string) Result {
	return Result{Plan: &Plan{Steps: steps, None: none}}
}

// Said is a Result of one line.
func Said(format string, a ...any) Result {
	return Result{Lines: []string{fmt.Sprintf(format, a...)}}
}

// Add appends a line to r.
func (r *Result) Add(format string, a ...any) {
	r.Lines = append(r.Lines, fmt.Sprintf(format, a...))
}
