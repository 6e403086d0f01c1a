package vm_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lima-vm/lima/v2/pkg/limayaml"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/golden"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/vm"
)

// The Lima template of the default config on an Apple Silicon Mac, with
// the real provisioning script, byte for byte (an external test package:
// guest imports vm). After a meant change:
// go test ./internal/vm -run TestGolden -update, and review the diff.
func TestGolden(t *testing.T) {
	paths := config.Paths{Home: "/Users/me", Dir: "/Users/me/.marina", Config: "/Users/me/.marina/config.yaml"}
	b, err := vm.Template(vm.TemplateInput{Config: config.Default(), Paths: paths, HostArch: "arm64", Provision: guest.Provision("v9.9.9")})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "lima.yaml.golden", b)

	// Lima loads it as limactl would, filling in the provisioning script's
	// template variables: the real script must leave Lima nothing it
	// cannot execute, and only {{.User}} is Lima's.
	y, err := limayaml.Load(context.Background(), b, filepath.Join(t.TempDir(), "lima.yaml"))
	if err != nil {
		t.Fatalf("Lima cannot load the template: %v", err)
	}
	if err := limayaml.Validate(y, false); err != nil {
		t.Fatalf("Lima rejects the template: %v", err)
	}
	want := strings.ReplaceAll(guest.Provision("v9.9.9"), "{{.User}}", *y.User.Name)
	if len(y.Provision) != 1 || y.Provision[0].Script == nil || *y.Provision[0].Script != want {
		t.Errorf("Lima's provisioning script is not guest.Provision with the user filled in")
	}
}
