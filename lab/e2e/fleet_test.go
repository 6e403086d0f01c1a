package e2e

// Fleets in the lab, on the stand-in node image: the real kind CLI makes
// the clusters of a manifest in parallel along their dependencies, in the
// slots the plan gave them, with their labels, mirror subsets and
// kubeconfigs; a second apply changes nothing; a cluster made outside the
// fleet is adopted; a failure under FailFast is rolled back and stops the
// rest; a cluster create during an apply keeps off the fleet's slots; and
// fleet delete removes dependents first.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/testmanifests"
)

// fleetReport is marina fleet apply -o json, as far as the test reads it.
type fleetReport struct {
	Created, Skipped, Failed int
	MakespanSeconds          float64
	Clusters                 []fleetResult
}

type fleetResult struct {
	Name, Action, Result, Reason string
	Slot                         int
	Start, End                   *time.Time
	Seconds                      float64
}

func (r fleetReport) cluster(t *testing.T, name string) fleetResult {
	t.Helper()
	for _, c := range r.Clusters {
		if c.Name == name {
			if c.Start == nil || c.End == nil {
				t.Fatalf("cluster %s has no start or end: %+v", name, c)
			}
			return c
		}
	}
	t.Fatalf("no cluster %s in the report", name)
	return fleetResult{}
}

func writeManifest(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// certsD lists the upstream registries a cluster's node pulls through
// mirrors for.
func certsD(t *testing.T, name string) []string {
	t.Helper()
	out := strings.Fields(labDocker(t, "exec", name+"-control-plane", "sh", "-c", "ls /etc/containerd/certs.d 2>/dev/null || true"))
	slices.Sort(out)
	return out
}

const labFleet = `apiVersion: marina.dev/v1alpha1
kind: Fleet
metadata:
  name: lab
spec:
  maxParallel: 2
  defaults:
    labels: {env: lab}
  clusters:
    - name: fa
      registries: {mirrors: ["*"]}
    - name: fb
      num: 7
      labels: {team: net}
      registries: {mirrors: [registry-quayio]}
    - name: fc
      dependsOn: [fa, fb]
      registries: {mirrors: []}
      addons: {metricsServer: {enabled: true}}
`

func TestFleet(t *testing.T) {
	needLab(t)
	t.Cleanup(func() { destroyAll(t) })
	writeConfig(t, "registries:\n  mirrors: []\n")
	mustMarina(t, "up")
	password := "pw-fleet"
	startUpstream(t, password)
	image := nodeImage(t)
	writeConfig(t, fmt.Sprintf("kind:\n  nodeVersion: v1.36.4\n  nodeImages:\n    v1.36.4: %s\n", image)+mirrorsConfig("host", password, "https://quay.io"))
	mustMarina(t, "up")
	seedMetalLB(t)
	seedMetricsServer(t, "v0.8.0")
	ctl := startControllers(t)
	// Not fx: MetalLB never turns ready there, which is how a failure
	// after kind is injected.
	for _, n := range []string{"fa", "fb", "fc", "fd", "other", "fy", "fz"} {
		ctl.add(n, 0) // the port is read from Docker once the node runs
	}
	file := writeManifest(t, labFleet)

	t.Run("dry run prints the plan and changes nothing", func(t *testing.T) {
		r := mustMarina(t, "fleet", "apply", "-f", file, "--dry-run")
		for _, re := range []string{
			`Fleet lab — maxParallel=2 strategy=FailFast`,
			`fa +1 +create +- +mirrors=all, labels env=lab`,
			`fb +7 +create +- +mirrors=registry-quayio, labels env=lab,team=net`,
			`fc +2 +create +fa,fb +mirrors=none, labels env=lab, metrics-server v0.8.0 \(--kubelet-insecure-tls\)`,
			`\(dry-run: no changes made\)`,
		} {
			if !regexp.MustCompile(re).MatchString(r.stdout) {
				t.Errorf("plan lacks %s:\n%s", re, r.stdout)
			}
		}
		if len(listClusters(t)) != 0 {
			t.Error("the dry run made clusters")
		}
		if ents, _ := os.ReadDir(filepath.Join(marinaHome(), "slots")); len(ents) != 0 {
			t.Errorf("the dry run left slot reservations: %v", ents)
		}
	})

	var rep fleetReport
	t.Run("apply creates the fleet along its dependencies while a cluster create keeps off its slots", func(t *testing.T) {
		var out, errb run.Buffer
		c := exec.Command(marinaBin, "fleet", "apply", "-f", file, "-o", "json", "--debug")
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		// Once the fleet holds its slots, a create runs beside it.
		waitFor(t, time.Minute, "the fleet to hold its three slots", func() bool {
			ents, _ := os.ReadDir(filepath.Join(marinaHome(), "slots"))
			return len(ents) >= 3
		})
		other := mustMarina(t, "cluster", "create", "other")
		if !strings.Contains(other.stderr+other.stdout, "slot 3") {
			t.Errorf("cluster create beside the fleet did not take slot 3 (the fleet holds 1, 2 and 7):\n%s%s", other.stdout, other.stderr)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("fleet apply: %v\n%s\n%s", err, out.String(), errb.String())
			}
		case <-time.After(5 * time.Minute):
			_ = c.Process.Kill()
			t.Fatalf("fleet apply did not end:\n%s", errb.String())
		}
		if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if rep.Created != 3 || rep.Failed != 0 {
			t.Fatalf("report %+v\n%s", rep, errb.String())
		}
		t.Logf("guest round trips: %d", tripCount(t, errb.String()))
		rows := map[string]clusterRow{}
		for _, r := range listClusters(t) {
			rows[r.Name] = r
		}
		for name, slot := range map[string]int{"fa": 1, "fb": 7, "fc": 2, "other": 3} {
			if rows[name].Num != slot {
				t.Errorf("%s is in slot %d, want %d", name, rows[name].Num, slot)
			}
		}
		// fc starts only once fa and fb are done.
		fa, fb, fc := rep.cluster(t, "fa"), rep.cluster(t, "fb"), rep.cluster(t, "fc")
		if fc.Start.Before(*fa.End) || fc.Start.Before(*fb.End) {
			t.Errorf("fc started at %v, before fa (%v) or fb (%v) ended", fc.Start, fa.End, fb.End)
		}
		// fa and fb ran at the same time (two places).
		if !fb.Start.Before(*fa.End) || !fa.Start.Before(*fb.End) {
			t.Errorf("fa (%v–%v) and fb (%v–%v) did not overlap", fa.Start, fa.End, fb.Start, fb.End)
		}
		critical := max(fa.Seconds, fb.Seconds) + fc.Seconds
		t.Logf("makespan %.1f s; sum of the creates %.1f s; critical path %.1f s", rep.MakespanSeconds, fa.Seconds+fb.Seconds+fc.Seconds, critical)
		for name, want := range map[string]map[string]string{
			"fa": {"env": "lab", "marina.dev/fleet": "lab", "managed-by": "marina"},
			"fb": {"env": "lab", "team": "net", "marina.dev/fleet": "lab"},
			"fc": {"env": "lab", "marina.dev/fleet": "lab"},
		} {
			node, err := contextClient(t, name).CoreV1().Nodes().Get(context.Background(), name+"-control-plane", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s through its merged context: %v", name, err)
			}
			for k, v := range want {
				if node.Labels[k] != v {
					t.Errorf("%s: node label %s=%q, want %q", name, k, node.Labels[k], v)
				}
			}
		}
		// Every cluster also sends localhost:5001 to the push registry,
		// whatever its mirrors.
		if got := certsD(t, "fa"); len(got) != 3 || !slices.Contains(got, "localhost:5001") {
			t.Errorf("fa pulls through mirrors for %v, want both upstreams and the push registry", got)
		}
		if got := certsD(t, "fb"); strings.Join(got, ",") != "localhost:5001,quay.io" {
			t.Errorf("fb pulls through mirrors for %v, want quay.io alone and the push registry", got)
		}
		if got := certsD(t, "fc"); strings.Join(got, ",") != "localhost:5001" {
			t.Errorf("fc pulls through mirrors for %v, want none, and the push registry", got)
		}
		if ents, _ := os.ReadDir(filepath.Join(marinaHome(), "slots")); len(ents) != 0 {
			t.Errorf("slot reservations left: %v", ents)
		}
		// fc has metrics-server from its pinned release manifest, told to
		// accept kind's self-signed kubelet certificates; fa has none.
		d, err := contextClient(t, "fc").AppsV1().Deployments("kube-system").Get(context.Background(), "metrics-server", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("fc's metrics-server: %v", err)
		}
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--kubelet-insecure-tls") || !slices.Contains(args, "--metric-resolution=15s") {
			t.Errorf("metrics-server args %v", args)
		}
		if _, err := contextClient(t, "fa").AppsV1().Deployments("kube-system").Get(context.Background(), "metrics-server", metav1.GetOptions{}); err == nil {
			t.Error("fa has metrics-server, which only fc asks for")
		}
	})

	t.Run("a second apply changes nothing", func(t *testing.T) {
		before := nodeIDs(t)
		r := mustMarina(t, "fleet", "apply", "-f", file)
		if !strings.Contains(r.stdout, "apply complete: 0 created, 3 skipped, 0 failed") || !regexp.MustCompile(`fa +1 +skip`).MatchString(r.stdout) {
			t.Errorf("second apply:\n%s", r.stdout)
		}
		if after := nodeIDs(t); after != before {
			t.Errorf("node containers changed:\n%s\nwere\n%s", after, before)
		}
	})

	t.Run("a cluster made outside the fleet is reported, then adopted", func(t *testing.T) {
		mustMarina(t, "cluster", "create", "fd")
		withFD := writeManifest(t, labFleet+"    - fd\n")
		r := mustMarina(t, "fleet", "apply", "-f", withFD)
		if !strings.Contains(r.stdout, "fd: exists without a fleet label: it is left as it is (--adopt makes it this fleet's)") {
			t.Errorf("foreign fd not reported:\n%s", r.stdout)
		}
		r = mustMarina(t, "fleet", "apply", "-f", withFD, "--adopt")
		if !regexp.MustCompile(`fd +\d+ +adopt`).MatchString(r.stdout) || !strings.Contains(r.stdout, "1 adopted") {
			t.Errorf("adopt:\n%s", r.stdout)
		}
		r = mustMarina(t, "fleet", "describe", "lab", "-o", "json")
		var members []struct {
			Name  string
			Nodes int
			Ready bool
		}
		if err := json.Unmarshal([]byte(r.stdout), &members); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range members {
			names = append(names, m.Name)
		}
		if strings.Join(names, ",") != "fa,fb,fc,fd" {
			t.Errorf("fleet lab has %v", names)
		}
		if r := mustMarina(t, "fleet", "list"); !regexp.MustCompile(`lab +fa,fb,fc,fd`).MatchString(r.stdout) {
			t.Errorf("fleet list:\n%s", r.stdout)
		}
	})

	t.Run("under FailFast a failure is rolled back and nothing else starts", func(t *testing.T) {
		bad := writeManifest(t, `apiVersion: marina.dev/v1alpha1
kind: Fleet
metadata: {name: ff}
spec:
  clusters:
    - fx
    - name: fy
      dependsOn: [fx]
    - fz
`)
		r := marina(t, "fleet", "apply", "-f", bad, "--wait", "5s")
		if r.code != 1 || !strings.Contains(r.stdout, "apply complete: 0 created, 2 skipped, 1 failed") {
			t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		for _, n := range []string{"fx", "fy", "fz"} {
			if len(nodeContainers(t, n)) != 0 {
				t.Errorf("%s has node containers", n)
			}
			if _, err := os.Stat(filepath.Join(home(), ".kube", "marina", n+".kubeconfig")); err == nil {
				t.Errorf("%s has a kubeconfig", n)
			}
		}
	})

	t.Run("fleet delete removes the members, dependents first", func(t *testing.T) {
		r := mustMarina(t, "fleet", "delete", "-f", file, "--dry-run")
		if !strings.Contains(r.stdout+r.stderr, "in this order: fc, ") {
			t.Errorf("delete plan:\n%s%s", r.stdout, r.stderr)
		}
		mustMarina(t, "fleet", "delete", "lab", "-y")
		var left []string
		for _, c := range listClusters(t) {
			left = append(left, c.Name)
		}
		if strings.Join(left, ",") != "other" {
			t.Errorf("clusters left: %v", left)
		}
		if hasContext(t, "fa") {
			t.Error("fa's context is still merged")
		}
	})
}

// nodeIDs are the node containers' names and IDs, one per line.
func nodeIDs(t *testing.T) string {
	return labDocker(t, "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster", "--format", "{{.Names}} {{.ID}}")
}

// seedMetricsServer puts metrics-server's release manifest, rebuilt from
// its module as the release builds it, into marina's download cache.
func seedMetricsServer(t *testing.T, version string) {
	t.Helper()
	b, err := testmanifests.MetricsServer(version)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(marinaHome(), "cache", "metrics-server", version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "components.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
