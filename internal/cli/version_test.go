package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/version"
	"github.com/bcollard/marina/internal/vm"
)

// fakeLimactl puts a limactl that reports version v where $LIMACTL points,
// and returns its path.
func fakeLimactl(t *testing.T, v string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "limactl")
	script := "#!/bin/sh\n[ \"$1\" = --version ] || exit 3\necho \"limactl version " + v + "\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LIMACTL", bin)
	return bin
}

// version -o json: every key, camelCase, each value the one the code pins.
func TestVersionJSON(t *testing.T) {
	isolate(t)
	bin := fakeLimactl(t, "2.1.4")
	out, errs, code := runCLI(t, "version", "-o", "json")
	if code != 0 {
		t.Fatalf("version -o json: %d %q", code, errs)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ms := addons.MetricsServerVersions()
	want := map[string]any{
		"version":   version.Get().Version,
		"goVersion": runtime.Version(),
		"platform":  runtime.GOOS + "/" + runtime.GOARCH,
		"pins": map[string]any{
			"kind":                  vm.KindVersion,
			"kubectl":               vm.KubectlVersion,
			"nodeVersion":           config.DefaultNodeVersion,
			"nodeVersions":          list(config.Kind{}.NodeVersions()),
			"metalLB":               config.DefaultMetalLBVersion,
			"metalLBVersions":       list(addons.MetalLBVersions()),
			"externalDNS":           dns.ExternalDNSVersion,
			"metricsServer":         ms[len(ms)-1],
			"metricsServerVersions": list(ms),
			"dockerMajor":           float64(vm.DockerMajor),
			"limaMinimum":           fmt.Sprintf("%d.%d.%d", vm.MinLima[0], vm.MinLima[1], vm.MinLima[2]),
		},
		"limactl": map[string]any{"path": bin, "version": "2.1.4"},
	}
	if c := version.Get().Commit; c != "" {
		want["commit"] = c
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("version -o json:\n%s\nwant %v", out, want)
	}
	// -o yaml has the same keys and values.
	out, _, code = runCLI(t, "version", "-o", "yaml")
	var y map[string]any
	if err := yaml.Unmarshal([]byte(out), &y); err != nil || code != 0 {
		t.Fatalf("version -o yaml: %d %v\n%s", code, err, out)
	}
	if y["pins"].(map[string]any)["dockerMajor"] != vm.DockerMajor {
		t.Errorf("yaml dockerMajor: %v", y["pins"])
	}
	y["pins"].(map[string]any)["dockerMajor"] = float64(vm.DockerMajor) // JSON's numbers are floats
	if !reflect.DeepEqual(y, got) {
		t.Errorf("version -o yaml:\n%s\ndiffers from -o json %v", out, got)
	}
}

// version says whether the VM is behind from up's note, without reaching
// the VM; a note that is not up's is said, and version still answers.
func TestVersionSaysTheVMIsBehind(t *testing.T) {
	home := isolate(t)
	note := filepath.Join(home, ".marina", "provisioned.json")
	if err := os.MkdirAll(filepath.Dir(note), 0o755); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		script, want string
		behind       bool
	}{
		{strings.Repeat("0", 64), "vm              marina, provisioned by marina v0.9.0 (at marina up, 2026-11-02): this marina provisions it differently; `marina up` brings it up to date in place\n", true},
		{guest.ProvisionDigest(), "vm              marina, provisioned by this marina's script (marina v0.9.0, at marina up, 2026-11-02)\n", false},
	} {
		if err := guest.SaveSeen(note, guest.Seen{VM: "marina", Marina: "v0.9.0", Script: c.script, At: at}); err != nil {
			t.Fatal(err)
		}
		out, errs, code := runCLI(t, "version")
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("version: %d %q\n%s", code, errs, out)
		}
		out, _, _ = runCLI(t, "version", "-o", "json")
		var v version.Report
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.VM == nil || v.VM.Behind == nil || *v.VM.Behind != c.behind || v.VM.ProvisionedBy != "v0.9.0" {
			t.Errorf("version -o json: %v\n%s", err, out)
		}
	}
	// No note, and a VM in Lima's home: one an older marina brought up.
	if err := os.Remove(note); err != nil {
		t.Fatal(err)
	}
	if out, _, _ := runCLI(t, "version"); strings.Contains(out, "vm  ") {
		t.Errorf("version names a VM where there is none:\n%s", out)
	}
	inst := filepath.Join(home, ".marina", "lima", "marina")
	if err := os.MkdirAll(inst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inst, "lima.yaml"), []byte("vmType: vz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, _ := runCLI(t, "version"); !strings.Contains(out, "vm              marina: no note of its provisioning yet (an older marina brought it up last): `marina status` says whether it is behind") {
		t.Errorf("version with a VM and no note:\n%s", out)
	}
	if err := os.WriteFile(note, []byte(`{"vm":"marina","marina":"$(reboot)","script":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCLI(t, "version")
	if code != 0 || !strings.Contains(out, "is not a note marina up wrote") || strings.Contains(out, "reboot") {
		t.Errorf("a bad note: %d %q\n%s", code, errs, out)
	}
}

func list(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// The text form: one line each, the pins from the code, the limactl found;
// and --version stays the one line it was.
func TestVersionText(t *testing.T) {
	isolate(t)
	bin := fakeLimactl(t, "2.1.4")
	out, errs, code := runCLI(t, "version")
	if code != 0 {
		t.Fatalf("version: %d %q", code, errs)
	}
	for _, w := range []string{
		"marina          " + version.Get().Version + "\n",
		"go              " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n",
		"kind            " + vm.KindVersion + " (in the VM)\n",
		"kubectl         " + vm.KubectlVersion + " (in the VM)\n",
		"kubernetes      " + config.DefaultNodeVersion + " (default), v1.37.0, v1.35.8, v1.34.11\n",
		"metallb         " + config.DefaultMetalLBVersion + " (default)\n",
		"externaldns     " + dns.ExternalDNSVersion + "\n",
		"metrics-server  v0.8.0 (default), v0.7.2\n",
		fmt.Sprintf("docker engine   %d.x (in the VM)\n", vm.DockerMajor),
		fmt.Sprintf("lima            %d.%d.%d or later\n", vm.MinLima[0], vm.MinLima[1], vm.MinLima[2]),
		"limactl         2.1.4 at " + bin + "\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("version lacks %q:\n%s", w, out)
		}
	}
	out, _, code = runCLI(t, "--version")
	if code != 0 || out != "marina "+version.String()+"\n" {
		t.Errorf("--version = %q, %d", out, code)
	}
}

// limactl missing, too old or broken: version still answers, with a note.
func TestVersionLimactl(t *testing.T) {
	isolate(t)
	out, _, code := runCLI(t, "version", "-o", "json")
	var v struct{ Limactl map[string]string }
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("%d %v\n%s", code, err, out)
	}
	if len(v.Limactl) != 1 || !strings.Contains(v.Limactl["note"], "limactl was not found on your PATH") || !strings.Contains(v.Limactl["note"], "brew install lima") {
		t.Errorf("no limactl: %v", v.Limactl)
	}
	bin := fakeLimactl(t, "1.2.3")
	out, _, code = runCLI(t, "version")
	if code != 0 || !strings.Contains(out, "limactl         1.2.3 at "+bin+": Lima 1.2.3 is too old: marina needs Lima 2.0 or later; upgrade it: `brew upgrade lima`\n") {
		t.Errorf("an old limactl:\n%s", out)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho broken >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, code = runCLI(t, "version")
	if code != 0 || !strings.Contains(out, "limactl         cannot run limactl: `"+bin+" --version` failed (exit status 1): broken; install Lima 2.x") {
		t.Errorf("a broken limactl:\n%s", out)
	}
}
