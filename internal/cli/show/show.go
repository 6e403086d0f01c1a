// Package show draws marina's text views: status at a glance and in
// full, the cluster, mirror and DNS lists, and doctor's report. -o json
// and -o yaml render the same values; these are the tables and lines a
// person reads.
package show

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/doctor"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// Style is how a text view is drawn: colour on a smart terminal, and
// status's full form (-v).
type Style struct {
	Colour  bool
	Verbose bool
}

func (v Style) mark(ok bool) string { return ui.Mark(ok, v.Colour) }

// status writes status's text: one line per part (-v: every rule).
func (v Style) Status(w io.Writer, s status.Status) {
	if v.Verbose {
		v.fullStatus(w, s)
		return
	}
	v.glance(w, s)
}

// Status is status -v's text, uncoloured.
func Status(w io.Writer, s status.Status) { Style{Verbose: true}.fullStatus(w, s) }

// glance writes status's default view: a line per part of the lab with
// its mark and its first problem, then the clusters. "-" marks a part
// that is not there to judge (no VM, none configured), "!" a warning.
func (v Style) glance(w io.Writer, s status.Status) {
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
		if vm0.Behind != "" {
			line(ui.Paint("!", "WARN", v.Colour), "VM", vm0.Behind+": "+vm0.Upgrade)
		}
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
	if p := s.Pods; p != nil {
		if p.OK {
			line(v.mark(true), "pods", fmt.Sprintf("pods and ClusterIPs of %s routed from the Mac and between clusters (%d host routes)", ui.Plural(len(p.Clusters), "cluster"), p.Total))
		} else {
			line(v.mark(false), "pods", ui.AndMore(p.Failing())+": `marina up` puts it back")
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
func (v Style) mirrorsLine(line func(mark, part, text string), list []status.MirrorState) {
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
		line(ui.Paint("!", "WARN", v.Colour), "mirrors", running+"; "+ui.AndMore(down)+": `marina doctor` says why")
	}
}

// glanceClusters writes the clusters of a running VM as a table.
func (v Style) glanceClusters(w io.Writer, list *[]status.ClusterStatus) {
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", c.Name, OrDash(slotOf(c.Slot)), c.State, c.Nodes)
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
func (v Style) fullStatus(w io.Writer, s status.Status) {
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
		if vm0.ProvisionedBy != "" {
			fmt.Fprintf(w, "  provisioned by: marina %s\n", vm0.ProvisionedBy)
		}
		if vm0.Behind != "" {
			fmt.Fprintf(w, "  behind:   %s: %s\n", vm0.Behind, vm0.Upgrade)
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
	if p := s.Pods; p != nil {
		v.podsStatus(w, *p)
	}
	if vm0.Status == vm.StatusRunning {
		clusterStatus(w, s.Clusters)
	}
}

// podsStatus writes network.podRouting's section of status -v.
func (v Style) podsStatus(w io.Writer, p status.PodsStatus) {
	fmt.Fprintln(w, "=== Pod routing ===")
	if p.Error != "" {
		fmt.Fprintf(w, "  %s host routes of the pod space: could not be read: %s\n", v.mark(false), p.Error)
	} else {
		fmt.Fprintf(w, "  %s host routes of the pod space to the VM: %d of %d\n", v.mark(p.HostRoutes == p.Total), p.HostRoutes, p.Total)
	}
	for _, c := range p.Conflicts {
		fmt.Fprintf(w, "  %s a route of someone else's: %s\n", v.mark(false), c)
	}
	fmt.Fprintf(w, "  %s marina-podnet runs in the VM\n", v.mark(p.Service))
	for _, c := range p.Clusters {
		fmt.Fprintf(w, "  %s %s: %s\n", v.mark(c.OK), c.Name, c.Line)
	}
	if !p.OK {
		fmt.Fprintln(w, "  `marina up` puts back what is missing")
	}
}

// clusterStatus writes the clusters section of status (running VM
// only): nil is a list Docker could not give.
func clusterStatus(w io.Writer, list *[]status.ClusterStatus) {
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
func (v Style) dnsStatus(w io.Writer, d status.DNSStatus) {
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

// Clusters writes rows as a table.
func Clusters(w io.Writer, rows []kindcluster.Row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSLOT\tAPI-PORT\tNODES\tSTATE\tREGION/ZONE\tKUBECONFIG")
	for _, r := range rows {
		where := "-"
		if r.Labels != nil {
			where = OrDash(r.Labels[cluster.RegionLabel]) + "/" + OrDash(r.Labels[cluster.ZoneLabel])
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Name, r.Num, r.APIPort, r.Nodes, r.State, where, OrDash(r.KubeconfigPath))
	}
	tw.Flush()
}

// Mirrors writes the text table.
func Mirrors(w io.Writer, rows []status.MirrorStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tUPSTREAM\tPORT\tSTATE\tCACHE\tBLOB HITS/MISSES\tMANIFEST HITS/MISSES")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.Cells(), "\t"))
	}
	tw.Flush()
}

func DNS(w io.Writer, rows []dns.Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADDRESS\tCLUSTER\tOWNER")
	for _, r := range rows {
		c := r.Cluster
		if r.Stopped {
			c += " (stopped)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Address, c, OrDash(r.Owner))
	}
	tw.Flush()
}

func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Doctor's text keeps to doctorWidth columns: the findings start in one
// column after the names and wrap at spaces with a hanging indent; a name
// longer than doctorName has its finding start on the next line. A Fix
// line is never wrapped, so its command copies whole.
const (
	doctorWidth = 100
	doctorName  = 14
)

// doctor writes the report (its strings cleaned: findings quote what the
// VM and the clusters said): each check's tag, name and finding, a Fix
// line under each that is not OK, and the summary.
func (v Style) Doctor(w io.Writer, rep doctor.Report) {
	ui.CleanStrings(&rep)
	width := 0
	for _, c := range rep.Checks {
		if len(c.Name) <= doctorName {
			width = max(width, len(c.Name))
		}
	}
	indent := strings.Repeat(" ", 7+width+2) // "[WARN] " + name + two spaces
	for _, c := range rep.Checks {
		tag := fmt.Sprintf("%-6s ", "["+strings.ToUpper(string(c.Status))+"]")
		fmt.Fprint(w, ui.Paint(tag, strings.ToUpper(string(c.Status)), v.Colour))
		lines := wrap(c.Finding, doctorWidth-len(indent))
		if len(c.Name) > width {
			fmt.Fprintf(w, "%s\n%s%s\n", c.Name, indent, lines[0])
		} else {
			fmt.Fprintf(w, "%-*s  %s\n", width, c.Name, lines[0])
		}
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%s\n", indent, l)
		}
		if c.Fix != "" && c.Status != doctor.OK && c.Status != doctor.Skip {
			fmt.Fprintf(w, "%sFix: %s\n", indent, c.Fix)
		}
	}
	fmt.Fprintln(w, rep.Summary.Line)
}

// wrap cuts s into lines of at most n columns at spaces; a word longer
// than n stays whole on a line of its own.
func wrap(s string, n int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > n {
			out = append(out, line)
			line = ""
		}
		line = strings.TrimPrefix(line+" "+word, " ")
	}
	return append(out, line)
}
