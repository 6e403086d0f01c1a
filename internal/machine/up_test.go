package machine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/vm"
)

var paths = config.Paths{Home: "/Users/me", Dir: "/Users/me/.marina", Config: "/Users/me/.marina/config.yaml"}

func running(cpus int, mem, disk int64, status string) *vm.Instance {
	return &vm.Instance{Name: "marina", Status: status, CPUs: cpus, Memory: mem, Disk: disk}
}

func steps(p UpPlan) string {
	var s []string
	for _, st := range p.Steps {
		s = append(s, st.String())
	}
	return strings.Join(s, "\n")
}

func TestPlanUp(t *testing.T) {
	cfg := config.Default()
	cases := []struct {
		name          string
		change        func(*config.Config)
		in            *vm.Instance
		configMissing bool
		vm            VMChange
		edits         vm.Edits
		steps, warn   []string
		err           string
	}{
		{name: "first run", in: nil, configMissing: true, vm: VMCreate,
			steps: []string{"write the default config to /Users/me/.marina/config.yaml", "create the registry cache folder /Users/me/.marina/registry-cache", "create and boot VM marina (vz, 4 CPUs, 10GiB memory, 40GiB disk"}},
		{name: "guest cache needs no folder", change: func(c *config.Config) { c.Registries.CacheStorage = config.CacheGuest }, vm: VMCreate,
			steps: []string{"create and boot VM marina"}},
		{name: "running and matching", in: running(4, 10<<30, 40<<30, vm.StatusRunning), vm: VMKeep},
		{name: "running with drift warns only", change: func(c *config.Config) { c.VM.CPUs = 8 }, in: running(4, 10<<30, 40<<30, vm.StatusRunning), vm: VMKeep,
			warn: []string{"vm.cpus is 8 in the config but VM marina has 4; it applies at the next start: `marina down && marina up`"}},
		{name: "stopped", in: running(4, 10<<30, 40<<30, vm.StatusStopped), vm: VMStart, steps: []string{"start VM marina"}},
		{name: "stopped with new resources", change: func(c *config.Config) { c.VM.CPUs, c.VM.Memory, c.VM.Disk = 6, "12GiB", "60GiB" },
			in: running(4, 10<<30, 40<<30, vm.StatusStopped), vm: VMStart, edits: vm.Edits{CPUs: 6, Memory: "12GiB", Disk: "60GiB"},
			steps: []string{"start VM marina with 6 CPUs (was 4), 12GiB memory (was 10GiB), a 60GiB disk (was 40GiB)"}},
		{name: "a disk cannot shrink", change: func(c *config.Config) { c.VM.Disk = "30GiB" }, in: running(4, 10<<30, 40<<30, vm.StatusStopped), vm: VMStart,
			steps: []string{"start VM marina"}, warn: []string{"Lima can only grow a disk"}},
		{name: "broken", in: &vm.Instance{Name: "marina", Status: vm.StatusBroken, Errors: []string{"disk missing"}}, err: "Broken (disk missing): `marina destroy` and then `marina up`"},
		{name: "installing", in: &vm.Instance{Name: "marina", Status: "Installing"}, err: `VM marina is "Installing"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cf := cfg
			if c.change != nil {
				c.change(&cf)
			}
			p, err := PlanUp(cf, paths, c.in, c.configMissing)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.VM != c.vm || !reflect.DeepEqual(p.Edits, c.edits) || p.WriteConfig != c.configMissing {
				t.Errorf("plan = %+v", p)
			}
			if len(p.Steps) != len(c.steps) {
				t.Fatalf("steps:\n%s\nwant %d", steps(p), len(c.steps))
			}
			for i, s := range c.steps {
				if !strings.HasPrefix(p.Steps[i].String(), s) {
					t.Errorf("step %d = %q, want %q…", i, p.Steps[i], s)
				}
			}
			if len(p.Warnings) != len(c.warn) {
				t.Fatalf("warnings = %q, want %q", p.Warnings, c.warn)
			}
			for i, w := range c.warn {
				if !strings.Contains(p.Warnings[i], w) {
					t.Errorf("warning %d = %q, want …%s…", i, p.Warnings[i], w)
				}
			}
		})
	}
}
