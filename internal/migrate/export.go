package migrate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/cluster"
)

// Cluster is what migrate knows of one of klimax's clusters when its VM
// stays klimax's: its name and slot always (from its kubeconfig), the rest
// when klimax's VM ran and its API answered.
type Cluster struct {
	Name string
	Num  int // from its API port; 0 when unknown
	// Live is set when the fields below were read from the cluster.
	Live        bool
	Workers     int
	NodeVersion string // the kubelet's, when marina pins it
	Region      string
	Zone        string
	// Labels are the user's labels on its control plane: klimax's own
	// marks and Kubernetes' labels left out.
	Labels map[string]string
	// Fleet is its klimax.dev/fleet label.
	Fleet string
}

// UserLabels are the labels of a node a Fleet can give again: the user's,
// without klimax's and marina's marks, the topology labels (region and
// zone have their own fields) and the labels Kubernetes and kind set.
func UserLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		switch k {
		case cluster.ManagedBy, cluster.FleetLabel, "klimax.dev/fleet", cluster.RegionLabel, cluster.ZoneLabel:
			continue
		}
		prefix, _, _ := strings.Cut(k, "/")
		if strings.Contains(k, "/") && (prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") || prefix == "k8s.io" || strings.HasSuffix(prefix, ".k8s.io")) {
			continue
		}
		if cluster.CheckUserLabel(k, v) != nil {
			continue
		}
		out[k] = v
	}
	return out
}

// Fleet renders cs as a marina Fleet manifest that `marina fleet apply
// -f` reads: each cluster in its own slot with what was read of it. It is
// named after the klimax fleet when every cluster was of that one, and
// unnamed (no fleet label) otherwise. The header says where it came from
// and what it does not carry.
func Fleet(cs []Cluster) ([]byte, error) {
	type entry struct {
		Name        string            `yaml:"name"`
		Num         int               `yaml:"num,omitempty"`
		NodeVersion string            `yaml:"nodeVersion,omitempty"`
		Region      string            `yaml:"region,omitempty"`
		Zone        string            `yaml:"zone,omitempty"`
		Workers     int               `yaml:"workers,omitempty"`
		Labels      map[string]string `yaml:"labels,omitempty"`
	}
	type doc struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   *struct {
			Name string `yaml:"name"`
		} `yaml:"metadata,omitempty"`
		Spec struct {
			Clusters []entry `yaml:"clusters"`
		} `yaml:"spec"`
	}
	d := doc{APIVersion: "marina.dev/v1alpha1", Kind: "Fleet"}
	if len(cs) > 0 && cs[0].Fleet != "" && !slices.ContainsFunc(cs, func(c Cluster) bool { return c.Fleet != cs[0].Fleet }) {
		d.Metadata = &struct {
			Name string `yaml:"name"`
		}{cs[0].Fleet}
	}
	var unread []string
	for _, c := range slices.SortedFunc(slices.Values(cs), func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) }) {
		if err := cluster.CheckName(c.Name); err != nil {
			return nil, err
		}
		e := entry{Name: c.Name, Num: c.Num, NodeVersion: c.NodeVersion, Region: c.Region, Zone: c.Zone, Workers: c.Workers}
		if len(c.Labels) > 0 {
			e.Labels = maps.Clone(c.Labels)
		}
		if !c.Live {
			unread = append(unread, c.Name)
		}
		d.Spec.Clusters = append(d.Spec.Clusters, e)
	}
	body, err := yaml.Marshal(d)
	if err != nil {
		return nil, err
	}
	head := "# klimax's clusters, written by marina migrate: `marina fleet apply -f` this\n" +
		"# file after `marina up` makes them again in marina's VM, in the same slots.\n" +
		"# Their workloads and data do not come over: only the clusters.\n"
	if len(unread) > 0 {
		head += fmt.Sprintf("# %s could not be read (klimax's VM was not running): only the\n# name and slot are known; add the rest before applying.\n", strings.Join(unread, ", "))
	}
	return append([]byte(head), body...), nil
}
