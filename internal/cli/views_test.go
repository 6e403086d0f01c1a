package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/cli/show"
	"github.com/bcollard/marina/internal/golden"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/version"
)

// jsonViews holds the json of every -o view, rendered by TestGoldenViews
// (json_views_test.go) from one fixture: the text views below are printed
// from those same values.
var jsonViews = filepath.Join("testdata", "views")

// viewOf is the view each command with an -o flag prints: a command that
// gains an -o flag needs a view in json_views_test.go first.
var viewOf = map[string]string{
	"status":         "status",
	"cluster list":   "cluster-list",
	"registry list":  "registry-list",
	"dns list":       "dns-list",
	"fleet list":     "fleet-list",
	"fleet describe": "fleet-describe",
	"fleet apply":    "fleet-apply",
	"cluster apply":  "fleet-apply",
	"cluster create": "cluster-create",
	"doctor":         "doctor",
	"version":        "version",
}

func TestEveryOutputFlagHasAView(t *testing.T) {
	var walk func(*cobra.Command)
	seen := map[string]bool{}
	walk = func(c *cobra.Command) {
		if c.LocalFlags().Lookup("output") != nil {
			path := strings.TrimPrefix(c.CommandPath(), "marina ")
			seen[path] = true
			name, ok := viewOf[path]
			if !ok {
				t.Errorf("marina %s has -o but no view: add it to views() in json_views_test.go and to viewOf", path)
			} else if _, err := os.Stat(filepath.Join(jsonViews, name+".json")); err != nil {
				t.Errorf("marina %s: %v", path, err)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard).command())
	for path := range viewOf {
		if !seen[path] {
			t.Errorf("viewOf names marina %s, which has no -o flag", path)
		}
	}
}

// text decodes a view's json strictly into the type the command prints
// (every key must be a field of it) and prints it as -o text does.
func text[T any](print func(io.Writer, T)) func(*testing.T, []byte) []byte {
	return func(t *testing.T, js []byte) []byte {
		t.Helper()
		var v T
		d := json.NewDecoder(bytes.NewReader(js))
		d.DisallowUnknownFields()
		if err := d.Decode(&v); err != nil {
			t.Fatalf("the json does not decode into %T: %v", v, err)
		}
		var b bytes.Buffer
		print(&b, v)
		return b.Bytes()
	}
}

// glance is status's default text view of a view's json.
func glance(string) func(*testing.T, []byte) []byte { return text(show.Style{}.Status) }

// The text of every view but fleet apply's (its plan is printed by fleet
// as it goes), from the same fixture as the json, checked in under
// testdata/views.
func TestGoldenTextViews(t *testing.T) {
	for name, print := range map[string]func(*testing.T, []byte) []byte{
		"status":         text(show.Status),
		"status-glance":  glance("status"),
		"cluster-list":   text(show.Clusters),
		"registry-list":  text(show.Mirrors),
		"dns-list":       text(show.DNS),
		"fleet-list":     text(printFleets),
		"fleet-describe": text(printFleetMembers),
		"doctor":         text(printDoctor),
	} {
		t.Run(name, func(t *testing.T) {
			js, err := os.ReadFile(filepath.Join(jsonViews, strings.TrimSuffix(name, "-glance")+".json"))
			if err != nil {
				t.Fatalf("%v (go test ./internal/cli -run TestGoldenViews -update writes it)", err)
			}
			golden.Check(t, filepath.Join("views", name+".txt"), print(t, js))
		})
	}
}

// S6: every text view, given a value whose every string is hostile (an
// escape sequence of each kind, C1 controls, a bidi override, line
// breaks), prints no control character but the layout's own line breaks;
// the JSON view keeps the exact value, escaped.
func TestTextViewsPrintNoControlCharacter(t *testing.T) {
	const hostile = "x\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e\r\nforged\trow"
	check := func(t *testing.T, out string) {
		t.Helper()
		for i, r := range out {
			if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e {
				t.Fatalf("control character %U at %d:\n%q", r, i, out)
			}
		}
		if !strings.Contains(out, "pwned") && !strings.Contains(out, "forged row") && !strings.Contains(out, "x") {
			t.Fatalf("the values are not printed (the test proves nothing):\n%s", out)
		}
	}
	views := map[string]func(*testing.T) string{
		"status":         hostileText(t, show.Status, hostile),
		"status glance":  hostileText(t, show.Style{}.Status, hostile),
		"cluster list":   hostileText(t, show.Clusters, hostile),
		"registry list":  hostileText(t, show.Mirrors, hostile),
		"dns list":       hostileText(t, show.DNS, hostile),
		"fleet list":     hostileText(t, printFleets, hostile),
		"fleet describe": hostileText(t, printFleetMembers, hostile),
		"version":        hostileText(t, printVersion, hostile),
		"doctor":         hostileText(t, printDoctor, hostile),
	}
	for name, out := range views {
		t.Run(name, func(t *testing.T) { check(t, out(t)) })
	}
	// JSON keeps the value exactly (escaped by the encoder).
	var v version.Report
	fill(reflect.ValueOf(&v).Elem(), hostile)
	var b bytes.Buffer
	if err := ui.Render(&b, "json", v); err != nil {
		t.Fatal(err)
	}
	var back version.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Version != hostile {
		t.Errorf("json lost the exact value: %q, %v", back.Version, err)
	}
}

// hostileText prints a T whose every string is s through the text path
// the commands use.
func hostileText[T any](t *testing.T, print func(io.Writer, T), s string) func(*testing.T) string {
	return func(t *testing.T) string {
		var v T
		fill(reflect.ValueOf(&v).Elem(), s)
		var b bytes.Buffer
		printText(&b, v, print)
		return b.String()
	}
}

// fill sets every string v holds to s, giving each slice and map one
// element and each pointer a value, three levels deep.
func fill(v reflect.Value, s string) { fillDepth(v, s, 0) }

func fillDepth(v reflect.Value, s string, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillDepth(p.Elem(), s, depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				fillDepth(f, s, depth+1)
			}
		}
	case reflect.Slice:
		sl := reflect.MakeSlice(v.Type(), 1, 1)
		fillDepth(sl.Index(0), s, depth+1)
		v.Set(sl)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fillDepth(k, s, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fillDepth(e, s, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}
