package status

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// ListDNS reads every name the local DNS answers from its etcd (one guest
// round trip: etcd is reachable from the VM and the kind network only).
// selector filters on the labels cluster and owner.
func ListDNS(ctx context.Context, e *session.Env, selector string) ([]dns.Record, error) {
	sel, err := session.ParseSelector(selector)
	if err != nil {
		return nil, err
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.Strict, Running: true, Clusters: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cfg := s.Config
	etcd, _, ok, err := session.DNSEtcd(cfg, s.Paths)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s is missing, so marina up never set up the local DNS on this Mac: run `marina up`", s.Paths.LabelKey())
	}
	script, err := guest.DNSRecords(etcd, cfg.DNS.Domain)
	if err != nil {
		return nil, err
	}
	out, err := s.Guest.Run(ctx, vm.Script{Name: "read the local DNS records", Body: script, Root: true})
	if err != nil {
		return nil, fmt.Errorf("%w\nthe local DNS's etcd (%s) did not answer: `marina up` starts it", err, dns.EtcdName)
	}
	recs, err := Records(e.UI, out.Stdout, cfg.DNS.Domain, s.Clusters)
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

// Records are dns list's names from etcd's answer (js) for every record
// of domain, each marked stopped when its cluster is. A value no record
// can be read from is skipped, and said.
func Records(u *ui.UI, js []byte, domain string, clusters []cluster.Info) ([]dns.Record, error) {
	recs, malformed, err := dns.ParseRange(js, domain)
	for i, r := range recs {
		if c, ok := cluster.Find(clusters, r.Cluster); ok && !c.APIRunning() {
			recs[i].Stopped = true
		}
	}
	if n := len(malformed); n > 0 {
		// Only a cluster's own ExternalDNS user may write under its zone,
		// and each reads its zone alone: such a value stops that one.
		u.Warnf("the local DNS holds %s that no DNS record can be read from, skipped: %s\n  each is in the zone of the cluster whose ExternalDNS user wrote it, and stops that cluster's ExternalDNS only; `marina cluster delete` of that cluster removes it", ui.Plural(n, "value"), strings.Join(malformed, ", "))
	}
	return recs, err
}

// FlushDNSOptions are the flags of marina dns flush.
type FlushDNSOptions struct{ DryRun bool }

// FlushDNS empties the Mac's DNS cache through sudo, each command printed
// before it runs: for a name looked up before ExternalDNS published it,
// which mDNSResponder keeps missing for a minute or more. It needs no VM
// and reads no config.
func FlushDNS(ctx context.Context, e *session.Env, opts FlushDNSOptions) (session.Result, error) {
	h := e.Deps.Host()
	cmds, err := h.FlushDNS()
	if err != nil {
		return session.Result{}, err
	}
	if opts.DryRun {
		var steps []session.Step
		for _, c := range cmds {
			steps = append(steps, session.Step{Do: "run `sudo " + run.Quote(c) + "`"})
		}
		return session.Planned(steps, ""), nil
	}
	return session.Result{}, e.Step("Emptying the Mac's DNS cache", "Emptied the Mac's DNS cache: names are looked up afresh", func() error {
		for _, c := range cmds {
			if err := h.Privileged(ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
}
