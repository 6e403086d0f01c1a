package podnet

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/slot"
)

// State is what the VM has of network.podRouting, from the guest's
// observation (guest.State.Podnet).
type State struct {
	// Files maps each installed file to its sha256.
	Files map[string]string
	// Active is whether the service runs.
	Active bool
	// Routes are the VM's routes the script made (proto 200): destination
	// to gateway.
	Routes map[netip.Prefix]netip.Addr
}

var sha = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Parse reads the guest's podnet section. What does not read as what it
// must be is left out: it comes from the VM.
func Parse(sec string) State {
	st := State{Files: map[string]string{}, Routes: map[netip.Prefix]netip.Addr{}}
	for _, line := range strings.Split(sec, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "file" && sha.MatchString(f[1]) && (f[2] == ScriptPath || f[2] == UnitPath || strings.HasPrefix(f[2], ConfDir+"/")):
			st.Files[f[2]] = f[1]
		case len(f) == 2 && f[0] == "active":
			st.Active = f[1] == "active"
		case len(f) >= 4 && f[0] == "route" && f[2] == "via":
			p, perr := netip.ParsePrefix(f[1])
			gw, gerr := netip.ParseAddr(f[3])
			if perr == nil && gerr == nil && p.Addr().Is4() && p == p.Masked() && guest.PodSpace.Contains(p.Addr()) && gw.Is4() {
				st.Routes[p] = gw
			}
		}
	}
	return st
}

// Installed is whether anything of podRouting is in the VM.
func (st State) Installed() bool { return len(st.Files) > 0 || st.Active || len(st.Routes) > 0 }

// Want are the files routing clusters installs, by path.
func Want(clusters []Cluster, kind netip.Prefix, mac netip.Addr) (map[string]string, error) {
	want := map[string]string{
		ScriptPath: guest.File{Content: script}.Sum(),
		UnitPath:   guest.File{Content: unit}.Sum(),
	}
	for _, c := range clusters {
		f, err := Conf(c, kind, mac)
		if err != nil {
			return nil, err
		}
		want[f.Path] = f.Sum()
	}
	return want, nil
}

// Differences says what keeps the VM from routing exactly clusters when
// on, or from having nothing of podRouting when off; empty when nothing
// does.
func (st State) Differences(on bool, clusters []Cluster, kind netip.Prefix, mac netip.Addr) ([]string, error) {
	if !on {
		if st.Installed() {
			return []string{"network.podRouting is off, and the VM still has what it installed"}, nil
		}
		return nil, nil
	}
	want, err := Want(clusters, kind, mac)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range sortedKeys(want) {
		switch have, ok := st.Files[p]; {
		case !ok:
			out = append(out, p+" is missing")
		case have != want[p]:
			out = append(out, p+" differs")
		}
	}
	for _, p := range st.Stale(clusters) {
		out = append(out, p+" is of a cluster no longer routed")
	}
	if !st.Active {
		out = append(out, UnitName+" is not running")
	}
	return out, nil
}

// Stale are the conf files the VM has of clusters not among clusters.
func (st State) Stale(clusters []Cluster) []string {
	var out []string
	for _, p := range sortedKeys(st.Files) {
		name, ok := strings.CutSuffix(strings.TrimPrefix(p, ConfDir+"/"), ".conf")
		if ok && strings.HasPrefix(p, ConfDir+"/") && clusterName.MatchString(name) && !slices.ContainsFunc(clusters, func(c Cluster) bool { return c.Name == name }) {
			out = append(out, p)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Routed is a cluster's routes in the VM.
type Routed struct {
	Cluster Cluster
	// Pods are the node podCIDRs routed, to their nodes' addresses.
	Pods map[netip.Prefix]netip.Addr
	// Services is the node the service range goes to; invalid: none.
	Services netip.Addr
}

// RoutesOf sorts the VM's routes by cluster.
func (st State) RoutesOf(c Cluster) Routed {
	r := Routed{Cluster: c, Pods: map[netip.Prefix]netip.Addr{}}
	pods, svc := slot.PodSubnet(c.Slot), slot.ServiceSubnet(c.Slot)
	for p, gw := range st.Routes {
		switch {
		case p == svc:
			r.Services = gw
		case pods.Overlaps(p) && p.Bits() >= pods.Bits():
			r.Pods[p] = gw
		}
	}
	return r
}

// Judged is one cluster's routes in the VM against its running nodes.
type Judged struct {
	Cluster Cluster
	Routed
	// Running is how many of its nodes run; Stale are routes that lead to
	// no running node of it (left out of Routed).
	Running int
	Stale   []string
}

// OK is whether every running node's pods and the service range are
// routed to running nodes (a stopped cluster has nothing to route).
func (j Judged) OK() bool {
	if j.Running == 0 {
		return len(j.Pods) == 0 && !j.Services.IsValid()
	}
	return len(j.Stale) == 0 && len(j.Pods) == j.Running && j.Services.IsValid()
}

func (j Judged) String() string {
	pods, svc := slot.PodSubnet(j.Cluster.Slot), slot.ServiceSubnet(j.Cluster.Slot)
	s := fmt.Sprintf("pods %s: %d of %d running nodes routed; services %s", pods, len(j.Pods), j.Running, svc)
	if j.Services.IsValid() {
		s += " via " + j.Services.String()
	} else {
		s += " not routed"
	}
	if len(j.Stale) > 0 {
		s += "; stale: " + strings.Join(j.Stale, ", ")
	}
	return s
}

// Judge compares the VM's routes for c with its running nodes (from
// Docker): each route must lead to one of them.
func (st State) Judge(c cluster.Info) Judged {
	j := Judged{Cluster: Cluster{Name: c.Name, Slot: c.Slot}}
	if slot.Check(c.Slot) != nil {
		return j
	}
	j.Routed = st.RoutesOf(j.Cluster)
	live := map[netip.Addr]bool{}
	for _, n := range c.Nodes {
		if ip, err := netip.ParseAddr(n.IP); err == nil && n.State == "running" && (n.Role == "control-plane" || n.Role == "worker") {
			live[ip] = true
			j.Running++
		}
	}
	for _, p := range slices.SortedFunc(maps.Keys(j.Pods), netip.Prefix.Compare) {
		if gw := j.Pods[p]; !live[gw] {
			j.Stale = append(j.Stale, p.String()+" via "+gw.String())
			delete(j.Pods, p) // routed, but to no running node
		}
	}
	if j.Services.IsValid() && !live[j.Services] {
		j.Stale = append(j.Stale, slot.ServiceSubnet(c.Slot).String()+" via "+j.Services.String())
		j.Services = netip.Addr{}
	}
	return j
}
