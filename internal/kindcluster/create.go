package kindcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/podnet"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

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
	// MetricsServer, when set, installs metrics-server as it says (a
	// Fleet's member).
	MetricsServer *addons.MetricsServer
	// Metrics is --metrics-server: metrics-server's default version when
	// true; nil leaves it to kind.metricsServer. A Fleet's member sets it
	// false, as its manifest decides.
	Metrics *bool
	// NoSwitch leaves the current context as it is (kind.switchContext
	// makes the new cluster's current otherwise).
	NoSwitch bool
	// CNI is --cni: cluster.CNIKindnet ("" too) or cluster.CNINone.
	CNI string
}

// Plan is a checked create, before anything changed.
type Plan struct {
	spec       cluster.Spec
	image      string
	kindConfig []byte
	certsD     map[string]string
	mirrors    []string
	pool       []string
	server     string
	kubeconfig string         // the cluster's own file
	target     string         // the kubeconfig it is merged into ("" when not)
	switchTo   bool           // make it the current context of target
	kind       guest.KindSpec // what kind create is run with (Apply adds the images)
	remove     string         // the guest script that deletes it
	// externalDNS is the cluster's ExternalDNS manifest, etcd its user.
	externalDNS []byte
	etcd        dns.Creds
	// metricsServer is set when the cluster gets metrics-server.
	metricsServer *addons.MetricsServer
	// wait bounds, with --cni none, the wait for the user's CNI.
	wait time.Duration
}

// Created is what a create reports: under --dry-run its plan and the
// kind config it would use, otherwise the cluster it made.
type Created struct {
	Plan       *session.Plan
	KindConfig []byte
	Name       string
	Server     string   // its API server
	Pool       []string // its LoadBalancer pool
	Kubeconfig string   // its own file
	Merged     bool     // its context is in the user's kubeconfig
	Current    bool     // and the current one there
	Zone       string   // the DNS zone of its LoadBalancer Services
	// Seconds is how long the create took, and Phases each of its steps.
	Seconds float64
	Phases  []ui.StepTime
	// Offline says why a --dry-run plan leaves things open: the VM does
	// not run, so the slot and lima0's address are not known yet.
	Offline string
	// Pods and Services are its ranges when network.podRouting routes
	// them between clusters; FromMac says the Mac's routes are there too.
	Pods, Services string
	FromMac        bool
}

// Slot is the slot the plan's cluster is made in.
func (p *Plan) Slot() int { return p.spec.Slot }

// Create creates a cluster that is ready to use, or leaves nothing
// behind: after kind created it, any failing step removes the cluster and
// its kubeconfig entries again (unless opts.Retain).
func Create(ctx context.Context, e *session.Env, opts CreateOptions) (*Created, error) {
	userLabels, err := checkCreate(opts)
	if err != nil {
		return nil, err
	}
	// The clusters are read under the slot lock (Reserve), not here.
	s, err := session.Open(ctx, e, session.Needs{Config: session.Strict, Running: true, Lima0: true})
	if ee, ok := errors.AsType[*session.ExitError](err); ok && ee.Code == session.ExitNotRunning && opts.DryRun {
		// A plan needs no VM: what the config decides is known now.
		return offlinePlan(ctx, e, opts, userLabels, ee)
	}
	if err != nil {
		return nil, err
	}
	defer s.Close()
	p, err := Prepare(ctx, s, opts)
	if err != nil {
		return nil, err
	}
	rs := cluster.Reservations{Dir: e.Paths.Slots()}
	res, err := rs.Reserve(ctx, e.Paths.SlotsLock(), opts.Name, s.ListClusters)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	if err := p.ForSlot(s, opts, userLabels, res.Slot); err != nil {
		return nil, err
	}
	if opts.DryRun {
		return &Created{Plan: &session.Plan{Steps: p.steps(s.Config)}, KindConfig: p.kindConfig}, nil
	}
	return Apply(ctx, s, p, opts)
}

// metricsServerOf is the metrics-server a create installs: what a Fleet
// asked for, or --metrics-server, or kind.metricsServer
// (DefaultMetricsServer).
func metricsServerOf(cfg config.Config, opts CreateOptions) *addons.MetricsServer {
	if opts.MetricsServer != nil {
		return opts.MetricsServer
	}
	want := cfg.Kind.MetricsServer
	if opts.Metrics != nil {
		want = *opts.Metrics
	}
	if !want {
		return nil
	}
	return DefaultMetricsServer()
}

// DefaultMetricsServer is the metrics-server --metrics-server and
// kind.metricsServer install: the latest pinned version, told that kind's
// kubelets serve self-signed certificates.
func DefaultMetricsServer() *addons.MetricsServer {
	vs := addons.MetricsServerVersions()
	return &addons.MetricsServer{Version: vs[len(vs)-1], InsecureTLS: true}
}

// checkCreate checks the flags of a create, before anything is looked at:
// the user's node labels.
func checkCreate(opts CreateOptions) (cluster.Labels, error) {
	if err := cluster.CheckName(opts.Name); err != nil {
		return nil, err
	}
	userLabels, remove, err := cluster.ParseLabels(opts.Labels)
	if err != nil {
		return nil, err
	}
	if len(remove) > 0 {
		return nil, fmt.Errorf("-l %s- removes a label, which only `marina cluster label` does", remove[0])
	}
	for k, v := range userLabels {
		// managed-by and the fleet label are marina's to set.
		if err := cluster.CheckUserLabel(k, v); err != nil {
			return nil, err
		}
	}
	if err := cluster.CheckKubeletLabels(userLabels); err != nil {
		return nil, err
	}
	if opts.Workers < 0 || opts.Workers > cluster.MaxWorkers {
		return nil, fmt.Errorf("--workers %d: choose 0 to %d", opts.Workers, cluster.MaxWorkers)
	}
	if err := cluster.CheckCNI(opts.CNI); err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	if opts.Wait < 0 {
		return nil, fmt.Errorf("--wait %v: give how long to wait, such as 5m", opts.Wait)
	}
	return userLabels, nil
}

// Prepare is the part of the plan that needs no slot: the node
// image, the mirrors, the kubeconfig files; it fails, before a slot is
// taken, on what would make kind's work wasted (no kind network, a
// kubeconfig entry of the user's with the cluster's name).
func Prepare(ctx context.Context, s *session.Session, opts CreateOptions) (*Plan, error) {
	cfg := s.Config
	version := cfg.Kind.NodeVersion
	if opts.NodeVersion != "" {
		version = opts.NodeVersion
	}
	image, err := cfg.Kind.NodeImage(version)
	if err != nil {
		return nil, err
	}
	mirrors, err := registry.Select(cfg.Registries.Mirrors, opts.Mirrors)
	if err != nil {
		return nil, err
	}
	if err := s.CheckMirroring(); err != nil {
		return nil, err
	}
	p := &Plan{image: image, metricsServer: metricsServerOf(cfg, opts), wait: cmp.Or(opts.Wait, addons.DefaultWait)}
	if p.certsD, err = registry.CertsD(mirrors); err != nil {
		return nil, err
	}
	maps.Copy(p.certsD, registry.LocalCertsD(cfg.Registries.Local))
	for _, m := range mirrors {
		p.mirrors = append(p.mirrors, m.Name)
	}
	net, err := s.Docker.InspectNetwork(ctx, docker.KindNetwork)
	if err != nil {
		return nil, err
	}
	if net == nil {
		return nil, fmt.Errorf("the VM has no Docker network %s: run `marina up` first", docker.KindNetwork)
	}
	// ExternalDNS gives up when etcd does not answer: a cluster made
	// before marina up ran the local DNS would be rolled back.
	if err := dnsRunning(ctx, s.Docker); err != nil {
		return nil, err
	}
	if p.kubeconfig, err = s.Paths.Kubeconfig(opts.Name); err != nil {
		return nil, err
	}
	// ~/.kube/marina is shared by every marina home: another's file of
	// this name is not this create's to replace.
	if err := kubeconfig.CheckFile(p.kubeconfig, opts.Name, s.KubeOwner(true)); err != nil {
		return nil, err
	}
	if cfg.Kind.AutoMergeKubeconfig {
		p.target = s.KubeconfigTarget()
		p.switchTo = cfg.Kind.SwitchContext && !opts.NoSwitch
		// A name the user's kubeconfig already has for something of its
		// own fails now, before kind made anything.
		if err := kubeconfig.CheckMerge(s.KubeconfigFiles(), s.KubeOwner(true), opts.Name); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ForSlot completes p for the slot the cluster got: its kind config, its
// pool, its API server address and the guest scripts.
func (p *Plan) ForSlot(s *session.Session, opts CreateOptions, userLabels cluster.Labels, n int) error {
	cfg := s.Config
	certsDir, err := guest.CertsDir(opts.Name)
	if err != nil {
		return err
	}
	p.server = s.Server(n)
	p.spec = newSpec(cfg, opts, userLabels, n, certsDir)
	if cfg.Network.DisablePortMirroring {
		p.spec.SANs = append(p.spec.SANs, s.Lima0.String())
	}
	if p.kindConfig, err = p.spec.KindConfig(); err != nil {
		return err
	}
	if p.pool, err = slot.MetalLBRanges(cfg.Network.Prefix(), n); err != nil {
		return err
	}
	etcd, pw, ok, err := session.DNSEtcd(cfg, s.Paths)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s is missing, so the local DNS was not set up by marina up on this Mac: run `marina up`", s.Paths.LabelKey())
	}
	user, err := guest.ClusterUser(pw, opts.Name, cfg.DNS.Domain)
	if err != nil {
		return err
	}
	auth, err := guest.EtcdAuth(etcd, pw.Reader(), []guest.EtcdUser{user})
	if err != nil {
		return err
	}
	p.kind = guest.KindSpec{Name: opts.Name, Image: p.image, Config: p.kindConfig, CertsD: p.certsD,
		Addons: guest.DNSRecord(cfg.DNS.Domain, localHost(cfg.Registries.Local)), EtcdAuth: auth, Retain: opts.Retain}
	if _, err = guest.KindCreate(p.kind); err != nil {
		return err
	}
	p.etcd = user.Creds
	if p.externalDNS, err = dns.ExternalDNS(opts.Name, cfg); err != nil {
		return err
	}
	p.remove, err = deleteScript(cfg, s.Paths, []string{opts.Name})
	return err
}

// newSpec is the kind cluster of a create in slot n, without lima0's
// address among its certificate's names (the caller adds it once known).
func newSpec(cfg config.Config, opts CreateOptions, userLabels cluster.Labels, n int, certsDir string) cluster.Spec {
	spec := cluster.Spec{
		Name: opts.Name, Slot: n, Region: cmp.Or(opts.Region, cluster.DefaultRegion(n)), Zone: cmp.Or(opts.Zone, cluster.DefaultZone(n)),
		Labels: userLabels, Fleet: opts.Fleet, Workers: opts.Workers,
		ListenAddress: "127.0.0.1", SANs: []string{"127.0.0.1"},
		CertsD: certsDir, ContainerdPatch: registry.ContainerdPatch, CNI: opts.CNI,
	}
	if cfg.Network.DisablePortMirroring {
		// Direct mode: the Mac reaches the API server on lima0, so the VM
		// publishes it on every address and the certificate names lima0.
		spec.ListenAddress = "0.0.0.0"
	}
	return spec
}

func (p *Plan) steps(cfg config.Config) []session.Step {
	s := p.spec
	mirrors := "no registry mirrors"
	if len(p.mirrors) > 0 {
		mirrors = "registry mirrors " + strings.Join(p.mirrors, ", ")
	}
	create := fmt.Sprintf("create kind cluster %s in slot %d: API server %s, services %s, pods %s, 1 control plane and %d workers from %s",
		s.Name, s.Slot, p.server, slot.ServiceSubnet(s.Slot), slot.PodSubnet(s.Slot), s.Workers, p.image)
	if p.server == "" {
		create = fmt.Sprintf("create kind cluster %s in the next free slot N (1 on a VM without clusters): API server port 700N, the slot's services and pods, 1 control plane and %d workers from %s",
			s.Name, s.Workers, p.image)
	}
	if p.noCNI() {
		create += ", without a CNI (networking.disableDefaultCNI)"
	}
	steps := []session.Step{
		{Do: create},
		{Do: "label its nodes " + cluster.FormatLabels(s.NodeLabels())},
		{Do: "point its nodes' containerd at " + mirrors},
	}
	kc := session.Step{Do: "write " + p.kubeconfig}
	if p.target != "" {
		kc.Do += " and merge it into " + p.target + " as context " + s.Name
		if p.switchTo {
			kc.Do += ", the current context"
		}
	}
	if p.noCNI() {
		// The user's CNI needs the kubeconfig, and the add-ons need the
		// CNI.
		steps = append(steps, kc, session.Step{Do: fmt.Sprintf("wait up to %v for your CNI to make every node Ready (install it with kubectl --context %s, or cilium install --context %s)", p.wait, s.Name, s.Name)})
	}
	for _, plan := range addons.Plans(p.addons(cfg, nil, 0)) {
		steps = append(steps, session.Step{Do: plan})
	}
	if p.noCNI() {
		return steps
	}
	return append(steps, kc)
}

// noCNI says kind installs no CNI in p's cluster: the user brings one.
func (p *Plan) noCNI() bool { return p.spec.CNI == cluster.CNINone }

// offlinePlan is create's --dry-run when the VM does not run (or does
// not exist): what the config decides (the node image, the mirrors, the
// labels, the add-ons, the kubeconfig) and the kind config of slot 1,
// the one a VM without clusters gives. The slot, and in direct mode
// lima0's address among the certificate's names, are known once it runs.
func offlinePlan(ctx context.Context, e *session.Env, opts CreateOptions, userLabels cluster.Labels, why error) (*Created, error) {
	s, err := session.Open(ctx, e, session.Needs{Config: session.StrictOrDefault})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cfg := s.Config
	version := cmp.Or(opts.NodeVersion, cfg.Kind.NodeVersion)
	p := &Plan{metricsServer: metricsServerOf(cfg, opts), wait: cmp.Or(opts.Wait, addons.DefaultWait)}
	if p.image, err = cfg.Kind.NodeImage(version); err != nil {
		return nil, err
	}
	mirrors, err := registry.Select(cfg.Registries.Mirrors, opts.Mirrors)
	if err != nil {
		return nil, err
	}
	for _, m := range mirrors {
		p.mirrors = append(p.mirrors, m.Name)
	}
	if p.kubeconfig, err = s.Paths.Kubeconfig(opts.Name); err != nil {
		return nil, err
	}
	if cfg.Kind.AutoMergeKubeconfig {
		p.target = s.KubeconfigTarget()
		p.switchTo = cfg.Kind.SwitchContext && !opts.NoSwitch
	}
	certsDir, err := guest.CertsDir(opts.Name)
	if err != nil {
		return nil, err
	}
	const first = 1
	p.spec = newSpec(cfg, opts, userLabels, first, certsDir) // lima0 joins the SANs once known
	if p.kindConfig, err = p.spec.KindConfig(); err != nil {
		return nil, err
	}
	ab := strings.Join(strings.Split(cfg.Network.Prefix().Addr().String(), ".")[:2], ".")
	p.pool = []string{fmt.Sprintf("%[1]s.N.1-%[1]s.N.7, %[1]s.N.16-%[1]s.N.254", ab)}
	steps := p.steps(cfg)
	// The region and zone of a slot follow from its number: slot 1's may
	// not be the ones the cluster gets.
	if opts.Region == "" || opts.Zone == "" {
		steps[1].Do = "label its nodes " + cluster.FormatLabels(p.spec.NodeLabels()) + " (the default region and zone follow the slot: these are slot 1's)"
	}
	return &Created{
		Plan: &session.Plan{Steps: steps}, KindConfig: p.kindConfig, Name: opts.Name,
		Offline: fmt.Sprintf("%v; the plan is what the config decides. The slot, and so the API port, the ranges and the LoadBalancer pool, is the next free one once it runs; the kind config below is slot 1's", why),
	}, nil
}

// rollbackTimeout bounds removing a half-made cluster: a VM that stopped
// answering must not hang marina after an interrupt.
const rollbackTimeout = 2 * time.Minute

// Apply creates p's cluster: kind, then the add-ons, then the
// kubeconfig. The add-ons that need only the API server start as soon as
// it serves, while kind still installs the network and joins the workers;
// those that need every node wait for kind to end.
func Apply(ctx context.Context, s *session.Session, p *Plan, opts CreateOptions) (*Created, error) {
	e, name := s.Env, p.spec.Name
	start := time.Now()
	var phases []ui.StepTime
	manifests := map[string][]byte{}
	for _, ref := range p.Manifests(s.Config) {
		t := time.Now()
		m, err := Fetch(ctx, s, ref)
		if err != nil {
			return nil, err
		}
		phases = append(phases, phase("manifests: "+ref.Label(), start, t))
		manifests[ref.Name] = m
	}
	set := p.addons(s.Config, manifests, opts.Wait)
	images, err := addons.Images(set)
	if err != nil {
		return nil, err
	}
	kind := p.kind
	kind.Images = images
	create, err := guest.KindCreate(kind)
	if err != nil {
		return nil, err
	}
	// From here on an interrupted marina may leave a cluster behind: a
	// second signal says so.
	e.SetLeftover(fmt.Sprintf("cluster %s may be half made in VM %s (its node containers and /etc/marina/clusters/%s) and %s may exist; `marina cluster delete %s` removes it", name, s.Name, name, p.kubeconfig, name))
	parts := []string{kindPart}
	// With --cni none the user's CNI comes between kind and the add-ons.
	var cni func(k session.Kube, kc []byte) error
	// Once kind created the cluster, a failing step removes it again.
	rb := &rollback{ctx: ctx, s: s, p: p, retain: opts.Retain}
	if p.noCNI() {
		parts = append(parts, cniPart)
	}
	for _, a := range set {
		parts = append(parts, a.Name())
	}
	pr := newProgress(e, start, parts)
	if p.noCNI() {
		cni = p.userCNI(ctx, pr, rb)
	}
	kc, err := kindAndAddons(ctx, s, p, create, set, pr, cni)
	pr.stop(err == nil)
	phases = append(phases, pr.times()...)
	if ke, ok := errors.AsType[*kindError](err); ok {
		return nil, kindFailed(ctx, s, p, opts.Retain, ke.err)
	}
	if se, ok := errors.AsType[*stepError](err); ok {
		return nil, rb.fail(se.what, se.err)
	} else if err != nil {
		return nil, rb.fail("installing the addons", err)
	}
	if !p.noCNI() {
		t := time.Now()
		if err := e.Step("Writing its kubeconfig", "Wrote "+p.kubeconfig, func() error { return rb.writeKubeconfig(kc, p.switchTo) }); err != nil {
			return nil, rb.fail("writing its kubeconfig", err)
		}
		phases = append(phases, phase("kubeconfig: Writing its kubeconfig", start, t))
	} else if rb.merged && p.switchTo {
		if err := kubeconfig.Use(p.target, name); err != nil {
			return nil, rb.fail("making it the current context", err)
		}
	}
	var pods, services string
	var fromMac bool
	if s.Config.Network.PodRouting && routePods(ctx, s, podnet.Cluster{Name: name, Slot: p.spec.Slot}) {
		pods, services = slot.PodSubnet(p.spec.Slot).String(), slot.ServiceSubnet(p.spec.Slot).String()
		routes, err := s.Host.Overlapping(ctx, guest.PodSpace)
		made, merr := host.LoadMade(s.Paths.Routes(), session.HostOwn(s.Config, true))
		fromMac = err == nil && merr == nil && podnet.PlanHost(routes, s.Lima0, made).Complete()
	}
	e.SetLeftover("")
	for _, ph := range phases {
		e.UI.Debugf("phase %6.1fs +%5.1fs %s", ph.Start, ph.Seconds, ph.Step)
	}
	return &Created{Name: name, Server: p.server, Pool: p.pool, Kubeconfig: p.kubeconfig, Merged: p.target != "", Current: p.switchTo,
		Zone: dns.ClusterZone(name, s.Config.DNS.Domain), Seconds: time.Since(start).Seconds(), Phases: phases, Pods: pods, Services: services, FromMac: fromMac}, nil
}

// userCNI is what --cni none does between kind and the add-ons: write the
// kubeconfig, for the user's CNI, and wait for it to make every node Ready.
func (p *Plan) userCNI(ctx context.Context, pr *progress, rb *rollback) func(session.Kube, []byte) error {
	name := p.spec.Name
	return func(k session.Kube, kc []byte) error {
		// Written now, for the user's CNI; made current only once the
		// create succeeded, so that a failed one leaves the user's
		// current context as it was.
		if err := pr.step(cniPart, "Writing its kubeconfig", func() error { return rb.writeKubeconfig(kc, false) }); err != nil {
			return &stepError{"writing its kubeconfig", err}
		}
		label := fmt.Sprintf("Waiting up to %v for your CNI: install it now (kubectl --context %s)", p.wait, name)
		if err := pr.step(cniPart, label, func() error { return cniReady(ctx, k, name, 1+p.spec.Workers, p.wait) }); err != nil {
			return &stepError{"waiting for a CNI", err}
		}
		return nil
	}
}

// phase is a step that began at t and ended now, in a job begun at start.
func phase(step string, start, t time.Time) ui.StepTime {
	return ui.StepTime{Step: step, Start: t.Sub(start).Seconds(), Seconds: time.Since(t).Seconds(), OK: true}
}

// kindError is kind failing to create the cluster: kind removed its nodes.
type kindError struct{ err error }

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

// stepError is a step after kind failing: what names it for the rollback.
type stepError struct {
	what string
	err  error
}

func (e *stepError) Error() string { return e.what + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// kindAndAddons runs kind and the add-ons beside it (see Apply), and
// returns the cluster's kubeconfig as kind exported it. kind failing is a
// *kindError; a later step failing is a *stepError.
//
// cni, when set (--cni none), runs once kind ended and before the add-ons,
// which then do not start early: without a CNI none of them can run.
func kindAndAddons(ctx context.Context, s *session.Session, p *Plan, create string, set []addons.Addon, pr *progress, cni func(session.Kube, []byte) error) ([]byte, error) {
	name := p.spec.Name
	early, stopEarly := context.WithCancel(ctx)
	defer stopEarly()
	addonCtx, stopAddons := context.WithCancel(ctx)
	defer stopAddons()
	nodes := make(chan struct{})
	installed := make(chan error, 1)
	started := false
	install := func(k session.Kube) {
		started = true
		go func() { installed <- addons.Install(addonCtx, k, set, nodes, pr.show()) }()
	}
	// ended stops the add-ons when kind or its kubeconfig failed, and
	// waits for them: that failure is the one to report.
	ended := func() error {
		stopAddons()
		if started {
			return <-installed
		}
		return nil
	}
	var api chan session.Kube
	if cni == nil {
		api = make(chan session.Kube, 1)
		go func() { api <- earlyAPI(early, s, p) }()
	}
	done := make(chan kindResult, 1)
	go func() {
		r := kindResult{began: time.Now()}
		r.out, r.err = runKind(ctx, s, p, create, pr)
		done <- r
	}()
	var r kindResult
wait:
	for {
		select {
		case k := <-api:
			api = nil
			if k != nil {
				install(k)
			}
		case r = <-done:
			break wait
		}
	}
	stopEarly()
	if r.err != nil {
		_ = ended()
		return nil, &kindError{err: r.err}
	}
	close(nodes)
	ex, ok := guest.ParseExports(string(r.out.Stdout))[name]
	if !ok || len(ex.Kubeconfig) == 0 {
		_ = ended()
		return nil, &stepError{"reading its kubeconfig", errors.New("kind printed no kubeconfig")}
	}
	kc, err := kubeconfig.FromKind(ex.Kubeconfig, ex.Cert, name, p.server, s.KubeOwner(true).Home)
	if err != nil {
		_ = ended()
		return nil, &stepError{"reading its kubeconfig", err}
	}
	pr.stages(kindPart, r.began, guest.ParseStages(ex.Stages))
	if !started {
		k, err := s.Deps.Kube(kc, 0)
		if err != nil {
			return nil, &stepError{"reading its kubeconfig", err}
		}
		if cni != nil {
			if err := cni(k, kc); err != nil {
				return nil, err
			}
		}
		install(k)
	}
	if err := <-installed; err != nil {
		if ae, ok := errors.AsType[*addons.Error](err); ok {
			return nil, &stepError{ae.What, ae.Err}
		}
		return nil, &stepError{"installing the addons", err}
	}
	return kc, nil
}

type kindResult struct {
	began time.Time
	out   vm.Result
	err   error
}

// namespaces is the API's namespaces, which earlyAPI reads one of.
var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// earlyAPI waits, while kind runs, for kubeadm's admin kubeconfig and for
// the API server to serve it, and returns a client of it; nil when there
// is none before ctx ends (kind ended, or failed), and the add-ons then
// start after kind. It is one guest round trip, beside kind's.
func earlyAPI(ctx context.Context, s *session.Session, p *Plan) session.Kube {
	name := p.spec.Name
	script, err := guest.KindAdmin(name, slot.APIPort(p.spec.Slot))
	if err != nil {
		return nil
	}
	out, err := s.Guest.Run(ctx, vm.Script{Name: "admin kubeconfig of " + name, Body: script, Root: true})
	if err != nil {
		return nil
	}
	ex, ok := guest.ParseExports(string(out.Stdout))[name]
	if !ok || len(ex.Kubeconfig) == 0 {
		return nil
	}
	kc, err := kubeconfig.FromKind(ex.Kubeconfig, ex.Cert, name, p.server, s.KubeOwner(true).Home)
	if err != nil {
		s.UI.Debugf("cluster %s: kubeadm's admin kubeconfig: %v; the add-ons start after kind", name, err)
		return nil
	}
	k, err := s.Deps.Kube(kc, 0)
	if err != nil {
		return nil
	}
	// The admin user's rights come from a binding kubeadm makes once the
	// server runs: until then every request is refused.
	err = wait.PollUntilContextCancel(ctx, kube.PollInterval, true, func(ctx context.Context) (bool, error) {
		_, err := k.Get(ctx, namespaces, "", "kube-system")
		return err == nil, nil
	})
	if err != nil {
		return nil
	}
	return k
}

// rollbackContext bounds a rollback, which runs even after ctx ended.
func rollbackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
}

// runKind runs create (kind create) in the VM, as part kind of pr; its output
// carries the kubeconfig.
func runKind(ctx context.Context, s *session.Session, p *Plan, create string, pr *progress) (vm.Result, error) {
	var out vm.Result
	label := fmt.Sprintf("Creating cluster %s in slot %d (%s)", p.spec.Name, p.spec.Slot, ui.Plural(1+p.spec.Workers, "node"))
	err := pr.step(kindPart, label, func() error {
		var err error
		out, err = s.Guest.Run(ctx, vm.Script{Name: "kind create cluster " + p.spec.Name, Body: create, Root: true})
		return err
	})
	return out, err
}

// kindFailed is the error of kind failing with err: kind removed its own
// nodes, and the cluster's folder in the VM goes too (unless retain).
func kindFailed(ctx context.Context, s *session.Session, p *Plan, retain bool, err error) error {
	e, name := s.Env, p.spec.Name
	if retain {
		e.UI.Warnf("--retain: cluster %s's node containers are kept; `marina cluster delete %s` removes them", name, name)
		return fmt.Errorf("cluster %s: kind could not create it: %w", name, err)
	}
	rb, cancel := rollbackContext(ctx)
	defer cancel()
	if _, rerr := s.Guest.Run(rb, vm.Script{Name: "remove cluster " + name, Body: p.remove, Root: true}); rerr != nil {
		return fmt.Errorf("cluster %s: kind could not create it: %w\nremoving what it left failed too: %v; `marina cluster delete %s` finishes it", name, err, rerr, name) //nolint:errorlint // the cleanup's failure is said; the error is the cause
	}
	e.SetLeftover("")
	return fmt.Errorf("cluster %s: kind could not create it: %w", name, err)
}

// rollback removes a cluster kind made when a later step fails: the
// cluster, its kubeconfig file and, when this run merged them, its
// entries.
type rollback struct {
	ctx    context.Context // the command's: the rollback outlives its end
	s      *session.Session
	p      *Plan
	retain bool
	merged bool // only what this run merged is removed again
}

// writeKubeconfig writes the cluster's own kubeconfig file and merges it
// into the user's (kind.autoMergeKubeconfig), making it current when use.
func (r *rollback) writeKubeconfig(kc []byte, use bool) error {
	p, s, name := r.p, r.s, r.p.spec.Name
	if err := kubeconfig.WriteFile(p.kubeconfig, name, kc, s.KubeOwner(true)); err != nil {
		return err
	}
	if p.target == "" {
		return nil
	}
	if err := kubeconfig.Merge(p.target, name, kc, s.KubeOwner(true)); err != nil {
		return err
	}
	r.merged = true
	if use {
		return kubeconfig.Use(p.target, name)
	}
	return nil
}

// cniPart names, with --cni none, the wait for the user's CNI among a
// create's parts.
const cniPart = "CNI"

// cniReadyPoll is how often the wait for the user's CNI lists the nodes.
var cniReadyPoll = 2 * time.Second

// cniReady waits, up to within, for the cluster's nodes (want of them) to
// be Ready: kind installed no CNI, and a node is Ready once the user's
// runs on it.
func cniReady(ctx context.Context, k session.Kube, name string, want int, within time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	ready, seen := 0, 0
	var last error
	err := wait.PollUntilContextCancel(wctx, cniReadyPoll, true, func(ctx context.Context) (bool, error) {
		nodes, err := k.Nodes(ctx)
		if err != nil {
			if ctx.Err() == nil {
				last = err
			}
			return false, nil
		}
		last, ready, seen = nil, 0, len(nodes)
		for _, n := range nodes {
			if n.Ready {
				ready++
			}
		}
		return seen >= want && ready == seen, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case last != nil:
		return fmt.Errorf("the nodes could not be read when the wait of %v ended: %w: check that the cluster runs (marina status), or raise --wait", within, last)
	}
	return fmt.Errorf("%d of %d nodes Ready after %v: no CNI runs on them (kind installs none with --cni none). Create it again and install yours during the wait, with the kubeconfig it writes first (kubectl --context %s apply -f …, or cilium install --context %s), with a longer --wait if it needs one", ready, want, within, name, name)
}

// fail is the error of step what failing with cause, after the rollback.
func (r *rollback) fail(what string, cause error) error {
	e, name := r.s.Env, r.p.spec.Name
	if r.retain {
		e.UI.Warnf("--retain: cluster %s is kept as it is; `marina cluster delete %s` removes it", name, name)
		return fmt.Errorf("cluster %s: %s failed: %w", name, what, cause)
	}
	ctx, cancel := rollbackContext(r.ctx)
	defer cancel()
	rmErr := e.Step("Removing cluster "+name+" again", "Removed cluster "+name, func() error {
		var errs []error
		if _, err := r.s.Guest.Run(ctx, vm.Script{Name: "kind delete cluster " + name, Body: r.p.remove, Root: true}); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(r.p.kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		if r.merged {
			if _, err := kubeconfig.Remove(r.p.target, name, r.s.KubeOwner(false)); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
	if rmErr != nil {
		return fmt.Errorf("cluster %s: %s failed: %w\nremoving the cluster failed too: %v; `marina cluster delete %s` finishes it", name, what, cause, rmErr, name) //nolint:errorlint // the cleanup's failure is said; the error is the cause
	}
	e.SetLeftover("")
	return fmt.Errorf("cluster %s: %s failed: %w\nthe cluster was removed; rerun with --retain to keep a failed cluster for a look", name, what, cause)
}

// dnsRunning fails unless both local DNS containers run.
func dnsRunning(ctx context.Context, dc session.Docker) error {
	have, err := dc.ListLabeled(ctx, dns.LabelRole)
	if err != nil {
		return err
	}
	running := map[string]bool{}
	for _, c := range have {
		running[c.Name] = c.State == "running"
	}
	for _, n := range []string{dns.EtcdName, dns.ServerName} {
		if !running[n] {
			return fmt.Errorf("the local DNS (%s) is not running in the VM, and every cluster's ExternalDNS writes to it: run `marina up` first", n)
		}
	}
	return nil
}

// localHost is the push registry's name, "" when it is off.
func localHost(l config.Local) string {
	if !l.Enabled {
		return ""
	}
	return registry.LocalHost(l.Port)
}

// routePods makes the VM route c's pods and services (network.podRouting),
// in one round trip, and says whether it did. A failure is a warning: the
// cluster works, and the VM's service or the next `marina up` routes it.
func routePods(ctx context.Context, s *session.Session, c podnet.Cluster) bool {
	err := s.Step("Routing its pod and service ranges", "", func() error {
		mac, err := s.Host.SourceFor(s.Lima0)
		if err != nil {
			return err
		}
		b := guest.NewBatch()
		if err := podnet.Add(b, c, s.Config.Network.Prefix(), mac); err != nil {
			return err
		}
		_, err = s.Guest.Run(ctx, vm.Script{Name: "route the pods of " + c.Name, Body: b.Script(), Root: true})
		return err
	})
	if err != nil {
		s.UI.Warnf("cluster %s works, but its pods are not routed yet (%v); `marina up` routes them", c.Name, err)
	}
	return err == nil
}
