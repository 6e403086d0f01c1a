package fleet_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/slot"
)

func slots(rows []fleet.Row) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		out[r.Name] = r.Slot
	}
	return out
}

// Free slots go in manifest order, around what exists, what another
// marina holds and what a later member pins: a, first, must not take b's
// slot 3 although it is the lowest free one when a is placed.
func TestPlanSlots(t *testing.T) {
	f := fleet.Fleet{Members: []fleet.Member{
		{Name: "a"}, {Name: "b", Num: 3}, {Name: "c"}, {Name: "old"}, {Name: "d", Num: 7}, {Name: "e"},
	}}
	live := []fleet.Live{{Name: "x", Slot: 1, Labels: map[string]string{}}, {Name: "old", Slot: 6, Labels: map[string]string{}}}
	held := []fleet.Held{{Slot: 2, Name: "z", PID: 42}, {Slot: 5, Name: "w", PID: 43}}
	rows, err := fleet.Plan(f, live, held, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 4, "b": 3, "c": 8, "old": 6, "d": 7, "e": 9}
	if got := slots(rows); !reflect.DeepEqual(got, want) {
		t.Errorf("slots %v, want %v", got, want)
	}
	for i, r := range rows {
		if r.Name != f.Members[i].Name {
			t.Errorf("row %d is %s, want manifest order", i, r.Name)
		}
		act := fleet.Create
		if r.Name == "old" {
			act = fleet.Skip
		}
		if r.Action != act {
			t.Errorf("%s: %s, want %s", r.Name, r.Action, act)
		}
	}
}

func TestPlanRefused(t *testing.T) {
	full := make([]fleet.Live, 0, slot.Max)
	for s := slot.Min; s <= slot.Max; s++ {
		full = append(full, fleet.Live{Name: fmt.Sprintf("c%d", s), Slot: s})
	}
	for _, tc := range []struct {
		name    string
		members []fleet.Member
		live    []fleet.Live
		held    []fleet.Held
		want    []string
	}{
		{"pinned on a live cluster", []fleet.Member{{Name: "b", Num: 1}}, []fleet.Live{{Name: "x", Slot: 1}}, nil,
			[]string{"cluster b: num 1 is taken by cluster x: choose another num"}},
		{"pinned on a held slot", []fleet.Member{{Name: "b", Num: 2}}, nil, []fleet.Held{{Slot: 2, Name: "z", PID: 42}},
			[]string{"cluster b: num 2 is taken by cluster z, which another marina (process 42) is creating"}},
		{"being created elsewhere", []fleet.Member{{Name: "a"}}, nil, []fleet.Held{{Slot: 2, Name: "a", PID: 42}},
			[]string{"cluster a is being created by another marina (process 42)"}},
		{"pinned and being created elsewhere", []fleet.Member{{Name: "a", Num: 5}}, nil, []fleet.Held{{Slot: 6, Name: "a", PID: 42}},
			[]string{"cluster a is being created by another marina (process 42)"}},
		{"all slots taken", []fleet.Member{{Name: "a"}}, full, nil,
			[]string{"cluster a: all 99 slots are taken: delete a cluster first"}},
		// Everything wrong is said at once.
		{"two at once", []fleet.Member{{Name: "a", Num: 1}, {Name: "b", Num: 2}}, []fleet.Live{{Name: "x", Slot: 1}}, []fleet.Held{{Slot: 2, Name: "z", PID: 7}},
			[]string{"cluster a: num 1 is taken by cluster x", "cluster b: num 2 is taken by cluster z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := fleet.Plan(fleet.Fleet{Members: tc.members}, tc.live, tc.held, false)
			if err == nil || rows != nil {
				t.Fatalf("planned %v, err %v", rows, err)
			}
			if !strings.HasPrefix(err.Error(), "the fleet cannot be placed, and nothing was changed:") {
				t.Errorf("error %q", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// A cluster that exists stays in its slot, even when the manifest pins
// another: moving it would mean deleting it, which apply never does.
func TestPlanExistingKeepsSlot(t *testing.T) {
	f := fleet.Fleet{Members: []fleet.Member{{Name: "a", Num: 4}, {Name: "b"}}}
	rows, err := fleet.Plan(f, []fleet.Live{{Name: "a", Slot: 2, Labels: map[string]string{}}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Slot != 2 || rows[0].Action != fleet.Skip || len(rows[0].Notes) != 1 || !strings.Contains(rows[0].Notes[0], "num 4 is not applied: the cluster exists in slot 2") {
		t.Errorf("a: %+v", rows[0])
	}
	// Slot 4 is not held for a, which will never move there.
	if rows[1].Slot != 1 {
		t.Errorf("b in slot %d, want 1", rows[1].Slot)
	}
}

func TestPlanActions(t *testing.T) {
	net := cluster.Labels{"team": "net"}
	for _, tc := range []struct {
		name   string
		fleet  string
		want   cluster.Labels    // the member's; nil: team=net
		labels map[string]string // the live cluster's; nil: unreadable
		adopt  bool
		action fleet.Action
		set    cluster.Labels
		note   string // "": no note
	}{
		{"as written", "demo", nil, map[string]string{"team": "net", cluster.FleetLabel: "demo", "extra": "kept"}, false, fleet.Skip, nil, ""},
		{"labels differ", "demo", nil, map[string]string{"team": "web", cluster.FleetLabel: "demo"}, false, fleet.Label, cluster.Labels{"team": "net"}, ""},
		{"label missing", "demo", nil, map[string]string{cluster.FleetLabel: "demo"}, false, fleet.Label, cluster.Labels{"team": "net"}, ""},
		{"adopt", "demo", nil, map[string]string{"team": "net"}, true, fleet.Adopt, cluster.Labels{cluster.FleetLabel: "demo"}, ""},
		{"adopt and label", "demo", nil, map[string]string{}, true, fleet.Adopt, cluster.Labels{cluster.FleetLabel: "demo", "team": "net"}, ""},
		{"no --adopt", "demo", nil, map[string]string{"team": "net"}, false, fleet.Skip, nil, "exists without a fleet label: it is left as it is (--adopt makes it this fleet's)"},
		{"other fleet", "demo", nil, map[string]string{"team": "net", cluster.FleetLabel: "prod"}, false, fleet.Skip, nil, "exists in fleet prod: it is left as it is (--adopt"},
		{"taken from other fleet", "demo", nil, map[string]string{"team": "net", cluster.FleetLabel: "prod"}, true, fleet.Adopt, cluster.Labels{cluster.FleetLabel: "demo"}, "it leaves fleet prod"},
		{"unreadable", "demo", nil, nil, true, fleet.Skip, nil, "its labels could not be read (is it running?): not compared"},
		// A label without value is a label: a cluster that lacks it differs.
		{"empty value missing", "demo", cluster.Labels{"edge": ""}, map[string]string{cluster.FleetLabel: "demo"}, false, fleet.Label, cluster.Labels{"edge": ""}, ""},
		// An unnamed fleet claims no cluster: only its labels count.
		{"unnamed", "", nil, map[string]string{"team": "net"}, false, fleet.Skip, nil, ""},
		// An unnamed fleet leaves another fleet's cluster alone.
		{"unnamed, other fleet's", "", nil, map[string]string{cluster.FleetLabel: "prod"}, false, fleet.Skip, nil, "in fleet prod: left as it is"},
		{"unnamed labels differ", "", nil, map[string]string{}, false, fleet.Label, cluster.Labels{"team": "net"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == nil {
				want = net
			}
			f := fleet.Fleet{Name: tc.fleet, Members: []fleet.Member{{Name: "a", Labels: want}}}
			rows, err := fleet.Plan(f, []fleet.Live{{Name: "a", Slot: 3, Labels: tc.labels}}, nil, tc.adopt)
			if err != nil {
				t.Fatal(err)
			}
			r := rows[0]
			if r.Action != tc.action || !reflect.DeepEqual(r.Set, tc.set) || r.Slot != 3 {
				t.Errorf("%s set %v in slot %d, want %s set %v", r.Action, r.Set, r.Slot, tc.action, tc.set)
			}
			if tc.note == "" && len(r.Notes) > 0 || tc.note != "" && (len(r.Notes) != 1 || !strings.Contains(r.Notes[0], tc.note)) {
				t.Errorf("notes %q, want …%s…", r.Notes, tc.note)
			}
		})
	}
}

// A region or zone the cluster was not made with is said, not changed.
func TestPlanTopologyNote(t *testing.T) {
	f := fleet.Fleet{Members: []fleet.Member{{Name: "a", Region: "us-east1", Zone: "us-east1-b"}}}
	rows, err := fleet.Plan(f, []fleet.Live{{Name: "a", Slot: 1, Labels: map[string]string{cluster.RegionLabel: "europe-west1", cluster.ZoneLabel: "us-east1-b"}}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`topology.kubernetes.io/region is "europe-west1", not "us-east1": the topology of a cluster is set at creation`}
	if r := rows[0]; r.Action != fleet.Skip || !slices.Equal(r.Notes, want) {
		t.Errorf("%s %q", r.Action, r.Notes)
	}
}

func TestRowOptions(t *testing.T) {
	ms := &addons.MetricsServer{Version: "v0.8.0", InsecureTLS: true}
	for _, tc := range []struct {
		row  fleet.Row
		want string
	}{
		{fleet.Row{Action: fleet.Create}, "mirrors=all"},
		{fleet.Row{Member: fleet.Member{Mirrors: []string{}}}, "mirrors=none"},
		{fleet.Row{Member: fleet.Member{Mirrors: []string{"quay.io", "docker.io"}}}, "mirrors=quay.io+docker.io"},
		{fleet.Row{Member: fleet.Member{NodeVersion: "v1.33.1", Workers: 2, Region: "r1", Zone: "r1-a"}}, "node=v1.33.1, mirrors=all, workers=2, region=r1, zone=r1-a"},
		{fleet.Row{Member: fleet.Member{Labels: cluster.Labels{"b": "2", "a": "1"}}, Action: fleet.Create}, "mirrors=all, labels a=1,b=2"},
		// An existing cluster's labels are what it has; only what changes shows.
		{fleet.Row{Member: fleet.Member{Labels: cluster.Labels{"a": "1"}}, Action: fleet.Skip}, "mirrors=all"},
		{fleet.Row{Member: fleet.Member{Labels: cluster.Labels{"a": "1"}}, Action: fleet.Label, Set: cluster.Labels{"a": "1"}}, "mirrors=all, set a=1"},
		{fleet.Row{Member: fleet.Member{MetricsServer: ms}}, "mirrors=all, metrics-server v0.8.0 (--kubelet-insecure-tls)"},
		{fleet.Row{Member: fleet.Member{MetricsServer: &addons.MetricsServer{Version: "v0.7.2"}}}, "mirrors=all, metrics-server v0.7.2"},
	} {
		if got := tc.row.Options(); got != tc.want {
			t.Errorf("Options() = %q, want %q", got, tc.want)
		}
	}
}

func TestDeletionOrder(t *testing.T) {
	f := fleet.Fleet{Members: []fleet.Member{
		{Name: "east"}, {Name: "west"}, {Name: "mesh", DependsOn: []string{"east", "west"}}, {Name: "edge", DependsOn: []string{"mesh"}},
	}}
	got := fleet.DeletionOrder(f, []string{"zeta", "east", "edge", "alpha", "west"})
	// edge goes before east although mesh, between them, is not deleted;
	// the names the fleet does not list come last, as given.
	if i, j := slices.Index(got, "edge"), slices.Index(got, "east"); len(got) != 5 || i < 0 || j < i || slices.Index(got, "west") < i ||
		!slices.Equal(got[3:], []string{"zeta", "alpha"}) {
		t.Errorf("DeletionOrder = %v", got)
	}
}

// For random fleets and random subsets: every name given, once, and
// each before everything it depends on, however far down.
func TestDeletionOrderRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 1000 {
		tasks, _ := randomDAG(rng)
		var f fleet.Fleet
		for _, tk := range tasks {
			f.Members = append(f.Members, fleet.Member{Name: tk.Name, DependsOn: slices.DeleteFunc(slices.Clone(tk.DependsOn), func(d string) bool { return d == "existing" })})
		}
		var given []string
		for _, m := range f.Members {
			if rng.IntN(3) > 0 {
				given = append(given, m.Name)
			}
		}
		given = append(given, "stray")
		rng.Shuffle(len(given), func(i, j int) { given[i], given[j] = given[j], given[i] })
		got := fleet.DeletionOrder(f, given)
		if a, b := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(given)); !slices.Equal(a, b) {
			t.Fatalf("DeletionOrder(%v) = %v", given, got)
		}
		if got[len(got)-1] != "stray" {
			t.Fatalf("stray is not last: %v", got)
		}
		deps := map[string][]string{}
		for _, m := range f.Members {
			deps[m.Name] = m.DependsOn
		}
		var below func(n string, seen map[string]bool)
		below = func(n string, seen map[string]bool) {
			for _, d := range deps[n] {
				if !seen[d] {
					seen[d] = true
					below(d, seen)
				}
			}
		}
		for i, n := range got {
			seen := map[string]bool{}
			below(n, seen)
			for _, m := range got[:i] {
				if seen[m] {
					t.Fatalf("%s is deleted before %s, which depends on it: %v\n%s", m, n, got, describeDAG(tasks, nil))
				}
			}
		}
	}
}
