package kindcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/podnet"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
	"k8s.io/apimachinery/pkg/labels"
)

// DeleteOptions are the flags of marina cluster delete.
type DeleteOptions struct {
	Names    []string
	Selector string
	Yes      bool
	DryRun   bool
}

// Delete deletes clusters named, selected, or picked on the
// terminal, with their kubeconfig files and entries. Every name is checked
// before anything is deleted.
func Delete(ctx context.Context, e *session.Env, opts DeleteOptions) (session.Result, error) {
	if len(opts.Names) > 0 && opts.Selector != "" {
		return session.Result{}, errors.New("name clusters or select them with -l, not both")
	}
	for _, n := range opts.Names {
		if err := cluster.CheckName(n); err != nil {
			return session.Result{}, err
		}
	}
	sel, err := session.ParseSelector(opts.Selector)
	if err != nil {
		return session.Result{}, err
	}
	// Strict: whether entries leave ~/.kube/config is a setting.
	s, err := session.Open(ctx, e, session.Needs{Config: session.Strict, Running: true, Clusters: true})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	names, confirm, none, err := chooseDeletions(ctx, s, opts, sel)
	if err != nil || len(names) == 0 {
		if none != "" {
			return session.Said("%s", none), err
		}
		return session.Result{}, err
	}
	sort.Strings(names)
	script, files, steps, err := PlanDeletes(s, names, " ")
	if err != nil {
		return session.Result{}, err
	}
	if opts.DryRun {
		return session.Planned(steps, ""), nil
	}
	if confirm {
		if !e.TTY {
			return session.Result{}, fmt.Errorf("-l %s selects %s; deleting them needs a confirmation: run it in a terminal, or pass -y", opts.Selector, strings.Join(names, ", "))
		}
		if !ui.Confirm(e.Stdin, e.Stderr, "Delete "+strings.Join(names, ", ")+"?") {
			return session.Result{}, session.ErrCancelled
		}
	}
	return session.Result{}, DeleteNamed(ctx, s, names, files, script)
}

// chooseDeletions is the clusters a delete names, selects or picks, and
// whether they need a confirmation; none (and no error) when there is
// nothing to delete, with the sentence that says so.
func chooseDeletions(ctx context.Context, s *session.Session, opts DeleteOptions, sel labels.Selector) (names []string, confirm bool, none string, err error) {
	e := s.Env
	switch {
	case len(opts.Names) > 0:
		for _, n := range opts.Names {
			if _, ok := cluster.Find(s.Clusters, n); !ok {
				return nil, false, "", fmt.Errorf("there is no cluster %s (clusters: %s); nothing was deleted", n, strings.Join(ui.OrNone(cluster.Names(s.Clusters)), ", "))
			}
		}
		return ui.Dedupe(opts.Names), false, "", nil
	case sel != nil:
		rows, err := Rows(ctx, s, sel, opts.Selector)
		if err != nil {
			return nil, false, "", err
		}
		names = nil
		for _, r := range rows {
			names = append(names, r.Name)
		}
		if len(names) == 0 {
			return nil, false, fmt.Sprintf("No cluster matches -l %s: nothing to delete.", opts.Selector), nil
		}
		return names, !opts.Yes, "", nil
	}
	if !e.TTY {
		return nil, false, "", errors.New("name the clusters to delete, or select them with -l (in a terminal, marina cluster delete lists them to pick from)")
	}
	if len(s.Clusters) == 0 {
		return nil, false, "No clusters to delete.", nil
	}
	rows, err := Rows(ctx, s, nil, "")
	if err != nil {
		return nil, false, "", err
	}
	names, err = pick(e, rows)
	return names, false, "", err
}

// PlanDeletes is the guest script, the kubeconfig files and the printed
// steps of deleting names, in that order; sep goes before the names.
func PlanDeletes(s *session.Session, names []string, sep string) (string, []string, []session.Step, error) {
	script, err := deleteScript(s.Config, s.Paths, names)
	if err != nil {
		return "", nil, nil, err
	}
	files := make([]string, len(names))
	for i, n := range names {
		if files[i], err = s.Paths.Kubeconfig(n); err != nil {
			return "", nil, nil, err
		}
	}
	steps := []session.Step{{Do: "delete " + ui.Plural(len(names), "cluster") + sep + strings.Join(names, ", ") + " with their kubeconfig files and their names in the local DNS"}}
	if s.Config.Kind.AutoRemoveKubeconfig {
		steps = append(steps, session.Step{Do: "remove their entries from " + s.KubeconfigTarget()})
	}
	return script, files, steps, nil
}

// DeleteNamed deletes names in the VM (one round trip), then their
// kubeconfig files and, when the config says so, their entries.
func DeleteNamed(ctx context.Context, s *session.Session, names, files []string, script string) error {
	e := s.Env
	target := e.KubeconfigTarget()
	e.SetLeftover(fmt.Sprintf("%s may be half deleted; `marina cluster delete %s` finishes", strings.Join(names, ", "), strings.Join(names, " ")))
	defer e.SetLeftover("")
	var foreign, unclean []string
	err := e.Step("Deleting "+strings.Join(names, ", "), "Deleted "+strings.Join(names, ", "), func() error {
		out, err := s.Guest.Run(ctx, vm.Script{Name: "kind delete cluster", Body: script, Root: true})
		if err != nil {
			return err
		}
		unclean = guest.ParseForget(string(out.Stdout))
		var errs []error
		for i, n := range names {
			// Only this home's own file and entries: the name came from
			// this home's VM, and ~/.kube is shared by every home (S11).
			switch ok, err := kubeconfig.Own(files[i], n, s.KubeOwner(false)); {
			case err != nil:
				s.UI.Warnf("%s is left as it is: %v; if it is a leftover, `rm %s` removes it", files[i], err, run.ShellQuote(files[i]))
			case ok:
				if err := os.Remove(files[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
			errs = append(errs, removeStopped(s, n))
			if s.Config.Kind.AutoRemoveKubeconfig {
				r, err := kubeconfig.Remove(target, n, s.KubeOwner(false))
				errs = append(errs, err)
				if len(r.Foreign) > 0 {
					foreign = append(foreign, n)
				}
				if r.Others != "" {
					s.UI.Warnf("the entries named %s in %s are %s: they were left as they are; `marina kubeconfig remove %s` removes them", n, target, r.Others, n)
				}
			}
		}
		return errors.Join(errs...)
	})
	for _, n := range foreign {
		e.UI.Warnf("%s has entries named %s that marina did not write: they were left as they are", target, n)
	}
	for _, z := range unclean {
		e.UI.Warnf("the names under %s could not be removed from the local DNS (is %s running? `marina up` starts it): they answer until then; `marina dns list` shows them", z, dns.EtcdName)
	}
	return err
}

// deleteScript deletes clusters names in the VM, then their names from
// the local DNS: their ExternalDNS dies with them and cannot clean up.
// Their etcd users go too. Without a label key marina never set up the
// local DNS here, and nothing is asked of it.
func deleteScript(cfg config.Config, paths config.Paths, names []string) (string, error) {
	script, err := guest.KindDelete(names)
	if err != nil {
		return "", err
	}
	unroute, err := podnet.Forget(names)
	if err != nil {
		return "", err
	}
	script += unroute
	etcd, _, ok, err := session.DNSEtcd(cfg, paths)
	if err != nil || !ok {
		return script, err
	}
	zones := make([]string, len(names))
	for i, n := range names {
		zones[i] = dns.ClusterZone(n, cfg.DNS.Domain)
	}
	forget, err := guest.DNSForget(etcd, zones, names)
	return script + forget, err
}

// pick asks which clusters to delete, from a list on the terminal.
func pick(e *session.Env, rows []Row) ([]string, error) {
	items := make([]string, len(rows))
	for i, r := range rows {
		items[i] = fmt.Sprintf("%s (slot %d, port %d, %s)", r.Name, r.Num, r.APIPort, r.State)
	}
	idx, err := e.Deps.Pick("Delete which clusters?", items)
	if errors.Is(err, ui.ErrCancelled) {
		return nil, session.ErrCancelled
	}
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was deleted", err)
	}
	names := make([]string, len(idx))
	for i, n := range idx {
		names[i] = rows[n].Name
	}
	return names, nil
}
