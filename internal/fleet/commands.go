package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// ListRow is one line of marina fleet list.
type ListRow struct {
	Name     string   `json:"name"`
	Clusters []string `json:"clusters"`
	// DependsOn is who depends on whom, as the manifest fleet apply
	// recorded says (absent when none does).
	DependsOn map[string][]string `json:"dependsOn,omitempty"`
}

// List groups the clusters by the fleet label of their control
// planes; clusters of no fleet are left out.
func List(ctx context.Context, e *session.Env) ([]ListRow, error) {
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true, Clusters: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rows, err := kindcluster.Rows(ctx, s, nil, "")
	if err != nil {
		return nil, err
	}
	return WithDependencies(e, s, Group(rows)), nil
}

// WithDependencies adds to each fleet of rows who depends on whom in it,
// from the manifest fleet apply recorded.
func WithDependencies(e *session.Env, s *session.Session, rows []ListRow) []ListRow {
	if s.File.Err != nil {
		return rows // the recorded manifests are read against the config
	}
	for i, r := range rows {
		rows[i].DependsOn = dependsOn(e, s.Config, r.Name)
	}
	return rows
}

// dependsOn is who depends on whom in fleet name, as the manifest fleet
// apply recorded says; nil when there is none, or it cannot be read (the
// fleet's clusters are still listed).
func dependsOn(e *session.Env, cfg config.Config, name string) map[string][]string {
	// The name is a label value read from a cluster: checked before it
	// names a file.
	if checkFleetName(name) != nil {
		return nil
	}
	data, err := fileutil.ReadRegular(fleetFile(e, name), MaxFileSize)
	if err != nil {
		return nil
	}
	f, err := parseFleet(e, cfg, fleetFile(e, name), data)
	if err != nil {
		return nil
	}
	var out map[string][]string
	for _, m := range f.Members {
		if len(m.DependsOn) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[m.Name] = m.DependsOn
		}
	}
	return out
}

// Group groups cluster list's rows into fleets, by their fleet label;
// clusters of no fleet are left out.
func Group(rows []kindcluster.Row) []ListRow {
	by := map[string][]string{}
	for _, r := range rows {
		if f := r.Labels[cluster.FleetLabel]; f != "" {
			by[f] = append(by[f], r.Name)
		}
	}
	out := []ListRow{}
	for f, cs := range by {
		out = append(out, ListRow{Name: f, Clusters: cs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// MemberRow is one cluster of marina fleet describe.
type MemberRow struct {
	Name           string            `json:"name"`
	Num            int               `json:"num"`
	APIPort        int               `json:"apiPort"`
	KubeconfigPath string            `json:"kubeconfigPath"`
	Nodes          int               `json:"nodes"`
	Version        string            `json:"version"`
	Ready          bool              `json:"ready"`
	Labels         map[string]string `json:"labels,omitempty"`
}

// checkFleetName reports why name cannot be a fleet's.
func checkFleetName(name string) error {
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 || name == "" {
		if name == "" {
			errs = []string{"it is empty"}
		}
		return fmt.Errorf("fleet name %q cannot be a %s label value: %s", name, cluster.FleetLabel, strings.Join(errs, "; "))
	}
	return nil
}

// fleetMembers are the clusters whose control planes carry fleet name's
// label; none is an error that lists the fleets there are.
func fleetMembers(ctx context.Context, s *session.Session, name string) ([]kindcluster.Row, error) {
	rows, err := kindcluster.Rows(ctx, s, nil, "")
	if err != nil {
		return nil, err
	}
	var out []kindcluster.Row
	fleets := map[string]bool{}
	for _, r := range rows {
		f := r.Labels[cluster.FleetLabel]
		if f == name {
			out = append(out, r)
		} else if f != "" {
			fleets[f] = true
		}
	}
	if len(out) == 0 {
		names := make([]string, 0, len(fleets))
		for f := range fleets {
			names = append(names, f)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("no cluster carries %s=%s (fleets: %s): `marina fleet list` shows them; a stopped VM's clusters come back with `marina up`", cluster.FleetLabel, name, strings.Join(ui.OrNone(names), ", "))
	}
	return out, nil
}

// Describe describes the clusters of fleet name, reading their nodes
// at once.
func Describe(ctx context.Context, e *session.Env, name string) ([]MemberRow, error) {
	if err := checkFleetName(name); err != nil {
		return nil, err
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true, Clusters: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rows, err := fleetMembers(ctx, s, name)
	if err != nil {
		return nil, err
	}
	out := make([]MemberRow, len(rows))
	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	for i, r := range rows {
		out[i] = MemberRow{Name: r.Name, Num: r.Num, APIPort: r.APIPort, KubeconfigPath: r.KubeconfigPath, Labels: r.Labels}
		wg.Go(func() {
			k, err := s.Kube(r.Name, kindcluster.LabelTimeout)
			if err != nil {
				errs[i] = err
				return
			}
			nodes, err := k.Nodes(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			out[i].Nodes, out[i].Ready = len(nodes), len(nodes) > 0
			for j, n := range nodes {
				if j == 0 || n.Name == r.Name+"-control-plane" {
					out[i].Version = n.Version
				}
				out[i].Ready = out[i].Ready && n.Ready
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			e.UI.Warnf("cluster %s: cannot read its nodes: %v", out[i].Name, err)
		}
	}
	return out, nil
}

// SetLabels sets and removes node labels on every cluster of a fleet.
func SetLabels(ctx context.Context, e *session.Env, name string, specs []string, dryRun bool) (session.Result, error) {
	if err := checkFleetName(name); err != nil {
		return session.Result{}, err
	}
	set, remove, what, err := kindcluster.LabelSpecs(specs)
	if err != nil {
		return session.Result{}, err
	}
	for k := range set {
		if k == cluster.FleetLabel || k == cluster.ManagedBy {
			return session.Result{}, fmt.Errorf("label %s is marina's: `marina fleet adopt` moves a cluster to another fleet", k)
		}
	}
	for _, k := range remove {
		if k == cluster.FleetLabel || k == cluster.ManagedBy {
			return session.Result{}, fmt.Errorf("-l %s- would take the clusters out of marina's view: delete them, or adopt them into another fleet", k)
		}
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true, Clusters: true})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	rows, err := fleetMembers(ctx, s, name)
	if err != nil {
		return session.Result{}, err
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	if dryRun {
		return session.Planned([]session.Step{{Do: "on every node of " + strings.Join(names, ", ") + ": " + strings.Join(what, "; ")}}, ""), nil
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, labelOne(ctx, s, n, set, remove, "Labelled the nodes of "+n+": "+strings.Join(what, "; ")))
	}
	return session.Result{}, errors.Join(errs...)
}

func labelOne(ctx context.Context, s *session.Session, name string, set cluster.Labels, remove []string, done string) error {
	return s.Step("Labelling the nodes of "+name, done, func() error {
		k, err := s.Kube(name, 30*time.Second)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		if err := k.LabelNodes(ctx, set, remove); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		return nil
	})
}

// AdoptClusters makes existing clusters members of fleet name: it sets
// only the fleet label on their nodes.
func AdoptClusters(ctx context.Context, e *session.Env, name string, clusters []string) error {
	if err := checkFleetName(name); err != nil {
		return err
	}
	if len(clusters) == 0 {
		return errors.New("name the clusters to adopt")
	}
	for _, c := range clusters {
		if err := cluster.CheckName(c); err != nil {
			return err
		}
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true, Clusters: true})
	if err != nil {
		return err
	}
	defer s.Close()
	for _, c := range clusters {
		if _, ok := cluster.Find(s.Clusters, c); !ok {
			return fmt.Errorf("there is no cluster %s (clusters: %s); nothing was adopted", c, strings.Join(ui.OrNone(cluster.Names(s.Clusters)), ", "))
		}
	}
	rows, err := kindcluster.Rows(ctx, s, nil, "")
	if err != nil {
		return err
	}
	for _, r := range rows {
		if other := r.Labels[cluster.FleetLabel]; slices.Contains(clusters, r.Name) && other != "" && other != name {
			e.UI.Warnf("cluster %s leaves fleet %s", r.Name, other)
		}
	}
	set := cluster.Labels{cluster.FleetLabel: name}
	var errs []error
	for _, c := range ui.Dedupe(clusters) {
		errs = append(errs, labelOne(ctx, s, c, set, nil, "Cluster "+c+" is in fleet "+name))
	}
	return errors.Join(errs...)
}

// Delete deletes the clusters of fleet name, or those of the manifest
// in file that exist, every cluster before those it depends on.
func Delete(ctx context.Context, e *session.Env, name, file string, yes, dryRun bool) (session.Result, error) {
	switch {
	case name != "" && file != "":
		return session.Result{}, errors.New("name the fleet or give its manifest with -f, not both")
	case name == "" && file == "":
		return session.Result{}, errors.New("name the fleet to delete, or give its manifest with -f FILE")
	case name != "":
		if err := checkFleetName(name); err != nil {
			return session.Result{}, err
		}
	}
	var f Fleet
	if file != "" {
		cfg, err := config.Load(e.Paths)
		if err != nil {
			return session.Result{}, err
		}
		if f, _, err = loadFleet(e, cfg, file); err != nil {
			return session.Result{}, err
		}
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.Strict, Running: true, Clusters: true})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	names, none, err := fleetDeletions(ctx, s, f, name)
	if err != nil || len(names) == 0 {
		if none != "" {
			return session.Said("%s", none), err
		}
		return session.Result{}, err
	}
	script, files, steps, err := kindcluster.PlanDeletes(s, names, ", in this order: ")
	if err != nil {
		return session.Result{}, err
	}
	if dryRun {
		return session.Planned(steps, ""), nil
	}
	if !yes {
		switch {
		case file == "-":
			return session.Result{}, fmt.Errorf("the manifest came from stdin, so there is no terminal to confirm deleting %s: pass -y, or give the manifest as a file", strings.Join(names, ", "))
		case !e.TTY:
			return session.Result{}, fmt.Errorf("deleting %s needs a confirmation: run it in a terminal, or pass -y", strings.Join(names, ", "))
		case !ui.Confirm(e.Stdin, e.Stderr, "Delete "+strings.Join(names, ", ")+"?"):
			return session.Result{}, session.ErrCancelled
		}
	}
	if err := kindcluster.DeleteNamed(ctx, s, names, files, script); err != nil {
		return session.Result{}, err
	}
	if name == "" {
		name = f.Name
	}
	if name != "" {
		_ = os.Remove(fleetFile(e, name)) // apply writes it again
	}
	return session.Result{}, nil
}

// StopStart stops fleet name's clusters, dependents first, or starts
// them, dependencies first: each is back before the next starts.
func StopStart(ctx context.Context, e *session.Env, name string, start bool, wait time.Duration, dryRun bool) (session.Result, error) {
	if err := checkFleetName(name); err != nil {
		return session.Result{}, err
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.Strict, Running: true, Clusters: true})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	names, _, err := fleetDeletions(ctx, s, Fleet{}, name)
	if err != nil {
		return session.Result{}, err
	}
	if !start {
		return kindcluster.StopIn(ctx, s, names, dryRun)
	}
	slices.Reverse(names)
	return kindcluster.StartIn(ctx, s, names, wait, dryRun)
}

// fleetDeletions are the clusters a fleet delete removes, dependents
// first. From a named manifest, only the clusters in that fleet are: a
// cluster of the same name made otherwise is reported and left alone.
// None, with the sentence that says so, when nothing is to delete.
func fleetDeletions(ctx context.Context, s *session.Session, f Fleet, name string) ([]string, string, error) {
	e := s.Env
	if name != "" {
		rows, err := fleetMembers(ctx, s, name)
		if err != nil {
			return nil, "", err
		}
		var names []string
		for _, r := range rows {
			names = append(names, r.Name)
		}
		sort.Strings(names)
		// The manifest apply recorded says who depends on whom.
		data, err := fileutil.ReadRegular(fleetFile(e, name), MaxFileSize)
		if errors.Is(err, os.ErrNotExist) {
			return names, "", nil
		}
		if err == nil {
			f, err = parseFleet(e, s.Config, fleetFile(e, name), data)
		}
		if err != nil {
			e.UI.Warnf("the manifest fleet apply recorded cannot be read (%v): the clusters go in name order", err)
			return names, "", nil
		}
		return DeletionOrder(f, names), "", nil
	}
	var listed []string
	for _, m := range f.Members {
		if _, ok := cluster.Find(s.Clusters, m.Name); ok {
			listed = append(listed, m.Name)
		}
	}
	if len(listed) == 0 {
		return nil, "None of the fleet's clusters exists: nothing to delete.", nil
	}
	var names []string
	{
		rows, err := kindcluster.Rows(ctx, s, nil, "")
		if err != nil {
			return nil, "", err
		}
		for _, r := range rows {
			if !slices.Contains(listed, r.Name) {
				continue
			}
			switch got := r.Labels[cluster.FleetLabel]; {
			case r.Labels == nil:
				e.UI.Warnf("cluster %s is not running, so its fleet cannot be read: it is left alone (`marina cluster delete %s` deletes it)", r.Name, r.Name)
			case got != f.Name && f.Name == "":
				e.UI.Warnf("cluster %s is in fleet %s, and this manifest names no fleet: it is left alone (`marina fleet delete %s` deletes that fleet)", r.Name, got, got)
			case got != f.Name:
				e.UI.Warnf("cluster %s is not in fleet %s: it is left alone (`marina cluster delete %s` deletes it)", r.Name, f.Name, r.Name)
			default:
				names = append(names, r.Name)
			}
		}
		if len(names) == 0 {
			return nil, "No cluster of this fleet exists: nothing to delete.", nil
		}
	}
	return DeletionOrder(f, names), "", nil
}

// hiddenLabelPrefixes are left out of fleet describe's text view.
var hiddenLabelPrefixes = []string{"kubernetes.io/", "beta.kubernetes.io/", "node-role.kubernetes.io/", "node.kubernetes.io/"}

// ShownLabels are the labels of fleet describe's text view.
func ShownLabels(l map[string]string) string { return strings.Join(Shown(l), ",") }

// Shown are l's labels a person set or marina did, as key=value, sorted:
// Kubernetes' own (kubernetes.io/hostname, node-role…) are left out.
func Shown(l map[string]string) []string {
	var parts []string
	for k, v := range l {
		hide := false
		for _, p := range hiddenLabelPrefixes {
			if strings.HasPrefix(k, p) {
				hide = true
			}
		}
		if !hide {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	return parts
}
