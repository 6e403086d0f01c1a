package fleet

// fleet apply and fleet delete through the fixture: the plan, the slots
// held while the creates run, the order along the dependencies, FailFast,
// ContinueOnError, adoption and the delete order.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
	"k8s.io/client-go/tools/clientcmd"
)

// fleetFixture is a fixture where kind creates any cluster: its node
// appears in the slot the cluster's reservation holds, which is how the
// fixture proves a slot is held while kind runs.
func fleetFixture(t *testing.T, strategy string) (*sessiontest.World, string) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.DNSWarm()
	for _, n := range []string{"east", "west", "mesh", "other"} {
		f.Scripts["kind create cluster "+n] = vm.Result{Stdout: []byte(f.Export(n))}
	}
	f.Before = func(call string) {
		name, ok := strings.CutPrefix(call, "guest.run kind create cluster ")
		if !ok {
			return
		}
		n := heldSlot(t, f, name)
		f.Mu.Lock()
		f.NodeContainers = append(f.NodeContainers, docker.Node{Container: docker.Container{ID: name + "-cp", Name: name + "-control-plane", State: "running"}, Cluster: name, Role: "control-plane", APIPorts: []int{slot.APIPort(n)}})
		f.Mu.Unlock()
	}
	file := filepath.Join(t.TempDir(), "yaml")
	if err := os.WriteFile(file, fmt.Appendf(nil, sessiontest.DemoFleet, strategy), 0o600); err != nil {
		t.Fatal(err)
	}
	return f, file
}

// heldSlot is the slot this process holds for name; 0 when none.
func heldSlot(t *testing.T, f *sessiontest.World, name string) int {
	rs, err := cluster.Reservations{Dir: f.Env.Paths.Slots()}.List()
	if err != nil {
		t.Error(err)
	}
	for _, r := range rs {
		if r.Name == name && r.PID == os.Getpid() {
			return r.Slot
		}
	}
	t.Errorf("kind creates %s without a held slot (held: %+v)", name, rs)
	return 0
}

func slotOf(f *sessiontest.World, name string) int {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, c := range cluster.Group(f.NodeContainers) {
		if c.Name == name {
			return c.Slot
		}
	}
	return 0
}

// index is the position of the first call starting with prefix; -1 when
// none.
func index(f *sessiontest.World, prefix string) int {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.IndexFunc(f.Calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

func lastIndex(calls []string, prefix string) int {
	for i := len(calls) - 1; i >= 0; i-- {
		if strings.HasPrefix(calls[i], prefix) {
			return i
		}
	}
	return -1
}

func TestFleetApplyCreatesAlongTheDependencies(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	rep, err := apply(context.Background(), f, ApplyOptions{File: file})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	for name, want := range map[string]int{"east": 1, "west": 5, "mesh": 2} {
		if got := slotOf(f, name); got != want {
			t.Errorf("%s is in slot %d, want %d", name, got, want)
		}
		if !f.HasContext(name) {
			t.Errorf("%s's kubeconfig was not merged", name)
		}
	}
	// mesh's kind runs only after both its dependencies are done.
	f.Mu.Lock()
	calls := slices.Clone(f.Calls)
	f.Mu.Unlock()
	mesh := slices.Index(calls, "guest.run kind create cluster mesh")
	for _, dep := range []string{"east", "west"} {
		if done := lastIndex(calls, "kube "+dep+" "); mesh < done {
			t.Errorf("mesh was started (call %d) before %s was done (call %d):\n%s", mesh, dep, done, strings.Join(calls, "\n"))
		}
	}
	for name, want := range map[string][]string{
		"east": {"env: demo", cluster.FleetLabel + ": demo"},
		"mesh": {"env: demo", "role: hub", cluster.FleetLabel + ": demo"},
	} {
		body := kindConfigOf(t, f.Bodies["kind create cluster "+name])
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s's kind config has no %q", name, w)
			}
		}
	}
	// west pulls through the quay.io mirror alone.
	west, east := f.Bodies["kind create cluster west"], f.Bodies["kind create cluster east"]
	if !strings.Contains(west, "quay.io") || strings.Contains(west, "docker.io") || !strings.Contains(east, "docker.io") {
		t.Errorf("mirror subsets: west has quay.io %v, docker.io %v; east has docker.io %v",
			strings.Contains(west, "quay.io"), strings.Contains(west, "docker.io"), strings.Contains(east, "docker.io"))
	}
	for _, c := range []string{"net.metrics-server-manifest v", "kube mesh apply-metrics-server insecure=true", "kube mesh wait deployment kube-system/metrics-server available"} {
		if index(f, c) < 0 {
			t.Errorf("no %q call", c)
		}
	}
	if index(f, "kube east apply-metrics-server") >= 0 {
		t.Error("east got metrics-server, which only mesh asks for")
	}
	if summary(rep) != "3 0 0" {
		t.Errorf("created, skipped, failed: %s", summary(rep))
	}
	// The first cluster of the manifest is the current context, once the
	// creates are done (not whichever finished last).
	if cfg, err := clientcmd.LoadFromFile(f.KubeconfigFile()); err != nil || rep.Current != "east" || cfg.CurrentContext != "east" {
		t.Errorf("current context %q (report: %q), %v", cfg.CurrentContext, rep.Current, err)
	}
	if ents, _ := os.ReadDir(f.Env.Paths.Slots()); len(ents) != 0 {
		t.Errorf("slot reservations are still held: %v", ents)
	}
	if f.Env.Leftover() != "" {
		t.Errorf("leftover after a finished apply: %q", f.Env.Leftover())
	}

	// Applying again changes nothing once the nodes carry the labels.
	f.Mu.Lock()
	f.Labels = map[string]map[string]string{
		"east": {"env": "demo", cluster.FleetLabel: "demo"},
		"west": {"env": "demo", cluster.FleetLabel: "demo"},
		"mesh": {"env": "demo", "role": "hub", cluster.FleetLabel: "demo"},
	}
	before := len(f.Calls)
	f.Mu.Unlock()
	rep, err = apply(context.Background(), f, ApplyOptions{File: file})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	f.Mu.Lock()
	again := slices.Clone(f.Calls[before:])
	f.Mu.Unlock()
	for _, c := range again {
		if strings.HasPrefix(c, "guest.run") || strings.Contains(c, "label-nodes") {
			t.Errorf("the second apply changed something: %s", c)
		}
	}
	if summary(rep) != "0 3 0" || rep.Count("adopted")+rep.Count("labelled") != 0 {
		t.Errorf("second apply: %s, %+v", summary(rep), rep.Clusters)
	}
}

// The plan is printed and nothing is made or held.
func TestFleetApplyDryRun(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	f.Cluster("dev", 1, "")
	rep, err := apply(context.Background(), f, ApplyOptions{File: file, DryRun: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if rep.Fleet != "demo" || rep.MaxParallel != 2 || rep.Strategy != "FailFast" || !rep.DryRun {
		t.Errorf("plan %+v", rep)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`^east 2 create  mirrors=all, labels env=demo$`),
		regexp.MustCompile(`^west 5 create  mirrors=registry-quayio, labels env=demo$`),
		regexp.MustCompile(`^mesh 3 create east,west mirrors=all, labels env=demo,role=hub, metrics-server v\S+ \(--kubelet-insecure-tls\)$`),
	} {
		name, _, _ := strings.Cut(want.String()[1:], " ")
		if got := row(rep, name); !want.MatchString(got) {
			t.Errorf("plan has %q, not %s", got, want)
		}
	}
	if got := f.Called("guest.run"); len(got) != 0 {
		t.Errorf("a dry run ran %v", got)
	}
	if ents, _ := os.ReadDir(f.Env.Paths.Slots()); len(ents) != 0 {
		t.Errorf("a dry run holds slots: %v", ents)
	}
}

// Under FailFast a failure rolls back its cluster and nothing new starts.
func TestFleetApplyFailFast(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	f.Fail["kube east pool"] = errBoom
	rep, err := apply(context.Background(), f, ApplyOptions{File: file, MaxParallel: 1})
	if err != nil || rep == nil {
		t.Fatalf("error = %v: a failed cluster is the report's, not an error", err)
	}
	if got := f.Called("guest.run kind delete cluster east"); len(got) != 1 {
		t.Errorf("east was not rolled back once: %v", got)
	}
	for _, n := range []string{"west", "mesh"} {
		if index(f, "guest.run kind create cluster "+n) >= 0 {
			t.Errorf("%s was started after east failed", n)
		}
	}
	if summary(rep) != "0 2 1" {
		t.Errorf("created, skipped, failed: %s", summary(rep))
	}
	if fails := rep.Failures(); len(fails) != 1 || !strings.HasPrefix(fails[0], "cluster east: ") || !strings.Contains(fails[0], "boom") {
		t.Errorf("the failure is not reported: %q", fails)
	}
	if ents, _ := os.ReadDir(f.Env.Paths.Slots()); len(ents) != 0 {
		t.Errorf("slot reservations are still held: %v", ents)
	}
}

// Under ContinueOnError only the failure's dependents are skipped.
func TestFleetApplyContinueOnError(t *testing.T) {
	f, file := fleetFixture(t, "ContinueOnError")
	f.Fail["kube east pool"] = errBoom
	rep, err := apply(context.Background(), f, ApplyOptions{File: file, MaxParallel: 1})
	if err != nil || rep == nil {
		t.Fatalf("error = %v: a failed cluster is the report's, not an error", err)
	}
	if slotOf(f, "west") != 5 || slotOf(f, "mesh") != 0 {
		t.Errorf("west in slot %d (want 5), mesh in slot %d (want none)", slotOf(f, "west"), slotOf(f, "mesh"))
	}
	got := map[string]string{}
	for _, c := range rep.Clusters {
		got[c.Name] = c.Result + " " + c.Reason
		if c.Result == "created" && (c.Start == nil || len(c.Phases) == 0) {
			t.Errorf("%s has no timings: %+v", c.Name, c)
		}
		// A created cluster's phases are its create's: kind's and each
		// add-on's steps, which ran at once on its one row.
		if c.Result == "created" && !slices.ContainsFunc(c.Phases, func(p ui.StepTime) bool { return strings.HasPrefix(p.Step, "MetalLB: ") }) {
			t.Errorf("%s's phases do not time its add-ons: %+v", c.Name, c.Phases)
		}
	}
	if !strings.HasPrefix(got["east"], "failed ") || got["west"] != "created " || got["mesh"] != `skipped dependency "east" failed` {
		t.Errorf("results: %q", got)
	}
	if rep.Created != 1 || rep.Failed != 1 || rep.Skipped != 1 || rep.MakespanSeconds <= 0 {
		t.Errorf("report counts: %+v", rep)
	}
}

// A cluster of the manifest's name made outside the fleet is reported,
// and made the fleet's with --adopt.
func TestFleetApplyAdopts(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	f.Cluster("east", 3, "https://127.0.0.1:7003")
	rep, err := apply(context.Background(), f, ApplyOptions{File: file, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := row(rep, "east"); !strings.HasPrefix(got, "east 3 skip ") || !slices.Contains(notes(rep, "east"), "exists without a fleet label: it is left as it is (--adopt makes it this fleet's)") {
		t.Errorf("plan: %s %q", got, notes(rep, "east"))
	}
	rep, err = apply(context.Background(), f, ApplyOptions{File: file, DryRun: true, Adopt: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := row(rep, "east"); got != "east 3 adopt  mirrors=all, set env=demo,marina.dev/fleet=demo" {
		t.Errorf("plan with --adopt: %s", got)
	}
	if _, err := apply(context.Background(), f, ApplyOptions{File: file, Adopt: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if index(f, "kube east label-nodes env=demo,marina.dev/fleet=demo") < 0 || index(f, "guest.run kind create cluster east") >= 0 {
		t.Errorf("east was not adopted in place:\n%s", f.Log())
	}
	// The other clusters fill slots around east's.
	if slotOf(f, "west") != 5 || slotOf(f, "mesh") != 1 {
		t.Errorf("west in %d, mesh in %d", slotOf(f, "west"), slotOf(f, "mesh"))
	}
}

// A pinned num that is another cluster's stops the apply before anything
// is made.
func TestFleetApplyPinnedSlotTaken(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	f.Cluster("dev", 5, "")
	_, err := apply(context.Background(), f, ApplyOptions{File: file})
	if err == nil || !strings.Contains(err.Error(), "cluster west: num 5 is taken by cluster dev") {
		t.Fatalf("error = %v", err)
	}
	if got := f.Called("guest.run"); len(got) != 0 {
		t.Errorf("ran %v", got)
	}
}

// A cluster create that runs while the fleet's creates do never gets a
// slot the fleet planned, even one whose cluster has not started yet.
func TestFleetSlotsAreHeldForTheWholeApply(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	kind := f.Before
	var got int
	f.Before = func(call string) {
		kind(call)
		if call == "guest.run kind create cluster east" {
			res, err := cluster.Reservations{Dir: f.Env.Paths.Slots()}.Reserve(context.Background(), f.Env.Paths.SlotsLock(), "other", func(ctx context.Context) ([]cluster.Info, error) {
				f.Mu.Lock()
				defer f.Mu.Unlock()
				return cluster.Group(f.NodeContainers), nil
			})
			if err != nil {
				t.Error(err)
			}
			got = res.Slot
			res.Release()
		}
	}
	if _, err := apply(context.Background(), f, ApplyOptions{File: file, MaxParallel: 1}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if got == 1 || got == 2 || got == 5 || got == 0 {
		t.Errorf("a create during the apply got slot %d; the fleet holds 1, 2 and 5", got)
	}
}

// fleet delete -f deletes dependents first, and asks; from stdin it needs -y.
func TestFleetDeleteOrder(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	f.Labels = map[string]map[string]string{}
	for i, n := range []string{"east", "west", "mesh"} {
		f.Cluster(n, i+1, "https://127.0.0.1:700"+strconv.Itoa(i+1))
		f.Labels[n] = map[string]string{cluster.FleetLabel: "demo"}
	}
	f.Cluster("solo", 9, "https://127.0.0.1:7009") // no fleet label
	if _, err := Delete(context.Background(), f.Env, "", file, false, false); err == nil || !strings.Contains(err.Error(), "needs a confirmation") {
		t.Fatalf("no terminal, no -y: %v", err)
	}
	f.Env.Stdin = strings.NewReader(fmt.Sprintf(sessiontest.DemoFleet, "FailFast"))
	if _, err := Delete(context.Background(), f.Env, "", "-", false, false); err == nil || !strings.Contains(err.Error(), "came from stdin") {
		t.Fatalf("stdin manifest without -y: %v", err)
	}
	if got := f.Called("guest.run"); len(got) != 0 {
		t.Fatalf("deleted without a confirmation: %v", got)
	}
	if _, err := Delete(context.Background(), f.Env, "", file, true, false); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	body := f.Bodies["kind delete cluster"]
	order := regexp.MustCompile(`\nkind_delete (\S+)\n`).FindAllStringSubmatch(body, -1)
	var names []string
	for _, m := range order {
		names = append(names, m[1])
	}
	if len(names) != 3 || names[0] != "mesh" || slices.Contains(names, "solo") {
		t.Errorf("delete order %v, want mesh first and solo left alone", names)
	}
}

// kindConfigOf is the kind config a create script hands kind.
func kindConfigOf(t *testing.T, body string) string {
	m := regexp.MustCompile(`printf '%s' (\S+) \| base64 -d \| kind create`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no kind config in:\n%s", body)
	}
	b, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README's example manifest is one that fleet apply accepts.
func TestReadmeFleetExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Fleets\n")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatal("the README has no Fleets section with a yaml example")
	}
	f, _ := fleetFixture(t, "FailFast")
	file := filepath.Join(t.TempDir(), "readme.yaml")
	if err := os.WriteFile(file, []byte(m[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := apply(context.Background(), f, ApplyOptions{File: file, DryRun: true})
	if err != nil {
		t.Fatalf("the README's fleet: %v", err)
	}
	for _, re := range []string{`^east 1 create `, `^west 5 create `, `^mesh 2 create east,west node=v1\.36\.4`} {
		name, _, _ := strings.Cut(re[1:], " ")
		if got := row(rep, name); !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("plan has %q, not %s", got, re)
		}
	}
}

// An interrupt starts nothing new; the report says what was not started.
func TestFleetApplyInterrupted(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kind := f.Before
	f.Before = func(call string) {
		kind(call)
		if call == "guest.run kind create cluster east" {
			cancel()
		}
	}
	rep, err := apply(ctx, f, ApplyOptions{File: file, MaxParallel: 1})
	if err == nil && (rep == nil || rep.Failed == 0) {
		t.Fatal("an interrupted apply succeeded")
	}
	for _, n := range []string{"west", "mesh"} {
		if index(f, "guest.run kind create cluster "+n) >= 0 {
			t.Errorf("%s started after the interrupt", n)
		}
	}
	// The create in flight is rolled back, as one create's is.
	if got := f.Called("guest.run kind delete cluster east"); len(got) != 1 {
		t.Errorf("east was not rolled back once: %v", got)
	}
	if f.Env.Leftover() != "" {
		t.Errorf("leftover after the rollback: %q", f.Env.Leftover())
	}
	if rep == nil {
		t.Fatal("an interrupted apply has no report")
	}
	for _, c := range rep.Clusters {
		if c.Name == "east" && c.Result != "failed" {
			t.Errorf("east: %s %q", c.Result, c.Reason)
		}
		if c.Name != "east" && (c.Result != "skipped" || c.Reason != "not started: interrupted") {
			t.Errorf("%s: %s %q", c.Name, c.Result, c.Reason)
		}
	}
}

// fleet delete NAME deletes dependents first too: apply recorded the
// manifest.
func TestFleetDeleteByNameOrder(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	if _, err := apply(context.Background(), f, ApplyOptions{File: file}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	f.Mu.Lock()
	f.Labels = map[string]map[string]string{}
	for _, n := range []string{"east", "west", "mesh"} {
		f.Labels[n] = map[string]string{cluster.FleetLabel: "demo"}
	}
	f.Mu.Unlock()
	if _, err := Delete(context.Background(), f.Env, "demo", "", true, false); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	var names []string
	for _, m := range regexp.MustCompile(`\nkind_delete (\S+)\n`).FindAllStringSubmatch(f.Bodies["kind delete cluster"], -1) {
		names = append(names, m[1])
	}
	if len(names) != 3 || names[0] != "mesh" {
		t.Errorf("delete order %v, want mesh first", names)
	}
	if _, err := os.Stat(filepath.Join(f.Env.Paths.Dir, "fleets", "demo.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the recorded manifest is left: %v", err)
	}
}

// A member that fails and frees its slot while the apply goes on: the
// slot another marina then takes is not released by the apply's end.
func TestFleetReleasesEachSlotOnce(t *testing.T) {
	f, file := fleetFixture(t, "ContinueOnError")
	f.Fail["kube east pool"] = errBoom
	kind := f.Before
	var other cluster.Reservation
	f.Before = func(call string) {
		kind(call)
		if call == "guest.run kind create cluster west" {
			var err error
			other, err = cluster.Reservations{Dir: f.Env.Paths.Slots()}.Reserve(context.Background(), f.Env.Paths.SlotsLock(), "other", func(context.Context) ([]cluster.Info, error) {
				f.Mu.Lock()
				defer f.Mu.Unlock()
				return cluster.Group(f.NodeContainers), nil
			})
			if err != nil {
				t.Error(err)
			}
		}
	}
	_, _ = apply(context.Background(), f, ApplyOptions{File: file, MaxParallel: 1})
	if other.Slot == 0 {
		t.Fatal("the other create got no slot")
	}
	if _, err := os.Stat(filepath.Join(f.Env.Paths.Slots(), strconv.Itoa(other.Slot))); err != nil {
		t.Errorf("the other create's slot %d was released by the fleet: %v", other.Slot, err)
	}
	other.Release()
}

// Under FailFast a failed adoption starts no create.
func TestFleetApplyLabelFailureStopsCreates(t *testing.T) {
	f, file := fleetFixture(t, "FailFast")
	f.Cluster("east", 3, "https://127.0.0.1:7003")
	f.Fail["kube east label-nodes"] = errBoom
	rep, err := apply(context.Background(), f, ApplyOptions{File: file, Adopt: true})
	if err != nil || rep == nil || len(rep.Failures()) != 1 {
		t.Fatalf("error = %v, report %+v: want east's failure in the report", err, rep)
	}
	if got := f.Called("guest.run kind create"); len(got) != 0 {
		t.Errorf("creates ran after the failed adoption: %v", got)
	}
	for _, c := range rep.Clusters {
		if c.Name != "east" && (c.Result != "skipped" || !strings.Contains(c.Reason, "a label change failed")) {
			t.Errorf("%s: %s %q", c.Name, c.Result, c.Reason)
		}
	}
}

// A fleet name becomes a file name under ~/.marina/fleets: one that could
// leave that folder is refused before anything is looked at.
func TestFleetNamesCannotLeaveTheirFolder(t *testing.T) {
	f, _ := fleetFixture(t, "FailFast")
	for _, name := range []string{"../../etc/passwd", "..", "a/b", "-rf", ""} {
		if _, err := Delete(context.Background(), f.Env, name, "", true, false); err == nil || name != "" && !strings.Contains(err.Error(), "cannot be a marina.dev/fleet label value") {
			t.Errorf("fleet delete %q: %v", name, err)
		}
		if err := AdoptClusters(context.Background(), f.Env, name, []string{"east"}); err == nil {
			t.Errorf("fleet adopt %q accepted", name)
		}
	}
	bad := "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata: {name: ../x}\nspec: {clusters: [a]}\n"
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(context.Background(), f, ApplyOptions{File: file}); err == nil || !strings.Contains(err.Error(), "bad.yaml:3: metadata.name") {
		t.Errorf("apply of a fleet named ../x: %v", err)
	}
	if got := f.Called("guest."); len(got) != 0 {
		t.Errorf("refused names reached the guest: %v", got)
	}
}

// apply is fleet apply on the fake world.
func apply(ctx context.Context, f *sessiontest.World, opts ApplyOptions) (*Report, error) {
	return Apply(ctx, f.Env, opts)
}

// summary is a report's counts, as "created skipped failed".
func summary(rep *Report) string {
	if rep == nil {
		return "no report"
	}
	return fmt.Sprintf("%d %d %d", rep.Created, rep.Skipped, rep.Failed)
}

// notes are what a plan says of a cluster.
func notes(rep *Report, name string) []string {
	for _, c := range rep.Clusters {
		if c.Name == name {
			return c.Notes
		}
	}
	return nil
}

// row is a cluster's row of a plan: name, slot, action, dependencies and
// options.
func row(rep *Report, name string) string {
	for _, c := range rep.Clusters {
		if c.Name == name {
			return fmt.Sprintf("%s %d %s %s %s", c.Name, c.Slot, c.Action, strings.Join(c.DependsOn, ","), c.Options)
		}
	}
	return name + " is not in the report"
}

// fleet stop stops the dependents first; fleet start starts them last,
// finding the stopped members by the labels cluster stop recorded.
func TestFleetStopStartOrder(t *testing.T) {
	f := appliedDemo(t)
	ctx := context.Background()
	f.Mu.Lock()
	for i := range f.NodeContainers {
		n := &f.NodeContainers[i]
		n.APIHosts = map[int]string{n.APIPorts[0]: "127.0.0.1"}
	}
	f.Mu.Unlock()
	order := func(prefix string) []string {
		var out []string
		for _, c := range f.Called(prefix) {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(c, prefix), "-cp"))
		}
		return out
	}
	if _, err := StopStart(ctx, f.Env, "demo", false, 0, false); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if got := order("docker.stop "); len(got) != 3 || got[0] != "mesh" {
		t.Errorf("stop order %v, want mesh first", got)
	}
	if _, err := StopStart(ctx, f.Env, "demo", true, 0, false); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if got := order("docker.start "); len(got) != 3 || got[2] != "mesh" {
		t.Errorf("start order %v, want mesh last", got)
	}
}

// fleet list says who depends on whom, as the manifest apply recorded.
func TestListDependencies(t *testing.T) {
	f := appliedDemo(t)
	rows, err := List(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Name != "demo" || !reflect.DeepEqual(rows[0].DependsOn, map[string][]string{"mesh": {"east", "west"}}) {
		t.Errorf("fleet list: %+v", rows)
	}
}

// appliedDemo is the fixture's fleet demo applied, its members' nodes
// carrying its label.
func appliedDemo(t *testing.T) *sessiontest.World {
	t.Helper()
	f, file := fleetFixture(t, "FailFast")
	if _, err := apply(context.Background(), f, ApplyOptions{File: file}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Labels = map[string]map[string]string{}
	for _, n := range []string{"east", "west", "mesh"} {
		f.Labels[n] = map[string]string{cluster.FleetLabel: "demo"}
	}
	return f
}

// A fleet name read back from a cluster's label names no file before it
// is checked: a hostile one reads nothing.
func TestDependsOnRefusesHostileNames(t *testing.T) {
	f := appliedDemo(t)
	outside := filepath.Join(f.Env.Paths.Dir, "evil.yaml")
	data, err := os.ReadFile(filepath.Join(f.Env.Paths.Dir, "fleets", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../evil", "demo/../../evil", "", "a b"} {
		if got := dependsOn(f.Env, config.Default(), name); got != nil {
			t.Errorf("fleet %q: %v", name, got)
		}
	}
	if got := dependsOn(f.Env, config.Default(), "demo"); got == nil {
		t.Error("the recorded demo gives no dependencies: the test proves nothing")
	}
}
