package status

import (
	"fmt"
	"net/netip"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/podnet"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/slot"
)

// PodsStatus is network.podRouting's section (a running VM, routing on):
// the Mac's routes of the pod space, the VM's service, and each cluster's
// ranges routed to its running nodes.
type PodsStatus struct {
	// HostRoutes of Total are the Mac's routes of the pod space that lead
	// to the VM.
	HostRoutes int `json:"hostRoutes"`
	Total      int `json:"total"`
	// Conflicts are the host's routes of someone else's inside the space.
	Conflicts []string `json:"conflicts,omitempty"`
	// Error is why the host's routes could not be read.
	Error string `json:"error,omitempty"`
	// Service is whether marina-podnet runs in the VM.
	Service  bool               `json:"service"`
	Clusters []PodClusterStatus `json:"clusters"`
	OK       bool               `json:"ok"`
}

// PodClusterStatus is one cluster's routed ranges.
type PodClusterStatus struct {
	Name     string `json:"name"`
	Pods     string `json:"pods"`
	Services string `json:"services"`
	// Running nodes, and how many of their pod ranges are routed.
	Running int `json:"running"`
	Routed  int `json:"routed"`
	// ServicesVia is the node the service range goes to.
	ServicesVia string   `json:"servicesVia,omitempty"`
	Stale       []string `json:"stale,omitempty"`
	Line        string   `json:"line"`
	OK          bool     `json:"ok"`
}

// PodsOf is the podRouting section of one observation and the clusters
// Docker listed, through via (lima0's address); nil when the guest did not
// answer. Doctor judges the same values.
func PodsOf(o *session.Observed, infos []cluster.Info, via netip.Addr, made *host.Made) *PodsStatus {
	if o.GuestErr != nil {
		return nil
	}
	st := podnet.Parse(o.Guest.Podnet)
	plan := podnet.PlanHost(o.PodRoutes, via, made)
	p := &PodsStatus{Total: len(plan.Routes), Service: st.Active, Clusters: []PodClusterStatus{}}
	for _, r := range plan.Routes {
		if r.State == host.Present {
			p.HostRoutes++
		}
	}
	for _, c := range plan.Conflicts {
		p.Conflicts = append(p.Conflicts, c.String())
	}
	if o.PodRoutesErr != nil {
		p.Error = o.PodRoutesErr.Error()
	}
	p.OK = p.Error == "" && p.HostRoutes == p.Total && len(p.Conflicts) == 0 && p.Service
	for _, c := range infos {
		if slot.Check(c.Slot) != nil {
			continue // not marina's: not routed
		}
		j := st.Judge(c)
		pc := PodClusterStatus{Name: c.Name, Pods: slot.PodSubnet(c.Slot).String(), Services: slot.ServiceSubnet(c.Slot).String(),
			Running: j.Running, Routed: len(j.Pods), Stale: j.Stale, Line: j.String(), OK: j.OK()}
		if j.Services.IsValid() {
			pc.ServicesVia = j.Services.String()
		}
		p.OK = p.OK && pc.OK
		p.Clusters = append(p.Clusters, pc)
	}
	return p
}

// Failing names what is ✗ in the podRouting section.
func (p *PodsStatus) Failing() []string {
	var out []string
	if p.Error != "" {
		out = append(out, "this host's routes could not be read: "+p.Error)
	} else if p.HostRoutes != p.Total {
		out = append(out, fmt.Sprintf("host routes: %d of %d present", p.HostRoutes, p.Total))
	}
	for _, c := range p.Conflicts {
		out = append(out, "a route of someone else's: "+c)
	}
	if !p.Service {
		out = append(out, podnet.UnitName+" not running")
	}
	for _, c := range p.Clusters {
		if !c.OK {
			out = append(out, c.Name+": "+c.Line)
		}
	}
	return out
}
