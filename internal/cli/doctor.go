package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/cli/show"
	"github.com/bcollard/marina/internal/doctor"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

func (r *root) doctorCmd() *cobra.Command {
	var o doctor.Options
	var output string
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check every part of the lab and say how to fix what is wrong",
		Long:  doctorHelp(),
		Example: `  marina doctor
  marina doctor -o json
  marina doctor --fix --dry-run
  marina doctor --fix`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if o.DryRun && !o.Fix {
				return session.Usagef("--dry-run goes with --fix (doctor alone changes nothing): marina doctor --fix --dry-run")
			}
			text := output == "text"
			if text {
				o.Before = func(rep doctor.Report) {
					show.Style{Colour: r.colour}.Doctor(r.stdout, rep)
					printRepairs(r.stdout, rep.Repairs, "Repairing (--fix):")
					fmt.Fprintln(r.stdout)
				}
			}
			rep, err := doctor.Run(c.Context(), r.env.Load(), o)
			if err != nil {
				return err
			}
			if !text {
				if err := ui.Render(r.stdout, output, rep); err != nil {
					return err
				}
			} else {
				if o.Fix && !o.DryRun && len(rep.Repairs) > 0 {
					fmt.Fprintln(r.stdout, "\nChecking again:")
				}
				show.Style{Colour: r.colour}.Doctor(r.stdout, rep)
				switch {
				case o.Fix && o.DryRun && len(rep.Repairs) > 0:
					printRepairs(r.stdout, rep.Repairs, "Repairs --fix would make (--dry-run, nothing was changed):")
				case o.Fix && len(rep.Repairs) == 0:
					fmt.Fprintln(r.stdout, "Nothing for --fix to repair.")
				}
			}
			if rep.Failed() {
				return &session.ExitError{Code: session.ExitFailed}
			}
			return nil
		},
	}
	outputFlag(c, &output)
	c.Flags().BoolVar(&o.Fix, "fix", false, "make the safe repairs the checks name, then check again")
	c.Flags().BoolVar(&o.DryRun, "dry-run", false, "with --fix: list the repairs and make none")
	return c
}

// printDoctor writes the report uncoloured.
func printDoctor(w io.Writer, rep doctor.Report) { show.Style{}.Doctor(w, rep) }

func printRepairs(w io.Writer, repairs []string, head string) {
	ui.CleanStrings(&repairs)
	if len(repairs) == 0 {
		return
	}
	fmt.Fprintln(w, head)
	for _, s := range repairs {
		fmt.Fprintf(w, "  - %s\n", s)
	}
}

// doctorHelp lists doctor's checks from its table, in their order, with
// what each needs.
func doctorHelp() string {
	var b strings.Builder
	b.WriteString("Check every part of the lab, in this order:\n\n")
	row := func(name, about, needs string) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("  %-14s %-41s %s", name, about, needs), " ") + "\n")
	}
	row("CHECK", "WHAT", "NEEDS")
	for _, c := range doctor.Checks() {
		row(c.Name, c.About, strings.Join(c.Needs, ", "))
	}
	b.WriteString(`
Each check prints [OK], [WARN] or [FAIL] with what it found, and the command
that fixes what is not right; a check whose needs did not pass is [SKIP] and
says which. A mirror and a cluster each have a check of their own. Exits 1
when a check failed (warnings alone: 0).

--fix makes the safe repairs it names, and nothing else: it runs the VM's
network script again (rules, forwarding, boot unit and drop-in), adds the
host's route or moves marina's own to lima0's address (through sudo), and
exports stale kubeconfigs again; then it checks again. --fix --dry-run lists
those repairs and makes none.`)
	return b.String()
}
