package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/dockerctx"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/skill"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// Options are marina migrate's flags.
type Options struct {
	DryRun bool
	// Yes accepts stopping klimax's VM without asking.
	Yes bool
	// Cleanup renames ~/.klimax and ~/.kube/klimax aside once everything
	// came over.
	Cleanup bool
	// Fleets are klimax Fleet manifests to rewrite as marina's.
	Fleets []string
	// Skill is marina's agent skill, installed where klimax's was.
	Skill []byte
	// Now dates --cleanup's folder names (time.Now when nil).
	Now func() time.Time
	// Plan, when set, gets the plan before anything changes (the CLI
	// prints it, ahead of the confirmation).
	Plan func(Plan)
}

// Plan is what a migrate will do, in order, and what it says about the
// choices it made.
type Plan struct {
	DryRun bool
	Steps  []session.Step
	Notes  []string
}

// Report is what a migrate reports when it ends, for the CLI to show.
type Report struct {
	// Nothing says why there was nothing to migrate ("" when there was).
	Nothing string
	Plan    Plan
	// Ready is the VM marina up brought to the config, once that step ran.
	Ready *machine.Ready
	// Done: every step ran.
	Done bool
	// Left is klimax's folder when it stays in place (--cleanup renames
	// it aside).
	Left string
}

// journal is what migrate records in ~/.marina/json as it goes,
// so that a run stopped anywhere resumes where it was: the choice made
// about the VM, the config it wrote, the kind network's containers before
// it was converted, and the VM steps done.
type journal struct {
	Adopt     *bool             `json:"adopt,omitempty"`
	VM        string            `json:"vm,omitempty"`
	Config    string            `json:"configSHA256,omitempty"`
	Endpoints []docker.Endpoint `json:"endpoints,omitempty"`
	Done      map[string]bool   `json:"done,omitempty"`
}

func journalPath(p config.Paths) string { return filepath.Join(p.Dir, "json") }

func readJournal(p config.Paths) (*journal, error) {
	j := &journal{Done: map[string]bool{}}
	b, err := fileutil.ReadRegular(journalPath(p), 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil
	}
	if err == nil {
		err = json.Unmarshal(b, j)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s (migrate's record of an earlier run): %w; remove it to start the migration over", journalPath(p), err)
	}
	if j.Done == nil {
		j.Done = map[string]bool{}
	}
	return j, nil
}

func (j *journal) save(p config.Paths) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return fileutil.WriteAtomic(journalPath(p), append(b, '\n'), 0o600)
}

// The VM steps the journal records once done.
const (
	doneGuest    = "guest"
	doneMirrors  = "mirrors"
	doneUp       = "up"
	doneLabels   = "labels"
	doneKube     = "kubeconfigs"
	doneNetwork  = "network"
	doneRouteRec = "route"
)

// migration is everything migrate observed, read-only, and the steps it
// plans from it.
type migration struct {
	e     *session.Env
	k     Klimax
	j     *journal
	conv  Converted
	name  string // the VM's
	steps []mstep
	// notes are what the plan says about choices made (not steps).
	notes []string
	// stop is set when klimax's VM runs and must be stopped: asked first.
	stop bool
	// adopt: klimax's VM becomes marina's.
	adopt bool
	// ready is what marina up reported.
	ready *machine.Ready
}

// mstep is one step of the plan: what it does, and doing it.
type mstep struct {
	session.Step
	run func(ctx context.Context) error
}

func (m *migration) add(do, why string, run func(ctx context.Context) error) {
	m.steps = append(m.steps, mstep{Step: session.Step{Do: do, Reason: why}, run: run})
}

// Run brings the klimax installation in the user's home over to
// marina, planning every step before it does any: the config, the mirrors'
// host caches, klimax's VM (adopted under marina's LIMA_HOME with its
// clusters, when that can be done safely), the clusters' kubeconfigs and
// node labels, the Docker context and the agent skill; and the Fleet
// manifests it is given. Nothing klimax had is deleted: what is replaced
// is kept under ~/.klimax, and ~/.klimax itself stays until --cleanup.
// A second run after a success plans nothing; a run stopped anywhere
// completes when run again.
func Run(ctx context.Context, e *session.Env, o Options) (*Report, error) {
	k := Locate(e.Paths.Home)
	j, err := readJournal(e.Paths)
	if err != nil {
		return nil, err
	}
	m := &migration{e: e, k: k, j: j}
	if Found(e.Paths.Home) {
		if err := k.Check(); err != nil {
			return nil, err
		}
		if err := m.observe(ctx, o); err != nil {
			return nil, err
		}
	}
	if err := m.planFleets(o.Fleets); err != nil {
		return nil, err
	}
	if o.Cleanup {
		m.planCleanup(o)
	}
	if len(m.steps) == 0 {
		// A VM moved into marina's Lima by a migrate whose record is gone
		// (or was not this VM's): what of the adoption is left cannot be
		// told, and "nothing to migrate" would not be true.
		if Found(e.Paths.Home) && !m.adopt && m.name != "" && m.moved() {
			return nil, fmt.Errorf("klimax's VM %s is in marina's Lima (an earlier marina migrate moved it), but %s, migrate's record of what it did, is missing or not this migration's, so migrate cannot tell what of the adoption is left; nothing was changed. `marina up` starts the VM as marina's and puts its networking in order; check it with `marina doctor`", m.name, journalPath(e.Paths))
		}
		if !Found(e.Paths.Home) && len(o.Fleets) == 0 {
			return &Report{Nothing: "there is no klimax installation at " + k.Dir}, nil
		}
		rep := &Report{Nothing: "everything of klimax's is marina's already"}
		if Found(e.Paths.Home) && !o.Cleanup {
			rep.Left = k.Dir
		}
		return rep, nil
	}
	rep := &Report{Plan: Plan{DryRun: o.DryRun, Notes: m.notes}}
	for _, s := range m.steps {
		rep.Plan.Steps = append(rep.Plan.Steps, s.Step)
	}
	if o.Plan != nil {
		o.Plan(rep.Plan)
	}
	if o.DryRun {
		return rep, nil
	}
	if m.stop && !o.Yes {
		q := fmt.Sprintf("Stop klimax's VM %s (its clusters stop and come back as marina's)?", m.name)
		if !e.TTY {
			return nil, fmt.Errorf("marina migrate stops klimax's running VM %s and needs a confirmation: run it in a terminal, or pass -y; nothing was changed", m.name)
		}
		if !ui.Confirm(e.Stdin, e.Stderr, q) {
			return nil, session.ErrCancelled
		}
	}
	for _, s := range m.steps {
		err := s.run(ctx)
		rep.Ready = m.ready
		if err != nil {
			return rep, fmt.Errorf("%w\nmigrate stopped at: %s; what was done before it stays done, and `marina migrate` again carries on from here", err, s.Do)
		}
	}
	rep.Done = true
	if !o.Cleanup && Found(e.Paths.Home) {
		rep.Left = k.Dir
	}
	return rep, nil
}

// observe reads klimax's installation and marina's, and plans.
func (m *migration) observe(ctx context.Context, o Options) error {
	e, k := m.e, m.k
	raw, err := k.ReadConfig()
	if err != nil {
		return err
	}
	// klimax's VM name decides where its instance is; the conversion
	// reports it (klimax's default when unset).
	probe, err := Config(raw, ConfigOptions{KeepVM: true})
	if err != nil {
		return fmt.Errorf("klimax's config %s: %w", k.Config(), err)
	}
	m.name = probe.VMName
	cfgThere := fileExists(e.Paths.Config)
	ours := cfgThere && m.j.Config != "" && m.j.Config == fileSum(e.Paths.Config)
	adopt, why := m.canAdopt(ctx, cfgThere, ours)
	// The journal resumes an adoption, and overrides no refusal: only an
	// adoption it recorded, of this VM, under the config it wrote, whose
	// instance it already moved (which is what canAdopt now sees as
	// "marina already has that VM") carries on. Once the VM has moved, the
	// config may have been edited since (an offline Mac names its DNS
	// images): it is still migrate's while it names that VM. A journal
	// that says no is always heeded.
	if j := m.j; j.Adopt != nil {
		switch {
		case !*j.Adopt:
			adopt = false
		case !adopt && j.VM == m.name && m.moved() && (ours || cfgThere && j.Config != "" && m.configNames(j.VM)):
			adopt, why = true, ""
		}
	}
	m.adopt = adopt
	m.conv, err = Config(raw, ConfigOptions{KeepVM: adopt})
	if err != nil {
		return fmt.Errorf("klimax's config %s: %w", k.Config(), err)
	}
	if !adopt && m.conv.VMName != "" && !cfgThere {
		m.name = m.conv.Config.VM.Name
	}
	m.planConfig(cfgThere)
	if adopt {
		return m.planAdoption(ctx, o.Skill)
	}
	if why != "" {
		m.notes = append(m.notes, why)
	}
	m.planExport()
	m.planCaches(false)
	m.planContext()
	m.planSkill(o.Skill)
	return nil
}

// moved reports whether klimax's VM's instance is in marina's Lima and no
// longer in klimax's: the state an adoption leaves once it moved it.
func (m *migration) moved() bool {
	files, err := m.e.Paths.VM(m.name)
	if err != nil {
		return false
	}
	kdir, err := m.k.Instance(m.name)
	return err == nil && !fileExists(kdir) && fileExists(filepath.Join(files.InstanceDir, "lima.yaml"))
}

// configNames reports whether marina's config loads and names VM name.
func (m *migration) configNames(name string) bool {
	cfg, err := config.Load(m.e.Paths)
	return err == nil && cfg.VM.Name == name
}

// canAdopt decides whether klimax's VM can become marina's, and why not.
func (m *migration) canAdopt(ctx context.Context, cfgThere, ours bool) (bool, string) {
	e := m.e
	dir, err := m.k.Instance(m.name)
	if err != nil {
		return false, err.Error()
	}
	if !fileExists(filepath.Join(dir, "lima.yaml")) {
		return false, ""
	}
	files, err := e.Paths.VM(m.name)
	if err != nil {
		return false, fmt.Sprintf("klimax's VM %s cannot be marina's: %v; it stays under %s", m.name, err, m.k.Dir)
	}
	keep := fmt.Sprintf("klimax's VM %s stays under %s, untouched, with its clusters: klimax can still run it; `marina up` makes marina's own VM", m.name, m.k.Dir)
	switch {
	case cfgThere && !ours:
		return false, fmt.Sprintf("%s was there before this migration: marina keeps its own settings and VM. %s", e.Paths.Config, keep)
	case fileExists(files.InstanceDir):
		return false, fmt.Sprintf("marina already has a VM named %s. %s", m.name, keep)
	case !sameDevice(m.k.Dir, e.Paths.Dir):
		return false, fmt.Sprintf("%s and %s are on different file systems, so moving the VM's disk would be a copy of many gigabytes. %s", m.k.Dir, e.Paths.Dir, keep)
	}
	ours1 := filepath.Join(e.Paths.LimaHome(), "_config", "user")
	if fileExists(ours1) && !SameFile(ours1, m.k.Key()) {
		return false, fmt.Sprintf("marina's Lima has an SSH key of its own (%s), which klimax's VM does not know. %s", ours1, keep)
	}
	return true, ""
}

// exportPath is where migrate writes the Fleet of klimax's clusters when
// klimax's VM stays klimax's.
func exportPath(p config.Paths) string { return filepath.Join(p.Dir, "klimax-fleet.yaml") }

// planExport is the alternative to adopting klimax's VM: a Fleet manifest
// of its clusters, which `marina fleet apply -f` makes again in marina's
// VM. Written once; a file already there is the user's to keep.
func (m *migration) planExport() {
	e := m.e
	dir, err := m.k.Instance(m.name)
	if err != nil || !fileExists(filepath.Join(dir, "lima.yaml")) {
		return
	}
	names, err := m.k.Kubeconfigs()
	if err != nil || len(names) == 0 {
		return
	}
	out := exportPath(e.Paths)
	if fileExists(out) {
		m.notes = append(m.notes, fmt.Sprintf("%s is there already: `marina up`, then `marina fleet apply -f %s` makes klimax's clusters again in marina's VM", out, out))
		return
	}
	why := "after `marina up`, `marina fleet apply -f " + out + "` makes them again in marina's VM (workloads do not come over)"
	if !m.klimaxRunning() {
		why += "; klimax's VM is stopped, so only their names and slots are known"
	}
	m.add("write "+out+": a Fleet of klimax's clusters "+strings.Join(names, ", "), why, func(ctx context.Context) error {
		return e.Step("Writing "+out, "", func() error { return m.export(ctx, names, out) })
	})
}

// export reads each of klimax's clusters through its kubeconfig (when
// klimax's VM runs) and writes them as a Fleet.
func (m *migration) export(ctx context.Context, names []string, out string) error {
	e := m.e
	live := m.klimaxRunning()
	var cs []Cluster
	for _, n := range names {
		if err := cluster.CheckName(n); err != nil {
			e.UI.Warnf("%s.kubeconfig in %s is left out of the Fleet: %v", n, m.k.KubeDir(), err)
			continue
		}
		data, err := fileutil.ReadRegular(filepath.Join(m.k.KubeDir(), n+".kubeconfig"), kubeconfig.MaxSize)
		if err != nil {
			return err
		}
		kc, err := kubeconfig.FromKlimax(data, n, e.KubeOwner(false).Home)
		if err != nil {
			e.UI.Warnf("%s is left out of the Fleet: %v", n, err)
			continue
		}
		c := Cluster{Name: n}
		if srv, err := kubeconfig.Server(kc); err == nil {
			if u, err := url.Parse(srv); err == nil {
				if p, err := strconv.Atoi(u.Port()); err == nil && slot.Check(p-slot.APIPort(0)) == nil {
					c.Num = p - slot.APIPort(0)
				}
			}
		}
		if live {
			if err := m.readCluster(ctx, kc, &c); err != nil {
				e.UI.Warnf("cluster %s could not be read (%v): the Fleet has its name and slot only", n, err)
			}
		}
		cs = append(cs, c)
	}
	b, err := Fleet(cs)
	if err != nil {
		return err
	}
	return fileutil.WriteAtomic(out, b, 0o600)
}

// readCluster fills c from its nodes: the control plane's version, region,
// zone and the user's labels, and the number of workers.
func (m *migration) readCluster(ctx context.Context, kc []byte, c *Cluster) error {
	k, err := m.e.Deps.Kube(kc, 10*time.Second)
	if err != nil {
		return err
	}
	nodes, err := k.Nodes(ctx)
	if err != nil {
		return err
	}
	var cp *kube.NodeInfo
	for i, n := range nodes {
		if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; ok {
			if cp == nil {
				cp = &nodes[i]
			}
			continue
		}
		c.Workers++
	}
	if cp == nil {
		return errors.New("it has no control-plane node")
	}
	c.Live = true
	if v := cp.Version; v != "" {
		if _, err := m.conv.Config.Kind.NodeImage(v); err == nil {
			c.NodeVersion = v
		}
	}
	c.Region, c.Zone = cp.Labels[cluster.RegionLabel], cp.Labels[cluster.ZoneLabel]
	c.Labels = UserLabels(cp.Labels)
	c.Fleet = cp.Labels[klimaxFleetLabel]
	return nil
}

// planConfig writes marina's config from klimax's, unless there is one.
func (m *migration) planConfig(there bool) {
	e := m.e
	for _, n := range m.conv.Notes {
		m.notes = append(m.notes, "config: "+n)
	}
	if there {
		return
	}
	src := m.k.Config()
	if !fileExists(src) {
		src = "klimax's defaults"
	}
	m.add("write "+e.Paths.Config+" (0600) from "+src, "", func(ctx context.Context) error {
		// The config goes first and the journal with it: every later
		// step reads it, and a rerun must know it is migrate's.
		if err := e.Step("Writing "+e.Paths.Config, "", func() error {
			return fileutil.WriteAtomic(e.Paths.Config, m.conv.Data, 0o600)
		}); err != nil {
			return err
		}
		adopt := m.adopt
		m.j.Adopt, m.j.VM, m.j.Config = &adopt, m.name, sumOf(m.conv.Data)
		return m.j.save(e.Paths)
	})
}

// planCaches moves the mirrors' host caches into marina's folder. With
// klimax's VM running and kept by klimax, its mirrors use them: they stay.
func (m *migration) planCaches(vmStopped bool) {
	e, k := m.e, m.k
	dirs, notes, err := k.CacheDirs(m.conv.Mirrors)
	m.notes = append(m.notes, notes...)
	if err != nil {
		m.notes = append(m.notes, err.Error())
		return
	}
	if len(dirs) == 0 {
		return
	}
	if !m.adopt && !vmStopped && m.klimaxRunning() {
		m.notes = append(m.notes, fmt.Sprintf("the mirrors' caches in %s stay: klimax's VM %s runs and uses them; stop it (klimax down) and run marina migrate again to move them", k.Cache(), m.name))
		return
	}
	mv := Mover{}
	for _, d := range dirs {
		to := d
		if n, ok := m.conv.Mirrors[d]; ok {
			to = n
		}
		dst, err := e.Paths.MirrorCache(to)
		if err != nil {
			m.notes = append(m.notes, err.Error())
			continue
		}
		src := filepath.Join(k.Cache(), d)
		m.add("move the "+d+" mirror's cache "+src+" to "+dst, "copied and verified first when the two are on different file systems", func(ctx context.Context) error {
			var how string
			err := e.Step("Moving the "+d+" cache", "", func() error {
				var err error
				how, err = mv.Move(src, dst)
				return err
			})
			if err == nil {
				e.UI.Debugf("cache %s: %s", d, how)
			}
			return err
		})
	}
}

// klimaxRunning reports whether klimax's VM runs (its ha.pid names a live
// process; asking limactl is the adoption's business).
func (m *migration) klimaxRunning() bool {
	in, err := m.klimaxInstance(context.Background())
	return err == nil && in != nil && in.Status == vm.StatusRunning
}

func (m *migration) klimaxInstance(ctx context.Context) (*vm.Instance, error) {
	l, err := m.e.Deps.VMAt(m.k.Dir)
	if err != nil {
		return nil, err
	}
	return l.Get(ctx, m.name)
}

// planAdoption plans klimax's VM becoming marina's: stopped, its mirrors'
// caches and its instance moved, marina's Lima template in place of
// klimax's, started as marina's, klimax's networking taken out, the kind
// network converted with every container keeping its address, then
// marina up, the kubeconfigs and the labels.
func (m *migration) planAdoption(ctx context.Context, skill []byte) error {
	e, k, name := m.e, m.k, m.name
	files, err := e.Paths.VM(name)
	if err != nil {
		return err
	}
	kdir, _ := k.Instance(name)
	moved := !fileExists(kdir) && fileExists(files.InstanceDir)
	if !moved {
		if err := m.planStop(ctx, files.DockerSocket); err != nil {
			return err
		}
	}
	m.planCaches(true)
	if !moved {
		m.add(fmt.Sprintf("move the VM's Lima instance %s to %s, and copy Lima's SSH key to %s", kdir, files.InstanceDir, filepath.Join(e.Paths.LimaHome(), "_config")), "", func(ctx context.Context) error {
			return e.Step("Moving VM "+name+" into marina's Lima", "", func() error { return m.moveInstance(kdir, files.InstanceDir) })
		})
	}
	tmpl, err := machine.Template(e, m.conv.Config)
	if err != nil {
		return err
	}
	limaYAML := filepath.Join(files.InstanceDir, "lima.yaml")
	if !moved || !bytes.Equal(readOr(limaYAML), tmpl) {
		m.add("write marina's Lima template as the VM's lima.yaml (klimax's kept as "+filepath.Join(k.Kept(), "lima.yaml")+")", "marina's provisioning, mounts and socket forward; the disk is kept", func(ctx context.Context) error {
			return m.replaceLimaYAML(limaYAML, tmpl)
		})
	}
	if !m.j.Done[doneUp] {
		m.add("start VM "+name+" as marina's", "", func(ctx context.Context) error { return m.start(ctx) })
	}
	if !m.j.Done[doneGuest] {
		m.add("take klimax's networking out of the VM (no-nat-kind.sh, its unit and drop-in, its three iptables rules, its sysctl files)", "marina's own chains replace them", func(ctx context.Context) error { return m.cleanGuest(ctx) })
	}
	if !m.j.Done[doneMirrors] {
		m.add("remove klimax's mirror containers (registry:2)", "marina runs its own, on the same names and ports, on the same caches", func(ctx context.Context) error { return m.removeMirrors(ctx) })
	}
	if !m.j.Done[doneNetwork] {
		m.add("convert the Docker network kind to marina's settings (ip-range, bridge br-kind, lima0 trusted), every container keeping its address", "Docker cannot change them in place: the containers stop, are reconnected with their own addresses, and start again", func(ctx context.Context) error { return m.convertNetwork(ctx) })
	}
	if !m.j.Done[doneKube] {
		m.planKubeconfigs()
	}
	if !m.j.Done[doneUp] {
		m.add("run marina up", "marina's routing rules, registry mirrors, local DNS and route, as for any VM", func(ctx context.Context) error { return m.up(ctx) })
	}
	if !m.j.Done[doneLabels] {
		m.add("relabel the clusters' nodes: managed-by=klimax → marina, klimax.dev/fleet → marina.dev/fleet", "", func(ctx context.Context) error { return m.relabel(ctx) })
	}
	if !m.j.Done[doneRouteRec] {
		m.add("record klimax's route to "+m.conv.CIDR.String()+" through the VM, if there is one, as marina's", "so that a lima0 move changes it and destroy removes it, as with a route marina made", func(ctx context.Context) error { return m.adoptRoute(ctx) })
	}
	m.planContext()
	m.planSkill(skill)
	return nil
}

// planStop plans stopping klimax's VM when it runs: its disk moves.
// Docker's view of the kind network (at sock) is recorded first.
func (m *migration) planStop(ctx context.Context, sock string) error {
	e, k, name := m.e, m.k, m.name
	kl, err := e.Deps.VMAt(k.Dir)
	if err != nil {
		return err
	}
	in, err := kl.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("klimax's VM %s: %w", name, err)
	}
	if in != nil && in.Status != vm.StatusStopped {
		m.stop = true
		m.add(fmt.Sprintf("stop klimax's VM %s (%s)", name, in.Status), "its disk moves; its clusters come back when it starts as marina's", func(ctx context.Context) error {
			if err := m.recordEndpoints(ctx, sock); err != nil {
				return err
			}
			return e.Step("Stopping klimax's VM "+name, "", func() error {
				if err := kl.Stop(ctx, name); err != nil {
					return err
				}
				in, err := kl.Get(ctx, name)
				if err != nil {
					return err
				}
				if in != nil && in.Status != vm.StatusStopped {
					return fmt.Errorf("klimax's VM %s is %s after the stop: stop it (klimax down) and run marina migrate again", name, in.Status)
				}
				return nil
			})
		})
	}
	return nil
}

// moveInstance moves klimax's Lima instance folder under marina's
// LIMA_HOME (one rename: the same file system was checked) and copies
// Lima's SSH key pair beside it, which the VM's authorized_keys holds.
func (m *migration) moveInstance(from, to string) error {
	keyDir := filepath.Join(m.e.Paths.LimaHome(), "_config")
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return err
	}
	for _, f := range []string{"user", "user.pub"} {
		src, dst := filepath.Join(filepath.Dir(m.k.Key()), f), filepath.Join(keyDir, f)
		if fileExists(dst) {
			continue
		}
		b, err := fileutil.ReadRegular(src, 1<<20)
		if errors.Is(err, fs.ErrNotExist) {
			continue // Lima makes one; the lab's VMs use another key
		}
		if err != nil {
			return err
		}
		perm := os.FileMode(0o600)
		if f == "user.pub" {
			perm = 0o644
		}
		if err := fileutil.WriteAtomic(dst, b, perm); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	return nil
}

// replaceLimaYAML keeps klimax's lima.yaml, then writes marina's.
func (m *migration) replaceLimaYAML(path string, tmpl []byte) error {
	kept := filepath.Join(m.k.Kept(), "lima.yaml")
	if !fileExists(kept) {
		b, err := fileutil.ReadRegular(path, 1<<20)
		if err != nil {
			return err
		}
		if err := fileutil.WriteAtomic(kept, b, 0o600); err != nil {
			return err
		}
	}
	return fileutil.WriteAtomic(path, tmpl, 0o644)
}

// session opens marina's view of the adopted VM.
func (m *migration) session(ctx context.Context, need session.Needs) (*session.Session, error) {
	need.Config = session.Strict
	return session.Open(ctx, m.e, need)
}

func (m *migration) start(ctx context.Context) error {
	s, err := m.session(ctx, session.Needs{})
	if err != nil {
		return err
	}
	defer s.Close()
	if s.Running() {
		return nil
	}
	// marina's template mounts marina's cache folder, which exists only
	// when a mirror's cache was moved into it.
	if err := machine.MakeCacheFolder(s.Config, s.Paths); err != nil {
		return err
	}
	if err := s.Step("Starting VM "+s.Name+" as marina's", "", func() error { return s.VM.Start(ctx, s.Name, vm.Edits{}) }); err != nil {
		return err
	}
	s.Instance, err = s.VM.Get(ctx, s.Name)
	if err != nil {
		return err
	}
	if s.Docker == nil {
		if s.Docker, err = s.Deps.Docker(s.Socket()); err != nil {
			return err
		}
	}
	_, err = s.Docker.WaitReady(ctx, 2*time.Minute)
	return err
}

func (m *migration) cleanGuest(ctx context.Context) error {
	s, err := m.session(ctx, session.Needs{Running: true})
	if err != nil {
		return err
	}
	defer s.Close()
	moves := map[string]string{}
	if m.conv.CacheStorage == config.CacheGuest {
		for _, mr := range m.conv.Config.Registries.Mirrors {
			old := mr.Name
			for o, n := range m.conv.Mirrors {
				if n == mr.Name {
					old = o
				}
			}
			moves[old] = mr.Name
		}
	}
	script, err := guest.KlimaxCleanup(m.conv.CIDR, moves)
	if err != nil {
		return err
	}
	var out vm.Result
	err = s.Step("Taking klimax's networking out of the VM", "", func() error {
		out, err = s.Guest.Run(ctx, vm.Script{Name: "remove klimax's networking", Body: script, Root: true})
		return err
	})
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out.Stdout)), "\n") {
		if l != "" {
			s.UI.Debugf("guest: %s", l)
		}
	}
	return m.mark(doneGuest)
}

// removeMirrors removes klimax's mirror containers: named as a mirror of
// klimax's config, running registry:2, with none of marina's labels.
func (m *migration) removeMirrors(ctx context.Context) error {
	s, err := m.session(ctx, session.Needs{Running: true})
	if err != nil {
		return err
	}
	defer s.Close()
	names := map[string]bool{}
	for o, n := range m.conv.Mirrors {
		names[o], names[n] = true, true
	}
	for _, mr := range m.conv.Config.Registries.Mirrors {
		names[mr.Name] = true
	}
	for n := range names {
		c, err := s.Docker.Named(ctx, n)
		if err != nil {
			return err
		}
		if c == nil || !klimaxMirror(*c) {
			continue
		}
		if err := s.Step("Removing klimax's mirror container "+c.Name, "", func() error { return s.Docker.Remove(ctx, c.ID) }); err != nil {
			return err
		}
	}
	return m.mark(doneMirrors)
}

// klimaxMirror reports whether c is one of klimax's mirrors: the
// distribution v2 image klimax ran, and no label of marina's.
func klimaxMirror(c docker.Container) bool {
	for l := range c.Labels {
		if strings.HasPrefix(l, "dev.marina.") {
			return false
		}
	}
	img := c.Image
	return img == "registry:2" || strings.HasPrefix(img, "registry:2.") || strings.HasPrefix(img, "registry:2@")
}

// recordEndpoints records the containers on klimax's kind network while
// its VM still runs: which run, and the addresses Docker gave them, which
// a container that is stopped by the VM's restart would otherwise lose.
// Docker's socket is klimax's (~/.<vm>.docker.sock, as marina's is).
func (m *migration) recordEndpoints(ctx context.Context, sock string) error {
	d, err := m.e.Deps.Docker(sock)
	if err == nil {
		defer d.Close()
		var eps []docker.Endpoint
		if eps, err = d.Endpoints(ctx, docker.KindNetwork); err == nil {
			m.j.Endpoints = eps
			return m.j.save(m.e.Paths)
		}
	}
	if len(m.j.Endpoints) > 0 {
		return nil // recorded by an earlier run
	}
	return fmt.Errorf("klimax's VM runs but its Docker does not answer on %s (%v), so the containers on its kind network cannot be recorded before it stops: check it with `docker -H unix://%s ps`, or stop it yourself (klimax down) and run marina migrate again", sock, err, sock) //nolint:errorlint // Docker's answer is said: the error is the refusal
}

// convertNetwork gives the kind network marina's settings: the containers
// on it are recorded in the journal first, so that a run stopped halfway
// reconnects them with their own addresses when run again.
func (m *migration) convertNetwork(ctx context.Context) error {
	s, err := m.session(ctx, session.Needs{Running: true})
	if err != nil {
		return err
	}
	defer s.Close()
	spec := docker.KindNetworkSpec(m.conv.CIDR, guest.HostIf)
	have, err := s.Docker.InspectNetwork(ctx, spec.Name)
	if err != nil {
		return err
	}
	if have != nil && have.Managed && len(spec.Differences(have)) == 0 && len(m.j.Endpoints) == 0 {
		return m.mark(doneNetwork)
	}
	if len(m.j.Endpoints) == 0 && have != nil {
		eps, err := s.Docker.Endpoints(ctx, spec.Name)
		if err != nil {
			return err
		}
		if len(eps) == 0 {
			eps = []docker.Endpoint{}
		}
		m.j.Endpoints = eps
		if err := m.j.save(m.e.Paths); err != nil {
			return err
		}
	}
	err = s.Step(fmt.Sprintf("Converting the Docker network %s (%s)", spec.Name, ui.Plural(len(m.j.Endpoints), "container")), "", func() error {
		return s.Docker.Reattach(ctx, spec, m.j.Endpoints, func(l string) { s.UI.Debugf("network: %s", l) })
	})
	if err != nil {
		return fmt.Errorf("%w\nthe containers' addresses are recorded in %s", err, journalPath(m.e.Paths))
	}
	m.j.Endpoints = nil
	return m.mark(doneNetwork)
}

// planKubeconfigs plans klimax's cluster kubeconfig files as marina's,
// and the entries klimax merged into the user's kubeconfig as marina's.
func (m *migration) planKubeconfigs() {
	e, k := m.e, m.k
	names, err := k.Kubeconfigs()
	if err != nil {
		m.notes = append(m.notes, err.Error())
		return
	}
	if len(names) == 0 {
		return
	}
	target := kubeconfig.Target(e.Getenv, e.Paths.Home)
	m.add(fmt.Sprintf("write marina's kubeconfigs of %s in %s, and mark as marina's the entries klimax merged into %s", strings.Join(names, ", "), e.Paths.KubeconfigDir(), target), "klimax's files stay in "+k.KubeDir(), func(ctx context.Context) error {
		for _, n := range names {
			if err := m.kubeconfig(n, target); err != nil {
				return err
			}
		}
		return m.mark(doneKube)
	})
}

func (m *migration) kubeconfig(name, target string) error {
	e := m.e
	if err := cluster.CheckName(name); err != nil {
		e.UI.Warnf("%s.kubeconfig in %s is left alone: %v", name, m.k.KubeDir(), err)
		return nil
	}
	src := filepath.Join(m.k.KubeDir(), name+".kubeconfig")
	data, err := fileutil.ReadRegular(src, kubeconfig.MaxSize)
	if err != nil {
		return err
	}
	dst, err := e.Paths.Kubeconfig(name)
	if err != nil {
		return err
	}
	if !fileExists(dst) {
		kc, err := kubeconfig.FromKlimax(data, name, e.KubeOwner(false).Home)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		if err := kubeconfig.WriteFile(dst, name, kc, e.KubeOwner(false)); err != nil {
			return err
		}
	}
	adopted, err := kubeconfig.Adopt(target, name, data, false, e.KubeOwner(false).Home)
	var own *kubeconfig.ForeignError
	if errors.As(err, &own) {
		e.UI.Warnf("%v", err) // the user's own entries: left alone
	} else if err != nil {
		return err
	}
	if len(adopted) > 0 {
		e.UI.Debugf("kubeconfig %s: %s of %s marked as marina's", target, strings.Join(adopted, ", "), name)
	}
	return nil
}

func (m *migration) up(ctx context.Context) error {
	r, err := machine.Up(ctx, m.e, machine.UpOptions{Yes: true})
	m.ready = r
	if err != nil {
		return err
	}
	return m.mark(doneUp)
}

// relabel gives the nodes of every cluster that klimax labelled marina's
// labels instead.
func (m *migration) relabel(ctx context.Context) error {
	s, err := m.session(ctx, session.Needs{Running: true, Clusters: true})
	if err != nil {
		return err
	}
	defer s.Close()
	skipped := false
	for _, c := range s.Clusters {
		if !c.Running() {
			s.UI.Warnf("cluster %s is not running: its nodes keep klimax's labels until `marina migrate` runs again with it up", c.Name)
			skipped = true
			continue
		}
		kc, err := s.Kube(c.Name, 20*time.Second)
		if err != nil {
			return err
		}
		if err := machine.APIReady(ctx, s, c.Name, kc); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		nodes, err := kc.Nodes(ctx)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		set, remove := map[string]string{}, []string(nil)
		for _, n := range nodes {
			l, err := kc.NodeLabels(ctx, n.Name)
			if err != nil {
				return fmt.Errorf("cluster %s: %w", c.Name, err)
			}
			if l[cluster.ManagedBy] == "klimax" {
				set[cluster.ManagedBy] = "marina"
			}
			if f, ok := l[klimaxFleetLabel]; ok {
				set[cluster.FleetLabel] = f
				remove = []string{klimaxFleetLabel}
			}
		}
		if len(set) == 0 {
			continue
		}
		if err := s.Step("Relabelling the nodes of "+c.Name, "", func() error { return kc.LabelNodes(ctx, set, remove) }); err != nil {
			return err
		}
	}
	if skipped {
		return nil // planned again next run
	}
	return m.mark(doneLabels)
}

const klimaxFleetLabel = "klimax.dev/fleet"

// adoptRoute records the host's route to the kind network as one marina
// made when it is exactly the route klimax makes: that network, through
// the adopted VM's lima0. Any other route stays unrecorded, so that
// nothing marina did not make, or take over from klimax, is ever removed.
//
// lima0's address is the VM's word: a VPN's route of exactly the kind
// network through a gateway the VM named would match it. So the host's
// own table must agree (S3): the route goes out on a vzNAT bridge
// (bridgeN, never a tunnel), and lima0 is directly on that bridge.
func (m *migration) adoptRoute(ctx context.Context) error {
	s, err := m.session(ctx, session.Needs{Running: true, Lima0: true})
	if err != nil {
		return err
	}
	defer s.Close()
	made, err := host.LoadMade(m.e.Paths.Routes(), session.HostOwn(m.conv.Config, true))
	if err != nil {
		return err
	}
	cidr := m.conv.CIDR
	if len(made.Gateways(cidr)) == 0 {
		r, err := s.Host.Lookup(ctx, cidr)
		if err != nil {
			return err
		}
		if r != nil && !r.Cloned && r.Dest == cidr && r.Gateway.IsValid() && r.Gateway == s.Lima0 {
			on, err := s.Host.Lookup(ctx, netip.PrefixFrom(s.Lima0, 32))
			if err != nil {
				return err
			}
			if vzNATBridge.MatchString(r.Interface) && on != nil && on.Interface == r.Interface && !on.Gateway.IsValid() {
				if err := made.Add(cidr, r.Gateway); err != nil {
					return err
				}
				m.e.UI.Debugf("the route to %s via %s on %s is recorded as marina's", cidr, r.Gateway, r.Interface)
			} else {
				m.e.UI.Warnf("the route to %s via %s goes out on %s, not on the VM's own network: it is left alone and not recorded as marina's (a VPN's?)", cidr, r.Gateway, r.Interface)
			}
		}
	}
	return m.mark(doneRouteRec)
}

// planContext makes the Docker context klimax made for the VM marina's:
// only one whose endpoint is the VM's socket.
func (m *migration) planContext() {
	e := m.e
	if !m.adopt {
		return
	}
	files, err := e.Paths.VM(m.name)
	if err != nil {
		return
	}
	dir := dockerctx.Dir(e.Getenv, e.Paths.Home)
	st, err := dockerctx.Read(dir, m.name)
	if err != nil || st.Named == nil || st.Named.Marina {
		return
	}
	host := "unix://" + files.DockerSocket
	p, err := st.AdoptPlan(m.name, host)
	if err != nil {
		m.notes = append(m.notes, fmt.Sprintf("the Docker context %s is left alone: %v", m.name, err))
		return
	}
	if p.None() {
		return
	}
	m.add("mark the Docker context "+m.name+" (klimax's, "+host+") as marina's", "", func(ctx context.Context) error {
		return st.Apply(p)
	})
}

// planSkill puts marina's agent skill where klimax's was, keeping
// klimax's folder under ~/.klimax/migrated.
func (m *migration) planSkill(content []byte) {
	e, k := m.e, m.k
	if !fileExists(filepath.Join(k.Skill(), "SKILL.md")) || len(content) == 0 {
		return
	}
	kept := filepath.Join(k.Kept(), "skill-klimax")
	m.add("replace klimax's agent skill "+k.Skill()+" with marina's "+skill.Path(e.Paths.Home), "klimax's is kept as "+kept, func(ctx context.Context) error {
		if _, err := skill.Install(e.Paths.Home, content, skill.Options{}); err != nil {
			return err
		}
		_, err := Mover{}.Move(k.Skill(), kept)
		return err
	})
}

// planFleets rewrites klimax Fleet manifests as marina's, in place.
func (m *migration) planFleets(files []string) error {
	for _, f := range files {
		data, err := fileutil.ReadRegular(f, fleet.MaxFileSize)
		if err != nil {
			return err
		}
		out, changed, err := fleet.Rewrite(data)
		var fe *fleet.Error
		if errors.As(err, &fe) {
			fe.File = f
			return fe
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if !changed {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		m.add("rewrite "+f+" as a marina Fleet (apiVersion "+fleet.APIVersion+")", "", func(ctx context.Context) error {
			return fileutil.WriteAtomic(f, out, st.Mode().Perm())
		})
	}
	return nil
}

// planCleanup renames ~/.klimax and ~/.kube/klimax aside, once nothing
// else is left to do.
func (m *migration) planCleanup(o Options) {
	k := m.k
	if !Found(k.Home) {
		return
	}
	if len(m.steps) > 0 {
		m.notes = append(m.notes, "--cleanup waits for a run with nothing else left to do: run marina migrate --cleanup again after this one")
		return
	}
	if m.klimaxRunning() {
		m.notes = append(m.notes, fmt.Sprintf("--cleanup leaves %s: klimax's VM %s runs from it", k.Dir, m.name))
		return
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	day := now().Format("20060102")
	for _, d := range []string{k.Dir, k.KubeDir()} {
		if !fileExists(d) {
			continue
		}
		to := d + ".migrated-" + day
		m.add("rename "+d+" to "+to, "", func(ctx context.Context) error {
			if fileExists(to) {
				return fmt.Errorf("%s is there already: nothing was renamed; move it away first", to)
			}
			return os.Rename(d, to)
		})
	}
}

func (m *migration) mark(step string) error {
	m.j.Done[step] = true
	return m.j.save(m.e.Paths)
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// readOr is the file at p (a Lima template: at most 1 MiB, a regular
// file), or nil.
func readOr(p string) []byte {
	b, _ := fileutil.ReadRegular(p, 1<<20)
	return b
}

// fileSum is the sha256 of the config file at p, "" when it cannot be
// read as one (a device, a FIFO or a huge file is not read).
func fileSum(p string) string {
	b, err := fileutil.ReadRegular(p, config.MaxFileSize)
	if err != nil {
		return ""
	}
	return sumOf(b)
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sameDevice reports whether a and b's nearest existing folders are on one
// file system (a rename between them works).
func sameDevice(a, b string) bool {
	da, ok1 := device(a)
	db, ok2 := device(b)
	return ok1 && ok2 && da == db
}

func device(p string) (uint64, bool) {
	for {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err == nil {
			return uint64(st.Dev), true //nolint:unconvert // Dev is int32 on darwin
		}
		parent := filepath.Dir(p)
		if parent == p {
			return 0, false
		}
		p = parent
	}
}

// KlimaxNotice says, once per command, how to bring a klimax installation
// over when there is one and no marina config yet.
func KlimaxNotice(e *session.Env) {
	if fileExists(e.Paths.Config) || !Found(e.Paths.Home) {
		return
	}
	e.UI.Warnf("found klimax's %s and no %s: `marina migrate --dry-run` shows how it comes over to marina (config, caches, VM and clusters), `marina migrate` does it", Locate(e.Paths.Home).Dir, e.Paths.Config)
}

// vzNATBridge is the interface the Mac reaches a vzNAT VM on.
var vzNATBridge = regexp.MustCompile(`^bridge[0-9]+$`)
