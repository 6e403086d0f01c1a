package kindcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// KubeconfigPath is cluster name's own kubeconfig file, or with env the
// shell line that exports it.
func KubeconfigPath(e *session.Env, name string, env bool) (string, error) {
	if err := cluster.CheckName(name); err != nil {
		return "", err
	}
	p, err := e.Paths.Kubeconfig(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", kubeconfig.Missing(name, p)
	}
	if env {
		return "export KUBECONFIG=" + run.ShellQuote(p), nil
	}
	return p, nil
}

// MergeKubeconfigs exports the kubeconfigs of names (every cluster when
// empty) again from the live clusters, with the API server address the VM
// has now, writes each cluster's file and merges it into the user's
// kubeconfig.
func MergeKubeconfigs(ctx context.Context, e *session.Env, names []string, dryRun bool) (session.Result, error) {
	// Strict: the API server address depends on network settings.
	s, err := session.Open(ctx, e, session.Needs{Config: session.Strict, Running: true, Lima0: true, Clusters: true})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	// Clusters the user named may take over an older marina's entries of
	// their names; every cluster the VM lists, only this home's own.
	owner := e.KubeOwner(len(names) > 0)
	if len(names) == 0 {
		names = cluster.Names(s.Clusters)
		if len(names) == 0 {
			return session.Said("No clusters: nothing to merge."), nil
		}
	}
	var infos []cluster.Info
	for _, n := range ui.Dedupe(names) {
		if err := cluster.CheckName(n); err != nil {
			return session.Result{}, err
		}
		c, ok := cluster.Find(s.Clusters, n)
		if !ok {
			return session.Result{}, fmt.Errorf("there is no cluster %s (clusters: %s)", n, strings.Join(ui.OrNone(cluster.Names(s.Clusters)), ", "))
		}
		infos = append(infos, c)
	}
	target := e.KubeconfigTarget()
	if err := kubeconfig.CheckMerge(e.KubeconfigFiles(), owner, cluster.Names(infos)...); err != nil {
		return session.Result{}, err
	}
	for _, c := range infos {
		if kc, err := e.Paths.Kubeconfig(c.Name); err == nil {
			if err := kubeconfig.CheckFile(kc, c.Name, owner); err != nil {
				return session.Result{}, err
			}
		}
	}
	if dryRun {
		var steps []session.Step
		for _, c := range infos {
			kc, _ := e.Paths.Kubeconfig(c.Name)
			steps = append(steps, session.Step{Do: fmt.Sprintf("export %s from the cluster (API server %s) to %s and merge it into %s", c.Name, s.ClusterServer(c), kc, target)})
		}
		return session.Planned(steps, ""), nil
	}
	return session.Result{}, e.Step("Exporting "+strings.Join(cluster.Names(infos), ", "), "Merged "+strings.Join(cluster.Names(infos), ", ")+" into "+target, func() error {
		return refreshKubeconfigs(ctx, s, infos, owner, func(string) bool { return true })
	})
}

// refreshKubeconfigs exports clusters (one guest round trip for all),
// writes their files and merges into the user's kubeconfig those merge
// says to.
func refreshKubeconfigs(ctx context.Context, s *session.Session, infos []cluster.Info, owner kubeconfig.Owner, merge func(name string) bool) error {
	var names []string
	for _, c := range infos {
		if c.Slot == 0 {
			return fmt.Errorf("cluster %s publishes no marina API port (700N): it was not created by marina", c.Name)
		}
		if !c.APIRunning() {
			return fmt.Errorf("cluster %s is stopped: its control plane does not run (`marina shell -- docker start %s-control-plane` starts it, or recreate the cluster)", c.Name, c.Name)
		}
		names = append(names, c.Name)
	}
	script, err := guest.KindExport(names)
	if err != nil {
		return err
	}
	res, err := s.Guest.Run(ctx, vm.Script{Name: "export kubeconfigs", Body: script, Root: true})
	if err != nil {
		return err
	}
	exports := guest.ParseExports(string(res.Stdout))
	target := s.KubeconfigTarget()
	var errs []error
	for _, c := range infos {
		ex, ok := exports[c.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("kind printed no kubeconfig for %s", c.Name))
			continue
		}
		kc, err := kubeconfig.FromKind(ex.Kubeconfig, ex.Cert, c.Name, s.ClusterServer(c), owner.Home)
		var path string
		if err == nil {
			path, err = s.Paths.Kubeconfig(c.Name)
		}
		if err == nil {
			err = kubeconfig.WriteFile(path, c.Name, kc, owner)
		}
		if err == nil && merge(c.Name) {
			err = kubeconfig.Merge(target, c.Name, kc, owner)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// RemoveKubeconfigs drops the entries of names from the user's kubeconfig;
// the clusters' own files stay. Only entries marina wrote are removed: the
// user's own of the same name stay, and are an error.
func RemoveKubeconfigs(e *session.Env, names []string) (session.Result, error) {
	target := e.KubeconfigTarget()
	for _, n := range names {
		if err := cluster.CheckName(n); err != nil {
			return session.Result{}, err
		}
	}
	var res session.Result
	var errs []error
	for _, n := range names {
		r, err := kubeconfig.Remove(target, n, e.KubeOwner(true))
		switch {
		case err != nil:
			errs = append(errs, err)
		case len(r.Entries) > 0:
			res.Add("Removed %s (%s) from %s", n, strings.Join(r.Entries, ", "), target)
		case len(r.Foreign) == 0 && r.Others == "":
			res.Add("%s has no entries named %s: nothing to remove", target, n)
		}
		if r.Others != "" {
			errs = append(errs, fmt.Errorf("the entries named %s in %s are %s: they were left as they are (remove them with that home's marina, or by hand)", n, target, r.Others))
		}
		if len(r.Foreign) > 0 {
			errs = append(errs, fmt.Errorf("%s has a %s named %s that marina did not write: it was left as it is (kubectl config delete-context %s removes a context of yours)", target, strings.Join(r.Foreign, ", "), n, n))
		}
	}
	return res, errors.Join(errs...)
}

// UseKubeconfig makes name the current context of the user's kubeconfig.
func UseKubeconfig(e *session.Env, name string) (session.Result, error) {
	if err := cluster.CheckName(name); err != nil {
		return session.Result{}, err
	}
	target := e.KubeconfigTarget()
	ok, err := kubeconfig.Has(target, name, e.KubeOwner(true))
	if err != nil {
		return session.Result{}, err
	}
	if !ok {
		return session.Result{}, fmt.Errorf("%s has no context %s that this marina home wrote: `marina kubeconfig merge %s` adds it", target, name, name)
	}
	if err := kubeconfig.Use(target, name); err != nil {
		return session.Result{}, err
	}
	return session.Said("Switched %s to context %s", target, name), nil
}

// StaleAfterMove finds the clusters whose kubeconfig names another API
// server than their own mode's: an old lima0 address (loopback addresses
// never move). Each cluster is judged by the address it was created with,
// not by the config's mode now. It lists the clusters into s only when
// there is a kubeconfig to look at.
func StaleAfterMove(ctx context.Context, s *session.Session, o *session.Observed) ([]cluster.Info, error) {
	if o.DockerErr != nil || o.GuestErr != nil {
		return nil, nil
	}
	if kcs, _ := filepath.Glob(filepath.Join(s.Paths.KubeconfigDir(), "*.kubeconfig")); len(kcs) == 0 {
		return nil, nil // no cluster kubeconfig to look at: no Docker call either
	}
	s.Lima0 = o.Guest.Lima0.Addr()
	var err error
	if s.Clusters, err = s.ListClusters(ctx); err != nil {
		return nil, err
	}
	var out []cluster.Info
	for _, c := range s.Clusters {
		if !c.APIRunning() {
			continue
		}
		path, err := s.Paths.Kubeconfig(c.Name)
		if err != nil || !kubeconfig.Stale(path, c.Name, s.ClusterServer(c)) {
			continue
		}
		// Only this home's own file follows its VM: ~/.kube/marina is
		// shared, and this VM's word names no other home's cluster.
		if err := kubeconfig.CheckFile(path, c.Name, s.KubeOwner(false)); err != nil {
			s.UI.Warnf("%v", err)
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// FollowStep is the plan line of followLima0.
func FollowStep(s *session.Session, stale []cluster.Info) session.Step {
	return session.Step{Do: "export the kubeconfigs of " + strings.Join(cluster.Names(stale), ", ") + " again with the API servers at " + s.Lima0.String(), Reason: "lima0's address changed"}
}

// FollowLima0 re-exports the kubeconfigs that still name an old lima0
// address, so that `marina up` after a vzNAT address change leaves every
// cluster reachable. Entries are merged again only into a kubeconfig that
// has them already.
func FollowLima0(ctx context.Context, s *session.Session, stale []cluster.Info) error {
	if len(stale) == 0 {
		return nil
	}
	names := cluster.Names(stale)
	target := s.KubeconfigTarget()
	return s.Step("Pointing the kubeconfigs of "+strings.Join(names, ", ")+" at "+s.Lima0.String(), "", func() error {
		return refreshKubeconfigs(ctx, s, stale, s.KubeOwner(false), func(n string) bool {
			ok, err := kubeconfig.Has(target, n, s.KubeOwner(false))
			return err == nil && ok
		})
	})
}
