package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/vm"
)

// lab is what cluster commands start from: a running VM, its Docker, the
// clusters Docker shows and (when asked for) lima0's address.
type lab struct {
	name     string        // the VM's
	cfg      config.Config // the whole config, when labNeeds.strict
	l        *vm.Limactl
	dc       *docker.Client
	clusters []cluster.Info
	lima0    netip.Addr
}

func (b *lab) close() {
	if b.dc != nil {
		b.dc.Close()
	}
}

// labNeeds says what a cluster command needs from openLab.
type labNeeds struct {
	strict   bool // the whole config valid (it acts on settings), not just vm.name
	lima0    bool // lima0's address (one guest round trip)
	clusters bool // the clusters Docker shows
}

// openLab loads the config, checks the VM runs and reads what need asks
// for; lima0's address and the clusters are read at the same time.
func openLab(ctx context.Context, e *Env, need labNeeds) (*lab, error) {
	b := &lab{}
	var err error
	if need.strict {
		if b.cfg, err = e.Config(); err != nil {
			return nil, err
		}
		b.name = b.cfg.VM.Name
	} else {
		v, err := e.VMName(true)
		if err != nil {
			return nil, err
		}
		b.name = v.Name
	}
	if b.l, err = e.Limactl(); err != nil {
		return nil, err
	}
	in, err := b.l.Get(ctx, b.name)
	if err != nil {
		return nil, err
	}
	if in == nil || in.Status != vm.StatusRunning {
		return nil, notRunning(b.name, in)
	}
	if b.dc, err = docker.Dial(e.socket(b.name)); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var gErr, dErr error
	if need.lima0 {
		wg.Go(func() {
			var st guest.State
			st, gErr = guest.Observe(ctx, e.Guest(b.l, b.name))
			b.lima0 = st.Lima0.Addr()
		})
	}
	if need.clusters {
		wg.Go(func() { b.clusters, dErr = b.listClusters(ctx) })
	}
	wg.Wait()
	if err := errors.Join(gErr, dErr); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *lab) listClusters(ctx context.Context) ([]cluster.Info, error) {
	nodes, err := b.dc.KindNodes(ctx, cluster.KindLabel, cluster.RoleLabel)
	if err != nil {
		return nil, fmt.Errorf("%w\nIs the VM's Docker up? `marina status` shows it", err)
	}
	return cluster.Group(nodes), nil
}

// server is the API server address a kubeconfig of slot n uses: lima0's in
// direct mode, the Mac's loopback when Lima mirrors the port.
func (b *lab) server(n int) string {
	host := "127.0.0.1"
	if b.cfg.Network.DisablePortMirroring {
		host = b.lima0.String()
	}
	return "https://" + netip.AddrPortFrom(netip.MustParseAddr(host), uint16(slot.APIPort(n))).String()
}

// CreateOptions are the flags of marina cluster create.
type CreateOptions struct {
	Name        string
	Region      string
	Zone        string
	Labels      []string // key=value
	Fleet       string
	NodeVersion string
	Workers     int
	Mirrors     []string // nil: every mirror
	Retain      bool
	DryRun      bool
	// Wait bounds the wait for MetalLB to serve the cluster's pool.
	Wait time.Duration
}

// createPlan is a checked create, before anything changed.
type createPlan struct {
	spec       cluster.Spec
	image      string
	kindConfig []byte
	certsD     map[string]string
	mirrors    []string
	pool       []string
	server     string
	kubeconfig string // the cluster's own file
	target     string // the kubeconfig it is merged into ("" when not)
	create     string // the guest scripts: kind create, and delete
	remove     string
}

// CreateCluster creates a cluster that is ready to use, or leaves nothing
// behind: after kind created it, any failing step removes the cluster and
// its kubeconfig entries again (unless opts.Retain).
func CreateCluster(ctx context.Context, e *Env, opts CreateOptions) error {
	if err := cluster.CheckName(opts.Name); err != nil {
		return err
	}
	userLabels, remove, err := cluster.ParseLabels(opts.Labels)
	if err != nil {
		return err
	}
	if len(remove) > 0 {
		return fmt.Errorf("-l %s- removes a label, which only `marina cluster label` does", remove[0])
	}
	if err := cluster.CheckKubeletLabels(userLabels); err != nil {
		return err
	}
	if opts.Workers < 0 || opts.Workers > cluster.MaxWorkers {
		return fmt.Errorf("--workers %d: choose 0 to %d", opts.Workers, cluster.MaxWorkers)
	}
	// The clusters are read under the slot lock (reserveSlot), not here.
	b, err := openLab(ctx, e, labNeeds{strict: true, lima0: true})
	if err != nil {
		return err
	}
	defer b.close()
	cfg := b.cfg
	version := cfg.Kind.NodeVersion
	if opts.NodeVersion != "" {
		version = opts.NodeVersion
	}
	image, err := cfg.Kind.NodeImage(version)
	if err != nil {
		return err
	}
	mirrors, err := registry.Select(cfg.Registries.Mirrors, opts.Mirrors)
	if err != nil {
		return err
	}
	certsD, err := registry.CertsD(mirrors)
	if err != nil {
		return err
	}
	net, err := b.dc.InspectNetwork(ctx, docker.KindNetwork)
	if err != nil {
		return err
	}
	if net == nil {
		return fmt.Errorf("the VM has no Docker network %s: run `marina up` first", docker.KindNetwork)
	}

	kcPath, err := e.Paths.Kubeconfig(opts.Name)
	if err != nil {
		return err
	}
	target := ""
	if cfg.Kind.AutoMergeKubeconfig {
		target = e.kubeconfigTarget()
		// A name the user's kubeconfig already has for something of its
		// own fails now, before kind made anything.
		if err := kubeconfig.CheckMerge(e.kubeconfigFiles(), opts.Name); err != nil {
			return err
		}
	}

	res, err := reserveSlot(ctx, e, b, opts.Name)
	if err != nil {
		return err
	}
	defer res.Release()

	p := createPlan{image: image, certsD: certsD, server: b.server(res.Slot)}
	for _, m := range mirrors {
		p.mirrors = append(p.mirrors, m.Name)
	}
	p.kubeconfig, p.target = kcPath, target
	certsDir, err := guest.CertsDir(opts.Name)
	if err != nil {
		return err
	}
	p.spec = cluster.Spec{
		Name: opts.Name, Slot: res.Slot, Region: opts.Region, Zone: opts.Zone,
		Labels: userLabels, Fleet: opts.Fleet, Workers: opts.Workers,
		ListenAddress: "127.0.0.1", SANs: []string{"127.0.0.1"},
		CertsD: certsDir, ContainerdPatch: registry.ContainerdPatch,
	}
	if p.spec.Region == "" {
		p.spec.Region = cluster.DefaultRegion(res.Slot)
	}
	if p.spec.Zone == "" {
		p.spec.Zone = cluster.DefaultZone(res.Slot)
	}
	if cfg.Network.DisablePortMirroring {
		// Direct mode: the Mac reaches the API server on lima0, so the VM
		// publishes it on every address and the certificate names lima0.
		p.spec.ListenAddress = "0.0.0.0"
		p.spec.SANs = append(p.spec.SANs, b.lima0.String())
	}
	if p.kindConfig, err = p.spec.KindConfig(); err != nil {
		return err
	}
	if p.pool, err = slot.MetalLBRanges(netip.MustParsePrefix(cfg.Network.CIDR), res.Slot); err != nil {
		return err
	}
	if p.create, err = guest.KindCreate(opts.Name, p.image, p.kindConfig, p.certsD, opts.Retain); err != nil {
		return err
	}
	if p.remove, err = guest.KindDelete([]string{opts.Name}); err != nil {
		return err
	}
	if opts.DryRun {
		printPlan(e, p.steps(cfg, e), "")
		fmt.Fprintf(e.Stdout, "\nkind config:\n%s", p.kindConfig)
		return nil
	}
	return applyCreate(ctx, e, b, p, opts)
}

// reserveSlot chooses the lowest free slot under the slot lock, from the
// node containers Docker runs now and the slots other creates hold.
func reserveSlot(ctx context.Context, e *Env, b *lab, name string) (cluster.Reservation, error) {
	if err := os.MkdirAll(e.Paths.Dir, 0o700); err != nil {
		return cluster.Reservation{}, err
	}
	lock := flock.New(e.Paths.SlotsLock())
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if ok, err := lock.TryLockContext(lctx, 50*time.Millisecond); !ok {
		return cluster.Reservation{}, fmt.Errorf("another marina holds %s: %v", e.Paths.SlotsLock(), err)
	}
	defer lock.Unlock()
	cs, err := b.listClusters(ctx) // again, now that no other create can change it
	if err != nil {
		return cluster.Reservation{}, err
	}
	if _, ok := cluster.Find(cs, name); ok {
		return cluster.Reservation{}, fmt.Errorf("cluster %s already exists: delete it with `marina cluster delete %s`, or choose another name", name, name)
	}
	rs := cluster.Reservations{Dir: e.Paths.Slots()}
	held, err := rs.List()
	if err != nil {
		return cluster.Reservation{}, err
	}
	for _, r := range held {
		if r.Name == name {
			return cluster.Reservation{}, fmt.Errorf("cluster %s is being created by another marina (process %d)", name, r.PID)
		}
	}
	n, err := cluster.Free(cs, held)
	if err != nil {
		return cluster.Reservation{}, err
	}
	return rs.Take(n, name)
}

func (p createPlan) steps(cfg config.Config, e *Env) []Step {
	s := p.spec
	mirrors := "no registry mirrors"
	if len(p.mirrors) > 0 {
		mirrors = "registry mirrors " + strings.Join(p.mirrors, ", ")
	}
	steps := []Step{
		{Do: fmt.Sprintf("create kind cluster %s in slot %d: API server %s, services %s, pods %s, 1 control plane and %d workers from %s",
			s.Name, s.Slot, p.server, slot.ServiceSubnet(s.Slot), slot.PodSubnet(s.Slot), s.Workers, p.image)},
		{Do: "label its nodes " + labelString(s.NodeLabels())},
		{Do: "point its nodes' containerd at " + mirrors},
		{Do: fmt.Sprintf("install MetalLB %s with the LoadBalancer pool %s", cfg.Kind.MetalLBVersion, strings.Join(p.pool, ", "))},
	}
	if rs := cfg.Kind.CustomDNSResolvers; len(rs) > 0 {
		var ds []string
		for _, r := range rs {
			ds = append(ds, r.Domain+" → "+strings.Join(r.Resolvers, " "))
		}
		steps = append(steps, Step{Do: "forward from CoreDNS: " + strings.Join(ds, ", ")})
	}
	kc := "write " + p.kubeconfig
	if p.target != "" {
		kc += " and merge it into " + p.target + " as context " + s.Name
	}
	return append(steps, Step{Do: kc})
}

func labelString(l cluster.Labels) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// kubeconfigTarget is the kubeconfig marina merges into.
func (e *Env) kubeconfigTarget() string { return kubeconfig.Target(e.Getenv, e.Paths.Home) }

// kubeconfigFiles are the kubeconfigs kubectl reads, the target first.
func (e *Env) kubeconfigFiles() []string { return kubeconfig.Files(e.Getenv, e.Paths.Home) }

// rollbackTimeout bounds removing a half-made cluster: a VM that stopped
// answering must not hang marina after an interrupt.
const rollbackTimeout = 2 * time.Minute

func applyCreate(ctx context.Context, e *Env, b *lab, p createPlan, opts CreateOptions) error {
	name := p.spec.Name
	manifest, err := metalLBManifest(ctx, e, b.cfg.Kind.MetalLBVersion)
	if err != nil {
		return err
	}
	g := e.Guest(b.l, b.name)
	// From here on an interrupted marina may leave a cluster behind: a
	// second signal says so.
	e.SetLeftover(fmt.Sprintf("cluster %s may be half made in VM %s (its node containers and /etc/marina/clusters/%s) and %s may exist; `marina cluster delete %s` removes it", name, b.name, name, p.kubeconfig, name))
	rollback := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	}
	var out vm.Result
	label := fmt.Sprintf("Creating cluster %s in slot %d (kind, %s)", name, p.spec.Slot, plural(1+p.spec.Workers, "node"))
	err = e.step(label, "", func() error {
		var err error
		out, err = g.Run(ctx, vm.Script{Name: "kind create cluster " + name, Body: p.create, Root: true})
		return err
	})
	if err != nil {
		if !opts.Retain {
			// kind removed its own nodes; the cluster's folder goes too.
			rb, cancel := rollback()
			defer cancel()
			if _, rerr := g.Run(rb, vm.Script{Name: "remove cluster " + name, Body: p.remove, Root: true}); rerr != nil {
				return fmt.Errorf("cluster %s: kind could not create it: %w\nremoving what it left failed too: %v; `marina cluster delete %s` finishes it", name, err, rerr, name)
			}
			e.SetLeftover("")
		} else {
			e.UI.Warnf("--retain: cluster %s's node containers are kept; `marina cluster delete %s` removes them", name, name)
		}
		return fmt.Errorf("cluster %s: kind could not create it: %w", name, err)
	}

	// From here on the cluster exists: a failing step removes it again.
	merged := false // only what this run merged is removed again
	failed := func(what string, cause error) error {
		if opts.Retain {
			e.UI.Warnf("--retain: cluster %s is kept as it is; `marina cluster delete %s` removes it", name, name)
			return fmt.Errorf("cluster %s: %s failed: %w", name, what, cause)
		}
		rb, cancel := rollback()
		defer cancel()
		var errs []error
		rmErr := e.step("Removing cluster "+name+" again", "Removed cluster "+name, func() error {
			if _, err := g.Run(rb, vm.Script{Name: "kind delete cluster " + name, Body: p.remove, Root: true}); err != nil {
				errs = append(errs, err)
			}
			if err := os.Remove(p.kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			if merged {
				if _, err := kubeconfig.Remove(p.target, name); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		})
		if rmErr != nil {
			return fmt.Errorf("cluster %s: %s failed: %w\nremoving the cluster failed too: %v; `marina cluster delete %s` finishes it", name, what, cause, rmErr, name)
		}
		e.SetLeftover("")
		return fmt.Errorf("cluster %s: %s failed: %w\nthe cluster was removed; rerun with --retain to keep a failed cluster for a look", name, what, cause)
	}

	ex, ok := guest.ParseExports(string(out.Stdout))[name]
	if !ok || len(ex.Kubeconfig) == 0 {
		return failed("reading its kubeconfig", errors.New("kind printed no kubeconfig"))
	}
	kc, err := exportKubeconfig(name, p.server, ex)
	if err != nil {
		return failed("reading its kubeconfig", err)
	}
	rc, err := kubeconfig.RESTConfig(kc)
	if err != nil {
		return failed("reading its kubeconfig", err)
	}
	if err := installAddons(ctx, e, b.cfg, rc, manifest, p.pool, opts.Wait); err != nil {
		if ae, ok := errors.AsType[*addonError](err); ok {
			return failed(ae.step, ae.err)
		}
		return failed("installing the addons", err)
	}
	if err := e.step("Writing its kubeconfig", "Wrote "+p.kubeconfig, func() error {
		if err := writeKubeconfig(p.kubeconfig, kc); err != nil {
			return err
		}
		if p.target == "" {
			return nil
		}
		if err := kubeconfig.Merge(p.target, name, kc); err != nil {
			return err
		}
		merged = true
		return nil
	}); err != nil {
		return failed("writing its kubeconfig", err)
	}
	e.SetLeftover("")
	fmt.Fprintf(e.Stdout, "Cluster %s is ready: API server %s, LoadBalancer pool %s\n", name, p.server, strings.Join(p.pool, ", "))
	if p.target != "" {
		fmt.Fprintf(e.Stdout, "  kubectl --context %s get nodes\n", name)
	} else {
		fmt.Fprintf(e.Stdout, "  export KUBECONFIG=%s\n", p.kubeconfig)
	}
	return nil
}

// exportKubeconfig turns kind's export into marina's kubeconfig for name,
// with the API server at server.
func exportKubeconfig(name, server string, ex guest.Export) ([]byte, error) {
	tlsName, err := kubeconfig.TLSServerName(ex.Cert, server)
	if err != nil {
		return nil, fmt.Errorf("%w: the cluster cannot be reached at %s; recreate it", err, server)
	}
	return kubeconfig.Rename(ex.Kubeconfig, name, server, tlsName)
}

// writeKubeconfig writes a cluster's own kubeconfig, 0600 in a 0700 folder.
func writeKubeconfig(path string, kc []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fileutil.WriteAtomic(path, kc, 0o600)
}

// addonError is a failed addon step, named for the rollback message.
type addonError struct {
	step string
	err  error
}

func (a *addonError) Error() string { return a.step + ": " + a.err.Error() }
