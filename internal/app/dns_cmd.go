package app

import (
	"context"
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/vm"
)

// ListDNS reads every name the local DNS answers from its etcd (one guest
// round trip: etcd is reachable from the VM and the kind network only).
// selector filters on the labels cluster and owner.
func ListDNS(ctx context.Context, e *Env, selector string) ([]dns.Record, error) {
	sel, err := parseSelector(selector)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, e, Needs{Config: strict, Running: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cfg := s.Config
	etcd, _ := dns.Addrs(netip.MustParsePrefix(cfg.Network.CIDR)) // validated
	script, err := guest.DNSRecords(etcd, cfg.DNS.Domain)
	if err != nil {
		return nil, err
	}
	out, err := s.Guest.Run(ctx, vm.Script{Name: "read the local DNS records", Body: script, Root: true})
	if err != nil {
		return nil, fmt.Errorf("%w\nthe local DNS's etcd (%s) did not answer: `marina up` starts it", err, dns.EtcdName)
	}
	recs, err := dns.ParseRange(out.Stdout, cfg.DNS.Domain)
	if err != nil || sel == nil {
		return recs, err
	}
	var kept []dns.Record
	for _, r := range recs {
		if sel.Matches(labels.Set{"cluster": r.Cluster, "owner": r.Owner}) {
			kept = append(kept, r)
		}
	}
	return kept, nil
}
