package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/migrate"
)

func (r *root) migrateCmd() *cobra.Command {
	var o migrate.Options
	c := &cobra.Command{
		Use:   "migrate [FLEET-FILE...]",
		Short: "Bring a klimax installation over: config, caches, VM, clusters, kubeconfigs",
		Long: `Read ~/.klimax and bring everything in it over to marina, printing the whole
plan before doing anything:

  - ~/.klimax/config.yaml becomes ~/.marina/config.yaml (0600): keys renamed,
    klimax's old defaults that marina cannot run replaced, each change said;
    your comments are kept, and a value that needs your choice stops the
    migration before anything is written;
  - the mirrors' caches move to ~/.marina/registry-cache (copied and verified
    first when on another file system);
  - klimax's VM, when it can be done safely, becomes marina's: stopped (asked
    first; -y accepts), moved under marina's Lima, started with marina's
    template, its kind network given marina's settings with every container
    keeping its address, then marina up; otherwise it is left to klimax,
    migrate says why, and writes ~/.marina/klimax-fleet.yaml, a Fleet of its
    clusters that marina fleet apply -f makes again after marina up;
  - ~/.kube/klimax's kubeconfigs become marina's, the entries klimax merged
    into your kubeconfig are marked as marina's, node labels managed-by and
    klimax.dev/fleet become marina's;
  - klimax's Docker context and agent skill become marina's;
  - each FLEET-FILE given with apiVersion klimax.dev/v1alpha1 is rewritten
    as marina.dev/v1alpha1 in place.

Nothing is deleted: what is replaced is kept under ~/.klimax/migrated, and
~/.klimax stays until --cleanup renames it aside (after a run with nothing
left to do). A run stopped anywhere carries on when run again; a run after a
success plans nothing.`,
		Example: `  marina migrate --dry-run
  marina migrate
  marina migrate -y fleets/*.yaml
  marina migrate --cleanup`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Fleets = args
			skill, err := skillFile()
			if err != nil {
				return err
			}
			o.Skill = []byte(skill)
			o.Plan = func(p migrate.Plan) { printMigratePlan(r.stdout, p) }
			rep, err := migrate.Run(c.Context(), r.env.Load(), o)
			if rep != nil {
				printMigrated(r.stdout, rep)
			}
			return err
		},
	}
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "stop klimax's running VM without asking")
	c.Flags().BoolVar(&o.Cleanup, "cleanup", false, "rename ~/.klimax and ~/.kube/klimax to *.migrated-<date> once everything came over")
	dryRunFlag(c, &o.DryRun)
	return c
}

// printMigratePlan writes migrate's plan, before anything changes.
func printMigratePlan(w io.Writer, p migrate.Plan) {
	if p.DryRun {
		fmt.Fprintln(w, "Plan (--dry-run, nothing was changed):")
	} else {
		fmt.Fprintln(w, "Plan:")
	}
	for _, s := range p.Steps {
		fmt.Fprintf(w, "  - %s\n", s)
	}
	if len(p.Notes) > 0 {
		fmt.Fprintln(w, "Notes:")
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

// printMigrated writes the end of a migrate: that there was nothing to
// do, or the VM up made ready and that the migration is complete, with
// what is left in place.
func printMigrated(w io.Writer, rep *migrate.Report) {
	switch {
	case rep.Nothing != "":
		fmt.Fprintf(w, "Nothing to migrate: %s.\n", rep.Nothing)
		if rep.Left != "" {
			fmt.Fprintf(w, "%s is left in place; `marina migrate --cleanup` renames it aside.\n", rep.Left)
		}
		return
	case rep.Plan.DryRun:
		return
	}
	if rep.Ready != nil {
		printReady(w, rep.Ready)
	}
	if !rep.Done {
		return
	}
	fmt.Fprintln(w, "Migration complete.")
	if rep.Left != "" {
		fmt.Fprintf(w, "%s is left in place; `marina migrate --cleanup` renames it aside once you are happy.\n", rep.Left)
	}
}
