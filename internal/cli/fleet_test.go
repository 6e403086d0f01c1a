package cli

import (
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/fleet"
)

// The manifest in fleet's help is one marina accepts with the default
// config.
func TestFleetHelpExampleLoads(t *testing.T) {
	_, body, ok := strings.Cut(fleetLong, "\n\n")
	body, _, _ = strings.Cut(body, "\n\nklimax")
	if !ok || !strings.Contains(body, "kind: Fleet") {
		t.Fatalf("no manifest in:\n%s", fleetLong)
	}
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "    "))
	}
	cfg := config.Default()
	known := fleet.Known{MetricsServer: []string{"v0.8.0"}, NodeImage: func(v string) error { _, err := cfg.Kind.NodeImage(v); return err }}
	for _, m := range cfg.Registries.Mirrors {
		known.Mirrors = append(known.Mirrors, m.Name)
	}
	f, err := fleet.Load("help", []byte(strings.Join(lines, "\n")), known)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "demo" || len(f.Members) != 3 || f.MaxParallel != 2 {
		t.Errorf("loaded %+v", f)
	}
}
