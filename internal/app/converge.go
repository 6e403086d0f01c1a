package app

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/vm"
)

// kindNet is the guest-side description of the kind network.
func kindNet(cidr netip.Prefix) guest.Net {
	return guest.Net{Kind: cidr, Bridge: docker.KindBridge}
}

// converge brings a running VM's networking to the config: the kind
// network, the guest's routing rules and the host route. Warm, it makes one
// guest round trip and changes nothing. With dryRun it prints planned (the
// steps decided before it) and its own, and changes nothing.
func converge(ctx context.Context, e *Env, l *vm.Limactl, cfg config.Config, planned []Step, dryRun bool) error {
	name := cfg.VM.Name
	cidr := netip.MustParsePrefix(cfg.Network.CIDR) // validated
	sock := e.Paths.DockerSocket(name)
	wait := 2 * time.Minute
	if dryRun {
		wait = 5 * time.Second
	} else {
		e.UI.Start("Looking at the VM, its Docker and this host's route")
	}
	o := observe(ctx, e, l, name, cidr, wait)
	if o.docker != nil {
		defer o.docker.Close()
	}
	switch {
	case o.guestErr != nil:
		e.UI.End(false)
		return o.guestErr
	case o.dockerErr != nil:
		e.UI.End(false)
		return fmt.Errorf("%w\nLima forwards the socket: `marina down && marina up` re-creates it", o.dockerErr)
	case o.routeErr != nil:
		e.UI.End(false)
		return o.routeErr
	}
	st, lima0 := o.guest, o.guest.Lima0
	e.UI.Relabel(fmt.Sprintf("VM address on lima0: %s; Docker %s answers on %s", lima0, o.dockerVer, sock))
	e.UI.End(true)
	if len(st.Lima0All) > 1 {
		e.UI.Warnf("lima0 has %d IPv4 addresses (%v); marina uses %s", len(st.Lima0All), st.Lima0All, lima0)
	}

	// What must change.
	steps := planned
	spec := docker.KindNetworkSpec(cidr, guest.HostIf)
	if have := o.network; have != nil {
		if diff := spec.Differences(have); len(diff) > 0 {
			return networkMismatch(name, spec, have, diff)
		}
	} else {
		steps = append(steps, Step{Do: "create the Docker network " + spec.Name + ": " + spec.CreateArgs()})
	}
	net := kindNet(cidr)
	checks, err := net.Checks(st.Net, lima0)
	if err != nil {
		return err
	}
	// A new network makes Docker insert its MASQUERADE rule above marina's.
	applyRules := o.network == nil || !guest.AllOK(checks)
	if applyRules {
		s := Step{Do: "install and apply the VM's routing rules (" + guest.ScriptPath + ", " + guest.UnitName + ", a docker.service drop-in)"}
		var bad []string
		for _, c := range checks {
			if !c.OK {
				bad = append(bad, c.What)
			}
		}
		if len(bad) > 0 {
			s.Reason = "not right yet: " + strings.Join(bad, "; ")
		}
		steps = append(steps, s)
	}
	specs, err := mirrorSpecs(e, cfg, dryRun)
	if err != nil {
		return err
	}
	mirrors := planMirrors(specs, o.mirrors, st.RegistrySums)
	steps = append(steps, mirrors.steps()...)
	route := host.Classify(cidr, lima0.Addr(), o.route)
	fix := host.RouteFix(route)
	if fix != nil {
		steps = append(steps, Step{Do: "route " + cidr.String() + " to the VM: " + run.Quote(fix), Reason: "now " + string(route.State)})
	}
	if route.State == host.Shadowed {
		e.UI.Warnf("%s\n  marina cannot fix this; the addresses it covers stay unreachable from this host until that route is gone (check your VPN client)", route)
	}

	if dryRun {
		printPlan(e, steps, "VM "+name+" and its networking match the config")
		return nil
	}
	if o.network == nil {
		e.UI.Start("Creating the Docker network " + spec.Name + " (" + spec.Subnet.String() + ")")
		if err := o.docker.CreateNetwork(ctx, spec); err != nil {
			e.UI.End(false)
			return err
		}
		e.UI.End(true)
	}
	// Everything the guest needs changed travels in one round trip.
	if b := guest.NewBatch(); applyRules || mirrors.writes {
		var what []string
		if applyRules {
			if err := net.Apply(b); err != nil {
				return err
			}
			what = append(what, "routing rules")
		}
		if mirrors.writes {
			guest.RegistryApply(b, specs)
			what = append(what, "mirror configs")
		}
		e.UI.Start("Installing the VM's " + strings.Join(what, " and "))
		if _, err := e.Guest(l, name).Run(ctx, vm.Script{Name: "install the VM's " + strings.Join(what, " and "), Body: b.Script(), Root: true}); err != nil {
			e.UI.End(false)
			return err
		}
		e.UI.End(true)
	}
	if len(mirrors.create)+len(mirrors.remove) > 0 {
		e.UI.Start(fmt.Sprintf("Running the registry mirrors (%d to start, %d to remove)", len(mirrors.create), len(mirrors.remove)))
		if err := applyMirrors(ctx, e, o.docker, mirrors); err != nil {
			e.UI.End(false)
			return err
		}
		e.UI.End(true)
	}
	if fix != nil {
		e.UI.Start(fmt.Sprintf("Routing %s from this host via %s", cidr, lima0.Addr()))
		if err := e.Host().Privileged(ctx, fix); err != nil {
			e.UI.End(false)
			return err
		}
		e.UI.End(true)
	}
	fmt.Fprintf(e.Stdout, "VM %s is ready: lima0 %s, Docker at unix://%s, %s routed to the VM\n", name, lima0.Addr(), sock, cidr)
	return nil
}

// networkMismatch explains a kind network marina did not make and will not
// change.
func networkMismatch(vmName string, spec docker.NetworkSpec, have *docker.NetworkState, diff []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the Docker network %q in VM %s is not the one marina needs:\n", spec.Name, vmName)
	for _, d := range diff {
		fmt.Fprintf(&b, "  - %s\n", d)
	}
	who := "it was created by marina with other settings"
	if !have.Managed {
		who = "it was not created by marina (kind makes one like it when it finds none)"
	}
	lost := "nothing is attached to it"
	switch have.Containers {
	case 0:
	case 1:
		lost = "the 1 container on it is lost"
	default:
		lost = fmt.Sprintf("the %d containers on it, kind clusters among them, are lost", have.Containers)
	}
	fmt.Fprintf(&b, "%s; marina changed nothing. To let marina recreate it (%s):\n", who, lost)
	fmt.Fprintf(&b, "  marina shell -- kind delete clusters --all\n")
	fmt.Fprintf(&b, "  marina shell -- sh -c 'docker rm -f $(docker ps -aq --filter network=%[1]s) 2>/dev/null; docker network rm %[1]s'\n", spec.Name)
	fmt.Fprintf(&b, "  marina up   (it recreates the network and the registry mirrors)")
	return fmt.Errorf("%s", b.String())
}
