package kindcluster

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

func nodeState(f *sessiontest.World, id string) string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, n := range f.NodeContainers {
		if n.ID == id {
			return n.State
		}
	}
	return "missing"
}

// twoOnLoopback is sessiontest.TwoClusters with the API ports published
// on the VM's loopback, as their kubeconfigs say (Lima mirrors them).
func twoOnLoopback(t *testing.T) *sessiontest.World {
	f := sessiontest.TwoClusters(t)
	for i := range f.NodeContainers {
		n := &f.NodeContainers[i]
		n.APIHosts = map[int]string{n.APIPorts[0]: "127.0.0.1"}
	}
	return f
}

// Stopping one of two clusters stops its nodes alone, records its labels
// (which -l then matches while it is stopped), and says what it freed;
// starting it waits for it to be back and drops the record.
func TestStopThenStart(t *testing.T) {
	f := twoOnLoopback(t)
	f.Labels = map[string]map[string]string{"a": {"env": "test", cluster.FleetLabel: "demo"}}
	ctx := context.Background()
	res, err := Stop(ctx, f.Env, StopOptions{Names: []string{"a"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Log())
	}
	if nodeState(f, "a-cp") != "exited" || nodeState(f, "b-cp") != "running" {
		t.Errorf("after stop a: a-cp %s, b-cp %s", nodeState(f, "a-cp"), nodeState(f, "b-cp"))
	}
	if said := sessiontest.Said(res); !strings.Contains(said, "Stopped a, freeing 300MiB of the VM's memory") {
		t.Errorf("stop said %q", said)
	}
	// Stopped, its labels come from the record: no API server answers.
	rows, err := List(ctx, f.Env, "env=test")
	if err != nil || len(rows) != 1 || rows[0].Name != "a" || rows[0].State != "stopped" {
		t.Fatalf("list -l env=test while a is stopped: %+v, %v", rows, err)
	}
	if got := CompleteStopped(ctx, f.Env); !slices.Equal(got, []string{"a"}) {
		t.Errorf("start completes %v", got)
	}
	if got := CompleteFleets(ctx, f.Env); !slices.Equal(got, []string{"demo"}) {
		t.Errorf("fleets complete %v", got)
	}
	again, err := Stop(ctx, f.Env, StopOptions{Selector: "env=test"})
	if err != nil || !strings.Contains(sessiontest.Said(again), "a is stopped already.") {
		t.Errorf("stop a again: %q, %v", sessiontest.Said(again), err)
	}

	f.Calls = nil
	res, err = Start(ctx, f.Env, StopOptions{Names: []string{"a", "b"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Log())
	}
	said := sessiontest.Said(res)
	for _, want := range []string{"Started a: 1 nodes Ready, MetalLB and ExternalDNS running, pool 172.30.1.1-172.30.1.7", "b is running already."} {
		if !strings.Contains(said, want) {
			t.Errorf("start said %q, want %q", said, want)
		}
	}
	calls := f.Log()
	for _, want := range []string{"docker.start a-cp", "docker.started a-cp", "kube a ready", "kube a back 1 metallb-system,external-dns since the start of a-control-plane"} {
		if !strings.Contains(calls, want) {
			t.Errorf("start did not call %q:\n%s", want, calls)
		}
	}
	if strings.Contains(calls, "docker.start b-cp") {
		t.Errorf("start touched the running b:\n%s", calls)
	}
	rec, _ := f.Env.Paths.StoppedRecord("a")
	if _, err := os.Stat(rec); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the record stays after start: %v", err)
	}
}

// A start that does not come back in time says so and how to go on; the
// record stays, so the labels are still known.
func TestStartNotBack(t *testing.T) {
	f := twoOnLoopback(t)
	ctx := context.Background()
	if _, err := Stop(ctx, f.Env, StopOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	f.Fail["kube a back"] = context.DeadlineExceeded
	_, err := Start(ctx, f.Env, StopOptions{All: true, Wait: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "cluster a did not come back within 100ms") || !strings.Contains(err.Error(), "marina cluster start a --wait 10m") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(f.Log(), "docker.start b-cp") {
		t.Errorf("b started after a failed:\n%s", f.Log())
	}
	rec, _ := f.Env.Paths.StoppedRecord("a")
	if _, err := os.Stat(rec); err != nil {
		t.Errorf("the record went with a failed start: %v", err)
	}
}

// What to stop is said one way; anything else, or a name there is not,
// changes nothing. --dry-run plans and stops nothing.
func TestStopChoices(t *testing.T) {
	cases := []struct {
		name string
		opts StopOptions
		err  string
		said string
	}{
		{name: "nothing", err: "name the clusters to stop, or select them with -l SELECTOR or --all"},
		{name: "names and --all", opts: StopOptions{Names: []string{"a"}, All: true}, err: "one of the three"},
		{name: "unknown", opts: StopOptions{Names: []string{"a", "zz"}}, err: "there is no cluster zz"},
		{name: "invalid", opts: StopOptions{Names: []string{"A_"}}, err: "A_"},
		{name: "matching nothing", opts: StopOptions{Selector: "env=none"}, said: "No cluster matches -l env=none: nothing to stop."},
		{name: "dry run", opts: StopOptions{All: true, DryRun: true}, said: "stop a's 1 node container (a-control-plane); it keeps its nodes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := twoOnLoopback(t)
			res, err := Stop(context.Background(), f.Env, c.opts)
			if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
			if c.err == "" && err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sessiontest.Said(res), c.said) {
				t.Errorf("said %q, want %q", sessiontest.Said(res), c.said)
			}
			if got := f.Called("docker.stop"); len(got) > 0 {
				t.Errorf("stopped %v", got)
			}
			var u *session.ExitError
			if c.name == "nothing" && (!errors.As(err, &u) || u.Code != session.ExitUsage) {
				t.Errorf("no choice is not a usage error: %v", err)
			}
		})
	}
}

// A record marina cannot trust (written by someone else) gives no labels
// and is said to be unreadable.
func TestStoppedRecordUntrusted(t *testing.T) {
	f := twoOnLoopback(t)
	ctx := context.Background()
	if _, err := Stop(ctx, f.Env, StopOptions{Names: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	rec, _ := f.Env.Paths.StoppedRecord("a")
	if err := os.WriteFile(rec, []byte(`{"labels":{"env":"x\ny"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := List(ctx, f.Env, "")
	if err != nil || rows[0].Name != "a" || rows[0].Labels != nil {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	if !strings.Contains(f.Stderr.String(), "cannot be read") || !strings.Contains(f.Stderr.String(), "label env value") {
		t.Errorf("no warning: %q", f.Stderr.String())
	}
}

// A cluster on lima0 whose kubeconfig names an old address (the VM moved
// while it was stopped) has it exported again as soon as its nodes run,
// before the wait that reads its API through it; one on the loopback
// costs no guest round trip.
func TestStartFollowsLima0(t *testing.T) {
	f := sessiontest.TwoClusters(t) // published on every address: lima0
	ctx := context.Background()
	if _, err := Stop(ctx, f.Env, StopOptions{Names: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	f.Scripts["export kubeconfigs"] = vm.Result{Stdout: []byte(f.Export("a"))}
	f.Calls = nil
	if _, err := Start(ctx, f.Env, StopOptions{Names: []string{"a"}}); err != nil {
		t.Fatalf("%v\n%s", err, f.Log())
	}
	log := f.Log()
	if i, j := strings.Index(log, "guest.run export kubeconfigs"), strings.Index(log, "kube a ready"); i < 0 || j < i {
		t.Errorf("the kubeconfig was not exported before the wait:\n%s", log)
	}
	path, _ := f.Env.Paths.Kubeconfig("a")
	if kubeconfig.Stale(path, "a", "https://192.168.64.3:7001") {
		t.Errorf("a's kubeconfig still names the old address")
	}

	g := twoOnLoopback(t)
	if _, err := Stop(ctx, g.Env, StopOptions{Names: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(ctx, g.Env, StopOptions{Names: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if n := len(g.Called("guest.")); n != 0 {
		t.Errorf("stop and start on the loopback made %d guest round trips", n)
	}
}

// A start that timed out leaves the nodes running and the record: the
// next start waits for all of them again (from their start) and ends
// with the record gone. A cluster with a worker stopped (not by marina)
// starts that worker and waits on its kubelet alone for fresh news.
func TestStartAgainAndPartly(t *testing.T) {
	f := twoOnLoopback(t)
	ctx := context.Background()
	if _, err := Stop(ctx, f.Env, StopOptions{Names: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	f.Fail["kube a back"] = context.DeadlineExceeded
	if _, err := Start(ctx, f.Env, StopOptions{Names: []string{"a"}, Wait: 100 * time.Millisecond}); err == nil {
		t.Fatal("the first start did not fail")
	}
	f.Calls = nil
	res, err := Start(ctx, f.Env, StopOptions{Names: []string{"a"}})
	if err != nil || !strings.Contains(sessiontest.Said(res), "Started a:") {
		t.Fatalf("start again: %q, %v", sessiontest.Said(res), err)
	}
	if got := f.Called("docker.start "); len(got) != 0 {
		t.Errorf("start again started %v", got)
	}
	if !strings.Contains(f.Log(), "since the start of a-control-plane") {
		t.Errorf("start again did not wait on a's node:\n%s", f.Log())
	}
	if StoppedByMarina(mustSession(t, f), "a") {
		t.Error("the record stays after the second start")
	}

	f.Mu.Lock()
	f.NodeContainers = append(f.NodeContainers, docker.Node{Container: docker.Container{ID: "b-w", Name: "b-worker", State: "exited"}, Cluster: "b", Role: "worker"})
	f.Mu.Unlock()
	f.Calls = nil
	if _, err := Start(ctx, f.Env, StopOptions{Names: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("docker.start "); !slices.Equal(got, []string{"docker.start b-w"}) {
		t.Errorf("a partly stopped b: started %v", got)
	}
	if !strings.Contains(f.Log(), "kube b back 2 metallb-system,external-dns since the start of b-worker") {
		t.Errorf("b's wait:\n%s", f.Log())
	}
}

func mustSession(t *testing.T, f *sessiontest.World) *session.Session {
	t.Helper()
	s, err := session.Open(context.Background(), f.Env, session.Needs{Config: session.VMOnly})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
