// Package cluster is what marina knows about one kind cluster: its name,
// its labels, the kind configuration that creates it, and how its slot is
// found from the node containers Docker runs.
package cluster

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/bcollard/marina/internal/slot"
)

// kind's labels on every node container.
const (
	KindLabel = "io.x-k8s.kind.cluster"
	RoleLabel = "io.x-k8s.kind.role"
)

// Node labels marina sets on every node.
const (
	ManagedBy   = "managed-by"
	RegionLabel = "topology.kubernetes.io/region"
	ZoneLabel   = "topology.kubernetes.io/zone"
	FleetLabel  = "marina.dev/fleet"
	// IngressReady marks the control-plane node, the one kind's ingress
	// guides (and klimax) put an ingress controller on.
	IngressReady = "ingress-ready"
)

// MaxNameLen keeps "<name>-control-plane", kind's longest container name
// and the node's hostname, inside a 63-character DNS label.
const MaxNameLen = 63 - len("-control-plane")

var nameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// CheckName reports why name cannot name a cluster.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a cluster needs a name, such as dev")
	case len(name) > MaxNameLen:
		return fmt.Errorf("cluster name %q is %d characters long: keep it to %d, so that its node names stay valid hostnames", name, len(name), MaxNameLen)
	case !nameRe.MatchString(name):
		return fmt.Errorf("cluster name %q is not a DNS label: use lowercase letters, digits and '-', starting and ending with a letter or digit", name)
	}
	return nil
}

// Labels are node labels by key.
type Labels map[string]string

// ParseLabels reads repeated -l key=value flags; key- removes key (for
// `cluster label`). Every key and value is checked as Kubernetes does.
func ParseLabels(specs []string) (set Labels, remove []string, err error) {
	set = Labels{}
	for _, s := range specs {
		if k, ok := strings.CutSuffix(s, "-"); ok && !strings.Contains(s, "=") {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return nil, nil, fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
			}
			remove = append(remove, k)
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, nil, fmt.Errorf("label %q: write it as key=value (or key- to remove it)", s)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, nil, fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, nil, fmt.Errorf("label %s value %q: %s", k, v, strings.Join(errs, "; "))
		}
		set[k] = v
	}
	return set, remove, nil
}

// CheckUserLabel reports why key=value cannot be a label the user gives a
// cluster's nodes: it must be a Kubernetes label, and not one that marina
// sets from other settings.
func CheckUserLabel(k, v string) error {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return fmt.Errorf("label %s value %q: %s", k, v, strings.Join(errs, "; "))
	}
	switch k {
	case ManagedBy:
		return fmt.Errorf("label %s is marina's own mark on its nodes: choose another key", k)
	case FleetLabel:
		return fmt.Errorf("label %s names the cluster's fleet: it comes from the fleet's metadata.name (or `marina fleet adopt`)", k)
	case RegionLabel, ZoneLabel:
		return fmt.Errorf("label %s comes from the cluster's region and zone settings: set those instead", k)
	}
	return nil
}

// CheckKubeletLabels reports a label the kubelet would refuse to set on its
// own node: it only accepts the kubernetes.io and k8s.io namespaces it
// knows, and kind passes node labels to the kubelet.
func CheckKubeletLabels(l Labels) error {
	for k := range l {
		prefix, _, ok := strings.Cut(k, "/")
		if !ok {
			continue
		}
		ns := prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") ||
			prefix == "k8s.io" || strings.HasSuffix(prefix, ".k8s.io")
		if !ns {
			continue
		}
		switch {
		case k == RegionLabel || k == ZoneLabel:
			return fmt.Errorf("label %s is set by --region and --zone", k)
		case prefix == "node.kubernetes.io" || strings.HasSuffix(prefix, ".node.kubernetes.io") ||
			prefix == "kubelet.kubernetes.io" || strings.HasSuffix(prefix, ".kubelet.kubernetes.io"):
		default:
			return fmt.Errorf("label %s is in a namespace the kubelet refuses at node registration (kubernetes.io, k8s.io): add it after creation with `marina cluster label`, or choose another prefix", k)
		}
	}
	return nil
}

// Spec is one cluster to create.
type Spec struct {
	Name    string
	Slot    int
	Region  string
	Zone    string
	Labels  Labels // the user's, checked with CheckKubeletLabels
	Fleet   string
	Workers int
	// ListenAddress is where the VM publishes the API server: 0.0.0.0 in
	// direct mode (reached on lima0), 127.0.0.1 when Lima mirrors it.
	ListenAddress string
	// SANs are the extra API server certificate names (lima0's address and
	// 127.0.0.1).
	SANs []string
	// CertsD is the VM folder mounted as the nodes' containerd certs.d.
	CertsD string
	// ContainerdPatch is merged into the nodes' containerd config.
	ContainerdPatch string
	// CNI is CNIKindnet ("" too) or CNINone: kind installs no CNI
	// (networking.disableDefaultCNI) and the user brings theirs.
	CNI string
}

// The CNIs a create offers: kind's own (kindnet), or none, for the
// user's (Cilium, Calico).
const (
	CNIKindnet = "kindnet"
	CNINone    = "none"
)

// CheckCNI checks a --cni value ("" is kindnet).
func CheckCNI(v string) error {
	switch v {
	case "", CNIKindnet, CNINone:
		return nil
	}
	return fmt.Errorf("cni %q: choose %s (kind's default) or %s (kind installs no CNI and you install yours, Cilium or Calico, while the create waits)", v, CNIKindnet, CNINone)
}

// MaxWorkers bounds --workers; kind node containers are cheap but not free.
const MaxWorkers = 9

// DefaultRegion and DefaultZone are klimax's topology defaults for slot n.
func DefaultRegion(n int) string { return fmt.Sprintf("europe-west%d", n) }

// DefaultZone is the zone in DefaultRegion(n).
func DefaultZone(n int) string { return DefaultRegion(n) + "-b" }

// NodeLabels are every label the nodes of s carry.
func (s Spec) NodeLabels() Labels {
	out := Labels{ManagedBy: "marina", RegionLabel: s.Region, ZoneLabel: s.Zone}
	for k, v := range s.Labels {
		out[k] = v
	}
	if s.Fleet != "" {
		out[FleetLabel] = s.Fleet
	}
	return out
}

// check validates every value the kind config carries.
func (s Spec) check() error {
	if err := CheckName(s.Name); err != nil {
		return err
	}
	if err := slot.Check(s.Slot); err != nil {
		return err
	}
	if s.Workers < 0 || s.Workers > MaxWorkers {
		return fmt.Errorf("--workers %d: choose 0 to %d", s.Workers, MaxWorkers)
	}
	for _, l := range []struct{ what, v string }{{"region", s.Region}, {"zone", s.Zone}} {
		if errs := validation.IsValidLabelValue(l.v); len(errs) > 0 || l.v == "" {
			return fmt.Errorf("%s %q is not a label value: %s", l.what, l.v, strings.Join(errs, "; "))
		}
	}
	if err := CheckKubeletLabels(s.Labels); err != nil {
		return err
	}
	if err := CheckCNI(s.CNI); err != nil {
		return err
	}
	if _, err := netip.ParseAddr(s.ListenAddress); err != nil {
		return fmt.Errorf("API listen address %q: %w", s.ListenAddress, err)
	}
	for _, san := range s.SANs {
		if _, err := netip.ParseAddr(san); err != nil {
			return fmt.Errorf("certificate SAN %q is not an IP address", san)
		}
	}
	return nil
}

// KindConfig renders s as kind's v1alpha4 Cluster.
func (s Spec) KindConfig() ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	labels := s.NodeLabels()
	var mounts []v1alpha4.Mount
	if s.CertsD != "" {
		mounts = []v1alpha4.Mount{{HostPath: s.CertsD, ContainerPath: "/etc/containerd/certs.d", Readonly: true}}
	}
	node := func(role v1alpha4.NodeRole) v1alpha4.Node {
		l := labels
		if _, set := l[IngressReady]; !set && role == v1alpha4.ControlPlaneRole {
			l = maps.Clone(labels)
			l[IngressReady] = "true"
		}
		return v1alpha4.Node{Role: role, Labels: l, ExtraMounts: mounts}
	}
	c := v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:     s.Name,
		Nodes:    []v1alpha4.Node{node(v1alpha4.ControlPlaneRole)},
		Networking: v1alpha4.Networking{
			APIServerAddress:  s.ListenAddress,
			APIServerPort:     int32(slot.APIPort(s.Slot)),
			ServiceSubnet:     slot.ServiceSubnet(s.Slot).String(),
			PodSubnet:         slot.PodSubnet(s.Slot).String(),
			DisableDefaultCNI: s.CNI == CNINone,
		},
	}
	for range s.Workers {
		c.Nodes = append(c.Nodes, node(v1alpha4.WorkerRole))
	}
	if len(s.SANs) > 0 {
		sans := append([]string(nil), s.SANs...)
		sort.Strings(sans)
		patch, err := yaml.Marshal(map[string]any{
			"kind":      "ClusterConfiguration",
			"apiServer": map[string]any{"certSANs": sans},
		})
		if err != nil {
			return nil, err
		}
		c.KubeadmConfigPatches = []string{string(patch)}
	}
	if s.ContainerdPatch != "" {
		c.ContainerdConfigPatches = []string{s.ContainerdPatch}
	}
	return yaml.Marshal(c)
}

// FormatLabels is l as k=v pairs joined by commas, sorted by key.
func FormatLabels(l Labels) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
