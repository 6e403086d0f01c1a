package machine

import (
	"net/netip"
	"strings"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// Ready is what marina up reports: under --dry-run its plan, otherwise
// the VM it brought to the config and what to do next.
type Ready struct {
	Plan   *session.Plan
	VM     string
	Lima0  netip.Addr
	Socket string       // the VM's Docker socket on the host
	Routed netip.Prefix // what the host routes to the VM
	Next   []Hint
}

// Hint is a command to run next, and what it is for.
type Hint struct{ Command, What string }

// ready ends a marina up that brought the VM to the config: what is
// ready, then what to do next. It reads the clusters up already has (the
// kubeconfig checks list them from Docker when this host has a cluster's
// kubeconfig), so it costs no call of its own.
func ready(s *session.Session, lima0 netip.Addr, cidr netip.Prefix) *Ready {
	e, sock := s.Env, s.Socket()
	r := &Ready{VM: s.Name, Lima0: lima0, Socket: sock, Routed: cidr}
	if e.Getenv("DOCKER_HOST") != "unix://"+sock {
		r.Next = append(r.Next, Hint{`eval "$(marina docker-env)"`, "use the VM's Docker from this shell"})
	}
	if len(s.Clusters) == 0 {
		r.Next = append(r.Next, Hint{"marina cluster create NAME", "create a kind cluster (marina fleet apply -f FILE: several)"})
	} else {
		r.Next = append(r.Next, Hint{"marina cluster list", "your " + ui.Plural(len(s.Clusters), "cluster") + ": " + strings.Join(cluster.Names(s.Clusters), ", ")})
	}
	return r
}
