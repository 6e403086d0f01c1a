package fleet_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/slot"
)

// FuzzLoad: whatever the file holds, Load returns a fleet that is safe to
// plan and schedule, or a *fleet.Error that points at lines and says
// something; never a panic.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		// valid
		"apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  clusters: [a, b]\n",
		"apiVersion: klimax.dev/v1alpha1\nkind: Fleet\nmetadata: {name: demo}\nspec:\n  maxParallel: 2\n  strategy: ContinueOnError\n  defaults:\n    labels: {env: dev}\n    registries: {mirrors: [docker.io]}\n  clusters:\n    - east\n    - name: west\n      num: 5\n      nodeVersion: v1.33.1\n      addons: {metricsServer: {enabled: true}}\n    - name: mesh\n      dependsOn: [east, west]\n      labels: {role: hub}\n      registries: {mirrors: [\"*\"]}\n",
		"{apiVersion: marina.dev/v1alpha1, kind: Fleet, spec: {clusters: [{name: a, workers: 2, region: r, zone: z}]}}\n",
		// invalid
		"",
		"~\n",
		"- a\n- b\n",
		"apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  clusters:\n    - name: a\n      dependsOn: [b]\n    - name: b\n      dependsOn: [a, a, c]\n",
		"apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults: &d {workers: 12}\n  clusters:\n    - *d\n    - name: a\n      <<: *d\n      labels: {kubernetes.io/x: y, managed-by: z}\n",
		"apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  clusters: [a]\n---\nkind: [\n",
		"apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  clusters:\n    - {name: a, num: 3}\n    - {name: b, num: 3}\n    - {name: B, num: 100}\n    - 42\n    - [x]\n    - ~\n",
		"apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  clusters:\n    - name: a\n      num: !!int x\n      workers: 99999999999\n      addons: {metricsServer: {enabled: \"yes\", version: v9}}\n",
		"a: b\n c: d\n",
		"? [a]\n: b\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		fl, err := fleet.Load("fleet.yaml", []byte(doc), known())
		// Load is a function of its input: the same file, the same answer.
		fl2, err2 := fleet.Load("fleet.yaml", []byte(doc), known())
		if !reflect.DeepEqual(fl, fl2) || !reflect.DeepEqual(err, err2) {
			t.Fatalf("two loads differ:\n%+v %v\n%+v %v", fl, err, fl2, err2)
		}
		if err != nil {
			var fe *fleet.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *fleet.Error", err, err)
			}
			if len(fe.Problems) == 0 || fe.File != "fleet.yaml" {
				t.Fatalf("error without problems, or of another file: %+v", fe)
			}
			seen := map[fleet.Problem]bool{}
			for i, p := range fe.Problems {
				if p.Line < 1 || p.Line > strings.Count(doc, "\n")+strings.Count(doc, "\r")+2 || p.Msg == "" {
					t.Fatalf("problem %+v: a line outside the file, or no message", p)
				}
				if i > 0 && p.Line < fe.Problems[i-1].Line {
					t.Fatalf("problems out of line order:\n%v", err)
				}
				if seen[p] {
					t.Fatalf("problem %+v reported twice", p)
				}
				seen[p] = true
			}
			return
		}
		if len(fl.Members) == 0 || fl.MaxParallel < 1 {
			t.Fatalf("accepted a fleet of %d members, maxParallel %d", len(fl.Members), fl.MaxParallel)
		}
		if fl.Strategy != fleet.FailFast && fl.Strategy != fleet.ContinueOnError {
			t.Fatalf("strategy %q", fl.Strategy)
		}
		byName := map[string]fleet.Member{}
		nums := map[int]string{}
		for _, m := range fl.Members {
			if err := cluster.CheckName(m.Name); err != nil {
				t.Fatalf("accepted member %q: %v", m.Name, err)
			}
			if _, dup := byName[m.Name]; dup {
				t.Fatalf("accepted %s twice", m.Name)
			}
			byName[m.Name] = m
			if m.Num != 0 {
				if slot.Check(m.Num) != nil || nums[m.Num] != "" {
					t.Fatalf("accepted num %d for %s (also %q's)", m.Num, m.Name, nums[m.Num])
				}
				nums[m.Num] = m.Name
			}
			if m.Workers < 0 || m.Workers > cluster.MaxWorkers {
				t.Fatalf("accepted %d workers", m.Workers)
			}
		}
		for _, m := range fl.Members {
			for _, d := range m.DependsOn {
				if _, ok := byName[d]; !ok || d == m.Name {
					t.Fatalf("%s depends on %q, which is itself or no member", m.Name, d)
				}
			}
		}
		if c := cycle(fl.Members); c != "" {
			t.Fatalf("accepted a dependency cycle through %s", c)
		}
	})
}

// cycle names a member on a dependency circle, "" when there is none: it
// peels off members whose dependencies are all peeled (Kahn's algorithm)
// and whatever is left is on or behind a circle.
func cycle(ms []fleet.Member) string {
	done := map[string]bool{}
	for progress := true; progress; {
		progress = false
		for _, m := range ms {
			if done[m.Name] {
				continue
			}
			ok := true
			for _, d := range m.DependsOn {
				ok = ok && done[d]
			}
			if ok {
				done[m.Name], progress = true, true
			}
		}
	}
	for _, m := range ms {
		if !done[m.Name] {
			return m.Name
		}
	}
	return ""
}
