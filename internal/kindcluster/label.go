package kindcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// Label sets and removes node labels on every node of a cluster.
func Label(ctx context.Context, e *session.Env, name string, specs []string, dryRun bool) (session.Result, error) {
	if err := cluster.CheckName(name); err != nil {
		return session.Result{}, err
	}
	set, remove, what, err := LabelSpecs(specs)
	if err != nil {
		return session.Result{}, err
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true, Clusters: true})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	if _, ok := cluster.Find(s.Clusters, name); !ok {
		return session.Result{}, fmt.Errorf("there is no cluster %s (clusters: %s)", name, strings.Join(ui.OrNone(cluster.Names(s.Clusters)), ", "))
	}
	if dryRun {
		return session.Planned([]session.Step{{Do: "on every node of " + name + ": " + strings.Join(what, "; ")}}, ""), nil
	}
	k, err := s.Kube(name, 30*time.Second)
	if err != nil {
		return session.Result{}, err
	}
	return session.Result{}, e.Step("Labelling the nodes of "+name, "Labelled the nodes of "+name+": "+strings.Join(what, "; "), func() error {
		if err := k.LabelNodes(ctx, set, remove); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		return nil
	})
}

// LabelSpecs reads -l flags: the labels to set, those to remove, and the
// change in words.
func LabelSpecs(specs []string) (cluster.Labels, []string, []string, error) {
	if len(specs) == 0 {
		return nil, nil, nil, errors.New("give at least one -l key=value (or -l key- to remove a label)")
	}
	set, remove, err := cluster.ParseLabels(specs)
	if err != nil {
		return nil, nil, nil, err
	}
	var what []string
	if len(set) > 0 {
		what = append(what, "set "+cluster.FormatLabels(set))
	}
	if len(remove) > 0 {
		what = append(what, "remove "+strings.Join(remove, ","))
	}
	return set, remove, what, nil
}
