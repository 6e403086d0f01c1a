package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/vm"
)

// wantRegistry is the push registry's name the config gives, "" when it
// is off.
func wantRegistry(cfg config.Local) string {
	if !cfg.Enabled {
		return ""
	}
	return registry.LocalHost(cfg.Port)
}

// behindRegistry are the running clusters whose addons record does not
// name the push registry as the config has it: made before marina had
// one, or under another port.
func behindRegistry(ctx context.Context, s *session.Session, o *session.Observed) ([]cluster.Info, error) {
	want := wantRegistry(s.Config.Registries.Local)
	return lagging(ctx, s, o, func(a guest.Addons, _ bool) bool { return a.Registry != want })
}

// registryStep is the plan line of advertiseRegistry.
func registryStep(s *session.Session, behind []cluster.Info) session.Step {
	want := wantRegistry(s.Config.Registries.Local)
	if want == "" {
		return session.Step{Do: "stop sending " + strings.Join(cluster.Names(behind), ", ") + "'s pulls of localhost:* to the push registry", Reason: "registries.local is off"}
	}
	return session.Step{Do: fmt.Sprintf("give %s the push registry %s: its hosts.toml in every node and the %s/%s ConfigMap", strings.Join(cluster.Names(behind), ", "), want, registry.HostingNamespace, registry.HostingName),
		Reason: "made before marina had it, or under another registries.local.port"}
}

// advertiseRegistry brings behind to the push registry of the config:
// the ConfigMap through each API server, then every cluster's hosts.toml
// and record in one round trip. A cluster that fails is reported and left
// for the next up. had is updated, so that a record written after this
// one (the local DNS's) keeps what it says.
func advertiseRegistry(ctx context.Context, s *session.Session, behind []cluster.Info, had map[string]guest.Addons) error {
	if len(behind) == 0 {
		return nil
	}
	local := s.Config.Registries.Local
	want := wantRegistry(local)
	hosting := kindcluster.HostingAddon(s.Config, 0)
	b := guest.NewBatch()
	records := map[string]string{}
	for _, c := range behind {
		if hosting != nil {
			if err := advertiseIn(ctx, s, c.Name, hosting); err != nil {
				s.UI.Warnf("cluster %s does not know the push registry yet: %v\n  the next `marina up` tries again", c.Name, err)
				continue
			}
		}
		if err := guest.LocalCertsApply(b, c.Name, registry.LocalCertsD(local)); err != nil {
			return err
		}
		a := had[c.Name]
		a.Registry = want
		records[c.Name] = a.Record()
		if had != nil {
			had[c.Name] = a
		}
	}
	if len(records) == 0 {
		return nil
	}
	if err := guest.AddonsRecordApply(b, records); err != nil {
		return err
	}
	return s.Step("Pointing the clusters' nodes at the push registry", "", func() error {
		_, err := s.Guest.Run(ctx, vm.Script{Name: "write the push registry's hosts.toml", Body: b.Script(), Root: true})
		return err
	})
}

func advertiseIn(ctx context.Context, s *session.Session, name string, hosting addons.Addon) error {
	k, err := s.Kube(name, 0)
	if err != nil {
		return fmt.Errorf("%w (`marina kubeconfig merge %s` writes its kubeconfig again)", err, name)
	}
	if err := APIReady(ctx, s, name, k); err != nil {
		return err
	}
	err = addons.Install(ctx, k, []addons.Addon{hosting}, nil, kindcluster.Stepper(s, name+": "))
	if ae, ok := errors.AsType[*addons.Error](err); ok {
		return ae.Err
	}
	return err
}
