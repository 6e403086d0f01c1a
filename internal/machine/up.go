package machine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/vm"
)

// VMChange is what up does to the VM.
type VMChange int

// The VM changes a plan can hold.
const (
	VMKeep VMChange = iota
	VMCreate
	VMStart
)

// UpPlan is the difference between the config and what is there.
type UpPlan struct {
	WriteConfig bool
	VM          VMChange
	Edits       vm.Edits
	Steps       []session.Step
	Warnings    []string
}

// PlanUp compares the wanted config with the observed instance (nil when it
// does not exist). It changes nothing.
func PlanUp(cfg config.Config, paths config.Paths, in *vm.Instance, configMissing bool) (UpPlan, error) {
	var p UpPlan
	if configMissing {
		p.WriteConfig = true
		p.Steps = append(p.Steps, session.Step{Do: "write the default config to " + paths.Config})
	}
	name := cfg.VM.Name
	if in == nil {
		p.VM = VMCreate
		if cfg.Registries.CacheStorage == config.CacheHost {
			p.Steps = append(p.Steps, session.Step{Do: "create the registry cache folder " + paths.RegistryCache()})
		}
		p.Steps = append(p.Steps, session.Step{Do: fmt.Sprintf("create and boot VM %s (vz, %d CPUs, %s memory, %s disk, Ubuntu 24.04, Docker %d, kind %s)",
			name, cfg.VM.CPUs, cfg.VM.Memory, cfg.VM.Disk, vm.DockerMajor, vm.KindVersion)})
		return p, nil
	}
	drift := resourceDrift(cfg.VM, in)
	switch in.Status {
	case vm.StatusRunning:
		for _, d := range drift {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s; it applies at the next start: `marina down && marina up`", d.text))
		}
	case vm.StatusStopped:
		p.VM = VMStart
		var what []string
		for _, d := range drift {
			if d.apply != nil {
				d.apply(&p.Edits)
				what = append(what, d.short)
			} else {
				p.Warnings = append(p.Warnings, d.text)
			}
		}
		s := session.Step{Do: "start VM " + name}
		if len(what) > 0 {
			s.Do += " with " + strings.Join(what, ", ")
		}
		p.Steps = append(p.Steps, s)
	case vm.StatusBroken:
		return p, fmt.Errorf("Lima reports VM %s as Broken%s: `marina destroy` and then `marina up` rebuild it (clusters in it are lost)", name, BrokenDetail(in))
	default:
		return p, fmt.Errorf("VM %s is %q: wait for Lima to finish with it, then run `marina up` again", name, in.Status)
	}
	return p, nil
}

// BrokenDetail is what Lima says is wrong with a Broken instance, in
// parentheses, or nothing.
func BrokenDetail(in *vm.Instance) string {
	if len(in.Errors) == 0 {
		return ""
	}
	return " (" + strings.Join(in.Errors, "; ") + ")"
}

// drift is one setting where the config and the VM differ.
type drift struct {
	text  string // the full warning
	short string // the change, as a start step shows it
	apply func(*vm.Edits)
}

// resourceDrift lists where the config's CPUs, memory and disk differ from
// the instance's.
func resourceDrift(want config.VM, in *vm.Instance) []drift {
	var out []drift
	if want.CPUs != in.CPUs {
		out = append(out, drift{
			text:  fmt.Sprintf("vm.cpus is %d in the config but VM %s has %d", want.CPUs, in.Name, in.CPUs),
			short: fmt.Sprintf("%d CPUs (was %d)", want.CPUs, in.CPUs),
			apply: func(e *vm.Edits) { e.CPUs = want.CPUs },
		})
	}
	if mem, err := units.RAMInBytes(want.Memory); err == nil && mem != in.Memory {
		out = append(out, drift{
			text:  fmt.Sprintf("vm.memory is %s in the config but VM %s has %s", want.Memory, in.Name, units.BytesSize(float64(in.Memory))),
			short: fmt.Sprintf("%s memory (was %s)", want.Memory, units.BytesSize(float64(in.Memory))),
			apply: func(e *vm.Edits) { e.Memory = want.Memory },
		})
	}
	if disk, err := units.RAMInBytes(want.Disk); err == nil && disk != in.Disk {
		d := drift{
			text:  fmt.Sprintf("vm.disk is %s in the config but VM %s has %s", want.Disk, in.Name, units.BytesSize(float64(in.Disk))),
			short: fmt.Sprintf("a %s disk (was %s)", want.Disk, units.BytesSize(float64(in.Disk))),
			apply: func(e *vm.Edits) { e.Disk = want.Disk },
		}
		if disk < in.Disk {
			d.text += ": Lima can only grow a disk, so this needs `marina destroy && marina up` (clusters are lost)"
			d.apply = nil
		}
		out = append(out, d)
	}
	return out
}

// UpOptions are the flags of marina up.
type UpOptions struct {
	DryRun bool
	// Yes accepts a VM or Docker restart up needs (a port mirroring
	// change, a Docker upgrade) without asking.
	Yes bool
	// again is set on converge's second look, after provisioning the VM
	// again restarted its Docker.
	again bool
}

// Up makes everything match the config: the VM (created or started), then
// its networking (converge). A warm run on a running VM changes nothing.
func Up(ctx context.Context, e *session.Env, opts UpOptions) (*Ready, error) {
	s, err := session.Open(ctx, e, session.Needs{Config: session.StrictOrDefault, Observe: true, Upstreams: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cfg := s.Config
	plan, err := PlanUp(cfg, e.Paths, s.Instance, s.ConfigMissing)
	if err != nil {
		return nil, err
	}
	if plan.VM != VMKeep {
		s.DropEarly() // the VM changes before converge looks at it
	}
	// Two marina homes with the same vm.name would share ~/.<name>.docker.sock:
	// a socket that answers while this home's VM is not running is another's.
	if sock := s.Socket(); plan.VM != VMKeep && socketAnswers(sock) {
		return nil, fmt.Errorf("%s is served by another VM (another MARINA_HOME with vm.name %s, or another tool): starting VM %s here would take it over; set another vm.name in %s, or stop that VM first", sock, s.Name, s.Name, e.Paths.Config)
	}
	if s.Instance != nil {
		plan.Warnings = append(plan.Warnings, creationDrift(e, cfg, s.Instance)...)
	}
	for _, w := range plan.Warnings {
		e.UI.Warnf("%s", w)
	}
	mirroring, err := planMirroring(e, cfg, s.Instance)
	if err != nil {
		return nil, err
	}
	if opts.DryRun && plan.VM != VMKeep {
		if mirroring != nil {
			// Which clusters it would strand is known once the VM runs.
			plan.Steps = append(plan.Steps, session.Step{Do: fmt.Sprintf("then restart VM %s to %s, unless a cluster would be left unreachable", s.Name, mirroring.what()), Reason: "asks first; --yes does not"})
		}
		// The guest cannot be looked at before it runs: say what follows.
		plan.Steps = append(plan.Steps, session.Step{Do: fmt.Sprintf("then make sure of the Docker network %s, the VM's routing rules, the local DNS, the host's route to %s and its resolver file", docker.KindNetwork, cfg.Network.CIDR)})
		return &Ready{Plan: &session.Plan{Steps: plan.Steps}}, nil
	}
	if !opts.DryRun {
		if err := applyUp(ctx, s, plan); err != nil {
			return nil, err
		}
	}
	var planned []session.Step
	if opts.DryRun {
		planned = plan.Steps
	}
	// The VM runs now. A port mirroring change restarts it once more: a
	// stopped VM is started as it was first, since which clusters the
	// change would strand is only known from its Docker.
	var resumed []cluster.Info
	if mirroring != nil {
		s.DropEarly() // the VM may restart before converge looks at it
		step, started, err := restartForMirroring(ctx, s, mirroring, opts)
		if err != nil {
			return nil, err
		}
		if step != nil {
			planned = append(planned, *step)
		}
		resumed = started
	}
	r, err := converge(ctx, s, planned, opts)
	if err != nil {
		return nil, err
	}
	// After converge: a restart can move lima0, and converge points the
	// kubeconfigs at its new address.
	return r, waitAPIs(ctx, s, resumed)
}

// creationDrift warns about config settings Lima fixed when it created the
// VM: they only apply to a new VM.
func creationDrift(e *session.Env, cfg config.Config, in *vm.Instance) []string {
	files, err := e.Paths.VM(in.Name)
	if err != nil {
		return nil
	}
	created, err := fileutil.ReadRegular(filepath.Join(files.InstanceDir, "lima.yaml"), session.MaxLimaYAML)
	if err != nil {
		return nil
	}
	now, err := Template(e, cfg)
	if err != nil {
		return nil
	}
	drift, err := vm.TemplateDrift(created, now)
	if err != nil || len(drift) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("VM %s was created with other settings for %s: they apply to a new VM only: `marina destroy && marina up` (the clusters and images in the VM are lost; the registry cache on the Mac is kept)",
		in.Name, strings.Join(drift, ", "))}
}

// Template is the Lima Template for cfg, with the guest's provisioning
// script.
func Template(e *session.Env, cfg config.Config) ([]byte, error) {
	return vm.Template(vm.TemplateInput{Config: cfg, Paths: e.Paths, HostArch: e.HostArch, Provision: guest.Provision(e.Marina)})
}

func applyUp(ctx context.Context, s *session.Session, plan UpPlan) error {
	e, cfg, name, l := s.Env, s.Config, s.Name, s.VM
	if plan.WriteConfig {
		err := e.Step("Writing the default config "+e.Paths.Config, "", func() error {
			_, err := config.WriteDefault(e.Paths.Config)
			return err
		})
		if err != nil {
			return err
		}
	}
	if plan.VM == VMKeep {
		return nil
	}
	if _, err := l.Version(ctx); err != nil {
		return err
	}
	if err := MakeCacheFolder(cfg, e.Paths); err != nil {
		return err
	}
	// A failed boot is explained in Lima's logs.
	logs := func(err error) error {
		if err != nil {
			files, _ := e.Paths.VM(name)
			err = fmt.Errorf("%w\nLima's logs: %s", err, files.InstanceDir)
		}
		return err
	}
	var err error
	if plan.VM == VMCreate {
		var tmpl []byte
		tmpl, err = Template(e, cfg)
		if err != nil {
			return err
		}
		err = e.Step(fmt.Sprintf("Creating VM %s (the first boot downloads Ubuntu and installs Docker: a few minutes)", name), "Created VM "+name, func() error {
			return logs(l.Create(ctx, name, tmpl))
		})
	} else {
		err = e.Step("Starting VM "+name, "Started VM "+name, func() error { return logs(l.Start(ctx, name, plan.Edits)) })
	}
	if err != nil {
		return err
	}
	// The VM runs now: its Docker can be reached.
	if s.Docker == nil {
		s.Docker, err = e.Deps.Docker(s.Socket())
	}
	return err
}

// MakeCacheFolder makes the host folder Lima mounts into the VM for the
// mirrors' caches (cacheStorage: host): a VM does not start without it.
func MakeCacheFolder(cfg config.Config, paths config.Paths) error {
	if cfg.Registries.CacheStorage != config.CacheHost {
		return nil
	}
	if err := os.MkdirAll(paths.RegistryCache(), 0o700); err != nil {
		return fmt.Errorf("create the registry cache folder: %w", err)
	}
	return nil
}
