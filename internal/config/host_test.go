package config

import (
	"os"
	"strings"
	"testing"
)

// vm.rosetta off Apple silicon is a warning that points at its line, says
// why and how to fix it; on arm64, or when false, there is nothing to say.
func TestRosettaWarnsOffAppleSilicon(t *testing.T) {
	for _, c := range []struct {
		name, body, arch string
		want             string // "" for no warning
	}{
		{"amd64 with rosetta", "vm:\n  cpus: 2\n  rosetta: true\n", "amd64",
			":3: vm.rosetta: true is ignored on this amd64 Mac: Rosetta runs x86_64 binaries on Apple silicon (arm64) only, so the VM is made without it; remove vm.rosetta from the config (or set it to false)"},
		{"arm64 with rosetta", "vm:\n  rosetta: true\n", "arm64", ""},
		{"amd64 without rosetta", "vm:\n  rosetta: false\n", "amd64", ""},
		{"amd64 default", "", "amd64", ""},
		{"arm64 without rosetta", "vm:\n  rosetta: false\n", "arm64", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testPaths(t)
			if err := os.WriteFile(p.Config, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			// The lenient reading (vm.name first) and the strict one.
			lenient, err := LoadVMName(p)
			if err != nil || lenient.Err != nil {
				t.Fatalf("LoadVMName: %v, %v", err, lenient.Err)
			}
			strict, err := Read(p)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			for _, l := range []Lenient{lenient, strict} {
				got := l.HostWarnings(c.arch)
				if c.want == "" {
					if len(got) != 0 {
						t.Errorf("warnings %q, want none", got)
					}
					continue
				}
				if len(got) != 1 || got[0] != p.Config+c.want {
					t.Errorf("warnings %q, want [%q]", got, p.Config+c.want)
				}
			}
		})
	}
	// Without the file's lines (a config built elsewhere), the key is
	// still named.
	l := Lenient{Config: Default()}
	l.Config.VM.Rosetta = true
	if got := l.HostWarnings("amd64"); len(got) != 1 || !strings.HasPrefix(got[0], "vm.rosetta: true is ignored on this amd64 Mac") {
		t.Errorf("warnings without lines: %q", got)
	}
}

func TestRosettaOn(t *testing.T) {
	for _, c := range []struct {
		rosetta bool
		arch    string
		want    bool
	}{{true, "arm64", true}, {true, "amd64", false}, {false, "arm64", false}, {false, "amd64", false}} {
		if got := (VM{Rosetta: c.rosetta}).RosettaOn(c.arch); got != c.want {
			t.Errorf("RosettaOn(rosetta=%v, %s) = %v", c.rosetta, c.arch, got)
		}
	}
}
