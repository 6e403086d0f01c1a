package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
)

// The commands' data views. -o json and -o yaml of every command render
// one value with ui.Render (its json tags alone: see outputHelp); -o text
// uses the printers below.

// checkOutput refuses an -o value marina has no renderer for.
func checkOutput(o string) error {
	if o != "text" && o != "json" && o != "yaml" {
		return session.Usagef("unknown output format %q: use text, json or yaml", o)
	}
	return nil
}

func outputValues(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"text", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp
}

// outputFlag gives c its -o flag.
func outputFlag(c *cobra.Command, v *string) {
	c.Flags().StringVarP(v, "output", "o", "text", "output format: text, json or yaml")
	_ = c.RegisterFlagCompletionFunc("output", outputValues)
}

// withOutput gives c an -o text|json|yaml flag and a RunE that gets the
// result and prints it in that format. When get fails nothing is printed
// on stdout: a script reading the JSON gets none rather than half.
func withOutput[T any](r *root, c *cobra.Command, get func(context.Context, *session.Env) (T, error), text func(io.Writer, T)) *cobra.Command {
	return withVerdict(r, c, get, text, nil)
}

// withVerdict is withOutput whose command, once the whole result is
// printed, ends with verdict's error (status: what it shows is broken).
func withVerdict[T any](r *root, c *cobra.Command, get func(context.Context, *session.Env) (T, error), text func(io.Writer, T), verdict func(T) error) *cobra.Command {
	var output string
	outputFlag(c, &output)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := checkOutput(output); err != nil {
			return err
		}
		v, err := get(c.Context(), r.env.Load())
		if err != nil {
			return err
		}
		if output == "text" {
			printText(r.stdout, v, text)
		} else if err := ui.Render(r.stdout, output, v); err != nil {
			return err
		}
		if verdict != nil {
			return verdict(v)
		}
		return nil
	}
	return c
}

// withList is withOutput for a command that lists things. Finding none is
// no error: [] in json and yaml; in text nothing on stdout and none's
// line on stderr, as kubectl does.
func withList[T any](r *root, c *cobra.Command, get func(context.Context, *session.Env) ([]T, error), text func(io.Writer, []T), none func() string) *cobra.Command {
	return withOutput(r, c, func(ctx context.Context, e *session.Env) ([]T, error) {
		rows, err := get(ctx, e)
		if err == nil && rows == nil {
			rows = []T{} // [], not null
		}
		return rows, err
	}, func(w io.Writer, rows []T) {
		if len(rows) == 0 {
			fmt.Fprintln(r.stderr, none())
			return
		}
		text(w, rows)
	})
}

// statusVerdict fails status, after its whole view, when it shows
// something broken.
func statusVerdict(s status.Status) error {
	p := s.Problems()
	if len(p) == 0 {
		return nil
	}
	what := "1 problem"
	if len(p) > 1 {
		what = strconv.Itoa(len(p)) + " problems"
	}
	first, _, _ := strings.Cut(p[0], "\n")
	return &session.ExitError{Code: session.ExitFailed, Err: fmt.Errorf("status shows %s (the first: %s): `marina doctor` says how to fix each", what, first)}
}

// printText is a text view of v: every string in it is cleaned first of
// what would drive the terminal (it came from the VM, Docker, etcd or a
// cluster); JSON and YAML keep the exact values.
func printText[T any](w io.Writer, v T, print func(io.Writer, T)) {
	ui.CleanStrings(&v)
	print(w, v)
}

// printPlan writes a --dry-run plan, or why nothing is to do.
func printPlan(w io.Writer, p session.Plan) {
	if len(p.Steps) == 0 {
		fmt.Fprintf(w, "No changes: %s.\n", p.None)
		return
	}
	fmt.Fprintln(w, "Plan (--dry-run, nothing was changed):")
	for _, s := range p.Steps {
		fmt.Fprintf(w, "  - %s\n", s)
	}
}

// printResult writes what a command did, or its --dry-run plan.
func printResult(w io.Writer, res session.Result) {
	if res.Plan != nil {
		printPlan(w, *res.Plan)
	}
	for _, l := range res.Lines {
		fmt.Fprintln(w, l)
	}
}

// done prints what a command did, then ends it with err: what was done
// is shown even when a later part failed.
func (r *root) done(res session.Result, err error) error {
	printResult(r.stdout, res)
	return err
}

// createdView is cluster create's -o json|yaml: the cluster it made, how
// long the create took and each of its steps (kind's, each add-on's, the
// kubeconfig's: "start" is seconds from the create's start), or under
// --dry-run the plan and the kind config.
type createdView struct {
	Name       string        `json:"name,omitempty"`
	Server     string        `json:"server,omitempty"`
	Pool       []string      `json:"pool,omitempty"`
	Kubeconfig string        `json:"kubeconfig,omitempty"`
	Merged     bool          `json:"merged,omitempty"`
	Current    bool          `json:"current,omitempty"`
	Zone       string        `json:"zone,omitempty"`
	Seconds    float64       `json:"seconds,omitempty"`
	Phases     []ui.StepTime `json:"phases,omitempty"`
	Plan       []string      `json:"plan,omitempty"`
	Offline    string        `json:"offline,omitempty"`
	KindConfig string        `json:"kindConfig,omitempty"`
	// Pods and Services are its ranges, when network.podRouting routes
	// them; FromMac says the Mac's routes are there too.
	Pods     string `json:"pods,omitempty"`
	Services string `json:"services,omitempty"`
	FromMac  bool   `json:"fromMac,omitempty"`
}

func newCreatedView(c *kindcluster.Created) createdView {
	v := createdView{Name: c.Name, Server: c.Server, Pool: c.Pool, Kubeconfig: c.Kubeconfig, Merged: c.Merged, Current: c.Current,
		Zone: c.Zone, Seconds: c.Seconds, Phases: c.Phases, Offline: c.Offline, Pods: c.Pods, Services: c.Services, FromMac: c.FromMac}
	if c.Plan != nil {
		for _, st := range c.Plan.Steps {
			v.Plan = append(v.Plan, st.String())
		}
		v.KindConfig = string(c.KindConfig)
	}
	return v
}

// printCreated writes the end of a cluster create: its plan and kind
// config under --dry-run, or the cluster that is ready and how to reach
// it and its Services.
func printCreated(w io.Writer, c *kindcluster.Created) {
	if c.Plan != nil {
		printPlan(w, *c.Plan)
		if c.Offline != "" {
			fmt.Fprintf(w, "\n%s.\n", c.Offline)
		}
		fmt.Fprintf(w, "\nkind config:\n%s", c.KindConfig)
		return
	}
	fmt.Fprintf(w, "Cluster %s is ready: API server %s, LoadBalancer pool %s\n", c.Name, c.Server, strings.Join(c.Pool, ", "))
	switch {
	case c.Current:
		fmt.Fprintf(w, "  kubectl get nodes    (the current context is %s now)\n", c.Name)
	case c.Merged:
		fmt.Fprintf(w, "  kubectl --context %s get nodes\n", c.Name)
	default:
		fmt.Fprintf(w, "  export KUBECONFIG=%s\n", c.Kubeconfig)
	}
	switch {
	case c.Pods != "" && c.FromMac:
		fmt.Fprintf(w, "Its pods (%s) and ClusterIPs (%s) are routed from the Mac and from the other clusters (network.podRouting).\n", c.Pods, c.Services)
	case c.Pods != "":
		fmt.Fprintf(w, "Its pods (%s) and ClusterIPs (%s) are routed from the other clusters, not from the Mac yet: `marina status` says why (network.podRouting).\n", c.Pods, c.Services)
	}
	// What mDNSResponder does with a name asked for too early.
	fmt.Fprintf(w, "Its LoadBalancer Services answer as SERVICE.NAMESPACE.%s within seconds; a name the Mac looked up before it existed may stay missing on the Mac for about a minute (`marina dns flush` empties its cache).\n", c.Zone)
}

// printReady writes the end of marina up: its plan under --dry-run, or
// the VM that is ready and what to do next.
func printReady(w io.Writer, r *machine.Ready) {
	if r.Plan != nil {
		printPlan(w, *r.Plan)
		return
	}
	fmt.Fprintf(w, "VM %s is ready: lima0 %s, Docker at unix://%s, %s routed to the VM\n", r.VM, r.Lima0, r.Socket, r.Routed)
	fmt.Fprintln(w, "Next:")
	tw := tabwriter.NewWriter(w, 0, 4, 4, ' ', 0)
	for _, h := range r.Next {
		fmt.Fprintf(tw, "  %s\t%s\n", h.Command, h.What)
	}
	tw.Flush()
}

// line prints a command's one line of output, when it has one.
func (r *root) line(s string, err error) error {
	if err == nil {
		fmt.Fprintln(r.stdout, s)
	}
	return err
}
