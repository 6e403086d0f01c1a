package kindcluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/slot"
)

// Row is one line of marina cluster list. name, num, apiPort and
// kubeconfigPath are klimax's contract with its UI; the rest is new.
type Row struct {
	Name           string            `json:"name"`
	Num            int               `json:"num"`
	APIPort        int               `json:"apiPort"`
	KubeconfigPath string            `json:"kubeconfigPath"`
	Nodes          int               `json:"nodes"`
	State          string            `json:"state"`
	Labels         map[string]string `json:"labels,omitempty"`
}

// LabelTimeout bounds reading one cluster's node labels.
const LabelTimeout = 5 * time.Second

// List lists the clusters in the VM; a selector keeps those whose
// control-plane node matches it.
func List(ctx context.Context, e *session.Env, selector string) ([]Row, error) {
	sel, err := session.ParseSelector(selector)
	if err != nil {
		return nil, err
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true, Clusters: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return Rows(ctx, s, sel, selector)
}

// Rows describes b's clusters, reading the node labels of the
// running ones from their API servers at the same time.
func Rows(ctx context.Context, s *session.Session, sel labels.Selector, selector string) ([]Row, error) {
	rows := make([]Row, len(s.Clusters))
	errs := make([]error, len(s.Clusters))
	var wg sync.WaitGroup
	for i, c := range s.Clusters {
		kc, _ := s.Paths.Kubeconfig(c.Name) // names from Docker are checked in cluster.Group
		rows[i] = Row{Name: c.Name, Num: c.Slot, Nodes: len(c.Nodes), State: "stopped", KubeconfigPath: kc}
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
		if !c.APIRunning() {
			if !anyRunning(c) {
				rows[i].Labels = stoppedLabels(s, c.Name)
			}
			continue
		}
		wg.Go(func() { rows[i].Labels, errs[i] = nodeLabels(ctx, s, c.Name) })
	}
	wg.Wait()
	if sel == nil {
		for i, err := range errs {
			if err != nil {
				s.UI.Warnf("cluster %s: cannot read its labels: %v", rows[i].Name, err)
			}
		}
		return rows, nil
	}
	var out []Row
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

// nodeLabels are the labels of cluster name's control-plane node.
func nodeLabels(ctx context.Context, s *session.Session, name string) (map[string]string, error) {
	k, err := s.Kube(name, LabelTimeout)
	if err != nil {
		return nil, err
	}
	return k.NodeLabels(ctx, name+"-control-plane")
}
