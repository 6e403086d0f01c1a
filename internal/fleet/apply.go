package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/ui"
)

// ApplyOptions are the flags of marina fleet apply.
type ApplyOptions struct {
	File        string // "-": stdin
	DryRun      bool
	MaxParallel int // > 0 overrides spec.maxParallel
	Adopt       bool
	// Plan, when set, gets the plan before anything changes (the CLI
	// prints it as text).
	Plan   func(*Report)
	Wait   time.Duration
	Retain bool // keep a cluster whose create failed, for a look
	// NoSwitch leaves the current context as it is; otherwise the first
	// cluster of the manifest this apply created becomes it
	// (kind.switchContext), once, after every create.
	NoSwitch bool
}

// manifestFile reads a fleet manifest from file, or stdin for "-".
func manifestFile(e *session.Env, file string) (string, []byte, error) {
	if file == "" {
		return "", nil, errors.New("give the fleet manifest with -f FILE (or -f - to read it from stdin)")
	}
	if file == "-" {
		b, err := io.ReadAll(io.LimitReader(e.Stdin, MaxFileSize+1))
		if err != nil {
			return "", nil, fmt.Errorf("read the fleet manifest from stdin: %w", err)
		}
		if len(b) > MaxFileSize {
			return "", nil, fmt.Errorf("the fleet manifest on stdin is larger than %d bytes, which no fleet is: check what is piped in", MaxFileSize)
		}
		return "<stdin>", b, nil
	}
	b, err := fileutil.ReadRegular(file, MaxFileSize)
	if err != nil {
		return "", nil, fmt.Errorf("read the fleet manifest: %w", err)
	}
	return file, b, nil
}

// Read reads and checks the manifest in file ("-": stdin) against cfg.
func Read(e *session.Env, cfg config.Config, file string) (Fleet, error) {
	f, _, err := loadFleet(e, cfg, file)
	return f, err
}

// loadFleet reads and checks the manifest in file against cfg.
func loadFleet(e *session.Env, cfg config.Config, file string) (Fleet, []byte, error) {
	name, data, err := manifestFile(e, file)
	if err != nil {
		return Fleet{}, nil, err
	}
	f, err := parseFleet(e, cfg, name, data)
	return f, data, err
}

// parseFleet checks the manifest data, read from name, against cfg.
func parseFleet(e *session.Env, cfg config.Config, name string, data []byte) (Fleet, error) {
	known := Known{
		NodeImage:     func(v string) error { _, err := cfg.Kind.NodeImage(v); return err },
		MetricsServer: addons.MetricsServerVersions(),
	}
	for _, m := range cfg.Registries.Mirrors {
		known.Mirrors = append(known.Mirrors, m.Name)
	}
	f, err := Load(name, data, known)
	if err != nil {
		return f, err
	}
	if f.Converted {
		e.UI.Warnf("%s: apiVersion %s is klimax's: read as %s (write that in the file to silence this)", name, KlimaxAPIVersion, APIVersion)
	}
	return f, nil
}

// Report is the result of marina fleet apply, for -o json|yaml.
type Report struct {
	Fleet           string          `json:"fleet"`
	MaxParallel     int             `json:"maxParallel"`
	Strategy        string          `json:"strategy"`
	DryRun          bool            `json:"dryRun,omitempty"`
	Created         int             `json:"created"`
	Skipped         int             `json:"skipped"`
	Failed          int             `json:"failed"`
	MakespanSeconds float64         `json:"makespanSeconds,omitempty"`
	Clusters        []ClusterReport `json:"clusters"`
	Start           *time.Time      `json:"start,omitempty"`
	End             *time.Time      `json:"end,omitempty"`
	// Current is the cluster made the current context (kind.switchContext).
	Current string `json:"current,omitempty"`
	// Offline says why a --dry-run plan leaves things open: the VM does
	// not run, so every cluster is a create, in its pinned num or the
	// next free slot (0).
	Offline string `json:"offline,omitempty"`
}

// ClusterReport is one cluster of a Report.
type ClusterReport struct {
	Name      string   `json:"name"`
	Slot      int      `json:"slot"`
	Action    string   `json:"action"`
	DependsOn []string `json:"dependsOn,omitempty"`
	Options   string   `json:"options,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	// Pods and Services are its ranges, routed from the Mac and between
	// clusters (network.podRouting only).
	Pods     string `json:"pods,omitempty"`
	Services string `json:"services,omitempty"`
	// Result is created, failed, skipped (the plan or the scheduler
	// skipped it), adopted or labelled; "" in a dry run.
	Result  string        `json:"result,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Start   *time.Time    `json:"start,omitempty"`
	End     *time.Time    `json:"end,omitempty"`
	Seconds float64       `json:"seconds,omitempty"`
	Phases  []ui.StepTime `json:"phases,omitempty"`
}

// Apply creates what a fleet manifest lists and does not exist yet,
// along its dependencies, and labels or adopts what exists. Its report is
// the plan (a dry run) or each cluster's result; it is nil when the apply
// stopped before it began. The clusters that failed are the report's
// (Failures), not the error's: an error is the apply's own.
func Apply(ctx context.Context, e *session.Env, opts ApplyOptions) (*Report, error) {
	// The config is read once: the manifest is checked against it before
	// the VM is looked at.
	s, err := session.Read(e, session.Needs{Config: session.StrictOrDefault})
	if err != nil {
		return nil, err
	}
	f, data, err := loadFleet(e, s.Config, opts.File)
	if err != nil {
		return nil, err
	}
	if opts.MaxParallel < 0 {
		return nil, fmt.Errorf("--max-parallel %d: give the number of clusters created at once", opts.MaxParallel)
	}
	if opts.MaxParallel > 0 {
		f.MaxParallel = opts.MaxParallel
	}
	if err := s.Attach(ctx, session.Needs{Config: session.Strict, Running: true, Lima0: true, Clusters: true}); err != nil {
		if ee, ok := errors.AsType[*session.ExitError](err); ok && ee.Code == session.ExitNotRunning && opts.DryRun {
			return offlinePlan(f, opts, ee)
		}
		return nil, err
	}
	defer s.Close()
	live, err := liveClusters(ctx, s)
	if err != nil {
		return nil, err
	}
	plans, err := prepareMembers(ctx, s, f, opts)
	if err != nil {
		return nil, err
	}
	rows, held, err := placeFleet(ctx, s, f, live, opts)
	if err != nil {
		return nil, err
	}
	defer held.releaseAll()
	if err := planSlots(ctx, s, f, rows, plans, opts); err != nil {
		return nil, err
	}
	rep := &Report{Fleet: f.Name, MaxParallel: f.MaxParallel, Strategy: string(f.Strategy), DryRun: opts.DryRun}
	for _, r := range rows {
		c := ClusterReport{Name: r.Name, Slot: r.Slot, Action: string(r.Action), DependsOn: r.DependsOn, Options: r.Options(), Notes: r.Notes}
		if s.Config.Network.PodRouting && slot.Check(r.Slot) == nil {
			c.Pods, c.Services = slot.PodSubnet(r.Slot).String(), slot.ServiceSubnet(r.Slot).String()
		}
		rep.Clusters = append(rep.Clusters, c)
	}
	if opts.Plan != nil {
		opts.Plan(rep)
	}
	if opts.DryRun {
		return rep, nil
	}
	if err := prefetch(ctx, s, rows, plans); err != nil {
		return nil, err
	}
	if f.Name != "" {
		// fleet delete NAME reads it for the order of the deletes.
		if err := fileutil.WriteAtomic(fleetFile(e, f.Name), data, 0o600); err != nil {
			return nil, fmt.Errorf("record the fleet's manifest: %w: check that %s is writable", err, e.Paths.Dir)
		}
	}
	runFleet(ctx, s, f, rows, plans, held, opts, rep)
	if ctx.Err() != nil {
		return rep, fmt.Errorf("%w: the clusters not started are reported as skipped", ctx.Err())
	}
	return rep, switchContext(s, rep, opts)
}

// offlinePlan is apply's --dry-run when the VM does not run (or does not
// exist): the manifest is checked whole, pinned nums against each other
// included, and every cluster is planned as a create in its num or the
// next free slot; which clusters exist is known once the VM runs.
func offlinePlan(f Fleet, opts ApplyOptions, why error) (*Report, error) {
	rows, err := Plan(f, nil, nil, opts.Adopt)
	if err != nil {
		return nil, err
	}
	rep := &Report{Fleet: f.Name, MaxParallel: f.MaxParallel, Strategy: string(f.Strategy), DryRun: true,
		Offline: fmt.Sprintf("%v; every cluster is planned as a create, and a cluster without a num takes the next free slot: which exist, and their slots, are known once it runs", why)}
	for _, r := range rows {
		rep.Clusters = append(rep.Clusters, ClusterReport{Name: r.Name, Slot: r.Num, Action: string(Create), DependsOn: r.DependsOn, Options: r.Options()})
	}
	if opts.Plan != nil {
		opts.Plan(rep)
	}
	return rep, nil
}

// switchContext makes the first cluster of the manifest that the apply
// created the current context, as one create does: once, after the
// creates, so that parallel creates do not take turns at it.
func switchContext(s *session.Session, rep *Report, opts ApplyOptions) error {
	k := s.Config.Kind
	if opts.NoSwitch || !k.AutoMergeKubeconfig || !k.SwitchContext {
		return nil
	}
	for _, c := range rep.Clusters {
		if c.Result == "created" {
			if err := kubeconfig.Use(s.KubeconfigTarget(), c.Name); err != nil {
				return fmt.Errorf("make %s the current context: %w", c.Name, err)
			}
			rep.Current = c.Name
			return nil
		}
	}
	return nil
}

// prefetch gets the manifests the creates need into marina's cache
// before any starts: a Mac without a network fails before anything is
// made, not after the first clusters.
func prefetch(ctx context.Context, s *session.Session, rows []Row, plans map[string]*kindcluster.Plan) error {
	var refs []addons.Ref
	for _, r := range rows {
		if r.Action != Create {
			continue
		}
		for _, ref := range plans[r.Name].Manifests(s.Config) {
			if !slices.Contains(refs, ref) {
				refs = append(refs, ref)
			}
		}
	}
	// Each source once, in the order the add-ons list them; its versions
	// in order.
	order := map[string]int{}
	for _, ref := range refs {
		if _, ok := order[ref.Name]; !ok {
			order[ref.Name] = len(order)
		}
	}
	slices.SortStableFunc(refs, func(a, b addons.Ref) int {
		return cmp.Or(cmp.Compare(order[a.Name], order[b.Name]), cmp.Compare(a.Version, b.Version))
	})
	for _, ref := range refs {
		if _, err := kindcluster.Fetch(ctx, s, ref); err != nil {
			return err
		}
	}
	return nil
}

// fleetFile is where apply keeps the manifest of fleet name (a label
// value: letters, digits, '-', '_' and '.', never a path).
func fleetFile(e *session.Env, name string) string {
	return filepath.Join(e.Paths.Dir, "fleets", name+".yaml")
}

// prepareMembers checks what needs no slot for every new cluster before
// any slot is taken: a kubeconfig entry of the user's, the local DNS.
func prepareMembers(ctx context.Context, s *session.Session, f Fleet, opts ApplyOptions) (map[string]*kindcluster.Plan, error) {
	plans := map[string]*kindcluster.Plan{}
	for _, m := range f.Members {
		if _, ok := cluster.Find(s.Clusters, m.Name); ok {
			continue
		}
		p, err := kindcluster.Prepare(ctx, s, memberOptions(f, m, opts))
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", m.Name, err)
		}
		plans[m.Name] = p
	}
	return plans, nil
}

// planSlots completes the plan of every cluster to create for the slot
// it was placed in.
func planSlots(ctx context.Context, s *session.Session, f Fleet, rows []Row, plans map[string]*kindcluster.Plan, opts ApplyOptions) error {
	for _, r := range rows {
		if r.Action != Create {
			continue
		}
		p := plans[r.Name]
		if p == nil { // deleted since it was looked at
			var err error
			if p, err = kindcluster.Prepare(ctx, s, memberOptions(f, r.Member, opts)); err != nil {
				return fmt.Errorf("cluster %s: %w", r.Name, err)
			}
			plans[r.Name] = p
		}
		if err := p.ForSlot(s, memberOptions(f, r.Member, opts), r.Labels, r.Slot); err != nil {
			return fmt.Errorf("cluster %s: %w", r.Name, err)
		}
	}
	return nil
}

// memberOptions are the create options of member m.
func memberOptions(f Fleet, m Member, opts ApplyOptions) kindcluster.CreateOptions {
	return kindcluster.CreateOptions{
		Name: m.Name, Region: m.Region, Zone: m.Zone, Fleet: f.Name,
		NodeVersion: m.NodeVersion, Workers: m.Workers, Mirrors: m.Mirrors, CNI: m.CNI,
		Wait: opts.Wait, MetricsServer: m.MetricsServer, Metrics: new(false), Retain: opts.Retain,
		NoSwitch: true, // the apply switches once, at its end
	}
}

// liveClusters are the clusters with their control planes' labels (nil
// for a cluster that is not running), read at once.
func liveClusters(ctx context.Context, s *session.Session) ([]Live, error) {
	rows, err := kindcluster.Rows(ctx, s, nil, "")
	if err != nil {
		return nil, err
	}
	out := make([]Live, len(rows))
	for i, r := range rows {
		out[i] = Live{Name: r.Name, Slot: r.Num, Labels: r.Labels}
	}
	return out, nil
}

// placeFleet plans the fleet under the slot lock, against the clusters
// and reservations as they are then, and (unless a dry run) reserves the
// slot of every cluster to create before the lock is let go: a cluster
// create running meanwhile cannot take one.
func placeFleet(ctx context.Context, s *session.Session, f Fleet, live []Live, opts ApplyOptions) ([]Row, *holds, error) {
	rs := cluster.Reservations{Dir: s.Paths.Slots()}
	var rows []Row
	held := &holds{by: map[string]cluster.Reservation{}}
	err := cluster.Locked(ctx, s.Paths.SlotsLock(), func() error {
		now, err := s.ListClusters(ctx)
		if err != nil {
			return err
		}
		// Clusters made since the labels were read count, unlabelled.
		byName := map[string]Live{}
		for _, l := range live {
			byName[l.Name] = l
		}
		var cur []Live
		for _, c := range now {
			l := byName[c.Name]
			l.Name, l.Slot = c.Name, c.Slot
			cur = append(cur, l)
		}
		others, err := rs.List()
		if err != nil {
			return err
		}
		var hs []Held
		for _, h := range others {
			hs = append(hs, Held{Slot: h.Slot, Name: h.Name, PID: h.PID})
		}
		if rows, err = Plan(f, cur, hs, opts.Adopt); err != nil {
			return err
		}
		if opts.DryRun {
			return nil
		}
		for _, r := range rows {
			if r.Action != Create {
				continue
			}
			res, err := rs.Take(r.Slot, r.Name)
			if err != nil {
				held.releaseAll()
				return err
			}
			held.by[r.Name] = res
		}
		return nil
	})
	return rows, held, err
}

// runFleet applies the rows: labels and adoptions first, one at a time,
// then the creates along their dependencies, each shown on its own line.
// holds are the slots a fleet apply reserved, each released once: when
// its create ends (its node containers show the slot then, or it is free
// again), or at the end of the apply.
type holds struct {
	mu sync.Mutex
	by map[string]cluster.Reservation
}

func (h *holds) release(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if res, ok := h.by[name]; ok {
		res.Release()
		delete(h.by, name)
	}
}

func (h *holds) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, res := range h.by {
		res.Release()
		delete(h.by, name)
	}
}

// runFleet labels and adopts the clusters that exist, then creates the
// new ones along their dependencies; rep gets each one's result.
func runFleet(ctx context.Context, s *session.Session, f Fleet, rows []Row, plans map[string]*kindcluster.Plan, held *holds, opts ApplyOptions, rep *Report) {
	start := time.Now()
	byName := map[string]*ClusterReport{}
	for i := range rep.Clusters {
		byName[rep.Clusters[i].Name] = &rep.Clusters[i]
	}
	labelFailed := labelExisting(ctx, s, rows, byName)
	var tasks []Task
	for _, r := range rows {
		if r.Action == Create {
			tasks = append(tasks, Task{Name: r.Name, DependsOn: r.DependsOn})
		}
	}
	if len(tasks) > 0 && f.Strategy == FailFast && labelFailed {
		// Nothing new starts after a failure under FailFast.
		for _, t := range tasks {
			c := byName[t.Name]
			c.Result, c.Reason = "skipped", "not started: a label change failed, and the fleet's strategy is "+string(FailFast)
		}
		tasks = nil
	}
	if len(tasks) > 0 {
		createAll(ctx, s, f, rows, tasks, plans, held, opts, byName)
	}
	end := time.Now()
	rep.Start, rep.End, rep.MakespanSeconds = &start, &end, end.Sub(start).Seconds()
	for _, c := range rep.Clusters {
		switch c.Result {
		case "created":
			rep.Created++
		case "skipped":
			rep.Skipped++
		case "failed":
			rep.Failed++
		}
	}
}

// labelExisting sets the fleet's labels on the clusters it labels or
// adopts; it reports whether one failed.
func labelExisting(ctx context.Context, s *session.Session, rows []Row, byName map[string]*ClusterReport) bool {
	e := s.Env
	failed := false
	for _, r := range rows {
		c := byName[r.Name]
		switch r.Action {
		case Skip:
			c.Result = "skipped"
			c.Reason = "exists"
			continue
		case Create:
			continue
		}
		done := "labelled"
		if r.Action == Adopt {
			done = "adopted"
		}
		err := e.Step(fmt.Sprintf("Setting %s on the nodes of %s", cluster.FormatLabels(r.Set), r.Name), "", func() error {
			k, err := s.Kube(r.Name, 30*time.Second)
			if err != nil {
				return err
			}
			return k.LabelNodes(ctx, r.Set, nil)
		})
		c.Result = done
		if err != nil {
			c.Result, c.Reason = "failed", err.Error()
			failed = true
		}
	}
	return failed
}

// createAll creates the new clusters along their dependencies, each on
// its own line of a board.
func createAll(ctx context.Context, s *session.Session, f Fleet, rows []Row, tasks []Task, plans map[string]*kindcluster.Plan, held *holds, opts ApplyOptions, byName map[string]*ClusterReport) {
	e := s.Env
	board := e.UI.NewBoard(time.Now)
	lines := map[string]*ui.Row{}
	for _, t := range tasks {
		lines[t.Name] = board.Add(t.Name)
	}
	members := map[string]Member{}
	for _, r := range rows {
		members[r.Name] = r.Member
	}
	// The steps of each create as it timed them, kind's and each
	// add-on's, which share the row's one line while they run at once.
	var mu sync.Mutex
	phases := map[string][]ui.StepTime{}
	outs := Run(ctx, tasks, f.MaxParallel, f.Strategy, time.Now, func(ctx context.Context, name string) error {
		line := lines[name]
		line.Begin()
		ms := s.Member(e.Member(name, line.UI()))
		created, err := kindcluster.Apply(ctx, ms, plans[name], memberOptions(f, members[name], opts))
		if created != nil {
			mu.Lock()
			phases[name] = created.Phases
			mu.Unlock()
		}
		held.release(name)
		if err != nil {
			line.Finish(false, "failed: "+firstLine(err.Error()))
			return err
		}
		line.Finish(true, fmt.Sprintf("created in slot %d", plans[name].Slot()))
		return nil
	})
	for _, o := range outs {
		c := byName[o.Name]
		switch o.State {
		case Done:
			c.Result = "created"
		case Failed:
			c.Result, c.Reason = "failed", o.Reason
		default:
			c.Result, c.Reason = "skipped", o.Reason
			lines[o.Name].Finish(false, "skipped: "+c.Reason)
		}
		if !o.Start.IsZero() {
			st, en := o.Start, o.End
			c.Start, c.End, c.Seconds = &st, &en, en.Sub(st).Seconds()
			c.Phases = lines[o.Name].Times()
			if ph, ok := phases[o.Name]; ok {
				c.Phases = ph
			}
		}
	}
	board.Stop()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Failures are the clusters that failed, one line each, as the CLI's
// ERROR lines say them.
func (r *Report) Failures() []string {
	var out []string
	for _, c := range r.Clusters {
		if c.Result != "failed" {
			continue
		}
		if strings.HasPrefix(c.Reason, "cluster "+c.Name+":") {
			out = append(out, c.Reason)
		} else {
			out = append(out, "cluster "+c.Name+": "+c.Reason)
		}
	}
	return out
}

// Count is the number of clusters whose result is result.
func (r *Report) Count(result string) int {
	n := 0
	for _, c := range r.Clusters {
		if c.Result == result {
			n++
		}
	}
	return n
}
