package fleet_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/fleet"
)

// known is the config and pins every manifest here is checked against.
func known() fleet.Known {
	return fleet.Known{
		Mirrors: []string{"docker.io", "quay.io", "ghcr.io"},
		NodeImage: func(v string) error {
			if v == "v1.33.1" || v == "v1.32.5" {
				return nil
			}
			return fmt.Errorf("no node image for Kubernetes %s in the marina config", v)
		},
		MetricsServer: []string{"v0.7.2", "v0.8.0"},
	}
}

func load(t *testing.T, doc string) fleet.Fleet {
	t.Helper()
	f, err := fleet.Load("fleet.yaml", []byte(doc), known())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return f
}

// problems loads a manifest that must be refused and returns its findings.
func problems(t *testing.T, doc string) []fleet.Problem {
	t.Helper()
	_, err := fleet.Load("fleet.yaml", []byte(doc), known())
	var fe *fleet.Error
	if !errors.As(err, &fe) {
		t.Fatalf("Load returned %v, want a *fleet.Error", err)
	}
	return fe.Problems
}

func TestLoadNames(t *testing.T) {
	f := load(t, `apiVersion: marina.dev/v1alpha1
kind: Fleet
spec:
  clusters: [east, west, mesh]
`)
	if got := names(f.Members); !reflect.DeepEqual(got, []string{"east", "west", "mesh"}) {
		t.Fatalf("members %v", got)
	}
	if f.Name != "" || f.MaxParallel != 1 || f.Strategy != fleet.FailFast || f.Converted {
		t.Errorf("fleet %+v: want an unnamed FailFast fleet, one at a time", f)
	}
	for _, m := range f.Members {
		// A bare name takes every default: the lowest free slot, every
		// mirror (nil), no labels, no metrics-server.
		if m.Num != 0 || m.Mirrors != nil || m.Labels != nil || m.MetricsServer != nil || m.Workers != 0 || m.Line != 4 {
			t.Errorf("member %+v is not a plain cluster at line 4", m)
		}
	}
}

func TestLoadMixed(t *testing.T) {
	f := load(t, `apiVersion: marina.dev/v1alpha1
kind: Fleet
metadata:
  name: demo
spec:
  maxParallel: 3
  strategy: ContinueOnError
  clusters:
    - east
    - name: west
      num: 5
      nodeVersion: v1.32.5
      region: us-east1
      zone: us-east1-c
      workers: 2
      labels: {team: net}
      registries:
        mirrors: [quay.io, docker.io, quay.io]
    - name: mesh
      dependsOn: [east, west]
      registries: {mirrors: []}
`)
	want := []fleet.Member{
		{Name: "east", Line: 9},
		{Name: "west", Num: 5, NodeVersion: "v1.32.5", Region: "us-east1", Zone: "us-east1-c", Workers: 2,
			Labels: cluster.Labels{"team": "net"}, Mirrors: []string{"quay.io", "docker.io"}, Line: 10},
		{Name: "mesh", DependsOn: []string{"east", "west"}, Mirrors: []string{}, Line: 19},
	}
	if !reflect.DeepEqual(f.Members, want) {
		t.Errorf("members\n got %+v\nwant %+v", f.Members, want)
	}
	if f.Name != "demo" || f.MaxParallel != 3 || f.Strategy != fleet.ContinueOnError {
		t.Errorf("fleet %q maxParallel=%d strategy=%s", f.Name, f.MaxParallel, f.Strategy)
	}
}

func TestLoadDefaults(t *testing.T) {
	f := load(t, `apiVersion: marina.dev/v1alpha1
kind: Fleet
spec:
  defaults:
    nodeVersion: v1.33.1
    region: eu-north1
    zone: eu-north1-a
    workers: 1
    cni: none
    labels: {env: dev, team: net}
    registries: {mirrors: [docker.io, quay.io]}
    addons: {metricsServer: {enabled: true}}
  clusters:
    - plain
    - name: own
      nodeVersion: v1.32.5
      region: us-west1
      zone: us-west1-b
      workers: 0
      cni: kindnet
      labels: {team: web, tier: front}
      registries: {mirrors: [ghcr.io]}
      addons: {metricsServer: {enabled: false}}
    - name: all
      registries: {mirrors: ["*"]}
    - name: unset
      registries: {mirrors: null}
`)
	inherited := addons.MetricsServer{Version: "v0.8.0", InsecureTLS: true}
	want := []fleet.Member{
		{Name: "plain", NodeVersion: "v1.33.1", Region: "eu-north1", Zone: "eu-north1-a", Workers: 1, CNI: "none",
			Labels: cluster.Labels{"env": "dev", "team": "net"}, Mirrors: []string{"docker.io", "quay.io"},
			MetricsServer: &inherited, Line: 14},
		// Its own values win; its labels merge over the defaults'; its
		// mirrors replace the defaults' whole; its metricsServer too.
		{Name: "own", NodeVersion: "v1.32.5", Region: "us-west1", Zone: "us-west1-b", Workers: 0, CNI: "kindnet",
			Labels: cluster.Labels{"env": "dev", "team": "web", "tier": "front"}, Mirrors: []string{"ghcr.io"}, Line: 15},
		{Name: "all", NodeVersion: "v1.33.1", Region: "eu-north1", Zone: "eu-north1-a", Workers: 1, CNI: "none",
			Labels: cluster.Labels{"env": "dev", "team": "net"}, Mirrors: nil,
			MetricsServer: &inherited, Line: 24},
		// mirrors: null is as if left out: the defaults' list.
		{Name: "unset", NodeVersion: "v1.33.1", Region: "eu-north1", Zone: "eu-north1-a", Workers: 1, CNI: "none",
			Labels: cluster.Labels{"env": "dev", "team": "net"}, Mirrors: []string{"docker.io", "quay.io"},
			MetricsServer: &inherited, Line: 26},
	}
	for i := range want {
		if i >= len(f.Members) {
			t.Fatalf("only %d members", len(f.Members))
		}
		if !reflect.DeepEqual(f.Members[i], want[i]) {
			t.Errorf("member %d\n got %+v\nwant %+v", i, f.Members[i], want[i])
		}
	}
}

func TestLoadMetricsServer(t *testing.T) {
	for _, tc := range []struct {
		name, addon string
		want        *addons.MetricsServer
	}{
		// No version: the pinned default, the last of Known.MetricsServer.
		{"enabled", `{enabled: true}`, &addons.MetricsServer{Version: "v0.8.0", InsecureTLS: true}},
		{"version", `{enabled: true, version: v0.7.2}`, &addons.MetricsServer{Version: "v0.7.2", InsecureTLS: true}},
		{"secure", `{enabled: true, kubeletInsecureTLS: false}`, &addons.MetricsServer{Version: "v0.8.0"}},
		{"insecure", `{enabled: true, kubeletInsecureTLS: true}`, &addons.MetricsServer{Version: "v0.8.0", InsecureTLS: true}},
		{"disabled", `{enabled: false, version: v0.7.2}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := load(t, `apiVersion: marina.dev/v1alpha1
kind: Fleet
spec:
  clusters:
    - name: a
      addons: {metricsServer: `+tc.addon+`}
`)
			if got := f.Members[0].MetricsServer; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("metricsServer %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLoadConverted(t *testing.T) {
	f := load(t, `apiVersion: klimax.dev/v1alpha1
kind: Fleet
spec:
  clusters: [a]
`)
	if !f.Converted || len(f.Members) != 1 {
		t.Errorf("klimax's apiVersion: converted=%v members=%v", f.Converted, names(f.Members))
	}
	if f := load(t, "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  clusters: [a]\n"); f.Converted {
		t.Error("marina's own apiVersion was marked converted")
	}
}

func TestLoadSpec(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		parallel int
		strategy fleet.Strategy
	}{
		{"", 1, fleet.FailFast},
		{"maxParallel: 0", 1, fleet.FailFast},
		{"maxParallel: 1", 1, fleet.FailFast},
		{"maxParallel: 4", 4, fleet.FailFast},
		{"strategy: FailFast", 1, fleet.FailFast},
		{"strategy: ContinueOnError", 1, fleet.ContinueOnError},
	} {
		f := load(t, "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  "+tc.spec+"\n  clusters: [a]\n")
		if f.MaxParallel != tc.parallel || f.Strategy != tc.strategy {
			t.Errorf("%q: maxParallel=%d strategy=%s, want %d %s", tc.spec, f.MaxParallel, f.Strategy, tc.parallel, tc.strategy)
		}
	}
}

// head is the first four lines of most invalid manifests: the entries
// that follow start at line 5.
const head = "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  clusters:\n"

func TestLoadInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		line int
		path string // "": not checked
		msg  string
	}{
		{"empty file", "", 1, "", "the file is empty"},
		{"not yaml", "apiVersion: a\n kind: b\n", 2, "", "not YAML: mapping values are not allowed"},
		{"wrong apiVersion", "apiVersion: v1\nkind: Fleet\nspec:\n  clusters: [a]\n", 1, "apiVersion", `"v1" is not a Fleet's`},
		{"missing apiVersion", "# a fleet\nkind: Fleet\nspec:\n  clusters: [a]\n", 2, "apiVersion", "missing: write apiVersion: marina.dev/v1alpha1"},
		{"wrong kind", "apiVersion: marina.dev/v1alpha1\nkind: Cluster\nspec:\n  clusters: [a]\n", 2, "kind", `"Cluster": this file must be a Fleet`},
		{"missing kind", "apiVersion: marina.dev/v1alpha1\nspec:\n  clusters: [a]\n", 1, "kind", "missing: write kind: Fleet"},
		{"empty clusters", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  clusters: []\n", 4, "spec.clusters", "at least one cluster"},
		{"no spec", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\n", 1, "spec.clusters", "at least one cluster"},
		{"unknown key", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  maxParalel: 2\n  clusters: [a]\n", 4, "spec.maxParalel", `unknown key "maxParalel" (did you mean "maxParallel"?)`},
		{"unknown entry key", head + "    - name: a\n      worker: 2\n", 6, "spec.clusters[0].worker", `(did you mean "workers"?)`},
		{"unknown key far off", head + "    - name: a\n      colour: red\n", 6, "", "(known keys: addons, cni, dependsOn, labels, name,"},
		{"unknown cni", head + "    - name: a\n      cni: cilium\n", 6, "spec.clusters[0].cni", `cni "cilium": choose kindnet (kind's default) or none`},
		{"duplicate key", head + "    - name: a\n      workers: 1\n      workers: 2\n", 7, "spec.clusters[0].workers", "duplicate key (first at line 6)"},
		{"duplicate top key", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nkind: Fleet\nspec:\n  clusters: [a]\n", 3, "kind", "duplicate key (first at line 2)"},
		{"workers not a number", head + "    - name: a\n      workers: four\n", 6, "spec.clusters[0].workers", `expected a whole number, got "four"`},
		{"num quoted", head + "    - name: a\n      num: \"3\"\n", 6, "", `expected a whole number, got "3"`},
		{"num too big", head + "    - name: a\n      num: 99999999999\n", 6, "", "99999999999 is out of range"},
		{"name a number", head + "    - name: 42\n", 5, "spec.clusters[0].name", `expected text, got the number 42 (quote it: "42")`},
		{"bare number", head + "    - 42\n", 5, "spec.clusters[0]", `expected text, got the number 42`},
		{"entry a list", head + "    - [a]\n", 5, "spec.clusters[0]", "expected a cluster's name or a mapping"},
		{"entry without name", head + "    - workers: 1\n", 5, "spec.clusters[0]", "an entry without name"},
		{"dependsOn not a list", head + "    - a\n    - name: b\n      dependsOn: a\n", 7, "spec.clusters[1].dependsOn", `expected a list, got "a"`},
		{"labels a list", head + "    - name: a\n      labels: [x]\n", 6, "spec.clusters[0].labels", "expected a mapping of label keys to values, got a list"},
		{"enabled quoted", head + "    - name: a\n      addons: {metricsServer: {enabled: \"yes\"}}\n", 6, "", `expected true or false, got "yes"`},
		{"duplicate name", head + "    - a\n    - b\n    - a\n", 7, "spec.clusters[2].name", "cluster a is listed twice (first at line 5)"},
		{"invalid name", head + "    - Bad_Name\n", 5, "spec.clusters[0].name", "is not a DNS label"},
		{"num too high", head + "    - name: a\n      num: 100\n", 6, "spec.clusters[0].num", "100: a slot is 1 to 99"},
		{"num negative", head + "    - name: a\n      num: -1\n", 6, "spec.clusters[0].num", "-1: a slot is 1 to 99"},
		{"duplicate num", head + "    - name: a\n      num: 3\n    - name: b\n      num: 3\n", 8, "spec.clusters[1].num", "slot 3 is a's too"},
		{"unknown dependency", head + "    - a\n    - name: b\n      dependsOn: [a, zz]\n", 7, "spec.clusters[1].dependsOn", `"zz" is not a cluster of this fleet (it lists a, b)`},
		{"self dependency", head + "    - name: a\n      dependsOn: [a]\n", 6, "", "cluster a depends on itself"},
		{"dependency twice", head + "    - a\n    - name: b\n      dependsOn: [a, a]\n", 7, "", "a is listed twice"},
		{"cycle", head + "    - name: a\n      dependsOn: [b]\n    - name: b\n      dependsOn: [a]\n", 5, "dependsOn", "a circle: a → b → a;"},
		{"longer cycle", head + "    - name: x\n      dependsOn: [y]\n    - name: y\n      dependsOn: [z]\n    - name: z\n      dependsOn: [x]\n", 5, "", "x → y → z → x"},
		{"unknown mirror", head + "    - name: a\n      registries: {mirrors: [nope]}\n", 6, "spec.clusters[0].registries.mirrors", `no mirror is named "nope" in the marina config (registries.mirrors has docker.io, quay.io, ghcr.io)`},
		{"star and names", head + "    - name: a\n      registries: {mirrors: [\"*\", quay.io]}\n", 6, "", `"*" selects every mirror and cannot be combined with names`},
		{"label key", head + "    - name: a\n      labels: {\"bad key\": x}\n", 6, "spec.clusters[0].labels.bad key", `label key "bad key"`},
		{"label value", head + "    - name: a\n      labels: {team: \"a b\"}\n", 6, "", `label team value "a b"`},
		{"label managed-by", head + "    - name: a\n      labels: {managed-by: me}\n", 6, "", "marina's own mark"},
		{"label fleet", head + "    - name: a\n      labels: {marina.dev/fleet: x}\n", 6, "", "names the cluster's fleet"},
		{"label region", head + "    - name: a\n      labels: {topology.kubernetes.io/region: x}\n", 6, "", "comes from the cluster's region and zone settings"},
		{"label zone", head + "    - name: a\n      labels: {topology.kubernetes.io/zone: x}\n", 6, "", "comes from the cluster's region and zone settings"},
		// At the line of the label itself, not of the first label.
		{"label kubernetes.io", head + "    - name: a\n      labels:\n        team: net\n        kubernetes.io/os: x\n", 8, "spec.clusters[0].labels.kubernetes.io/os", "a namespace the kubelet refuses"},
		// Inherited by two clusters, written once: reported once, there.
		{"default label kubernetes.io", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults:\n    labels: {example.k8s.io/x: y}\n  clusters: [a, b]\n", 5, "spec.defaults.labels.example.k8s.io/x", "a namespace the kubelet refuses"},
		{"default workers", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults:\n    workers: 12\n  clusters: [a, b, c]\n", 5, "spec.defaults.workers", "12: choose 0 to 9 worker nodes"},
		{"default nodeVersion", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults: {nodeVersion: v1.20.0}\n  clusters: [a, b]\n", 4, "spec.defaults.nodeVersion", "no node image for Kubernetes v1.20.0"},
		{"default mirror", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults:\n    registries: {mirrors: [nope]}\n  clusters: [a, b]\n", 5, "spec.defaults.registries.mirrors", `no mirror is named "nope"`},
		{"default metrics version", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults:\n    addons: {metricsServer: {enabled: true, version: v0.1.0}}\n  clusters: [a, b]\n", 5, "spec.defaults.addons.metricsServer.version", `metrics-server "v0.1.0" has no pinned manifest`},
		{"workers too many", head + "    - name: a\n      workers: 10\n", 6, "", "10: choose 0 to 9 worker nodes"},
		{"region", head + "    - name: a\n      region: \"eu west\"\n", 6, "spec.clusters[0].region", `"eu west" is not a label value`},
		{"zone empty", head + "    - name: a\n      zone: \"\"\n", 6, "spec.clusters[0].zone", `"" is not a label value: it is empty`},
		{"metrics version", head + "    - name: a\n      addons:\n        metricsServer:\n          enabled: true\n          version: v9.9.9\n", 9, "spec.clusters[0].addons.metricsServer.version", `metrics-server "v9.9.9" has no pinned manifest in this marina: use one of v0.7.2, v0.8.0, or leave version out for v0.8.0`},
		{"metrics no enabled", head + "    - name: a\n      addons: {metricsServer: {version: v0.7.2}}\n", 6, "", "say enabled: true (or false)"},
		{"nodeVersion", head + "    - name: a\n      nodeVersion: v1.20.0\n", 6, "spec.clusters[0].nodeVersion", "no node image for Kubernetes v1.20.0 in the marina config"},
		{"second document", head + "    - a\n---\nkind: Fleet\n", 6, "", "a second YAML document starts here"},
		{"broken second document", head + "    - a\n---\nkind: [\n", 7, "", "not YAML after the first document"},
		{"alias", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults:\n    labels: &l {team: a}\n  clusters:\n    - name: a\n      labels: *l\n", 8, "spec.clusters[0].labels", "YAML aliases (*l) are not supported"},
		{"alias entry", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults: &d {workers: 1}\n  clusters:\n    - *d\n", 6, "spec.clusters[0]", "YAML aliases (*d) are not supported"},
		{"merge key", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  defaults: &d {workers: 1}\n  clusters:\n    - name: a\n      <<: *d\n", 7, "", "merge keys (<<) are not supported"},
		{"fleet name", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: my fleet!\nspec:\n  clusters: [a]\n", 4, "metadata.name", `"my fleet!" cannot be the value of the marina.dev/fleet label`},
		{"fleet name empty", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: \"\"\nspec:\n  clusters: [a]\n", 4, "metadata.name", "it is empty"},
		{"strategy", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  strategy: KeepGoing\n  clusters: [a]\n", 4, "spec.strategy", `"KeepGoing": choose FailFast`},
		{"maxParallel negative", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nspec:\n  maxParallel: -2\n  clusters: [a]\n", 4, "spec.maxParallel", "-2: give the number of clusters created at once"},
		{"metadata a string", "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata: demo\nspec:\n  clusters: [a]\n", 3, "metadata", `expected a mapping with keys (name), got "demo"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, tc.doc)
			// One mistake, one problem: a second would be noise (or a
			// mistake in the test's manifest).
			if len(ps) != 1 {
				t.Fatalf("%d problems, want 1:\n%s", len(ps), dump(ps))
			}
			p := ps[0]
			if p.Line != tc.line || !strings.Contains(p.Msg, tc.msg) || (tc.path != "" && p.Path != tc.path) {
				t.Errorf("got %d %s: %s\nwant %d %s: …%s…", p.Line, p.Path, p.Msg, tc.line, tc.path, tc.msg)
			}
		})
	}
}

// TestLoadAllProblems: every mistake is reported in one go, in line
// order, whatever order the checks find them in (the cycle is found last
// but sits on line 6).
func TestLoadAllProblems(t *testing.T) {
	ps := problems(t, `apiVersion: marina.dev/v1alpha1
kind: Flet
spec:
  strategy: Sometimes
  clusters:
    - name: a
      dependsOn: [b]
      workers: many
    - name: b
      dependsOn: [a, ghost]
      labels: {managed-by: me}
    - name: b
    - UPPER
`)
	want := []struct {
		line int
		msg  string
	}{
		{2, `"Flet": this file must be a Fleet`},
		{4, `"Sometimes": choose FailFast`},
		{6, "a → b → a"},
		{8, `expected a whole number, got "many"`},
		{10, `"ghost" is not a cluster of this fleet`},
		{11, "marina's own mark"},
		{12, "cluster b is listed twice (first at line 9)"},
		{13, `cluster name "UPPER" is not a DNS label`},
	}
	if len(ps) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(ps), len(want), dump(ps))
	}
	for i, w := range want {
		if ps[i].Line != w.line || !strings.Contains(ps[i].Msg, w.msg) {
			t.Errorf("problem %d: %d: %s, want %d: …%s…", i, ps[i].Line, ps[i].Msg, w.line, w.msg)
		}
	}
}

// TestLoadStableReport: the same manifest gives the same report each
// time, even when several findings share a line.
func TestLoadStableReport(t *testing.T) {
	doc := head + "    - name: a\n      labels: {managed-by: x, marina.dev/fleet: y, \"bad key\": z, kubernetes.io/a: b, k8s.io/c: d}\n"
	_, first := fleet.Load("fleet.yaml", []byte(doc), known())
	if first == nil {
		t.Fatal("accepted")
	}
	for range 50 {
		if _, err := fleet.Load("fleet.yaml", []byte(doc), known()); err == nil || err.Error() != first.Error() {
			t.Fatalf("reports differ:\n%v\n%v", first, err)
		}
	}
	fe, ok := errors.AsType[*fleet.Error](first)
	if !ok {
		t.Fatalf("not a *fleet.Error: %v", first)
	}
	if n := len(fe.Problems); n != 5 {
		t.Errorf("%d problems for five bad labels:\n%v", n, first)
	}
}

func TestErrorText(t *testing.T) {
	one := &fleet.Error{File: "f.yaml", Problems: []fleet.Problem{{Line: 3, Path: "kind", Msg: "bad"}}}
	if got, want := one.Error(), "invalid fleet manifest f.yaml:\n  f.yaml:3: kind: bad"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	two := &fleet.Error{File: "f.yaml", Problems: []fleet.Problem{{Line: 1, Msg: "empty"}, {Line: 4, Path: "spec", Msg: "odd"}}}
	if got, want := two.Error(), "invalid fleet manifest f.yaml (2 problems):\n  f.yaml:1: empty\n  f.yaml:4: spec: odd"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func names(ms []fleet.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func dump(ps []fleet.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %d %s: %s\n", p.Line, p.Path, p.Msg)
	}
	return b.String()
}

// A problem's line is the line an editor shows: text YAML would read with
// other line breaks than the editor's is refused, saying why.
func TestLoadRefusesTextWithOtherLineBreaks(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"\xff\xfea\x00:\x00 \x00b\x00", "fleet.yaml:1: not UTF-8 text (UTF-16, or another encoding): save the file as UTF-8"},
		{"apiVersion: marina.dev/v1alpha1\nkind: Fleet # a\u2028b\nspec: {}\n", "fleet.yaml:2: a Unicode line separator (U+0085, U+2028 or U+2029), which YAML counts as a line break: remove it"},
	} {
		_, err := fleet.Load("fleet.yaml", []byte(c.doc), known())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %s", c.doc, err, c.want)
		}
	}
}
