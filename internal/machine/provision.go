package machine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// provisionPlan is what up does to a VM provisioned by another marina:
// run this marina's provisioning script in it, in place.
type provisionPlan struct {
	// what lists the differences, for the plan and the prompt.
	what []string
	// restart is set when it restarts Docker, and so every container.
	restart bool
	// user is the Lima user the script fills in.
	user string
}

// planProvision decides from one observation whether up provisions the VM
// again, and warns when it cannot (another Ubuntu release).
func planProvision(s *session.Session, o *session.Observed) *provisionPlan {
	p := o.Guest.Provisioning
	if p.Current() {
		return nil
	}
	if !p.Upgradable() {
		s.UI.Warnf("VM %s runs %s %s, and marina provisions Ubuntu %s only, so it cannot bring this VM up to date in place (%s): `marina destroy && marina up` makes a new VM (its clusters and images are lost; the registry cache on the Mac is kept)",
			s.Name, p.OS, p.OSVersion, guest.UbuntuVersion, p.Behind(s.Marina, o.DockerVersion))
		return nil
	}
	return &provisionPlan{what: p.Differences(s.Marina, o.DockerVersion), restart: p.RestartsDocker(o.DockerVersion), user: p.User}
}

// steps are the plan's lines.
func (p *provisionPlan) steps(name string) []session.Step {
	out := []session.Step{{Do: fmt.Sprintf("provision VM %s again with this marina's script, in place: %s", name, strings.Join(p.what, "; ")), Reason: "marina was upgraded"}}
	if p.restart {
		out = append(out, session.Step{Do: fmt.Sprintf("restart Docker in VM %s: every container stops and starts, and up waits for every cluster that ran", name), Reason: "asks first; --yes accepts"})
	}
	return out
}

// reprovision applies p: after a confirmation when it restarts Docker (a
// terminal's answer or --yes; without either it warns and changes
// nothing), it runs the script (one round trip) and starts again the
// clusters that ran. It reports whether it ran, and the clusters to wait
// for.
func reprovision(ctx context.Context, s *session.Session, p *provisionPlan, opts UpOptions) (bool, []cluster.Info, error) {
	e, name := s.Env, s.Name
	why := strings.Join(p.what, "; ")
	// A user the VM did not say stops it before anything is asked.
	script, err := guest.Reprovision(s.Marina, p.user)
	if err != nil {
		return false, nil, err
	}
	var cs []cluster.Info
	var ran map[string]string
	if p.restart {
		if !opts.Yes {
			if !e.TTY {
				e.UI.Warnf("VM %s was provisioned by another marina (%s), and bringing it up to date restarts its Docker (every container): run `marina up --yes` to do it, or `marina up --dry-run` to see the plan; nothing was changed", name, why)
				return false, nil, nil
			}
			if !ui.Confirm(e.Stdin, e.Stderr, fmt.Sprintf("Bring VM %s up to date now (%s)? Its Docker restarts: every cluster stops and starts again, keeping its addresses", name, why)) {
				e.UI.Warnf("VM %s was not brought up to date: `marina up` asks again", name)
				return false, nil, nil
			}
		}
		if cs, err = s.ListClusters(ctx); err != nil {
			return false, nil, err
		}
		ran = runningNodes(cs)
	}
	label := fmt.Sprintf("Provisioning VM %s again with this marina's script (%s)", name, why)
	err = s.Step(label, "VM "+name+" provisioned by marina "+s.Marina, func() error {
		if _, err := s.Guest.Run(ctx, script); err != nil {
			return fmt.Errorf("%w\nthe script stopped part way (it is safe to run again: `marina up`); `marina logs` gathers the VM's journal for a bug report", err)
		}
		return nil
	})
	if !p.restart {
		return err == nil, nil, err
	}
	// Docker may have restarted before the script failed: the clusters
	// that ran are started again either way.
	resumed, rerr := resume(ctx, s, cs, ran)
	return err == nil, resumed, errors.Join(err, rerr)
}

// updateLimaYAML gives the instance's lima.yaml this marina's
// provisioning script, which Lima runs at every boot (the old one would
// put the old kind and daemon.json back), and its host resolver's names.
// Lima reads the file when the VM starts, so a running VM is not
// disturbed. up runs it whenever the VM is provisioned by this marina, so
// a failed edit is made again next time; a file that already holds both
// is not written.
func updateLimaYAML(s *session.Session) error {
	files, err := s.Paths.VM(s.Name)
	if err != nil {
		return err
	}
	path := filepath.Join(files.InstanceDir, "lima.yaml")
	created, err := fileutil.ReadRegular(path, session.MaxLimaYAML)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no instance folder of Lima's: nothing runs the script at boot
	}
	if err != nil {
		return fmt.Errorf("read VM %s's Lima settings: %w", s.Name, err)
	}
	now, err := Template(s.Env, s.Config)
	if err != nil {
		return err
	}
	out, changed, err := vm.BootEdit(created, now)
	if err != nil || !changed {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := fileutil.WriteAtomic(path, out, mode); err != nil {
		return fmt.Errorf("give VM %s's Lima settings the new provisioning script and host names: %w", s.Name, err)
	}
	return nil
}

// keepProvisioned follows a VM that runs this marina's script now, as
// provisioned by marina version marina: its lima.yaml gets the script
// (updateLimaYAML), and the Mac the note marina version reads
// (guest.Seen). Either failing is a warning: the next up tries again.
func keepProvisioned(s *session.Session, marina string) {
	if err := updateLimaYAML(s); err != nil {
		s.UI.Warnf("%v\nthe next boot of VM %s would run the script it had before; the next `marina up` tries again", err, s.Name)
	}
	seen := guest.Seen{VM: s.Name, Marina: marina, Script: guest.ProvisionDigest(), At: time.Now().UTC().Truncate(time.Second)}
	if old, err := guest.LoadSeen(s.Paths.Provisioned()); err == nil && old != nil && old.VM == seen.VM && old.Marina == seen.Marina && old.Script == seen.Script {
		return // a warm up writes nothing
	}
	if err := guest.SaveSeen(s.Paths.Provisioned(), seen); err != nil {
		s.UI.Warnf("note VM %s's provisioning for marina version: %v", s.Name, err)
	}
}
