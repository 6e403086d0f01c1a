package cli

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/status"
)

// vm.rosetta on a Mac that is not Apple silicon is one warning that names
// the key, its line, why and the fix; arm64, or false, says nothing.
func TestWarnHostRosetta(t *testing.T) {
	for _, c := range []struct {
		arch    string
		rosetta bool
		warns   bool
	}{{"amd64", true, true}, {"arm64", true, false}, {"amd64", false, false}, {"arm64", false, false}} {
		f := sessiontest.New(t)
		f.Env.HostArch = c.arch
		f.Config(func(cfg *config.Config) { cfg.VM.Rosetta = c.rosetta })
		l, err := config.Read(f.Env.Paths)
		if err != nil {
			t.Fatal(err)
		}
		f.Env.WarnHost(l)
		got := f.Stderr.String()
		if !c.warns {
			if got != "" {
				t.Errorf("%s, rosetta %v: %q", c.arch, c.rosetta, got)
			}
			continue
		}
		b, _ := os.ReadFile(f.Env.Paths.Config)
		line := strings.Count(string(b)[:strings.Index(string(b), "rosetta:")], "\n") + 1
		want := "WARNING: " + f.Env.Paths.Config + ":" + strconv.Itoa(line) + ": vm.rosetta: true is ignored on this amd64 Mac: Rosetta runs x86_64 binaries on Apple silicon (arm64) only, so the VM is made without it; remove vm.rosetta from the config (or set it to false)\n"
		if got != want {
			t.Errorf("%s, rosetta %v:\n%q\nwant\n%q", c.arch, c.rosetta, got, want)
		}
	}
	// A config read without its lines still names the file and the key.
	f := sessiontest.New(t)
	f.Env.HostArch = "amd64"
	cfg := config.Default()
	cfg.VM.Rosetta = true
	f.Env.WarnHost(config.Lenient{Name: cfg.VM.Name, Config: cfg})
	if got := f.Stderr.String(); strings.Count(got, "WARNING:") != 1 || !strings.Contains(got, f.Env.Paths.Config+": vm.rosetta: true is ignored") {
		t.Errorf("without lines: %q", got)
	}
}

// The warning is said once by each command that reads the config
// strictly, never by the lenient ones.
func TestRosettaIsWarnedOncePerStrictCommand(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		f := sessiontest.Warm(t)
		f.Config(func(c *config.Config) { c.VM.Rosetta = true })
		f.Env.HostArch = arch
		if _, err := machine.Up(context.Background(), f.Env, machine.UpOptions{}); err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		n := strings.Count(f.Stderr.String(), "vm.rosetta: true is ignored")
		want := map[string]int{"amd64": 1, "arm64": 0}[arch]
		if n != want {
			t.Errorf("%s: up warned %d times, want %d:\n%s", arch, n, want, f.Stderr.String())
		}
		f.Stderr.Reset()
		_, _ = kindcluster.Delete(context.Background(), f.Env, kindcluster.DeleteOptions{Names: []string{"x"}})
		if n := strings.Count(f.Stderr.String(), "vm.rosetta: true is ignored"); n != want {
			t.Errorf("%s: cluster delete warned %d times:\n%s", arch, n, f.Stderr.String())
		}
		f.Stderr.Reset()
		if _, err := status.Get(context.Background(), f.Env); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(f.Stderr.String(), "rosetta") {
			t.Errorf("status warned: %s", f.Stderr.String())
		}
	}
}
