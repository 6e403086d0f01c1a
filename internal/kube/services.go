package kube

import (
	"context"
	"fmt"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// LoadBalancer is a Service of type LoadBalancer: where it answers.
type LoadBalancer struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Addresses are its ingress addresses (none until MetalLB gives one);
	// each was read back from the cluster and checked to be an address.
	Addresses []string `json:"addresses"`
	Ports     []Port   `json:"ports"`
}

// Port is one of a Service's ports.
type Port struct {
	Name     string `json:"name,omitempty"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
}

// LoadBalancers lists the cluster's LoadBalancer Services, sorted by
// namespace and name.
func (k *Cluster) LoadBalancers(ctx context.Context) ([]LoadBalancer, error) {
	svcs, err := List[corev1.Service](ctx, k, Services, "")
	if err != nil {
		return nil, fmt.Errorf("list the Services: %w", err)
	}
	return LoadBalancersOf(svcs), nil
}

// LoadBalancersOf picks the LoadBalancer Services of svcs. An ingress
// entry that is not an IP address (a hostname, or garbage) is left out:
// marina's pools give addresses.
func LoadBalancersOf(svcs []corev1.Service) []LoadBalancer {
	out := []LoadBalancer{}
	for _, s := range svcs {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		lb := LoadBalancer{Namespace: s.Namespace, Name: s.Name, Addresses: []string{}, Ports: []Port{}}
		for _, in := range s.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(in.IP); err == nil {
				lb.Addresses = append(lb.Addresses, a.String())
			}
		}
		for _, p := range s.Spec.Ports {
			lb.Ports = append(lb.Ports, Port{Name: p.Name, Port: p.Port, Protocol: string(p.Protocol)})
		}
		out = append(out, lb)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
