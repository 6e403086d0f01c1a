package kindcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/go-units"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/ui"
)

// A stopped cluster is its node containers stopped, nothing else: its
// volumes, kubeconfig, slot (its stopped control plane still publishes
// the API port), the local DNS's names of its Services (its ExternalDNS
// is stopped with it, so nothing removes them) and the addresses MetalLB
// gave them (kept in its Services' status) all stay. Docker leaves a
// container stopped with docker stop stopped when it restarts, so the
// cluster stays stopped across a VM restart too.

// StartWait is how long start waits by default for a cluster to be back.
const StartWait = 5 * time.Minute

// StopOptions are the flags of marina cluster stop and start.
type StopOptions struct {
	Names    []string
	Selector string
	All      bool
	DryRun   bool
	// Wait bounds start's wait for each cluster to be back.
	Wait time.Duration
}

// stopped is the record stop keeps of a cluster on the Mac: the labels of
// its control plane, which no API answers for while it is stopped (cluster
// list, -l and the fleet commands read them here).
type stopped struct {
	Labels  map[string]string `json:"labels"`
	Stopped time.Time         `json:"stopped"`
}

// maxRecord bounds a record read back.
const maxRecord = 64 << 10

// readStopped is the labels stop recorded for cluster name: nil when
// there is no record; an error for one marina cannot trust.
func readStopped(s *session.Session, name string) (map[string]string, error) {
	path, err := s.Paths.StoppedRecord(name)
	if err != nil {
		return nil, err
	}
	data, err := fileutil.ReadRegular(path, maxRecord)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var rec stopped
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err == nil {
		err = checkLabels(rec.Labels)
	}
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read (%w): cluster %s's labels are not known until it starts", path, err, name)
	}
	return rec.Labels, nil
}

// StoppedByMarina reports whether marina cluster stop stopped cluster
// name (its record is there).
func StoppedByMarina(s *session.Session, name string) bool {
	path, err := s.Paths.StoppedRecord(name)
	if err != nil {
		return false
	}
	_, err = os.Lstat(path)
	return err == nil
}

// stoppedLabels is readStopped that warns of a record it cannot trust.
func stoppedLabels(s *session.Session, name string) map[string]string {
	l, err := readStopped(s, name)
	if err != nil {
		s.UI.Warnf("%v", err)
	}
	return l
}

// checkLabels checks labels read back as Kubernetes checks node labels.
func checkLabels(l map[string]string) error {
	for k, v := range l {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("label %s value %q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

// Stop stops the clusters named, selected with -l, or all of them.
func Stop(ctx context.Context, e *session.Env, opts StopOptions) (session.Result, error) {
	s, names, res, err := chooseStartStop(ctx, e, opts, "stop")
	if s == nil || err != nil {
		return res, err
	}
	defer s.Close()
	return StopIn(ctx, s, names, opts.DryRun)
}

// StopIn stops names in s, in that order (a fleet's dependents first);
// those stopped already are said to be.
func StopIn(ctx context.Context, s *session.Session, names []string, dryRun bool) (session.Result, error) {
	var res session.Result
	var todo []string
	for _, n := range names {
		if c, _ := cluster.Find(s.Clusters, n); !anyRunning(c) {
			res.Add("%s is stopped already.", n)
			continue
		}
		todo = append(todo, n)
	}
	if dryRun {
		var steps []session.Step
		for _, n := range todo {
			c, _ := cluster.Find(s.Clusters, n)
			steps = append(steps, session.Step{Do: fmt.Sprintf("stop %s's %s (%s); it keeps its nodes, volumes, kubeconfig, slot, DNS names and LoadBalancer addresses", n, ui.Plural(len(c.Nodes), "node container"), strings.Join(nodeNames(c), ", "))})
		}
		return session.Planned(steps, strings.Join(res.Lines, " ")), nil
	}
	return res, StopNamed(ctx, s, todo, &res)
}

// StopNamed stops names one after the other, in that order (a fleet's
// dependents first), each line of what it freed added to res.
func StopNamed(ctx context.Context, s *session.Session, names []string, res *session.Result) error {
	for _, n := range names {
		c, _ := cluster.Find(s.Clusters, n)
		freed, err := stopOne(ctx, s, c)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("Stopped %s: its %s keep everything; `marina cluster start %s` starts it again.", n, ui.Plural(len(c.Nodes), "node"), n)
		if freed > 0 {
			line = fmt.Sprintf("Stopped %s, freeing %s of the VM's memory: its %s keep everything; `marina cluster start %s` starts it again.", n, units.BytesSize(float64(freed)), ui.Plural(len(c.Nodes), "node"), n)
		}
		res.Add("%s", line)
	}
	return nil
}

// stopOne records c's labels, reads what its nodes use (docker stats),
// then stops them together.
func stopOne(ctx context.Context, s *session.Session, c cluster.Info) (uint64, error) {
	var freed uint64
	err := s.Env.Step("Stopping "+c.Name, "Stopped "+c.Name, func() error {
		labels := stoppedLabels(s, c.Name)
		var why error = errors.New("its control plane does not run")
		if c.APIRunning() {
			var k session.Kube
			if k, why = s.Kube(c.Name, LabelTimeout); why == nil {
				var l map[string]string
				if l, why = k.NodeLabels(ctx, c.Name+"-control-plane"); why == nil {
					labels = l
				}
			}
		}
		if labels == nil {
			s.UI.Warnf("cluster %s: its labels cannot be read (%v): stopped, it is found by name alone, not by -l or its fleet, until it starts", c.Name, why)
		}
		if err := writeStopped(s, c.Name, labels); err != nil {
			return err
		}
		freed = memory(ctx, s, c)
		return eachNode(c, func(n docker.Node) error {
			if n.State != "running" && n.State != "restarting" && n.State != "paused" {
				return nil
			}
			return s.Docker.Stop(ctx, n.ID)
		})
	})
	return freed, err
}

// memory is what c's running nodes use now; 0 when Docker cannot say.
func memory(ctx context.Context, s *session.Session, c cluster.Info) uint64 {
	var mu sync.Mutex
	var sum uint64
	_ = eachNode(c, func(n docker.Node) error {
		if n.State != "running" {
			return nil
		}
		m, err := s.Docker.Memory(ctx, n.ID)
		if err != nil {
			s.UI.Debugf("%v", err)
			return nil
		}
		mu.Lock()
		sum += m
		mu.Unlock()
		return nil
	})
	return sum
}

// eachNode runs fn on every node of c at once.
func eachNode(c cluster.Info, fn func(docker.Node) error) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		wg.Go(func() { errs[i] = fn(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func writeStopped(s *session.Session, name string, labels map[string]string) error {
	path, err := s.Paths.StoppedRecord(name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(stopped{Labels: labels, Stopped: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fileutil.WriteAtomic(path, data, 0o600)
}

// Start starts the clusters named, selected with -l, or all of them, and
// waits until each is back.
func Start(ctx context.Context, e *session.Env, opts StopOptions) (session.Result, error) {
	s, names, res, err := chooseStartStop(ctx, e, opts, "start")
	if s == nil || err != nil {
		return res, err
	}
	defer s.Close()
	return StartIn(ctx, s, names, opts.Wait, opts.DryRun)
}

// StartIn starts names in s, in that order (a fleet's dependencies
// first); those running already are said to be.
func StartIn(ctx context.Context, s *session.Session, names []string, wait time.Duration, dryRun bool) (session.Result, error) {
	var res session.Result
	var todo []string
	for _, n := range names {
		if c, _ := cluster.Find(s.Clusters, n); c.Running() && !StoppedByMarina(s, n) {
			res.Add("%s is running already.", n)
			continue
		}
		todo = append(todo, n)
	}
	if dryRun {
		var steps []session.Step
		for _, n := range todo {
			c, _ := cluster.Find(s.Clusters, n)
			steps = append(steps, session.Step{Do: fmt.Sprintf("start %s's %s and wait until its API server, every node and its add-ons are ready", n, ui.Plural(len(c.Nodes), "node container"))})
		}
		return session.Planned(steps, strings.Join(res.Lines, " ")), nil
	}
	return res, StartNamed(ctx, s, todo, wait, &res)
}

// StartNamed starts names one after the other, in that order (a fleet's
// dependencies first): each is back before the next starts.
func StartNamed(ctx context.Context, s *session.Session, names []string, wait time.Duration, res *session.Result) error {
	if wait <= 0 {
		wait = StartWait
	}
	for _, n := range names {
		c, _ := cluster.Find(s.Clusters, n)
		line, err := startOne(ctx, s, c, wait)
		if err != nil {
			return err
		}
		res.Add("%s", line)
	}
	return nil
}

// backNamespaces are the add-ons whose pods a started cluster waits for:
// MetalLB answers for its addresses, ExternalDNS keeps its names.
var backNamespaces = []string{addons.MetalLBNamespace, dns.ExternalDNSNamespace}

// startOne starts c's nodes and waits until the cluster is back: its API
// server ready, every node and the add-ons' pods Ready since the start;
// then it checks MetalLB's pool against the slot's, and exports the
// kubeconfig again if lima0 moved while it was stopped.
func startOne(ctx context.Context, s *session.Session, c cluster.Info, wait time.Duration) (string, error) {
	e := s.Env
	var line string
	// A copy: s.Clusters says what was observed until the start is done.
	c.Nodes = slices.Clone(c.Nodes)
	// A start that timed out left the nodes running and the record in
	// place: this one waits for them again, from when they started.
	again := StoppedByMarina(s, c.Name)
	err := e.Step("Starting "+c.Name, "", func() error {
		// The control plane first: the workers' kubelets find it at once.
		sort.SliceStable(c.Nodes, func(i, j int) bool { return c.Nodes[i].Role == "control-plane" && c.Nodes[j].Role != "control-plane" })
		// restarted are the nodes whose kubelets and pods must have
		// spoken since the start; nodes that ran all along need only be
		// Ready (their heartbeats come every few minutes).
		var since time.Time
		var restarted []string
		for _, n := range c.Nodes {
			switch {
			case n.State == "running" || n.State == "restarting" || n.State == "paused":
				if !again {
					continue
				}
			default:
				if err := s.Docker.Start(ctx, n.ID); err != nil {
					return err
				}
			}
			t, err := s.Docker.Started(ctx, n.ID)
			if err != nil {
				return err
			}
			if since.IsZero() || t.Before(since) {
				since = t
			}
			restarted = append(restarted, n.Name)
		}
		for i := range c.Nodes {
			c.Nodes[i].State = "running"
		}
		if err := followAfterStart(ctx, s, c); err != nil {
			return err
		}
		k, err := s.Kube(c.Name, LabelTimeout)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		e.UI.Stage("API server")
		if err := k.Ready(wctx); err != nil {
			return startFailed(c.Name, wait, err)
		}
		e.UI.Stage("nodes and add-ons")
		state, err := kube.Poll(wctx, func(ctx context.Context) (bool, string, error) {
			return k.Back(ctx, since, len(c.Nodes), restarted, backNamespaces)
		})
		if err != nil {
			return startFailed(c.Name, wait, fmt.Errorf("%w (%s)", err, state))
		}
		line = fmt.Sprintf("Started %s: %s, MetalLB and ExternalDNS running", c.Name, state)
		if addrs, found, err := addons.PoolAddresses(wctx, k, addons.PoolName); err == nil {
			want, _ := slot.MetalLBRanges(s.Config.Network.Prefix(), c.Slot)
			switch {
			case !found:
				s.UI.Warnf("cluster %s: MetalLB has no IPAddressPool %s: its LoadBalancer Services get no address (`marina doctor` says more)", c.Name, addons.PoolName)
			case !slices.Equal(addrs, want):
				s.UI.Warnf("cluster %s: MetalLB's pool %s holds %s, not slot %d's %s (`marina doctor` says more)", c.Name, addons.PoolName, strings.Join(addrs, ", "), c.Slot, strings.Join(want, ", "))
			default:
				line += ", pool " + strings.Join(addrs, ", ")
			}
		}
		e.UI.Relabel("Started " + c.Name)
		return removeStopped(s, c.Name)
	})
	return line + ".", err
}

func startFailed(name string, wait time.Duration, err error) error {
	return fmt.Errorf("cluster %s did not come back within %s: %w\nits nodes run; `marina cluster start %s --wait 10m` waits longer, `marina doctor` and `marina shell -- docker logs --tail 50 %s-control-plane` say more", name, wait, err, name, name)
}

// removeStopped removes cluster name's record, if there is one.
func removeStopped(s *session.Session, name string) error {
	path, err := s.Paths.StoppedRecord(name)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// followAfterStart exports c's kubeconfig again when it names an old
// lima0 address: the VM's address moved while c was stopped, and up
// exports only running clusters'. A cluster on the VM's loopback never
// moves; lima0 is read (one guest round trip, once) only for one on it.
func followAfterStart(ctx context.Context, s *session.Session, c cluster.Info) error {
	if c.Loopback() {
		return nil
	}
	if !s.Lima0.IsValid() {
		st, err := s.Guest.Observe(ctx)
		if err != nil {
			return err
		}
		s.Lima0 = st.Lima0.Addr()
	}
	path, err := s.Paths.Kubeconfig(c.Name)
	if err != nil || !kubeconfig.Stale(path, c.Name, s.ClusterServer(c)) {
		return err
	}
	return FollowLima0(ctx, s, []cluster.Info{c})
}

// chooseStartStop opens the session and checks the clusters a stop or a
// start names (verb says which); a nil session when there is nothing to
// do, with res saying why.
func chooseStartStop(ctx context.Context, e *session.Env, opts StopOptions, verb string) (*session.Session, []string, session.Result, error) {
	given := 0
	for _, b := range []bool{len(opts.Names) > 0, opts.Selector != "", opts.All} {
		if b {
			given++
		}
	}
	if given != 1 {
		return nil, nil, session.Result{}, session.Usagef("name the clusters to %s, or select them with -l SELECTOR or --all (one of the three)", verb)
	}
	for _, n := range opts.Names {
		if err := cluster.CheckName(n); err != nil {
			return nil, nil, session.Result{}, err
		}
	}
	sel, err := session.ParseSelector(opts.Selector)
	if err != nil {
		return nil, nil, session.Result{}, err
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.Strict, Running: true, Clusters: true})
	if err != nil {
		return nil, nil, session.Result{}, err
	}
	var names []string
	switch {
	case len(opts.Names) > 0:
		for _, n := range opts.Names {
			c, ok := cluster.Find(s.Clusters, n)
			if !ok {
				s.Close()
				return nil, nil, session.Result{}, fmt.Errorf("there is no cluster %s (clusters: %s); nothing was done", n, strings.Join(ui.OrNone(cluster.Names(s.Clusters)), ", "))
			}
			if c.Slot == 0 {
				s.Close()
				return nil, nil, session.Result{}, fmt.Errorf("cluster %s publishes no marina API port (700N): marina did not make it, so it does not %s it (`marina shell -- docker %s %s-control-plane`); nothing was done", n, verb, verb, n)
			}
		}
		names = ui.Dedupe(opts.Names)
	default:
		rows, err := Rows(ctx, s, sel, opts.Selector)
		if err != nil {
			s.Close()
			return nil, nil, session.Result{}, err
		}
		for _, r := range rows {
			if r.Num > 0 {
				names = append(names, r.Name)
			}
		}
		if len(names) == 0 {
			s.Close()
			if sel != nil {
				return nil, nil, session.Said("No cluster matches -l %s: nothing to %s.", opts.Selector, verb), nil
			}
			return nil, nil, session.Said("There are no clusters to %s.", verb), nil
		}
	}
	return s, names, session.Result{}, nil
}

// anyRunning reports whether a node of c runs (or is on its way).
func anyRunning(c cluster.Info) bool {
	for _, n := range c.Nodes {
		if n.State == "running" || n.State == "restarting" || n.State == "paused" {
			return true
		}
	}
	return false
}

func nodeNames(c cluster.Info) []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Name
	}
	return out
}
