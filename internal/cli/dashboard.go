package cli

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/dashboard"
)

func (r *root) dashboardCmd() *cobra.Command {
	var port int
	var noOpen bool
	c := &cobra.Command{
		Use:   "dashboard",
		Short: "Show the whole lab on one local page: topology, clusters, LoadBalancer names as links, mirrors, DNS, doctor",
		Long: `Serve a read-only page of the lab on 127.0.0.1 (a free port unless --port),
print its address and open it in the browser (--no-open does not). It shows the
Mac, its route and the VM with the kind network as a diagram; a card per cluster
with its state, nodes, version, ranges, labels and LoadBalancer Services, each
DNS name a link; the registry mirrors with their cache and hits; the DNS names;
the Fleets; and doctor's checks, run with the button (never --fix). It
refreshes every 5 seconds. Ctrl-C stops it.

Every value on it is what status, cluster list, dns list, registry list, fleet
list and doctor give with -o json, and the server gives them as JSON too:
/api/snapshot (all of it), /api/status, /api/clusters, /api/services (each
running cluster's LoadBalancers, nodes, version and pool use), /api/dns,
/api/registries, /api/fleets and /api/doctor. It answers only requests that
name the address it printed, and changes nothing.`,
		Example: `  marina dashboard
  marina dashboard --port 8484 --no-open
  curl -s http://127.0.0.1:8484/api/services`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if port < 0 || port > 65535 {
				return fmt.Errorf("--port %d: give a port from 1 to 65535, or leave it out for a free one", port)
			}
			ln, err := dashboard.Listen(port)
			if err != nil {
				return err
			}
			url := dashboard.URL(ln)
			fmt.Fprintf(r.stdout, "marina dashboard: %s (Ctrl-C stops it)\n", url)
			if !noOpen {
				if err := openBrowser(url); err != nil {
					r.env.Load().UI.Warnf("could not open a browser (%v): open %s yourself", err, url)
				}
			}
			return dashboard.New(dashboard.Live{Env: r.env.Load()}, ln).Serve(c.Context(), ln)
		},
	}
	c.Flags().IntVar(&port, "port", 0, "the port on 127.0.0.1 (default: a free one)")
	c.Flags().BoolVar(&noOpen, "no-open", false, "print the address without opening a browser")
	return c
}

// openBrowser opens url in the user's browser: open(1) on macOS,
// xdg-open elsewhere.
func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped; whether it opened is the browser's business
	return nil
}
