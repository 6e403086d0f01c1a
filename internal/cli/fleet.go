package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cli/show"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// fleetLong's manifest is indented four spaces, so that the generated
// Markdown reference keeps it a block.
const fleetLong = `A Fleet declares clusters and the order they need in one manifest:

    apiVersion: marina.dev/v1alpha1
    kind: Fleet
    metadata:
      name: demo            # the marina.dev/fleet label of its nodes
    spec:
      maxParallel: 2        # clusters created at once (0 or 1: one at a time)
      strategy: FailFast    # or ContinueOnError
      defaults:             # for every cluster that does not set its own
        workers: 1
        labels: {env: demo}
      clusters:
        - east                              # a name alone takes the defaults
        - name: west
          num: 5                            # pin the slot
          registries: {mirrors: [registry-quayio]}
        - name: mesh
          dependsOn: [east, west]           # created once both are ready
          addons: {metricsServer: {enabled: true}}

klimax's apiVersion klimax.dev/v1alpha1 is read too.`

func (r *root) fleetCmd() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "fleet",
		Short: "Create, list, label and delete sets of clusters declared in one manifest",
		Long:  fleetLong,
		Example: `  marina fleet apply -f fleet.yaml
  marina fleet list
  marina fleet describe demo
  marina fleet delete demo`,
	})
	apply := r.fleetApplyCmd("apply")
	apply.Aliases = []string{"create"} // klimax's word
	c.AddCommand(apply, r.fleetListCmd(), r.fleetDescribeCmd(), r.fleetLabelCmd(), r.fleetAdoptCmd(), r.fleetStopCmd(false), r.fleetStopCmd(true), r.fleetDeleteCmd())
	return c
}

func (r *root) fleetApplyCmd(use string) *cobra.Command {
	var o fleet.ApplyOptions
	var output string
	c := &cobra.Command{
		Use:   use + " FILE | -f FILE",
		Short: "Create a fleet's missing clusters in parallel along their dependencies",
		Long: `Read a Fleet manifest (FILE or -f FILE; - reads stdin), give every cluster to create its slot
before anything is made, print the plan (create, skip, adopt or label for each
cluster), then create the missing clusters: each starts as soon as the
clusters it depends on are ready and a place is free (spec.maxParallel), the
longest chain first. Existing clusters are kept, in the slot they have.

Each create is marina cluster create's, rollback included. Under FailFast,
nothing new starts after a failure; under ContinueOnError only the failure's
dependents are skipped. Ctrl-C rolls back the creates in flight. The exit
status is 1 when a cluster failed. --dry-run plans without a VM too: every
cluster is then a create, in its num or the next free slot.

` + fleetLong,
		Example: `  marina fleet apply fleet.yaml --dry-run
  marina fleet apply -f fleet.yaml --max-parallel 3
  marina fleet apply -f fleet.yaml --adopt -o json`,
		Args: func(c *cobra.Command, args []string) error {
			file := c.Flags().Changed("filename")
			switch {
			case len(args) > 1:
				return fmt.Errorf("give one manifest (%d given: %s): marina fleet %s FILE", len(args), strings.Join(args, " "), use)
			case len(args) == 1 && file:
				return fmt.Errorf("give the manifest as FILE or with -f, not both: marina fleet %s FILE", use)
			case len(args) == 0 && !file:
				return fmt.Errorf("give the fleet manifest: marina fleet %s FILE (or -f FILE; - reads stdin)", use)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			text := output == "text"
			if text {
				o.Plan = func(rep *fleet.Report) { printFleetPlan(r.stdout, rep) }
			}
			if len(args) == 1 {
				o.File = args[0]
			}
			rep, err := fleet.Apply(c.Context(), r.env.Load(), o)
			return r.fleetApplied(rep, err, output)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.File, "filename", "f", "", "the Fleet manifest (- for stdin)")
	f.IntVar(&o.MaxParallel, "max-parallel", 0, "create this many clusters at once (overrides spec.maxParallel)")
	f.BoolVar(&o.Adopt, "adopt", false, "make existing clusters of the manifest's names this fleet's (sets the fleet label and the manifest's labels)")
	f.StringVarP(&output, "output", "o", "text", "output format: text, json or yaml (the plan, or each cluster's result, slot and phase timings)")
	f.DurationVar(&o.Wait, "wait", addons.DefaultWait, "how long each cluster waits for each addon to be ready (and a cni: none member for your CNI)")
	f.BoolVar(&o.Retain, "retain", false, "keep a cluster whose create failed, for a look")
	f.BoolVar(&o.NoSwitch, "no-switch-context", false, "leave kubectl's current context as it is (otherwise the first cluster created becomes it: kind.switchContext)")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) fleetListCmd() *cobra.Command {
	return withList(r, &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the fleets and their clusters (from the nodes' marina.dev/fleet label)",
		Args:    cobra.NoArgs,
		Long: `List every fleet the VM's clusters belong to, with its clusters: a cluster is in
the fleet its control-plane node's marina.dev/fleet label names. Clusters of
no fleet are left out (marina cluster list shows them); -o json also gives
each fleet's dependsOn, as the manifest fleet apply recorded says.`,
		Example: `  marina fleet list
  marina fleet ls -o yaml`,
	}, fleet.List, printFleets, func() string {
		return "No fleets: `marina fleet apply -f FILE` makes one."
	})
}

func (r *root) fleetDescribeCmd() *cobra.Command {
	var name string
	c := withOutput(r, &cobra.Command{
		Use:     "describe NAME",
		Aliases: []string{"desc", "show"},
		Short:   "Show a fleet's clusters: slot, API port, kubeconfig, nodes, version, readiness, labels",
		Args: func(c *cobra.Command, args []string) error {
			if err := one("fleet", "marina fleet describe NAME")(c, args); err != nil {
				return err
			}
			name = args[0]
			return nil
		},
		Long: `Show each cluster of the fleet: its slot, API port, kubeconfig file, number of
nodes, Kubernetes version, whether every node is Ready, and its labels.`,
		Example: `  marina fleet describe demo
  marina fleet desc demo -o json`,
	}, func(ctx context.Context, e *session.Env) ([]fleet.MemberRow, error) {
		return fleet.Describe(ctx, e, name)
	}, printFleetMembers)
	return c
}

func (r *root) fleetLabelCmd() *cobra.Command {
	var labels []string
	var dryRun bool
	c := &cobra.Command{
		Use:   "label NAME KEY=VALUE… KEY-…",
		Short: "Set or remove labels on every node of every cluster of a fleet",
		Example: `  marina fleet label demo team=net env-
  marina fleet label demo -l team=net -l env-`,
		Args: atLeast(1, "name the fleet and the labels: marina fleet label NAME KEY=VALUE… KEY-…"),
		RunE: func(c *cobra.Command, args []string) error {
			return r.done(fleet.SetLabels(c.Context(), r.env.Load(), args[0], append(args[1:], labels...), dryRun))
		},
		Long: `Set (KEY=VALUE) or remove (KEY-) labels on every node of every cluster in the
fleet, as marina cluster label does for one (-l KEY=VALUE says the same). marina.dev/fleet and
managed-by are marina's own and refused: marina fleet adopt moves a cluster
to another fleet.`,
	}
	c.Flags().StringArrayVarP(&labels, "label", "l", nil, "key=value to set, key- to remove (repeatable)")
	dryRunFlag(c, &dryRun)
	return c
}

func (r *root) fleetAdoptCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "adopt FLEET CLUSTER…",
		Short:   "Make existing clusters members of a fleet (sets only the marina.dev/fleet label)",
		Example: `  marina fleet adopt demo dev staging`,
		Args:    atLeast(2, "name the fleet and the clusters to adopt: marina fleet adopt FLEET CLUSTER…"),
		RunE: func(c *cobra.Command, args []string) error {
			return fleet.AdoptClusters(c.Context(), r.env.Load(), args[0], args[1:])
		},
		Long: `Set the marina.dev/fleet=FLEET label on every node of the named clusters, and
nothing else: they then show in marina fleet list and go with marina fleet
delete FLEET. A cluster that was in another fleet leaves it, with a warning.
To also give them a manifest's labels, marina fleet apply --adopt.`,
	}
}

func (r *root) fleetDeleteCmd() *cobra.Command {
	var file string
	var yes, dryRun bool
	c := &cobra.Command{
		Use:     "delete NAME | -f FILE",
		Aliases: []string{"rm"},
		Short:   "Delete a fleet's clusters, every cluster before those it depends on",
		Long: `Delete the clusters carrying the fleet's label, or those of the manifest given
with -f that exist and are in its fleet, dependents first, with their
kubeconfig files and entries. Asks first unless -y; a manifest read from stdin
(-f -) needs -y, as stdin is not a terminal to answer on.`,
		Example: `  marina fleet delete demo
  marina fleet delete -f fleet.yaml -y`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return r.done(fleet.Delete(c.Context(), r.env.Load(), name, file, yes, dryRun))
		},
	}
	c.Flags().StringVarP(&file, "filename", "f", "", "delete the clusters of this Fleet manifest (- for stdin)")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	dryRunFlag(c, &dryRun)
	return c
}

// fleetStopCmd is fleet stop, or with start fleet start.
func (r *root) fleetStopCmd(start bool) *cobra.Command {
	var wait time.Duration
	var dryRun bool
	c := &cobra.Command{
		Use:   "stop NAME",
		Short: "Stop a fleet's clusters, dependents first",
		Long: `Stop the clusters carrying the fleet's label as marina cluster stop does,
one after the other, every cluster before those it depends on (as the
manifest fleet apply recorded says).`,
		Example: "  marina fleet stop demo",
		Args:    one("fleet", "marina fleet stop NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			return r.done(fleet.StopStart(c.Context(), r.env.Load(), args[0], start, wait, dryRun))
		},
	}
	if start {
		c.Use, c.Short, c.Example = "start NAME", "Start a fleet's clusters, dependencies first", "  marina fleet start demo"
		c.Args = one("fleet", "marina fleet start NAME")
		c.Long = `Start the clusters carrying the fleet's label as marina cluster start does,
one after the other, every cluster after those it depends on: each is back
before the next starts.`
		c.Flags().DurationVar(&wait, "wait", kindcluster.StartWait, "how long to wait for each cluster to be back")
	}
	dryRunFlag(c, &dryRun)
	return c
}

func printFleets(w io.Writer, rows []fleet.ListRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLEET\tCLUSTERS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r.Name, strings.Join(r.Clusters, ","))
	}
	tw.Flush()
}

func printFleetMembers(w io.Writer, rows []fleet.MemberRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSLOT\tAPI-PORT\tNODES\tVERSION\tREADY\tKUBECONFIG\tLABELS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%v\t%s\t%s\n", r.Name, r.Num, r.APIPort, r.Nodes, show.OrDash(r.Version), r.Ready, show.OrDash(r.KubeconfigPath), show.OrDash(fleet.ShownLabels(r.Labels)))
	}
	tw.Flush()
}

// fleetApplied shows the end of a fleet apply in output's format: the
// report, or in text the end of the plan or what changed. A cluster that
// failed is an ERROR line and exit status 1.
func (r *root) fleetApplied(rep *fleet.Report, err error, output string) error {
	if rep == nil {
		return err
	}
	switch {
	case output != "text":
		if rerr := ui.Render(r.stdout, output, rep); rerr != nil {
			return rerr
		}
	case rep.DryRun:
		fmt.Fprintln(r.stdout, "(dry-run: no changes made)")
	default:
		printFleetApplied(r.stdout, rep)
	}
	if fails := rep.Failures(); len(fails) > 0 {
		fmt.Fprintln(r.stderr, "ERROR: "+strings.Join(fails, "\nERROR: "))
		if err == nil {
			err = &session.ExitError{Code: session.ExitFailed}
		}
	}
	return err
}

// printFleetPlan is the text view of fleet apply's plan: each cluster's slot, action,
// dependencies and options, then the notes.
func printFleetPlan(w io.Writer, rep *fleet.Report) {
	name := rep.Fleet
	if name == "" {
		name = "(unnamed)"
	}
	fmt.Fprintf(w, "Fleet %s — maxParallel=%d strategy=%s\n", name, rep.MaxParallel, rep.Strategy)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNUM\tACTION\tDEPENDS-ON\tOPTIONS")
	for _, c := range rep.Clusters {
		deps := "-"
		if len(c.DependsOn) > 0 {
			deps = strings.Join(c.DependsOn, ",")
		}
		num := "-"
		switch {
		case c.Slot > 0:
			num = strconv.Itoa(c.Slot)
		case rep.Offline != "":
			num = "next"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, num, c.Action, deps, c.Options)
	}
	_ = tw.Flush()
	for _, c := range rep.Clusters {
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  %s: %s\n", c.Name, n)
		}
	}
	printRouted(w, rep)
	if rep.Offline != "" {
		fmt.Fprintf(w, "%s.\n", rep.Offline)
	}
}

// printFleetApplied is the text view of the end of a fleet apply: what it changed, in how
// long, or that there was nothing to do.
func printFleetApplied(w io.Writer, rep *fleet.Report) {
	changed := rep.Created + rep.Failed + rep.Count("adopted") + rep.Count("labelled")
	notes := false
	for _, c := range rep.Clusters {
		notes = notes || len(c.Notes) > 0
	}
	if changed == 0 && !notes {
		fmt.Fprintln(w, "Nothing to do: every cluster of the fleet exists as the manifest says.")
	}
	var al []string
	for _, what := range []string{"adopted", "labelled"} {
		if n := rep.Count(what); n > 0 {
			al = append(al, fmt.Sprintf("%d %s", n, what))
		}
	}
	extra := ""
	if len(al) > 0 {
		extra = " (" + strings.Join(al, ", ") + ")"
	}
	fmt.Fprintf(w, "apply complete: %d created, %d skipped, %d failed%s in %s\n", rep.Created, rep.Skipped, rep.Failed, extra,
		time.Duration(rep.MakespanSeconds*float64(time.Second)).Round(100*time.Millisecond))
	if rep.Current != "" {
		fmt.Fprintf(w, "The current context is %s now (--no-switch-context leaves it).\n", rep.Current)
	}
}

// printRouted names the ranges network.podRouting routes, per cluster.
func printRouted(w io.Writer, rep *fleet.Report) {
	for _, c := range rep.Clusters {
		if c.Pods != "" {
			fmt.Fprintf(w, "  %s: pods %s and ClusterIPs %s (network.podRouting routes them)\n", c.Name, c.Pods, c.Services)
		}
	}
}
