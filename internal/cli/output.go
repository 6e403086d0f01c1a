package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
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

// style is how a text view is drawn: colour on a smart terminal, and
// status's full form (-v).
type style struct {
	colour  bool
	verbose bool
}

func (v style) mark(ok bool) string { return ui.Mark(ok, v.colour) }

// status writes status's text: one line per part (-v: every rule).
func (v style) status(w io.Writer, s status.Status) {
	if v.verbose {
		v.fullStatus(w, s)
		return
	}
	v.glance(w, s)
}

// printStatus is status -v's text, uncoloured.
func printStatus(w io.Writer, s status.Status) { style{verbose: true}.fullStatus(w, s) }

// glance writes status's default view: a line per part of the lab with
// its mark and its first problem, then the clusters. "-" marks a part
// that is not there to judge (no VM, none configured), "!" a warning.
func (v style) glance(w io.Writer, s status.Status) {
	line := func(mark, part, text string) { fmt.Fprintf(w, "%s %-8s %s\n", mark, part, text) }
	vm0, running := s.VM, s.VM.Status == vm.StatusRunning
	switch {
	case vm0.Status == status.NotCreated:
		line("-", "VM", vm0.Name+": not created: `marina up` creates it")
	case vm0.Status == vm.StatusBroken || len(vm0.Errors) > 0:
		line(v.mark(false), "VM", vm0.Name+": "+vm0.Status+"; "+firstOf(append(slices.Clone(vm0.Errors), "Lima reports it Broken")))
	case !running:
		line("-", "VM", vm0.Name+": "+vm0.Status+": `marina up` starts it")
	default:
		line(v.mark(true), "VM", fmt.Sprintf("%s: Running, %d CPUs, %s memory, lima0 %s, Docker %s", vm0.Name, vm0.CPUs, vm0.Memory, vm0.Lima0, vm0.Docker))
	}
	if s.ConfigError != "" {
		line(v.mark(false), "config", configProblem(s.ConfigError)+" (`marina status -v` shows every problem)")
	}
	if r := s.Route; r.CIDR != "" {
		ok := r.State == string(host.Present) && r.Error == ""
		mark := v.mark(ok)
		if !running && !ok {
			mark = "-" // judged only against a running VM
		}
		line(mark, "route", r.Line+suffix("; ", r.Error))
	}
	if g := s.Guest; g != nil {
		if g.OK {
			line(v.mark(true), "network", fmt.Sprintf("the kind network and the %d rules, files and units marina installs are in place", len(g.Checks)))
		} else {
			line(v.mark(false), "network", ui.AndMore(g.Failing())+": `marina up` puts it back")
		}
	}
	if d := s.DNS; d != nil {
		if d.OK {
			line(v.mark(true), "DNS", "*."+d.Domain+" answers from the Mac (resolver file, marina-dns, etcd)")
		} else {
			line(v.mark(false), "DNS", ui.AndMore(d.Failing()))
		}
	}
	if m := s.Mirrors; m != nil {
		v.mirrorsLine(line, *m)
	}
	if p := s.Push; p != nil {
		line(v.mark(p.State == "running"), "push", "the push registry at "+p.Host+" is "+p.State)
	}
	if running {
		v.glanceClusters(w, s.Clusters)
	}
}

// mirrorsLine is status's one line for the mirrors: a mirror that does
// not run is a warning (nodes fall back to its upstream).
func (v style) mirrorsLine(line func(mark, part, text string), list []status.MirrorState) {
	var down []string
	for _, m := range list {
		if m.State != "running" {
			down = append(down, m.Name+" "+m.State)
		}
	}
	running := fmt.Sprintf("%d of %d running", len(list)-len(down), len(list))
	for _, m := range list {
		if m.NodeImageBytes > 0 {
			running += fmt.Sprintf("; %s holds %s of node images", m.Name, units.BytesSize(float64(m.NodeImageBytes)))
		}
	}
	switch {
	case len(list) == 0:
		line("-", "mirrors", "none in the config")
	case len(down) == 0:
		line(v.mark(true), "mirrors", running)
	default:
		line(ui.Paint("!", "WARN", v.colour), "mirrors", running+"; "+ui.AndMore(down)+": `marina doctor` says why")
	}
}

// glanceClusters writes the clusters of a running VM as a table.
func (v style) glanceClusters(w io.Writer, list *[]status.ClusterStatus) {
	fmt.Fprintln(w)
	switch {
	case list == nil:
		fmt.Fprintln(w, "Clusters: unknown, Docker did not list them (the VM's line says why)")
		return
	case len(*list) == 0:
		fmt.Fprintln(w, "No clusters: `marina cluster create NAME` makes one")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSLOT\tSTATE\tNODES")
	for _, c := range *list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", c.Name, orDash(slotOf(c.Slot)), c.State, c.Nodes)
	}
	tw.Flush()
}

func slotOf(n int) string {
	if n > 0 {
		return strconv.Itoa(n)
	}
	return ""
}

// configProblem is the first problem of a config error, which begins
// "invalid config FILE:" and says each problem on a line of its own
// (joined by spaces once cleaned), naming the file and line again.
func configProblem(s string) string {
	if _, after, ok := strings.Cut(s, ":  "); ok && strings.HasPrefix(s, "invalid config ") {
		return strings.TrimSpace(after)
	}
	return firstLine(s)
}

func firstOf(list []string) string { return firstLine(list[0]) }

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func suffix(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// fullStatus writes status -v: every section, every rule.
func (v style) fullStatus(w io.Writer, s status.Status) {
	vm0 := s.VM
	fmt.Fprintln(w, "=== VM ===")
	if vm0.Status == status.NotCreated {
		fmt.Fprintf(w, "  %s: not created (run `marina up`)\n", vm0.Name)
	} else {
		fmt.Fprintf(w, "  name:     %s\n", vm0.Name)
		fmt.Fprintf(w, "  status:   %s\n", vm0.Status)
		fmt.Fprintf(w, "  machine:  %s %s, %d CPUs, %s memory, %s disk\n", vm0.VMType, vm0.Arch, vm0.CPUs, vm0.Memory, vm0.Disk)
		if vm0.Lima0 != "" {
			fmt.Fprintf(w, "  lima0:    %s\n", vm0.Lima0)
		}
		if vm0.Docker != "" {
			fmt.Fprintf(w, "  docker:   %s on unix://%s\n", vm0.Docker, vm0.DockerSocket)
		}
		for _, err := range vm0.Errors {
			fmt.Fprintf(w, "  problem:  %s\n", err)
		}
	}
	if s.ConfigError != "" {
		fmt.Fprintf(w, "=== Config ===\n  %s\n", strings.ReplaceAll(s.ConfigError, "\n", "\n  "))
	}
	fmt.Fprintln(w, "=== Host route ===")
	fmt.Fprintf(w, "  %s\n", s.Route.Line)
	if s.Route.Error != "" {
		fmt.Fprintf(w, "  problem:  %s\n", s.Route.Error)
	}
	if g := s.Guest; g != nil {
		fmt.Fprintln(w, "=== Guest network ===")
		kn := g.KindNetwork
		if kn.Present {
			fmt.Fprintf(w, "  %s kind network: %s on %s, gateway %s, dynamic range %s, lima0 trusted=%q, gateway mode %s, %d containers\n",
				v.mark(len(kn.Problems) == 0), kn.Subnet, kn.Options["com.docker.network.bridge.name"], kn.Gateway, kn.IPRange,
				kn.Options["com.docker.network.bridge.trusted_host_interfaces"], kn.Options["com.docker.network.bridge.gateway_mode_ipv4"], kn.Containers)
		} else {
			fmt.Fprintf(w, "  %s kind network\n", v.mark(false))
		}
		for _, p := range kn.Problems {
			fmt.Fprintf(w, "      %s\n", p)
		}
		for _, c := range g.Checks {
			fmt.Fprintf(w, "  %s %s\n      %s\n", v.mark(c.OK), c.What, c.Rule)
		}
		if !g.OK {
			fmt.Fprintln(w, "  `marina up` puts back what is missing")
		}
	}
	if s.DNS != nil {
		v.dnsStatus(w, *s.DNS)
	}
	if vm0.Status == vm.StatusRunning {
		printClusterStatus(w, s.Clusters)
	}
}

// printClusterStatus writes the clusters section of status (running VM
// only): nil is a list Docker could not give.
func printClusterStatus(w io.Writer, list *[]status.ClusterStatus) {
	fmt.Fprintln(w, "=== Clusters ===")
	switch {
	case list == nil:
		fmt.Fprintln(w, "  unknown: Docker did not list them (the VM's problems above say why)")
		return
	case len(*list) == 0:
		fmt.Fprintln(w, "  (none): `marina cluster create NAME` makes one")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range *list {
		slot := "slot -"
		if c.Slot > 0 {
			slot = "slot " + strconv.Itoa(c.Slot)
		}
		nodes := strconv.Itoa(c.Nodes) + " nodes"
		if c.Nodes == 1 {
			nodes = "1 node"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Name, slot, c.State, nodes)
	}
	tw.Flush()
}

// dnsStatus writes the local DNS section of status -v.
func (v style) dnsStatus(w io.Writer, d status.DNSStatus) {
	fmt.Fprintf(w, "=== Local DNS (%s) ===\n", d.Domain)
	fmt.Fprintf(w, "  %s resolver file %s: %s\n", v.mark(d.Resolver == "present"), d.ResolverPath, d.Resolver)
	if d.Note != "" && d.Resolver != "missing" {
		fmt.Fprintf(w, "      %s\n", d.Note)
	}
	for _, c := range d.Containers {
		fmt.Fprintf(w, "  %s %s at %s: %s\n", v.mark(c.State == "running"), c.Name, c.IP, c.State)
	}
	fmt.Fprintf(w, "  %s %s\n", v.mark(d.Lookup.Rcode == "NXDOMAIN"), d.Lookup.Line())
	if !d.OK && d.Resolver != "foreign" {
		fmt.Fprintln(w, "  `marina up` puts back what is missing")
	}
}

// printClusters writes rows as a table.
func printClusters(w io.Writer, rows []kindcluster.Row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSLOT\tAPI-PORT\tNODES\tSTATE\tREGION/ZONE\tKUBECONFIG")
	for _, r := range rows {
		where := "-"
		if r.Labels != nil {
			where = orDash(r.Labels[cluster.RegionLabel]) + "/" + orDash(r.Labels[cluster.ZoneLabel])
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Name, r.Num, r.APIPort, r.Nodes, r.State, where, orDash(r.KubeconfigPath))
	}
	tw.Flush()
}

// printMirrors writes the text table.
func printMirrors(w io.Writer, rows []machine.MirrorStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tUPSTREAM\tPORT\tSTATE\tCACHE\tBLOB HITS/MISSES\tMANIFEST HITS/MISSES")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.Cells(), "\t"))
	}
	tw.Flush()
}

func printDNS(w io.Writer, rows []dns.Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADDRESS\tCLUSTER\tOWNER")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Address, r.Cluster, orDash(r.Owner))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
}

func newCreatedView(c *kindcluster.Created) createdView {
	v := createdView{Name: c.Name, Server: c.Server, Pool: c.Pool, Kubeconfig: c.Kubeconfig, Merged: c.Merged, Current: c.Current,
		Zone: c.Zone, Seconds: c.Seconds, Phases: c.Phases, Offline: c.Offline}
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
