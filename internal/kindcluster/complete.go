package kindcluster

// What a shell's tab offers. A completion must answer at once and print
// nothing but names, so each function here reads only what answers it —
// the config file, the user's kubeconfig, marina's kubeconfig folder, one
// list of Docker's containers on the VM's forwarded socket, and for node
// labels one GET per running cluster — and never limactl or the guest. It
// gives no names instead of an error: with the VM down, Docker unreachable
// or the config broken there is simply nothing to offer.

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/session"
)

// CompletionWait bounds a completion's reads: a shell must not hang on a
// VM that does not answer.
const CompletionWait = 2 * time.Second

// CompleteClusters are the clusters' names, from one list of the kind
// node containers (no inspect, no API server).
func CompleteClusters(ctx context.Context, e *session.Env) []string {
	ctx, cancel := context.WithTimeout(ctx, CompletionWait)
	defer cancel()
	s := completionSession(ctx, e)
	if s == nil {
		return nil
	}
	defer s.Close()
	return cluster.Names(s.Clusters)
}

// CompleteRunning are the clusters with a node running (cluster stop).
func CompleteRunning(ctx context.Context, e *session.Env) []string {
	return completeState(ctx, e, true)
}

// CompleteStopped are the clusters with a node stopped (cluster start).
func CompleteStopped(ctx context.Context, e *session.Env) []string {
	return completeState(ctx, e, false)
}

func completeState(ctx context.Context, e *session.Env, running bool) []string {
	ctx, cancel := context.WithTimeout(ctx, CompletionWait)
	defer cancel()
	s := completionSession(ctx, e)
	if s == nil {
		return nil
	}
	defer s.Close()
	var out []string
	for _, c := range s.Clusters {
		if (running && anyRunning(c)) || (!running && !c.Running()) {
			out = append(out, c.Name)
		}
	}
	return out
}

// CompleteFleets are the fleets the clusters belong to (a stopped one's
// as cluster stop recorded it).
func CompleteFleets(ctx context.Context, e *session.Env) []string {
	return completeLabel(ctx, e, cluster.FleetLabel)
}

// CompleteRegions are the regions the running clusters' nodes are in.
func CompleteRegions(ctx context.Context, e *session.Env) []string {
	return completeLabel(ctx, e, cluster.RegionLabel)
}

// CompleteZones are the zones the running clusters' nodes are in.
func CompleteZones(ctx context.Context, e *session.Env) []string {
	return completeLabel(ctx, e, cluster.ZoneLabel)
}

// completeLabel are the values of node label key on the running clusters'
// control planes, sorted. Docker's containers carry only kind's own labels,
// so the values come from the API servers: one GET each, all at once.
func completeLabel(ctx context.Context, e *session.Env, key string) []string {
	ctx, cancel := context.WithTimeout(ctx, CompletionWait)
	defer cancel()
	s := completionSession(ctx, e)
	if s == nil {
		return nil
	}
	defer s.Close()
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, c := range s.Clusters {
		if !c.Running() {
			if l, err := readStopped(s, c.Name); err == nil && validValue(l[key]) {
				mu.Lock()
				seen[l[key]] = true
				mu.Unlock()
			}
			continue
		}
		wg.Go(func() {
			l, err := nodeLabels(ctx, s, c.Name)
			// The value goes to the shell as a line of candidates: only a
			// real label value (no line break, no spaces) may.
			if err != nil || !validValue(l[key]) {
				return
			}
			mu.Lock()
			seen[l[key]] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	return slices.Sorted(maps.Keys(seen))
}

func validValue(v string) bool { return v != "" && len(validation.IsValidLabelValue(v)) == 0 }

// completionSession is a Session holding the clusters Docker lists, or
// nil when it cannot tell. It reads vm.name from the config and lists
// kind's containers on the VM's forwarded socket: with the VM stopped that
// socket is gone or refuses at once, so limactl is not asked whether the
// VM runs.
func completionSession(ctx context.Context, e *session.Env) *session.Session {
	s, err := session.Read(e, session.Needs{Config: session.VMOnlyQuiet})
	if err != nil || s.DialDocker() != nil {
		return nil
	}
	cs, err := s.Docker.ListLabeled(ctx, cluster.KindLabel)
	if err != nil {
		s.Close()
		return nil
	}
	nodes := make([]docker.Node, len(cs))
	for i, c := range cs {
		nodes[i] = docker.Node{Container: c, Cluster: c.Labels[cluster.KindLabel], Role: c.Labels[cluster.RoleLabel]}
	}
	s.Clusters = cluster.Group(nodes) // drops labels that are no cluster name
	return s
}

// CompleteMirrors are the configured mirrors' names (registry
// clean-cache reads the same config).
func CompleteMirrors(_ context.Context, e *session.Env) []string {
	l, err := config.Read(e.Paths)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range l.Config.Registries.Mirrors {
		out = append(out, m.Name)
	}
	return out
}

// CompleteNodeVersions are the node versions that have an image, newest
// first: kind's published ones and those kind.nodeImages pins (the
// published ones alone when the config cannot be read).
func CompleteNodeVersions(_ context.Context, e *session.Env) []string {
	var k config.Kind
	if l, err := config.Read(e.Paths); err == nil {
		k = l.Config.Kind
	}
	return k.NodeVersions()
}

// CompleteKubeconfigFiles are the clusters that have their own kubeconfig
// file (~/.kube/marina/NAME.kubeconfig): what kubeconfig path and env
// print, VM or not.
func CompleteKubeconfigFiles(_ context.Context, e *session.Env) []string {
	ents, err := os.ReadDir(e.Paths.KubeconfigDir())
	if err != nil {
		return nil
	}
	var out []string
	for _, ent := range ents {
		name, ok := strings.CutSuffix(ent.Name(), ".kubeconfig")
		if ok && ent.Type().IsRegular() && cluster.CheckName(name) == nil {
			out = append(out, name)
		}
	}
	return out
}

// CompleteContexts are the contexts marina wrote into the user's
// kubeconfig, sorted: what kubeconfig use and remove act on (never the
// user's own).
func CompleteContexts(_ context.Context, e *session.Env) []string {
	names, err := kubeconfig.Contexts(e.KubeconfigTarget())
	if err != nil {
		return nil
	}
	names = slices.DeleteFunc(names, func(n string) bool { return cluster.CheckName(n) != nil })
	slices.Sort(names)
	return names
}

// CompleteImages are the names of the images in the VM's Docker (where
// builds through docker-env land): what image load takes.
func CompleteImages(ctx context.Context, e *session.Env) []string {
	ctx, cancel := context.WithTimeout(ctx, CompletionWait)
	defer cancel()
	s, err := session.Read(e, session.Needs{Config: session.VMOnlyQuiet})
	if err != nil || s.DialDocker() != nil {
		return nil
	}
	defer s.Close()
	names, err := s.Docker.ImageNames(ctx)
	if err != nil {
		return nil
	}
	// Each goes to the shell as a candidate: only a real image name may.
	return slices.DeleteFunc(names, func(n string) bool {
		_, err := reference.ParseNormalizedNamed(n)
		return err != nil || strings.ContainsAny(n, " \t\n")
	})
}
