package machine

import (
	"fmt"
	"net/netip"
	"strings"
	"text/tabwriter"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// printReady ends a marina up that brought the VM to the config: what is
// ready, then what to do next. It reads the clusters up already has (the
// kubeconfig checks list them from Docker when this host has a cluster's
// kubeconfig), so it costs no call of its own.
func printReady(s *session.Session, lima0 netip.Addr, cidr netip.Prefix) {
	e, sock := s.Env, s.Socket()
	fmt.Fprintf(e.Stdout, "VM %s is ready: lima0 %s, Docker at unix://%s, %s routed to the VM\n", s.Name, lima0, sock, cidr)
	var hints [][2]string
	if e.Getenv("DOCKER_HOST") != "unix://"+sock {
		hints = append(hints, [2]string{`eval "$(marina docker-env)"`, "use the VM's Docker from this shell"})
	}
	if len(s.Clusters) == 0 {
		hints = append(hints, [2]string{"marina cluster create NAME", "create a kind cluster (marina fleet apply -f FILE: several)"})
	} else {
		hints = append(hints, [2]string{"marina cluster list", "your " + ui.Plural(len(s.Clusters), "cluster") + ": " + strings.Join(cluster.Names(s.Clusters), ", ")})
	}
	fmt.Fprintln(e.Stdout, "Next:")
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 4, ' ', 0)
	for _, h := range hints {
		fmt.Fprintf(tw, "  %s\t%s\n", h[0], h[1])
	}
	tw.Flush()
}
