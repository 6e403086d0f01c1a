package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/version"
	"github.com/bcollard/marina/internal/vm"
)

func versionCmd(r *root) *cobra.Command {
	return withOutput(r, &cobra.Command{
		Use:   "version",
		Short: "Print marina's version, the versions it pins, the limactl it finds, and whether the VM is behind",
		Long: `Print marina's version and commit, the Go release and platform it was built
for, the versions of what it runs (kind and kubectl in the VM, the Kubernetes
node images, MetalLB, ExternalDNS, metrics-server, the Docker Engine major in
the VM, the oldest Lima it works with), the version of the limactl it would
run ($LIMACTL, else the PATH), and what the last marina up noted of the VM's
provisioning: whether this marina would provision it again (it does, in
place, at the next up). It reads no config and does not reach the VM.`,
		Example: `  marina version
  marina version -o json`,
		Args: cobra.NoArgs,
		// Needs no config, no VM.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
	}, func(ctx context.Context, _ *session.Env) (version.Report, error) {
		p, perr := config.ResolvePaths(os.Getenv, "")
		rep := version.GetReport(ctx, func() (*vm.Limactl, error) {
			limaHome := ""
			if perr == nil {
				limaHome = p.LimaHome()
			}
			return limactl(os.Getenv, limaHome, nil)
		}, version.LimactlWait)
		if perr == nil {
			seen, err := guest.LoadSeen(p.Provisioned())
			rep.VM = version.VMOf(seen, err, limaInstances(p.LimaHome()))
		}
		return rep, nil
	}, printVersion)
}

// limaInstances are the names of the VMs in marina's Lima home: folders
// holding a lima.yaml, as Lima keeps them.
func limaInstances(home string) []string {
	es, err := os.ReadDir(home)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range es {
		if e.IsDir() && !strings.HasPrefix(e.Name(), "_") {
			if _, err := os.Stat(filepath.Join(home, e.Name(), "lima.yaml")); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// printVersion writes the text form of marina version.
func printVersion(w io.Writer, v version.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	row("marina", "%s", v.Version)
	if v.Commit != "" {
		c := v.Commit
		if v.Modified {
			c += " (with uncommitted changes)"
		}
		row("commit", "%s", c)
	}
	if v.Date != "" {
		row("built from", "a commit of %s", v.Date)
	}
	row("go", "%s %s", v.GoVersion, v.Platform)
	p := v.Pins
	row("kind", "%s (in the VM)", p.Kind)
	row("kubectl", "%s (in the VM)", p.Kubectl)
	row("kubernetes", "%s", withDefault(p.NodeVersion, p.NodeVersions))
	row("metallb", "%s", withDefault(p.MetalLB, p.MetalLBVersions))
	row("externaldns", "%s", p.ExternalDNS)
	row("metrics-server", "%s", withDefault(p.MetricsServer, p.MetricsServerVersions))
	row("docker engine", "%d.x (in the VM)", p.DockerMajor)
	row("lima", "%s or later", p.LimaMinimum)
	l := v.Limactl
	l.Note = strings.Join(strings.Fields(l.Note), " ") // one line, as every row
	switch {
	case l.Version != "" && l.Note != "":
		row("limactl", "%s at %s: %s", l.Version, l.Path, l.Note)
	case l.Version != "":
		row("limactl", "%s at %s", l.Version, l.Path)
	default:
		row("limactl", "%s", l.Note)
	}
	switch m := v.VM; {
	case m == nil:
	case m.Note != "" && m.Name != "":
		row("vm", "%s: %s", m.Name, strings.Join(strings.Fields(m.Note), " "))
	case m.Note != "":
		row("vm", "%s", strings.Join(strings.Fields(m.Note), " "))
	case m.Behind != nil && *m.Behind:
		row("vm", "%s, provisioned by marina %s (at marina up, %s): this marina provisions it differently; `marina up` brings it up to date in place", m.Name, m.ProvisionedBy, m.NotedAt.Format(time.DateOnly))
	default:
		row("vm", "%s, provisioned by this marina's script (marina %s, at marina up, %s)", m.Name, m.ProvisionedBy, m.NotedAt.Format(time.DateOnly))
	}
	tw.Flush()
}

// withDefault lists versions with the default marked and first.
func withDefault(def string, all []string) string {
	out := []string{def + " (default)"}
	for _, v := range all {
		if v != def {
			out = append(out, v)
		}
	}
	return strings.Join(out, ", ")
}
