package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// ClusterRow is one line of marina cluster list. name, num, apiPort and
// kubeconfigPath are klimax's contract with its UI; the rest is new.
type ClusterRow struct {
	Name           string            `json:"name" yaml:"name"`
	Num            int               `json:"num" yaml:"num"`
	APIPort        int               `json:"apiPort" yaml:"apiPort"`
	KubeconfigPath string            `json:"kubeconfigPath" yaml:"kubeconfigPath"`
	Nodes          int               `json:"nodes" yaml:"nodes"`
	State          string            `json:"state" yaml:"state"`
	Labels         map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
}

// labelTimeout bounds reading one cluster's node labels.
const labelTimeout = 5 * time.Second

// ListClusters lists the clusters in the VM; a selector keeps those whose
// control-plane node matches it.
func ListClusters(ctx context.Context, e *Env, selector string) ([]ClusterRow, error) {
	sel, err := parseSelector(selector)
	if err != nil {
		return nil, err
	}
	b, err := openLab(ctx, e, labNeeds{clusters: true})
	if err != nil {
		return nil, err
	}
	defer b.close()
	return clusterRows(ctx, e, b, sel, selector)
}

// clusterRows describes b's clusters, reading the node labels of the
// running ones from their API servers at the same time.
func clusterRows(ctx context.Context, e *Env, b *lab, sel labels.Selector, selector string) ([]ClusterRow, error) {
	rows := make([]ClusterRow, len(b.clusters))
	errs := make([]error, len(b.clusters))
	var wg sync.WaitGroup
	for i, c := range b.clusters {
		kc, _ := e.Paths.Kubeconfig(c.Name) // names from Docker are checked in cluster.Group
		rows[i] = ClusterRow{Name: c.Name, Num: c.Slot, Nodes: len(c.Nodes), State: "stopped", KubeconfigPath: kc}
		if c.Slot > 0 {
			rows[i].APIPort = slot.APIPort(c.Slot)
		}
		if c.Running() {
			rows[i].State = "running"
		}
		if _, err := os.Stat(rows[i].KubeconfigPath); err != nil {
			rows[i].KubeconfigPath = ""
			continue
		}
		if !c.Running() {
			continue
		}
		wg.Go(func() { rows[i].Labels, errs[i] = nodeLabels(ctx, e, c.Name) })
	}
	wg.Wait()
	if sel == nil {
		for i, err := range errs {
			if err != nil {
				e.UI.Warnf("cluster %s: cannot read its labels: %v", rows[i].Name, err)
			}
		}
		return rows, nil
	}
	var out []ClusterRow
	for i, r := range rows {
		if errs[i] != nil {
			return nil, fmt.Errorf("cluster %s: cannot read its labels to match -l %s: %w", r.Name, selector, errs[i])
		}
		if r.Labels != nil && sel.Matches(labels.Set(r.Labels)) {
			out = append(out, r)
		}
	}
	return out, nil
}

func parseSelector(s string) (labels.Selector, error) {
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("-l %q is not a label selector: %v (write it like region=europe-west1,env!=prod)", s, err)
	}
	return sel, nil
}

// clusterKubeconfig reads cluster name's own kubeconfig file.
func clusterKubeconfig(e *Env, name string) (path string, kc []byte, err error) {
	if path, err = e.Paths.Kubeconfig(name); err != nil {
		return "", nil, err
	}
	kc, err = fileutil.ReadRegular(path, kubeconfig.MaxSize)
	if errors.Is(err, os.ErrNotExist) {
		return path, nil, fmt.Errorf("cluster %s has no kubeconfig at %s: `marina kubeconfig merge %s` writes it", name, path, name)
	}
	return path, kc, err
}

// clusterClient is a client for cluster name, from its own kubeconfig.
func clusterClient(e *Env, name string, timeout time.Duration) (*kubernetes.Clientset, error) {
	path, kc, err := clusterKubeconfig(e, name)
	if err != nil {
		return nil, err
	}
	rc, err := kubeconfig.RESTConfig(kc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rc.Timeout = timeout
	return kubernetes.NewForConfig(rc)
}

// nodeLabels are the labels of cluster name's control-plane node.
func nodeLabels(ctx context.Context, e *Env, name string) (map[string]string, error) {
	cs, err := clusterClient(e, name, labelTimeout)
	if err != nil {
		return nil, err
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, name+"-control-plane", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return n.Labels, nil
}

// PrintClusters writes rows as a table.
func PrintClusters(w io.Writer, rows []ClusterRow) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No clusters: create one with `marina cluster create NAME`.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSLOT\tAPI-PORT\tNODES\tSTATE\tREGION/ZONE\tKUBECONFIG")
	for _, r := range rows {
		where := "-"
		if r.Labels != nil {
			where = orDash(r.Labels[cluster.RegionLabel]) + "/" + orDash(r.Labels[cluster.ZoneLabel])
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Name, r.Num, r.APIPort, r.Nodes, r.State, where, orDash(r.KubeconfigPath))
	}
	tw.Flush()
}

// DeleteOptions are the flags of marina cluster delete.
type DeleteOptions struct {
	Names    []string
	Selector string
	Yes      bool
	DryRun   bool
}

// DeleteClusters deletes clusters named, selected, or picked on the
// terminal, with their kubeconfig files and entries. Every name is checked
// before anything is deleted.
func DeleteClusters(ctx context.Context, e *Env, opts DeleteOptions) error {
	if len(opts.Names) > 0 && opts.Selector != "" {
		return errors.New("name clusters or select them with -l, not both")
	}
	for _, n := range opts.Names {
		if err := cluster.CheckName(n); err != nil {
			return err
		}
	}
	sel, err := parseSelector(opts.Selector)
	if err != nil {
		return err
	}
	// Strict: whether entries leave ~/.kube/config is a setting.
	b, err := openLab(ctx, e, labNeeds{strict: true, clusters: true})
	if err != nil {
		return err
	}
	defer b.close()
	var names []string
	confirm := false
	switch {
	case len(opts.Names) > 0:
		for _, n := range opts.Names {
			if _, ok := cluster.Find(b.clusters, n); !ok {
				return fmt.Errorf("there is no cluster %s (clusters: %s); nothing was deleted", n, strings.Join(orNone(cluster.Names(b.clusters)), ", "))
			}
		}
		names = dedupe(opts.Names)
	case sel != nil:
		rows, err := clusterRows(ctx, e, b, sel, opts.Selector)
		if err != nil {
			return err
		}
		for _, r := range rows {
			names = append(names, r.Name)
		}
		if len(names) == 0 {
			fmt.Fprintf(e.Stdout, "No cluster matches -l %s: nothing to delete.\n", opts.Selector)
			return nil
		}
		confirm = !opts.Yes
	default:
		if !e.TTY {
			return errors.New("name the clusters to delete, or select them with -l (in a terminal, marina cluster delete lists them to pick from)")
		}
		if len(b.clusters) == 0 {
			fmt.Fprintln(e.Stdout, "No clusters to delete.")
			return nil
		}
		rows, err := clusterRows(ctx, e, b, nil, "")
		if err != nil {
			return err
		}
		if names, err = pick(e.Stdin, e.Stderr, rows); err != nil {
			return err
		}
	}
	sort.Strings(names)
	script, err := guest.KindDelete(names)
	if err != nil {
		return err
	}
	files := make([]string, len(names))
	for i, n := range names {
		if files[i], err = e.Paths.Kubeconfig(n); err != nil {
			return err
		}
	}
	steps := []Step{{Do: "delete " + plural(len(names), "cluster") + " " + strings.Join(names, ", ") + " with their kubeconfig files"}}
	cfg := b.cfg
	target := e.kubeconfigTarget()
	if cfg.Kind.AutoRemoveKubeconfig {
		steps = append(steps, Step{Do: "remove their entries from " + target})
	}
	if opts.DryRun {
		printPlan(e, steps, "")
		return nil
	}
	if confirm {
		if !e.TTY {
			return fmt.Errorf("-l %s selects %s; deleting them needs a confirmation: run it in a terminal, or pass -y", opts.Selector, strings.Join(names, ", "))
		}
		if !ui.Confirm(e.Stdin, e.Stderr, "Delete "+strings.Join(names, ", ")+"?") {
			return errors.New("nothing was deleted")
		}
	}
	g := e.Guest(b.l, b.name)
	e.SetLeftover(fmt.Sprintf("%s may be half deleted; `marina cluster delete %s` finishes", strings.Join(names, ", "), strings.Join(names, " ")))
	defer e.SetLeftover("")
	var foreign []string
	err = e.step("Deleting "+strings.Join(names, ", "), "Deleted "+strings.Join(names, ", "), func() error {
		if _, err := g.Run(ctx, vm.Script{Name: "kind delete cluster", Body: script, Root: true}); err != nil {
			return err
		}
		var errs []error
		for i, n := range names {
			if err := os.Remove(files[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			if cfg.Kind.AutoRemoveKubeconfig {
				r, err := kubeconfig.Remove(target, n)
				errs = append(errs, err)
				if len(r.Foreign) > 0 {
					foreign = append(foreign, n)
				}
			}
		}
		return errors.Join(errs...)
	})
	for _, n := range foreign {
		e.UI.Warnf("%s has entries named %s that marina did not write: they were left as they are", target, n)
	}
	return err
}

// pick asks which clusters to delete: numbers from the list, or "all".
func pick(in io.Reader, out io.Writer, rows []ClusterRow) ([]string, error) {
	for i, r := range rows {
		fmt.Fprintf(out, "  %d) %s (slot %d, port %d, %s)\n", i+1, r.Name, r.Num, r.APIPort, r.State)
	}
	fmt.Fprint(out, "Delete which clusters? Numbers separated by spaces, \"all\", or nothing to cancel: ")
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return nil, errors.New("nothing was deleted")
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, errors.New("nothing was deleted")
	}
	var names []string
	if line == "all" {
		for _, r := range rows {
			names = append(names, r.Name)
		}
		return names, nil
	}
	for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' }) {
		i, err := strconv.Atoi(f)
		if err != nil || i < 1 || i > len(rows) {
			return nil, fmt.Errorf("%q is not one of the numbers 1 to %d; nothing was deleted", f, len(rows))
		}
		names = append(names, rows[i-1].Name)
	}
	return dedupe(names), nil
}

// LabelCluster sets and removes node labels on every node of a cluster.
func LabelCluster(ctx context.Context, e *Env, name string, specs []string, dryRun bool) error {
	if err := cluster.CheckName(name); err != nil {
		return err
	}
	if len(specs) == 0 {
		return errors.New("give at least one -l key=value (or -l key- to remove a label)")
	}
	set, remove, err := cluster.ParseLabels(specs)
	if err != nil {
		return err
	}
	b, err := openLab(ctx, e, labNeeds{clusters: true})
	if err != nil {
		return err
	}
	b.close()
	if _, ok := cluster.Find(b.clusters, name); !ok {
		return fmt.Errorf("there is no cluster %s (clusters: %s)", name, strings.Join(orNone(cluster.Names(b.clusters)), ", "))
	}
	patch := map[string]any{}
	for k, v := range set {
		patch[k] = v
	}
	for _, k := range remove {
		patch[k] = nil // a JSON merge patch removes a key set to null
	}
	var what []string
	if len(set) > 0 {
		what = append(what, "set "+labelString(set))
	}
	if len(remove) > 0 {
		what = append(what, "remove "+strings.Join(remove, ","))
	}
	if dryRun {
		printPlan(e, []Step{{Do: "on every node of " + name + ": " + strings.Join(what, "; ")}}, "")
		return nil
	}
	cs, err := clusterClient(e, name, 30*time.Second)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
	if err != nil {
		return err
	}
	return e.step("Labelling the nodes of "+name, "Labelled the nodes of "+name+": "+strings.Join(what, "; "), func() error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list the nodes of %s: %w", name, err)
		}
		for _, n := range nodes.Items {
			if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "marina"}); err != nil {
				return fmt.Errorf("label node %s: %w", n.Name, err)
			}
		}
		return nil
	})
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func orNone(names []string) []string {
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
