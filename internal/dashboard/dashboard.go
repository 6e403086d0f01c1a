// Package dashboard is `marina dashboard`: one read-only local page of the
// whole lab (the topology, each cluster with its LoadBalancer Services and
// their names, the mirrors, the DNS names, the Fleets and, on demand,
// doctor). Every value on it is one of the commands' -o json views, read
// by the same code; the server gives them under /api/ too.
package dashboard

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/doctor"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/status"
)

// Snapshot is everything the page shows but doctor, read at one time.
// Each part is the value of a command's -o json view; a part that could
// not be read is absent and Errors says why.
type Snapshot struct {
	Time     time.Time             `json:"time"`
	Status   *status.Status        `json:"status,omitempty"`      // marina status
	Clusters []kindcluster.Row     `json:"clusters"`              // marina cluster list
	DNS      []dns.Record          `json:"dns"`                   // marina dns list
	Mirrors  []status.MirrorStatus `json:"registries"`            // marina registry list
	Fleets   []fleet.ListRow       `json:"fleets"`                // marina fleet list
	Services []ClusterServices     `json:"services"`              // each running cluster's LoadBalancers
	Errors   map[string]string     `json:"errors,omitempty"`      // part → why it is missing
	Domain   string                `json:"domain,omitempty"`      // dns.domain
	Network  string                `json:"kindNetwork,omitempty"` // network.cidr
}

// errorf says why part is missing. The parts are read side by side: the
// map is written under a lock.
func (s *Snapshot) errorf(part, format string, args ...any) {
	errMu.Lock()
	defer errMu.Unlock()
	s.Errors[part] = fmt.Sprintf(format, args...)
}

var errMu sync.Mutex

// ClusterServices is what the page shows of a running cluster beyond its
// cluster list row: its nodes, its version, its LoadBalancer Services
// with their names, and how much of its LoadBalancer pool they use.
type ClusterServices struct {
	Cluster string `json:"cluster"`
	// API is its API server's URL, as its kubeconfig has it.
	API string `json:"api,omitempty"`
	// Labels are its control plane's labels as fleet describe shows them
	// (key=value, Kubernetes' own left out).
	Labels []string `json:"labels,omitempty"`
	// ServiceRange, PodRange and Pool are its slot's (internal/slot).
	ServiceRange  string    `json:"serviceRange,omitempty"`
	PodRange      string    `json:"podRange,omitempty"`
	Pool          []string  `json:"pool,omitempty"`
	Version       string    `json:"version,omitempty"`
	Nodes         int       `json:"nodes"`
	Ready         int       `json:"ready"`
	LoadBalancers []Service `json:"loadBalancers"`
	PoolUsed      int       `json:"poolUsed"`
	PoolSize      int       `json:"poolSize"`
	Error         string    `json:"error,omitempty"`
}

// Service is a LoadBalancer Service and the name the local DNS gives it.
type Service struct {
	kube.LoadBalancer
	// DNSName is SERVICE.NAMESPACE.CLUSTER.DOMAIN, once it has an address
	// (ExternalDNS publishes it within seconds).
	DNSName string `json:"dnsName,omitempty"`
	// URLs are http:// links to its name, one per TCP port.
	URLs []string `json:"urls,omitempty"`
}

// Source reads what the page shows. Live reads the lab; tests give
// their own.
type Source interface {
	Snapshot(ctx context.Context) Snapshot
	// Doctor runs marina doctor's checks (never --fix).
	Doctor(ctx context.Context) (doctor.Report, error)
}

// PoolSize is how many addresses a slot's LoadBalancer pool holds.
const PoolSize = slot.PoolSize

// servicesOf describes cluster name (in slot n) from its LoadBalancers:
// their names and links, and the pool addresses they hold.
func servicesOf(name string, n int, lbs []kube.LoadBalancer, bridge netip.Prefix, domain string) ClusterServices {
	cs := inSlot(name, n, bridge)
	used := map[netip.Addr]bool{}
	for _, lb := range lbs {
		s := Service{LoadBalancer: lb}
		for _, a := range lb.Addresses {
			if addr, err := netip.ParseAddr(a); err == nil && slot.InPool(bridge, n, addr) {
				used[addr] = true
			}
		}
		// The names come from the cluster: only DNS labels make a name
		// (the API server enforces it; a name read back is checked anyway).
		if len(lb.Addresses) > 0 && domain != "" && isLabel(lb.Name) && isLabel(lb.Namespace) {
			s.DNSName = dns.ServiceName(lb.Name, lb.Namespace, name, domain)
			for _, p := range lb.Ports {
				if p.Protocol == "TCP" {
					s.URLs = append(s.URLs, link(s.DNSName, p.Port))
				}
			}
		}
		cs.LoadBalancers = append(cs.LoadBalancers, s)
	}
	cs.PoolUsed = len(used)
	return cs
}

func isLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

// inSlot is cluster name's ClusterServices before its API is read: its
// slot's ranges (none when it has no slot: marina did not make it).
func inSlot(name string, n int, bridge netip.Prefix) ClusterServices {
	cs := ClusterServices{Cluster: name, LoadBalancers: []Service{}, PoolSize: PoolSize}
	if slot.Check(n) != nil {
		return cs
	}
	cs.ServiceRange, cs.PodRange = slot.ServiceSubnet(n).String(), slot.PodSubnet(n).String()
	cs.Pool, _ = slot.MetalLBRanges(bridge, n) // none without a valid bridge
	return cs
}

// link is an http:// URL of host at port.
func link(host string, port int32) string {
	switch port {
	case 80:
		return "http://" + host + "/"
	case 443:
		return "https://" + host + "/"
	}
	return "http://" + host + ":" + strconv.Itoa(int(port)) + "/"
}
