package machine

import (
	"context"
	"fmt"
	"strings"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// mirrorPlan is what up does to the mirror containers.
type mirrorPlan struct {
	specs   []registry.Spec
	writes  bool               // the config files in the VM need writing
	create  []registry.Spec    // new, or recreated after removing the old one
	remove  []docker.Container // gone from the config, or being recreated
	reasons map[string]string
}

// OutOfDate says, for each mirror up would recreate, why: up's own
// judgement, for doctor.
func OutOfDate(specs []registry.Spec, have []docker.Container, sums map[string]string) map[string]string {
	return planMirrors(specs, have, sums).reasons
}

// planMirrors compares the wanted mirrors with the containers and config
// files found.
func planMirrors(specs []registry.Spec, have []docker.Container, sums map[string]string) mirrorPlan {
	p := mirrorPlan{specs: specs, reasons: map[string]string{}}
	byName := map[string]docker.Container{}
	for _, c := range have {
		byName[c.Labels[registry.LabelMirror]] = c
	}
	wanted := map[string]bool{}
	files := 0 // the files the specs keep in the VM
	for _, s := range specs {
		wanted[s.Name] = true
		fileOK := true
		for f, sum := range s.Files() {
			files++
			fileOK = fileOK && sums[f] == sum
		}
		if !fileOK {
			p.writes = true
		}
		c, ok := byName[s.Name]
		why := containerDrift(c, ok, s.Name, s.Digest, registry.LabelConfig, fileOK)
		if why == "" {
			continue
		}
		if ok {
			p.remove = append(p.remove, c)
		}
		p.create = append(p.create, s)
		p.reasons[s.Name] = why
	}
	if len(sums) != files {
		p.writes = true // a stale file to remove
	}
	for _, c := range have {
		if n := c.Labels[registry.LabelMirror]; !wanted[n] {
			p.remove = append(p.remove, c)
			p.reasons[c.Name] = "no longer in registries.mirrors"
			if n == registry.LocalName {
				p.reasons[c.Name] = "registries.local.enabled is false (its images stay in " + registry.LocalData + ")"
			}
		}
	}
	return p
}

// containerDrift is why a container marina runs (a mirror, a DNS server)
// must be made again, "" when it is current: found says whether one was
// found for it, digestLabel is the label that carries its settings'
// digest, fileOK whether its config file in the VM is current.
func containerDrift(c docker.Container, found bool, name, digest, digestLabel string, fileOK bool) string {
	switch {
	case !found:
		return "new"
	case c.Name != name:
		return "its container was renamed to " + c.Name
	case c.Labels[digestLabel] != digest || !fileOK:
		return "its configuration changed"
	case c.State != "running" && c.State != "restarting":
		return "it was " + c.State
	}
	return ""
}

// steps are in the order up takes them: removals, the config files, then
// the containers to run.
func (p mirrorPlan) steps() []session.Step {
	var out []session.Step
	recreated := map[string]bool{}
	for _, s := range p.create {
		recreated[s.Name] = true
	}
	for _, c := range p.remove {
		if !recreated[c.Name] {
			what := "the mirror container "
			if c.Labels[registry.LabelMirror] == registry.LocalName {
				what = "the push registry's container "
			}
			out = append(out, session.Step{Do: "remove " + what + c.Name, Reason: p.reasons[c.Name]})
		}
	}
	if p.writes {
		out = append(out, session.Step{Do: "write the mirrors' configs to " + registry.ConfigDir + " in the VM (root only)"})
	}
	for _, s := range p.create {
		verb := "run"
		if p.reasons[s.Name] != "new" {
			verb = "recreate"
		}
		do := fmt.Sprintf("%s the mirror %s (%s, port %d)", verb, s.Name, s.Upstream, s.Port)
		switch {
		case s.Name == registry.LocalName:
			do = fmt.Sprintf("%s the push registry %s (%s, stored in %s in the VM)", verb, s.Name, registry.LocalHost(int(s.Publish.Port())), s.CacheDir)
		case s.Publish.IsValid():
			do += fmt.Sprintf(", which the VM's Docker pulls Docker Hub images through at %s", s.Publish)
		}
		out = append(out, session.Step{Do: do, Reason: p.reasons[s.Name]})
	}
	return out
}

// applyMirrors removes and (re)creates containers; the config files are
// already in the VM.
func applyMirrors(ctx context.Context, dc session.Docker, p mirrorPlan) error {
	if err := removeMirrors(ctx, dc, p); err != nil {
		return err
	}
	return runMirrors(ctx, dc, p)
}

// removeMirrors removes the containers p retires or remakes. up runs it
// before the VM's config files change: a mirror that restarts after its
// config file is gone (one whose upstream cannot be reached restarts
// until it can) has Docker make a folder at the file's path (which
// guest.RegistryApply then has to remove).
func removeMirrors(ctx context.Context, dc session.Docker, p mirrorPlan) error {
	for _, c := range p.remove {
		if err := dc.Remove(ctx, c.ID); err != nil {
			return err
		}
	}
	return nil
}

// runMirrors creates p's new and remade containers.
func runMirrors(ctx context.Context, dc session.Docker, p mirrorPlan) error {
	if len(p.create) == 0 {
		return nil
	}
	ensured := map[string]bool{} // every mirror runs the same image
	for _, s := range p.create {
		if !ensured[s.Image] {
			if err := dc.EnsureImage(ctx, s.Image); err != nil {
				return err
			}
			ensured[s.Image] = true
		}
		err := dc.Run(ctx, docker.RunSpec{
			Name:   s.Name,
			Image:  s.Image,
			Labels: map[string]string{registry.LabelMirror: s.Name, registry.LabelConfig: s.Digest},
			Binds:  s.Binds(),
			Port:   s.Port, Publish: s.Publish,
		})
		if err != nil {
			// "address already in use" first: the name conflict's words
			// ("is already in use by container") are part of it.
			if s.Publish.IsValid() && strings.Contains(err.Error(), "address already in use") {
				return inUse(err, s)
			}
			if strings.Contains(err.Error(), "already in use") {
				return fmt.Errorf("%w\na container marina did not make is named %s: remove it (`marina shell -- docker rm -f %s`) or rename the mirror", err, s.Name, s.Name)
			}
			return err
		}
	}
	return nil
}

// inUse explains a mirror whose published address something else in the
// VM already listens at.
func inUse(err error, s registry.Spec) error {
	if s.Name == registry.LocalName {
		return fmt.Errorf("%w\nsomething in the VM already listens on %s: set registries.local.port to a free port (`marina config edit`)", err, s.Publish)
	}
	return fmt.Errorf("%w\nsomething in the VM already listens on %s, where the VM's Docker reaches the Docker Hub mirror %s: stop it (`marina shell -- sudo ss -ltnp` names it), then run marina up again", err, s.Publish, s.Name)
}

// offline is what up says, once, when running mirrors' upstreams do not
// answer from the VM: the mirrors serve their caches (they start and run
// without their upstream), and nothing has to be restarted when it is
// back. "" when every upstream probed answers, or none could be probed
// (no mirror runs yet).
func offline(cfg config.Config, o *session.Observed) string {
	running := map[string]bool{}
	for _, c := range o.Mirrors {
		running[c.Labels[registry.LabelMirror]] = c.State == "running"
	}
	var down []string
	probed := 0
	detail := ""
	for _, m := range cfg.Registries.Mirrors {
		r, ok := o.Guest.Health.Upstreams[m.Name]
		if !ok || !running[m.Name] {
			continue
		}
		probed++
		if !r.OK {
			u, _ := guest.UpstreamOf(m)
			down = append(down, m.Name)
			if detail == "" {
				detail = fmt.Sprintf("%s:%d: %s", u.Host, u.Port, r.Detail)
			}
		}
	}
	const serve = "they serve what their caches hold, and images not in them cannot be pulled (`marina registry prefetch` fills the caches while online); nothing needs restarting when the network is back"
	switch {
	case len(down) == 0:
		return ""
	case len(down) == probed:
		return fmt.Sprintf("offline: no mirror's upstream answers from the VM (%s): %s", detail, serve)
	default:
		return fmt.Sprintf("the upstreams of %s do not answer from the VM (%s): %s", ui.AndMore(down), detail, serve)
	}
}
