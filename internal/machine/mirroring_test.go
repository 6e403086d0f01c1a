package machine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/vm"
)

// madeWith gives the fixture's VM an instance folder whose lima.yaml is
// marina's template rendered with disablePortMirroring = disable, as
// Lima keeps it.
func madeWith(f *sessiontest.World, disable bool) string {
	f.T.Helper()
	cfg := config.Default()
	cfg.Network.DisablePortMirroring = disable
	b, err := Template(f.Env, cfg)
	if err != nil {
		f.T.Fatal(err)
	}
	files, err := f.Env.Paths.VM("marina")
	if err != nil {
		f.T.Fatal(err)
	}
	dir := files.InstanceDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		f.T.Fatal(err)
	}
	p := filepath.Join(dir, "lima.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		f.T.Fatal(err)
	}
	f.Instance.Dir = dir
	return p
}

// loopback marks cluster name as published on the VM's loopback, as a
// cluster made in loopback mode is.
func loopback(f *sessiontest.World, name string) {
	for i, n := range f.NodeContainers {
		if n.Cluster == name && n.Role == "control-plane" {
			f.NodeContainers[i].APIHosts = map[int]string{n.APIPorts[0]: "127.0.0.1"}
		}
	}
}

func mirroring(f *sessiontest.World, p string) bool {
	f.T.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		f.T.Fatal(err)
	}
	m, err := vm.PortMirroring(b, []int{7001, 7002})
	if err != nil {
		f.T.Fatal(err)
	}
	return m
}

func serverOf(t *testing.T, f *sessiontest.World, name string) string {
	t.Helper()
	p, _ := f.Env.Paths.Kubeconfig(name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := kubeconfig.Server(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Turning mirroring on: without a terminal up only warns, a dry run lists
// the restart, "no" at the prompt keeps the VM, --yes restarts it through
// limactl with the new portForwards, and the direct cluster keeps its
// lima0 kubeconfig throughout.
func TestUpOffersARestartForPortMirroring(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = false })
	lima := madeWith(f, true)
	lima0 := "https://" + f.Lima0.Addr().String() + ":7001"
	f.Cluster("direct", 1, lima0)

	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if !strings.Contains(f.Stderr.String(), "run `marina up --yes`") || len(f.Called("vm.stop")) != 0 || mirroring(f, lima) {
		t.Fatalf("without a terminal up restarted the VM or did not say how:\n%s\n%s", f.Stderr.String(), f.Log())
	}

	r, err := Up(context.Background(), f.Env, UpOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(planned(r), "restart VM marina to turn Lima's port mirroring on (network.disablePortMirroring: false)") || len(f.Called("vm.stop")) != 0 {
		t.Errorf("dry run:\n%s", planned(r))
	}

	f.Env.TTY, f.Env.Stdin = true, strings.NewReader("n\n")
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Stderr.String(), "Restart VM marina now to turn Lima's port mirroring on") || len(f.Called("vm.stop")) != 0 {
		t.Errorf("no at the prompt:\n%s", f.Stderr.String())
	}

	f.Calls = nil
	f.Env.TTY = false
	// The VM's stop stops the node containers; Docker does not start
	// them again by itself.
	f.Cluster("stopped", 3, "")
	f.NodeContainers[len(f.NodeContainers)-1].State = "exited"
	exitNodesOn(f, "vm.stop marina")
	if _, err := Up(context.Background(), f.Env, UpOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	f.Before = nil
	inOrder(t, f.Log(), "vm.stop marina", "vm.set marina .portForwards = ", "vm.start marina", "docker.start direct-cp", "guest.observe", "kube direct nodes")
	if !mirroring(f, lima) {
		t.Error("the VM's lima.yaml still ignores every port")
	}
	if got := f.Called("docker.start"); len(got) != 1 {
		t.Errorf("started %v, want only the cluster that ran before", got)
	}
	if s := serverOf(t, f, "direct"); s != lima0 {
		t.Errorf("the direct cluster's kubeconfig names %s, want %s", s, lima0)
	}
	// Applied: the next up has nothing to restart.
	f.Calls = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("vm.stop"); len(got) != 0 {
		t.Errorf("a second up restarted again: %v", got)
	}
}

// Turning mirroring off would strand a cluster published on the VM's
// loopback: up names it and how to recreate it, and restarts nothing,
// even with --yes; its kubeconfig keeps working.
func TestUpNeverStrandsALoopbackCluster(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = true })
	lima := madeWith(f, false)
	f.Cluster("lo", 2, "https://127.0.0.1:7002")
	loopback(f, "lo")
	for _, o := range []UpOptions{{DryRun: true}, {Yes: true}} {
		f.Stderr.Reset()
		r, err := Up(context.Background(), f.Env, o)
		if err != nil {
			t.Fatalf("%+v: %v\n%s", o, err, f.Stderr.String())
		}
		for _, want := range []string{"1 cluster (lo) would then be unreachable", "marina cluster delete lo", "marina cluster create NAME"} {
			if !strings.Contains(f.Stderr.String(), want) {
				t.Errorf("%+v: the warning lacks %q:\n%s", o, want, f.Stderr.String())
			}
		}
		if strings.Contains(planned(r), "restart VM") {
			t.Errorf("%+v: the plan restarts:\n%s", o, planned(r))
		}
	}
	if got := f.Called("vm.stop"); len(got) != 0 || !mirroring(f, lima) {
		t.Errorf("the VM was restarted: %v", got)
	}
	if s := serverOf(t, f, "lo"); s != "https://127.0.0.1:7002" {
		t.Errorf("lo's kubeconfig names %s", s)
	}
}

// The bug this mends: with the config flipped to direct mode on a VM that
// still mirrors, up re-exported loopback clusters' kubeconfigs to lima0,
// where nothing listens. Each cluster keeps its own mode's address.
func TestUpKeepsALoopbackClustersAddress(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = true })
	madeWith(f, false)
	f.Cluster("lo", 2, "https://127.0.0.1:7002")
	loopback(f, "lo")
	f.Scripts["export kubeconfigs"] = vm.Result{Stdout: []byte(f.Export("lo"))}
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if got := f.Called("guest.run export kubeconfigs"); len(got) != 0 {
		t.Errorf("up re-exported: %v", got)
	}
	if s := serverOf(t, f, "lo"); s != "https://127.0.0.1:7002" {
		t.Errorf("lo's kubeconfig names %s", s)
	}
}

// kubeconfig merge exports each cluster with its own mode's address,
// whatever the config says now.
func TestMergeUsesEachClustersMode(t *testing.T) {
	for _, disable := range []bool{true, false} {
		f := sessiontest.New(t)
		f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = disable })
		f.Cluster("direct", 1, "")
		f.Cluster("lo", 2, "")
		loopback(f, "lo")
		f.Scripts["export kubeconfigs"] = vm.Result{Stdout: []byte(f.Export("direct") + f.Export("lo"))}
		if _, err := kindcluster.MergeKubeconfigs(context.Background(), f.Env, nil, false); err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		want := map[string]string{
			"direct": "https://" + f.Lima0.Addr().String() + ":" + strconv.Itoa(slot.APIPort(1)),
			"lo":     "https://127.0.0.1:" + strconv.Itoa(slot.APIPort(2)),
		}
		for n, w := range want {
			if s := serverOf(t, f, n); s != w {
				t.Errorf("disablePortMirroring=%v: %s's kubeconfig names %s, want %s", disable, n, s, w)
			}
		}
	}
}

// A loopback-mode cluster on a VM that does not mirror ports would have a
// kubeconfig where nothing answers: refused before kind runs.
func TestCreateRefusesLoopbackModeOnAVMThatDoesNotMirror(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = false })
	madeWith(f, true)
	_, err := kindcluster.Create(context.Background(), f.Env, kindcluster.CreateOptions{Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "Run `marina up`") {
		t.Fatalf("err = %v", err)
	}
	if got := f.Called("guest.run"); len(got) != 0 {
		t.Errorf("it ran in the guest: %v", got)
	}
}

// A restart that fails after the stop says what is left: the VM, and the
// clusters' nodes with the command that starts them.
func TestFailedRestartNamesWhatItLeft(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = false })
	madeWith(f, true)
	f.Cluster("direct", 1, "https://"+f.Lima0.Addr().String()+":7001")
	f.Fail["vm.start"] = errors.New("start VM marina: boot timed out")
	_, err := Up(context.Background(), f.Env, UpOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "`marina up` starts it, then `marina shell -- docker start direct-control-plane` starts the clusters' nodes") {
		t.Fatalf("err = %v", err)
	}
}

// A VM that does not stop is not edited: limactl would change its file
// and leave the running VM as it was.
func TestRestartNeedsTheVMStopped(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = false })
	lima := madeWith(f, true)
	f.Before = func(call string) {
		if call == "vm.get marina" && len(f.Called("vm.stop")) > 0 {
			f.Mu.Lock()
			f.Instance.Status = vm.StatusRunning
			f.Mu.Unlock()
		}
	}
	_, err := Up(context.Background(), f.Env, UpOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "did not stop") || len(f.Called("vm.set")) != 0 || mirroring(f, lima) {
		t.Fatalf("err = %v\n%s", err, f.Log())
	}
}

// A cluster with a stopped worker still answers on its control plane: a
// lima0 move re-exports its kubeconfig.
func TestUpFollowsAClusterWithAStoppedWorker(t *testing.T) {
	f := sessiontest.New(t)
	f.Cluster("dev", 1, "https://192.168.64.3:7001")
	f.NodeContainers = append(f.NodeContainers, docker.Node{Container: docker.Container{ID: "dev-w", Name: "dev-worker", State: "exited"}, Cluster: "dev", Role: "worker"})
	f.Lima0 = mustPrefix("192.168.64.7/24")
	f.Scripts["export kubeconfigs"] = vm.Result{Stdout: []byte(f.Export("dev"))}
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if s := serverOf(t, f, "dev"); s != "https://192.168.64.7:7001" {
		t.Errorf("dev's kubeconfig names %s", s)
	}
}

// A VM made before the push registry does not forward its port to the
// Mac: up offers the same restart, which gives the VM the template's
// portForwards; then the Mac has localhost:5001.
func TestUpOffersARestartForThePushRegistrysForward(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	cfg := config.Default()
	cfg.Registries.Local.Enabled = false
	b, err := Template(f.Env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	lima := madeWith(f, true)
	if err := os.WriteFile(lima, b, 0o644); err != nil {
		t.Fatal(err)
	}
	forwards := func() bool {
		t.Helper()
		b, err := os.ReadFile(lima)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := vm.Forwards(b, 5001)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if forwards() {
		t.Fatal("the old template forwards 5001 already")
	}
	r, err := Up(context.Background(), f.Env, UpOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(planned(r), "restart VM marina to forward the push registry's port to the Mac (localhost:5001)") {
		t.Errorf("dry run:\n%s", planned(r))
	}
	if _, err := Up(context.Background(), f.Env, UpOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if !forwards() || mirroring(f, lima) {
		t.Errorf("after the restart: forwards 5001 %v, mirrors the API ports %v; want true, false", forwards(), mirroring(f, lima))
	}
	f.Calls = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("vm.stop"); len(got) != 0 {
		t.Errorf("a second up restarted again: %v", got)
	}
}
