package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/golden"
)

// appViews holds the json of every -o view, rendered by internal/app's
// TestGoldenViews from one fixture: the text views below are printed from
// those same values.
var appViews = filepath.Join("..", "app", "testdata", "views")

// viewOf is the view each command with an -o flag prints: a command that
// gains an -o flag needs a view in internal/app's views test first.
var viewOf = map[string]string{
	"status":         "status",
	"cluster list":   "cluster-list",
	"registry list":  "registry-list",
	"dns list":       "dns-list",
	"fleet list":     "fleet-list",
	"fleet describe": "fleet-describe",
	"fleet apply":    "fleet-apply",
	"cluster apply":  "fleet-apply",
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
				t.Errorf("marina %s has -o but no view: add it to internal/app's views() and to viewOf", path)
			} else if _, err := os.Stat(filepath.Join(appViews, name+".json")); err != nil {
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

// The text of every view but fleet apply's (its plan is printed by app
// as it goes), from the same fixture as the json, checked in under
// testdata/views.
func TestGoldenTextViews(t *testing.T) {
	for name, print := range map[string]func(*testing.T, []byte) []byte{
		"status":         text(printStatus),
		"cluster-list":   text(printClusters),
		"registry-list":  text(printMirrors),
		"dns-list":       text(printDNS),
		"fleet-list":     text(printFleets),
		"fleet-describe": text(printFleetMembers),
		"doctor":         text(printDoctor),
	} {
		t.Run(name, func(t *testing.T) {
			js, err := os.ReadFile(filepath.Join(appViews, name+".json"))
			if err != nil {
				t.Fatalf("%v (go test ./internal/app -run TestGoldenViews -update writes it)", err)
			}
			golden.Check(t, filepath.Join("views", name+".txt"), print(t, js))
		})
	}
}
