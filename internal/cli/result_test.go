package cli

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/migrate"
	"github.com/bcollard/marina/internal/session"
)

// The text views of what the commands without -o return: each value
// printed as the command prints it.
func TestResultViews(t *testing.T) {
	steps := []session.Step{{Do: "stop VM marina", Reason: "clusters are kept"}, {Do: "remove the route"}}
	for _, c := range []struct {
		name  string
		print func(*bytes.Buffer)
		want  string
	}{
		{"plan", func(w *bytes.Buffer) { printResult(w, session.Planned(steps, "")) },
			"Plan (--dry-run, nothing was changed):\n  - stop VM marina (clusters are kept)\n  - remove the route\n"},
		{"nothing to do", func(w *bytes.Buffer) { printResult(w, session.Planned(nil, "VM marina is Stopped")) },
			"No changes: VM marina is Stopped.\n"},
		{"lines", func(w *bytes.Buffer) {
			res := session.Said("Removed dev (context) from %s", "/k")
			res.Add("second")
			printResult(w, res)
		}, "Removed dev (context) from /k\nsecond\n"},
		{"nothing at all", func(w *bytes.Buffer) { printResult(w, session.Result{}) }, ""},
		{"create, dry run", func(w *bytes.Buffer) {
			printCreated(w, &kindcluster.Created{Plan: &session.Plan{Steps: steps[:1]}, KindConfig: []byte("kind: Cluster\n")})
		}, "Plan (--dry-run, nothing was changed):\n  - stop VM marina (clusters are kept)\n\nkind config:\nkind: Cluster\n"},
		{"create, merged", func(w *bytes.Buffer) {
			printCreated(w, &kindcluster.Created{Name: "dev", Server: "https://192.168.64.3:7001", Pool: []string{"172.30.1.1-172.30.1.7", "172.30.1.16-172.30.1.254"}, Merged: true, Zone: "dev.demo.internal"})
		}, "Cluster dev is ready: API server https://192.168.64.3:7001, LoadBalancer pool 172.30.1.1-172.30.1.7, 172.30.1.16-172.30.1.254\n" +
			"  kubectl --context dev get nodes\n" +
			"Its LoadBalancer Services answer as SERVICE.NAMESPACE.dev.demo.internal within seconds; a name the Mac looked up before it existed may stay missing on the Mac for about a minute (`marina dns flush` empties its cache).\n"},
		{"create, not merged", func(w *bytes.Buffer) {
			printCreated(w, &kindcluster.Created{Name: "dev", Server: "s", Pool: []string{"p"}, Kubeconfig: "/k/dev.kubeconfig", Zone: "z"})
		}, "Cluster dev is ready: API server s, LoadBalancer pool p\n  export KUBECONFIG=/k/dev.kubeconfig\nIts LoadBalancer Services answer as SERVICE.NAMESPACE.z within seconds; a name the Mac looked up before it existed may stay missing on the Mac for about a minute (`marina dns flush` empties its cache).\n"},
		{"create, pods routed", func(w *bytes.Buffer) {
			printCreated(w, &kindcluster.Created{Name: "dev", Server: "s", Pool: []string{"p"}, Kubeconfig: "/k/dev.kubeconfig", Zone: "z", Pods: "10.11.0.0/16", Services: "10.1.0.0/16", FromMac: true})
		}, "Cluster dev is ready: API server s, LoadBalancer pool p\n  export KUBECONFIG=/k/dev.kubeconfig\n" +
			"Its pods (10.11.0.0/16) and ClusterIPs (10.1.0.0/16) are routed from the Mac and from the other clusters (network.podRouting).\n" +
			"Its LoadBalancer Services answer as SERVICE.NAMESPACE.z within seconds; a name the Mac looked up before it existed may stay missing on the Mac for about a minute (`marina dns flush` empties its cache).\n"},
		{"up", func(w *bytes.Buffer) {
			printReady(w, &machine.Ready{VM: "marina", Lima0: netip.MustParseAddr("192.168.64.3"), Socket: "/h/.marina.docker.sock", Routed: netip.MustParsePrefix("172.30.0.0/16"), Next: []machine.Hint{
				{Command: `eval "$(marina docker-env)"`, What: "use the VM's Docker from this shell"},
				{Command: "marina cluster create NAME", What: "create a kind cluster (marina fleet apply -f FILE: several)"},
			}})
		}, "VM marina is ready: lima0 192.168.64.3, Docker at unix:///h/.marina.docker.sock, 172.30.0.0/16 routed to the VM\n" +
			"Next:\n" +
			"  eval \"$(marina docker-env)\"    use the VM's Docker from this shell\n" +
			"  marina cluster create NAME     create a kind cluster (marina fleet apply -f FILE: several)\n"},
		{"up, dry run", func(w *bytes.Buffer) {
			printReady(w, &machine.Ready{Plan: &session.Plan{None: "VM marina and its networking match the config"}})
		},
			"No changes: VM marina and its networking match the config.\n"},
		{"migrate plan", func(w *bytes.Buffer) {
			printMigratePlan(w, migrate.Plan{Steps: steps[1:], Notes: []string{"a note"}})
		}, "Plan:\n  - remove the route\nNotes:\n  - a note\n"},
		{"migrate dry run", func(w *bytes.Buffer) {
			printMigratePlan(w, migrate.Plan{DryRun: true, Steps: steps[1:]})
			printMigrated(w, &migrate.Report{Plan: migrate.Plan{DryRun: true}})
		}, "Plan (--dry-run, nothing was changed):\n  - remove the route\n"},
		{"nothing to migrate", func(w *bytes.Buffer) {
			printMigrated(w, &migrate.Report{Nothing: "everything of klimax's is marina's already", Left: "/h/.klimax"})
		}, "Nothing to migrate: everything of klimax's is marina's already.\n/h/.klimax is left in place; `marina migrate --cleanup` renames it aside.\n"},
		{"migrated", func(w *bytes.Buffer) {
			printMigrated(w, &migrate.Report{Done: true, Left: "/h/.klimax", Ready: &machine.Ready{VM: "m", Lima0: netip.MustParseAddr("192.168.64.3"), Routed: netip.MustParsePrefix("172.30.0.0/16"), Socket: "/s"}})
		}, "VM m is ready: lima0 192.168.64.3, Docker at unix:///s, 172.30.0.0/16 routed to the VM\nNext:\nMigration complete.\n/h/.klimax is left in place; `marina migrate --cleanup` renames it aside once you are happy.\n"},
		{"migrate stopped", func(w *bytes.Buffer) { printMigrated(w, &migrate.Report{Plan: migrate.Plan{Steps: steps}}) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			c.print(&b)
			if b.String() != c.want {
				t.Errorf("printed\n%q\nwant\n%q", b.String(), c.want)
			}
		})
	}
}

// fleet apply's text: the plan as a table with its notes, then the end;
// a failed cluster is an ERROR line on stderr and exit status 1.
func TestFleetApplyText(t *testing.T) {
	rep := &fleet.Report{Fleet: "demo", MaxParallel: 2, Strategy: "FailFast", Clusters: []fleet.ClusterReport{
		{Name: "east", Slot: 3, Action: "skip", Options: "mirrors=all", Notes: []string{"exists without a fleet label: it is left as it is (--adopt makes it this fleet's)"}, Pods: "10.13.0.0/16", Services: "10.3.0.0/16"},
		{Name: "mesh", Action: "create", DependsOn: []string{"east", "west"}, Options: "mirrors=all, labels env=demo"},
	}}
	var plan bytes.Buffer
	printFleetPlan(&plan, rep)
	want := "Fleet demo — maxParallel=2 strategy=FailFast\n" +
		"NAME  NUM  ACTION  DEPENDS-ON  OPTIONS\n" +
		"east  3    skip    -           mirrors=all\n" +
		"mesh  -    create  east,west   mirrors=all, labels env=demo\n" +
		"  east: exists without a fleet label: it is left as it is (--adopt makes it this fleet's)\n" +
		"  east: pods 10.13.0.0/16 and ClusterIPs 10.3.0.0/16 (network.podRouting routes them)\n"
	if plan.String() != want {
		t.Errorf("plan:\n%s\nwant:\n%s", plan.String(), want)
	}

	run := func(rep *fleet.Report, err error) (string, string, error) {
		var out, errb bytes.Buffer
		r := newRoot(&out, &errb)
		err = r.fleetApplied(rep, err, "text")
		return out.String(), errb.String(), err
	}
	dry := *rep
	dry.DryRun = true
	if out, _, err := run(&dry, nil); out != "(dry-run: no changes made)\n" || err != nil {
		t.Errorf("dry run: %q, %v", out, err)
	}
	same := &fleet.Report{Skipped: 3, Clusters: []fleet.ClusterReport{{Name: "east", Result: "skipped"}}}
	if out, _, err := run(same, nil); out != "Nothing to do: every cluster of the fleet exists as the manifest says.\napply complete: 0 created, 3 skipped, 0 failed in 0s\n" || err != nil {
		t.Errorf("nothing to do: %q, %v", out, err)
	}
	failed := &fleet.Report{Failed: 1, Skipped: 2, MakespanSeconds: 1.26, Clusters: []fleet.ClusterReport{{Name: "east", Result: "failed", Reason: "installing MetalLB: boom"}}}
	out, errs, err := run(failed, nil)
	var exit *session.ExitError
	if out != "apply complete: 0 created, 2 skipped, 1 failed in 1.3s\n" || errs != "ERROR: cluster east: installing MetalLB: boom\n" || !errors.As(err, &exit) || exit.Code != session.ExitFailed {
		t.Errorf("a failure: %q, %q, %v", out, errs, err)
	}
	// The apply's own error stays the error; the failures are still said.
	boom := errors.New("interrupted")
	if _, errs, err := run(failed, boom); !errors.Is(err, boom) || !strings.Contains(errs, "ERROR: cluster east") {
		t.Errorf("an interrupted apply: %q, %v", errs, err)
	}
}
