package machine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// olderClusters are the running clusters whose addons record in the VM
// lacks the local DNS for dns.domain: made before marina had it, or for
// another domain, or before their ExternalDNS had an etcd user of its
// own.
func olderClusters(ctx context.Context, s *session.Session, o *session.Observed) ([]cluster.Info, error) {
	want := s.Config.DNS.Domain
	return lagging(ctx, s, o, func(a guest.Addons, ok bool) bool { return !ok || a.DNS != want || !a.Auth })
}

// lagging are the running clusters whose addons record behind says is
// behind (ok: it has one). The kubeconfig files on this host say which
// clusters there are; Docker is asked only when one of them is behind, so
// a warm up makes no extra call.
func lagging(ctx context.Context, s *session.Session, o *session.Observed, behind func(a guest.Addons, ok bool) bool) ([]cluster.Info, error) {
	if o.DockerErr != nil || o.GuestErr != nil {
		return nil, nil
	}
	files, _ := filepath.Glob(filepath.Join(s.Paths.KubeconfigDir(), "*.kubeconfig"))
	some := false
	for _, f := range files {
		a, ok := o.Guest.Addons[strings.TrimSuffix(filepath.Base(f), ".kubeconfig")]
		some = some || behind(a, ok)
	}
	if !some {
		return nil, nil
	}
	if s.Clusters == nil {
		var err error
		if s.Clusters, err = s.ListClusters(ctx); err != nil {
			return nil, err
		}
	}
	var out []cluster.Info
	for _, c := range s.Clusters {
		if a, ok := o.Guest.Addons[c.Name]; c.Slot != 0 && c.Running() && behind(a, ok) {
			out = append(out, c)
		}
	}
	return out, nil
}

// olderStep is the plan line of upgradeClusters.
func olderStep(s *session.Session, older []cluster.Info) session.Step {
	return session.Step{Do: fmt.Sprintf("put %s on the local DNS: ExternalDNS %s, and CoreDNS forwarding %s", strings.Join(cluster.Names(older), ", "), dns.ExternalDNSVersion, s.Config.DNS.Domain),
		Reason: "made before marina served " + s.Config.DNS.Domain}
}

// upgradeClusters gives each older cluster its etcd user (one round trip
// for all), installs ExternalDNS and the CoreDNS block in it, then records
// it in the VM (one round trip for all), so that it is done once. A
// cluster that fails is reported and left for the next up.
func upgradeClusters(ctx context.Context, s *session.Session, older []cluster.Info, had map[string]guest.Addons) error {
	if len(older) == 0 {
		return nil
	}
	domain := s.Config.DNS.Domain
	etcd, pw, ok, err := session.DNSEtcd(s.Config, s.Paths)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s is missing after marina up ran the local DNS (a marina bug)", s.Paths.LabelKey())
	}
	users := make([]guest.EtcdUser, len(older))
	for i, c := range older {
		if users[i], err = guest.ClusterUser(pw, c.Name, domain); err != nil {
			return err
		}
	}
	auth, err := guest.EtcdAuth(etcd, pw.Reader(), users)
	if err != nil {
		return err
	}
	err = s.Step(fmt.Sprintf("Giving %s an etcd user of its own on the local DNS", ui.Plural(len(older), "cluster")), "", func() error {
		_, err := s.Guest.Run(ctx, vm.Script{Name: "add the clusters' etcd users", Body: "set -eu -o pipefail\n" + auth, Root: true})
		return err
	})
	if err != nil {
		return err
	}
	records := map[string]string{}
	var oldZones []string // names published under an earlier dns.domain
	for i, c := range older {
		if err := upgradeCluster(ctx, s, c.Name, users[i].Creds); err != nil {
			// The VM is fine: the cluster stays as it was, for the next up.
			s.UI.Warnf("cluster %s is not on the local DNS yet: %v\n  the next `marina up` tries again", c.Name, err)
			continue
		}
		records[c.Name] = guest.DNSRecord(domain, had[c.Name].Registry)
		if z := oldZone(c.Name, had[c.Name].DNS, domain); z != "" {
			oldZones = append(oldZones, z)
		}
	}
	if len(records) == 0 {
		return nil
	}
	b := guest.NewBatch()
	if err := guest.AddonsRecordApply(b, records); err != nil {
		return err
	}
	forget, err := guest.DNSForget(etcd, oldZones, nil)
	if err != nil {
		return err
	}
	b.Sh(forget)
	out, err := s.Guest.Run(ctx, vm.Script{Name: "record the clusters' addons", Body: b.Script(), Root: true})
	if err != nil {
		return err
	}
	for _, z := range guest.ParseForget(string(out.Stdout)) {
		s.UI.Warnf("the names under %s (the earlier dns.domain) could not be removed from the local DNS: `marina dns list` shows what answers", z)
	}
	return nil
}

// oldZone is the zone a cluster published under an earlier domain, to be
// emptied; "" when there is none, or when emptying it would empty the
// current zone too (an earlier domain above the current one).
func oldZone(name, was, domain string) string {
	if was == "" || was == domain {
		return ""
	}
	z := dns.ClusterZone(name, was)
	if z == domain || strings.HasSuffix(domain, "."+z) || strings.HasSuffix(z, "."+domain) {
		return ""
	}
	return z
}

func upgradeCluster(ctx context.Context, s *session.Session, name string, etcd dns.Creds) error {
	k, err := s.Kube(name, 0)
	if err != nil {
		return fmt.Errorf("%w (`marina kubeconfig merge %s` writes its kubeconfig again)", err, name)
	}
	m, err := dns.ExternalDNS(name, s.Config)
	if err != nil {
		return err
	}
	if err := APIReady(ctx, s, name, k); err != nil {
		return err
	}
	// One add-on after the other: they are a few lines among up's own.
	for _, a := range kindcluster.DNSAddons(s.Config, name, m, etcd) {
		err := addons.Install(ctx, k, []addons.Addon{a}, nil, kindcluster.Stepper(s, name+": "))
		if ae, ok := errors.AsType[*addons.Error](err); ok {
			return ae.Err // the step's own line said which
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// APIReadyWait bounds the wait for a cluster's API server to serve: a
// kind node that restarted with the VM needs some seconds to load its
// roles, a broken one never does.
const APIReadyWait = 2 * time.Minute

// APIReady waits for cluster name's API server to serve requests, as after
// its node restarted with the VM.
func APIReady(ctx context.Context, s *session.Session, name string, k session.Kube) error {
	ctx, cancel := context.WithTimeout(ctx, APIReadyWait)
	defer cancel()
	return s.Step(name+": Waiting for its API server", "", func() error { return k.Ready(ctx) })
}
