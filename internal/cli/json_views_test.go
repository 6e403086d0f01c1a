package cli

// Every -o json|yaml view, rendered from one fixture: both formats must
// carry the same keys, all camelCase, and the json is checked in
// (testdata/views) as the stable interface it is documented to be. The
// CLI's text goldens are printed from those same files (internal/cli).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/doctor"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/golden"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/version"
	"github.com/bcollard/marina/internal/vm"
)

// viewsFixture is sessiontest.Healthy's lab with something in every
// view: dev runs in fleet demo with labels, east is stopped and has no
// kubeconfig, the local DNS holds two names, and a mirror container the
// config no longer has is left over.
func viewsFixture(t *testing.T) *sessiontest.World {
	f := sessiontest.Healthy(t)
	f.Labels = map[string]map[string]string{"dev": {
		"managed-by": "marina", cluster.RegionLabel: "europe-west1", cluster.ZoneLabel: "europe-west1-b",
		cluster.FleetLabel: "demo", "team": "net",
	}}
	f.NodeContainers = append(f.NodeContainers, docker.Node{
		Container: docker.Container{ID: "east-cp", Name: "east-control-plane", State: "exited"},
		Cluster:   "east", Role: "control-plane", APIPorts: []int{7002},
	})
	f.Instance.VMType, f.Instance.Arch = "vz", "aarch64"
	f.Instance.Dir = filepath.Join(f.Vars["HOME"], ".marina", "lima", "marina")
	// One mirror has pulled something through.
	cache, err := f.Env.Paths.MirrorCache("registry-dockerio")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "blob"), make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f.Mirrors = append(f.Mirrors, docker.Container{ID: "old-id", Name: "registry-old", State: "exited", Labels: map[string]string{registry.LabelMirror: "registry-old"}})
	kv := func(k, v string) string {
		return fmt.Sprintf(`{"key":%q,"value":%q}`, base64.StdEncoding.EncodeToString([]byte(k)), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	f.Scripts["read the local DNS records"] = vm.Result{Stdout: []byte(`{"kvs":[` + strings.Join([]string{
		kv("/skydns/internal/demo/dev/shop/web/1a2b3c4d", `{"host":"172.30.1.1","targetstrip":1}`),
		kv("/skydns/internal/demo/dev/shop/a-web/5e6f7a8b", `{"text":"\"heritage=external-dns,external-dns/owner=dev\"","targetstrip":1}`),
		kv("/skydns/internal/demo/dev/default/api/0a0b0c0d", `{"host":"172.30.1.2","targetstrip":1}`),
		// east is stopped: its name stays, shown as stopped.
		kv("/skydns/internal/demo/east/default/db/0e0f0a0b", `{"host":"172.30.2.1","targetstrip":1}`),
	}, ",") + `]}`)}
	return f
}

// view is one command's result, as the CLI renders it.
type view struct {
	name string // its file under testdata/views
	v    any
	// rendered, when set, is the command's own output in a format (fleet
	// apply renders itself).
	rendered func(format string) []byte
}

func (w view) render(t *testing.T, format string) []byte {
	t.Helper()
	if w.rendered != nil {
		return w.rendered(format)
	}
	var b bytes.Buffer
	if err := ui.Render(&b, format, w.v); err != nil {
		t.Fatalf("%s -o %s: %v", w.name, format, err)
	}
	return b.Bytes()
}

// views are every view with data in it, from one viewsFixture.
func views(t *testing.T) (*sessiontest.World, []view) {
	t.Helper()
	f := viewsFixture(t)
	ctx := context.Background()
	must := func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		return v
	}
	manifest := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(manifest, fmt.Appendf(nil, sessiontest.DemoFleet, "FailFast"), 0o600); err != nil {
		t.Fatal(err)
	}
	// east, stopped, fails its check; registry-old warns.
	doc := must(doctor.Run(ctx, f.Env, doctor.Options{}))
	return f, []view{
		{name: "status", v: must(status.Get(ctx, f.Env))},
		{name: "cluster-list", v: must(kindcluster.List(ctx, f.Env, ""))},
		{name: "registry-list", v: must(status.ListMirrors(ctx, f.Env))},
		{name: "dns-list", v: must(status.ListDNS(ctx, f.Env, ""))},
		{name: "fleet-list", v: must(fleet.List(ctx, f.Env))},
		{name: "fleet-describe", v: must(fleet.Describe(ctx, f.Env, "demo"))},
		{name: "doctor", v: doc},
		{name: "version", v: fixedVersion()},
		{name: "cluster-create", v: createdView{}, rendered: func(format string) []byte {
			// The command itself, on the fake world: its plan.
			var out, errb bytes.Buffer
			r := newRoot(&out, &errb)
			r.env.Store(f.Env)
			c := r.clusterCreateCmd()
			c.SetArgs([]string{"new", "--dry-run", "-o", format})
			c.SetContext(ctx)
			if err := c.Execute(); err != nil {
				t.Fatalf("cluster create -o %s: %v\n%s", format, err, errb.String())
			}
			return out.Bytes()
		}},
		{name: "fleet-apply", v: fleet.Report{}, rendered: func(format string) []byte {
			// The command itself, on the fake world.
			var out, errb bytes.Buffer
			r := newRoot(&out, &errb)
			r.env.Store(f.Env)
			c := r.fleetApplyCmd("apply")
			c.SetArgs([]string{"-f", manifest, "--dry-run", "-o", format})
			c.SetContext(ctx)
			if err := c.Execute(); err != nil {
				t.Fatalf("fleet apply -o %s: %v\n%s", format, err, errb.String())
			}
			return out.Bytes()
		}},
	}
}

// fixedVersion is version's view with what differs between machines and
// builds (marina's own version, Go's, the platform, the limactl found)
// set to fixed values: its pins are what the code says.
func fixedVersion() version.Report {
	v := version.GetReport(context.Background(), func() (*vm.Limactl, error) { return nil, errors.New("no limactl") }, time.Second)
	v.Version, v.Commit, v.Modified, v.GoVersion, v.Platform = "v0.4.0", "0123456789abcdef0123456789abcdef01234567", true, "go1.26.8", "darwin/arm64"
	v.Limactl = version.Limactl{Path: "/opt/homebrew/bin/limactl", Version: "2.0.3"}
	return v
}

// sparseViews are the views of a lab with little in it, where most
// optional fields are empty: a VM not created, or stopped.
func sparseViews(t *testing.T) []view {
	t.Helper()
	var out []view
	for _, state := range []string{"", vm.StatusStopped} {
		f := sessiontest.New(t)
		f.Config(nil)
		if state == "" {
			f.Instance = nil
		} else {
			f.Instance.Status = state
		}
		st, err := status.Get(context.Background(), f.Env)
		if err != nil {
			t.Fatal(err)
		}
		mirrors, err := status.ListMirrors(context.Background(), f.Env)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := doctor.Run(context.Background(), f.Env, doctor.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, view{name: "status " + state, v: st}, view{name: "registry list " + state, v: mirrors}, view{name: "doctor " + state, v: doc})
	}
	return out
}

// keyPaths are every key of a decoded document, nested ones as a.b and
// those in lists as a[].b.
func keyPaths(v any, at string, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := at + "." + k
			out[p] = true
			keyPaths(e, p, out)
		}
	case []any:
		for _, e := range v {
			keyPaths(e, at+"[]", out)
		}
	}
}

func decodedKeys(t *testing.T, name, format string, b []byte) map[string]bool {
	t.Helper()
	var doc any
	var err error
	if format == "json" {
		err = json.Unmarshal(b, &doc)
	} else {
		err = yaml.Unmarshal(b, &doc) // yaml.v3, not the renderer's library
	}
	if err != nil {
		t.Fatalf("%s -o %s does not parse: %v\n%s", name, format, err, b)
	}
	keys := map[string]bool{}
	keyPaths(doc, "", keys)
	return keys
}

// -o json and -o yaml of every view have the same keys, nested ones
// included, with the same empty fields left out.
func TestViewsJSONAndYAMLHaveTheSameKeys(t *testing.T) {
	_, full := views(t)
	for _, w := range append(full, sparseViews(t)...) {
		j := decodedKeys(t, w.name, "json", w.render(t, "json"))
		y := decodedKeys(t, w.name, "yaml", w.render(t, "yaml"))
		if len(j) == 0 && !strings.HasSuffix(w.name, "list") {
			t.Errorf("%s: no keys at all", w.name)
		}
		for k := range j {
			if !y[k] {
				t.Errorf("%s: %s is in -o json, not in -o yaml", w.name, k)
			}
		}
		for k := range y {
			if !j[k] {
				t.Errorf("%s: %s is in -o yaml, not in -o json", w.name, k)
			}
		}
	}
}

var camel = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// fieldNames checks every field a view's type can render, whether this
// fixture fills it or not: each has a camelCase json name (the one both
// formats use) and no yaml tag (which the renderer would ignore).
func fieldNames(t *testing.T, view string, ty reflect.Type, seen map[reflect.Type]bool) {
	t.Helper()
	for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
		ty = ty.Elem() // a map's keys are data (labels, options), not field names
	}
	if ty.Kind() != reflect.Struct || seen[ty] || ty.Implements(reflect.TypeFor[json.Marshaler]()) || reflect.PointerTo(ty).Implements(reflect.TypeFor[json.Marshaler]()) {
		return
	}
	seen[ty] = true
	for i := range ty.NumField() {
		fd := ty.Field(i)
		if !fd.IsExported() {
			continue
		}
		tag, ok := fd.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-":
			continue
		case !ok || name == "":
			t.Errorf("%s: %s.%s has no json name: it would render as %q", view, ty, fd.Name, fd.Name)
		case !camel.MatchString(name):
			t.Errorf("%s: %s.%s renders as %q, not camelCase", view, ty, fd.Name, name)
		}
		if _, ok := fd.Tag.Lookup("yaml"); ok {
			t.Errorf("%s: %s.%s has a yaml tag: -o yaml renders the json tags alone", view, ty, fd.Name)
		}
		fieldNames(t, view, fd.Type, seen)
	}
}

func TestViewsFieldNamesAreCamelCase(t *testing.T) {
	_, full := views(t)
	for _, w := range full {
		fieldNames(t, w.name, reflect.TypeOf(w.v), map[reflect.Type]bool{})
	}
	// And what the fixture rendered, map keys aside.
	for _, w := range full {
		var doc any
		if err := json.Unmarshal(w.render(t, "json"), &doc); err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		keyPaths(doc, "", keys)
		for k := range keys {
			if strings.Contains(k, ".labels.") || strings.Contains(k, ".options.") {
				continue
			}
			if last := k[strings.LastIndex(k, ".")+1:]; !camel.MatchString(last) {
				t.Errorf("%s: key %s", w.name, k)
			}
		}
	}
}

// The json of every view, as the fixture renders it, is checked in: a
// renamed or dropped field shows in review as a diff of the interface.
// The fixture's temporary paths read as a Mac's.
func TestGoldenViews(t *testing.T) {
	f, full := views(t)
	home := f.Vars["HOME"]
	names := []string{}
	for _, w := range full {
		b := w.render(t, "json")
		b = bytes.ReplaceAll(b, []byte(f.ResolverDir), []byte("/etc/resolver"))
		b = bytes.ReplaceAll(b, []byte(home), []byte("/Users/dev"))
		golden.Check(t, filepath.Join("views", w.name+".json"), b)
		names = append(names, w.name+".json")
	}
	// No golden is left over from a view that went.
	ents, _ := os.ReadDir(filepath.Join("testdata", "views"))
	for _, e := range ents {
		// The text goldens beside them are TestGoldenTextViews's.
		if filepath.Ext(e.Name()) == ".json" && !slices.Contains(names, e.Name()) {
			t.Errorf("testdata/views/%s is no view's", e.Name())
		}
	}
}

// A selector that matches nothing is an empty list, not an error; one
// that does not parse is a usage error; labels that cannot be read to
// match are a failure to look.
func TestSelectors(t *testing.T) {
	f := viewsFixture(t)
	ctx := context.Background()
	if recs, err := status.ListDNS(ctx, f.Env, "cluster=nosuch"); err != nil || len(recs) != 0 {
		t.Errorf("dns list -l cluster=nosuch = %v, %v", recs, err)
	}
	if recs, err := status.ListDNS(ctx, f.Env, "owner=dev"); err != nil || len(recs) != 1 || recs[0].Name != "web.shop.dev.demo.internal" {
		t.Errorf("dns list -l owner=dev = %v, %v", recs, err)
	}
	if rows, err := kindcluster.List(ctx, f.Env, "team=nosuch"); err != nil || len(rows) != 0 {
		t.Errorf("cluster list -l team=nosuch = %v, %v", rows, err)
	}
	for _, list := range []func(string) error{
		func(s string) error { _, err := status.ListDNS(ctx, f.Env, s); return err },
		func(s string) error { _, err := kindcluster.List(ctx, f.Env, s); return err },
	} {
		if err := list("tier in (gold"); session.Code(err) != session.ExitUsage {
			t.Errorf("a broken selector: %v (exit %d)", err, session.Code(err))
		}
	}
	f.Fail["kube dev node-labels"] = errors.New("boom")
	if rows, err := kindcluster.List(ctx, f.Env, "team=net"); err == nil || session.Code(err) != session.ExitFailed || !strings.Contains(err.Error(), "cannot read its labels to match -l team=net") {
		t.Errorf("labels unreadable: %v, %v", rows, err)
	}
}
