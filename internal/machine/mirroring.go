package machine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// mirroringChange is a network.disablePortMirroring setting the VM does
// not have yet. Lima reads its portForwards only as the VM starts, so
// applying it is a restart; each cluster keeps the API address it was
// created with (its published address), so the change never moves one.
type mirroringChange struct {
	on     bool   // Lima is to mirror ports: new clusters' API on the Mac's 127.0.0.1
	mirror bool   // the mirroring itself changes (else only forward)
	edit   string // the limactl start --set expression
	// forward is the push registry's port, when the VM does not forward
	// it to the Mac yet (registries.local, on a VM made before it).
	forward int
}

func (m *mirroringChange) what() string {
	var w string
	switch {
	case !m.mirror:
		return fmt.Sprintf("forward the push registry's port to the Mac (localhost:%d)", m.forward)
	case m.on:
		w = "turn Lima's port mirroring on (network.disablePortMirroring: false)"
	default:
		w = "turn Lima's port mirroring off (network.disablePortMirroring: true)"
	}
	if m.forward != 0 {
		w += fmt.Sprintf(" and forward the push registry's port (localhost:%d)", m.forward)
	}
	return w
}

// planMirroring compares the config's port mirroring, and the push
// registry's forward, with the VM's: nil when they agree or there is no
// VM yet (a new VM gets the config's).
func planMirroring(e *session.Env, cfg config.Config, in *vm.Instance) (*mirroringChange, error) {
	if in == nil {
		return nil, nil
	}
	have, err := session.VMMirrors(e.Paths, in.Name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // Lima lists it but has no file: nothing to compare
	}
	if err != nil {
		return nil, err
	}
	want := !cfg.Network.DisablePortMirroring
	forward := 0
	if l := cfg.Registries.Local; l.Enabled {
		ok, err := session.VMForwards(e.Paths, in.Name, l.Port)
		if err != nil {
			return nil, err
		}
		if !ok {
			forward = l.Port
		}
	}
	if have == want && forward == 0 {
		return nil, nil
	}
	tmpl, err := Template(e, cfg)
	if err != nil {
		return nil, err
	}
	edit, err := vm.PortForwardsEdit(tmpl)
	if err != nil {
		return nil, err
	}
	return &mirroringChange{on: want, mirror: have != want, edit: edit, forward: forward}, nil
}

// stranded are the clusters m would leave unreachable: turning mirroring
// off strands every cluster published on the VM's loopback, which the Mac
// reaches only through Lima's mirroring, never on lima0. Turning it on
// strands none: clusters published on every address stay reachable on
// lima0.
func (m *mirroringChange) stranded(cs []cluster.Info) []string {
	if m.on || !m.mirror {
		return nil
	}
	var out []string
	for _, c := range cs {
		if c.Loopback() {
			out = append(out, c.Name)
		}
	}
	return out
}

// strandedWarning says why the restart is not made and how to switch.
func strandedWarning(name string, m *mirroringChange, stranded []string) string {
	names := strings.Join(stranded, " ")
	return fmt.Sprintf(`the config asks to %s, but %s would then be unreachable: their API servers listen on VM %s's 127.0.0.1, which the Mac reaches only through Lima's port mirroring, never on lima0. marina did not restart the VM. To switch, recreate them in the new mode:
  marina cluster delete %s
  marina up                 (restarts the VM with mirroring off)
  marina cluster create NAME   (for each of them)
or keep mirroring: set network.disablePortMirroring: false again`,
		m.what(), ui.Plural(len(stranded), "cluster")+" ("+names+")", name, names)
}

// restartForMirroring applies m to the running VM: after a confirmation
// (a terminal's answer or --yes; without either it warns and changes
// nothing) it stops the VM, edits its Lima settings through limactl and
// starts it, with the node containers of the clusters that ran. With
// dryRun it returns the step instead. It never strands a cluster: while
// one would be, it only warns. resumed are the clusters started again,
// whose API servers waitAPIs then waits for.
func restartForMirroring(ctx context.Context, s *session.Session, m *mirroringChange, opts UpOptions) (step *session.Step, resumed []cluster.Info, err error) {
	e, name := s.Env, s.Name
	cs, err := s.ListClusters(ctx)
	if err != nil {
		return nil, nil, err
	}
	if st := m.stranded(cs); len(st) > 0 {
		e.UI.Warnf("%s", strandedWarning(name, m, st))
		return nil, nil, nil
	}
	step = &session.Step{Do: fmt.Sprintf("restart VM %s to %s: stop it, set its portForwards through limactl, start it and the clusters that run now; every cluster keeps its API address", name, m.what()), Reason: "asks first; --yes does not"}
	if opts.DryRun {
		return step, nil, nil
	}
	if !opts.Yes {
		if !e.TTY {
			e.UI.Warnf("the config asks to %s, which needs a restart of VM %s: run `marina up --yes` (or marina up in a terminal) to restart it; nothing was changed", m.what(), name)
			return nil, nil, nil
		}
		if !ui.Confirm(e.Stdin, e.Stderr, fmt.Sprintf("Restart VM %s now to %s? (every cluster keeps its API address)", name, m.what())) {
			e.UI.Warnf("VM %s was not restarted: it keeps its port mirroring until `marina up` restarts it", name)
			return nil, nil, nil
		}
	}
	ran := runningNodes(cs)
	if err := restart(ctx, s, "Restarting VM "+name+" to "+m.what(), vm.Edits{Set: []string{m.edit}}, ran); err != nil {
		return nil, nil, err
	}
	resumed, err = resume(ctx, s, cs, ran)
	return nil, resumed, err
}

// runningNodes are the node containers that run now, by ID.
func runningNodes(cs []cluster.Info) map[string]string {
	out := map[string]string{}
	for _, c := range cs {
		for _, n := range c.Nodes {
			if n.State == "running" {
				out[n.ID] = n.Name
			}
		}
	}
	return out
}

// startCommand is the command that starts nodes by hand, for messages.
func startCommand(nodes map[string]string) string {
	names := slices.Sorted(maps.Values(nodes))
	return run.Quote(append([]string{"marina", "shell", "--", "docker", "start"}, names...))
}

// resume starts again the node containers that ran before marina
// restarted the VM: Docker brings a kind node back after a restart only
// when it did not stop cleanly. A node that was stopped before stays
// stopped. It returns the clusters whose API server it brought back.
func resume(ctx context.Context, s *session.Session, before []cluster.Info, ran map[string]string) ([]cluster.Info, error) {
	if len(ran) == 0 {
		return nil, nil
	}
	now, err := s.ListClusters(ctx)
	if err != nil {
		return nil, err
	}
	var back []cluster.Info
	for _, c := range before {
		if c.APIRunning() {
			back = append(back, c)
		}
	}
	var start []docker.Node
	for _, c := range now {
		for _, n := range c.Nodes {
			if _, ok := ran[n.ID]; ok && n.State != "running" {
				start = append(start, n)
			}
		}
	}
	if len(start) == 0 {
		return back, nil
	}
	names := strings.Join(cluster.Names(back), ", ")
	return back, s.Step("Starting the clusters that ran before: "+names, "", func() error {
		var errs []error
		for _, n := range start {
			if err := s.Docker.Start(ctx, n.ID); err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%w\n`%s` starts them by hand", err, startCommand(ran))
		}
		return nil
	})
}

// waitAPIs waits a bounded time for the API servers of cs through their
// own kubeconfigs, which converge has pointed at lima0's address now, so
// that up ends with every restarted cluster answering.
func waitAPIs(ctx context.Context, s *session.Session, cs []cluster.Info) error {
	if len(cs) == 0 {
		return nil
	}
	names := strings.Join(cluster.Names(cs), ", ")
	return s.Step("Waiting for the API servers of "+names, "API servers of "+names+" answer", func() error {
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Go(func() {
				if err := waitAPI(ctx, s, c.Name); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("cluster %s: %w", c.Name, err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}

func waitAPI(ctx context.Context, s *session.Session, name string) error {
	k, err := s.Kube(name, 5*time.Second)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, apiWait)
	defer cancel()
	// Every error is waited through: an API server that is starting
	// refuses connections, then may answer 403 until its RBAC caches
	// have synced.
	state, err := kube.Poll(wctx, func(ctx context.Context) (bool, string, error) {
		if _, err := k.Nodes(ctx); err != nil {
			return false, err.Error(), ctx.Err()
		}
		return true, "answering", nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("its API server did not answer within %s (last: %s): `marina doctor` looks at it", apiWait, state)
	}
	return err
}

// apiWait bounds the wait for a restarted cluster's API server: a kind
// node boots its control plane again in well under a minute.
const apiWait = 2 * time.Minute

// restart stops the running VM and starts it with edits; the Docker
// connection is made again over the new forwarded socket.
func restart(ctx context.Context, s *session.Session, label string, edits vm.Edits, nodes map[string]string) error {
	e, name := s.Env, s.Name
	if s.Docker != nil {
		s.Docker.Close()
		s.Docker = nil
	}
	// What an interrupted or failed restart leaves: a stopped VM, and the
	// clusters that ran in it stopped too.
	left := fmt.Sprintf("VM %s may be stopped: `marina up` starts it", name)
	if len(nodes) > 0 {
		left += fmt.Sprintf(", then `%s` starts the clusters' nodes", startCommand(nodes))
	}
	e.SetLeftover(left)
	defer e.SetLeftover("")
	err := e.Step(label, "Restarted VM "+name, func() error {
		// The folder Lima mounts may have been removed by hand since the
		// VM started; the start would fail on it with the VM stopped.
		if err := MakeCacheFolder(s.Config, e.Paths); err != nil {
			return err
		}
		if err := s.VM.Stop(ctx, name); err != nil {
			return err
		}
		// limactl start edits a running instance's file and leaves the VM
		// as it is: the file would then say a mode the VM does not have.
		if in, err := s.VM.Get(ctx, name); err != nil {
			return err
		} else if in == nil || in.Status != vm.StatusStopped {
			return fmt.Errorf("VM %s did not stop (another marina or limactl may have started it): nothing was changed; run `marina up` again", name)
		}
		if err := s.VM.Start(ctx, name, edits); err != nil {
			files, _ := e.Paths.VM(name)
			return fmt.Errorf("%w\n%s (Lima's logs: %s)", err, left, files.InstanceDir)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.Instance, err = s.VM.Get(ctx, name); err != nil {
		return err
	}
	s.Docker, err = e.Deps.Docker(s.Socket())
	return err
}
