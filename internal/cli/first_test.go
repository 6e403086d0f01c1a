package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noVMLimactl puts on PATH a limactl (Lima 2.1.4) that has no VM.
func noVMLimactl(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
case "$1" in
--version) echo "limactl version 2.1.4" ;;
list) exit 0 ;;
*) echo "limactl stand-in: $*: not in a first contact" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "limactl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin")
}

// A fresh home, Lima installed, nothing made yet: the first thing a
// person runs says the same about it everywhere. Commands that need the
// VM say it has not been created and exit 3; down and destroy have
// nothing to do; those that only read use the defaults. Nothing is
// written.
func TestFirstContact(t *testing.T) {
	notCreated := "ERROR: VM marina has not been created yet: run `marina up`\n"
	manifest := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: demo\nspec:\n  clusters:\n  - name: east\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		code   int
		stdout string // its first line
		stderr string // all of it
	}{
		{[]string{"status"}, 0, "- VM       marina: not created: `marina up` creates it", ""},
		{[]string{"down"}, 0, "No changes: VM marina does not exist.", ""},
		{[]string{"destroy"}, 0, "No changes: VM marina does not exist.", ""},
		{[]string{"destroy", "--dry-run"}, 0, "No changes: VM marina does not exist.", ""},
		{[]string{"registry", "list"}, 0, "NAME", ""},
		{[]string{"docker-env", "--shell", "bash"}, 0, "export DOCKER_HOST=unix://", "WARNING: VM marina has not been created yet, so nothing answers on $HOME/.marina.docker.sock: run `marina up`\n"},
		{[]string{"config", "show"}, 0, "vm:", "# $HOME/.marina/config.yaml does not exist yet: these are the defaults\n"},
		{[]string{"cluster", "list"}, 3, "", notCreated},
		{[]string{"cluster", "create", "dev"}, 3, "", notCreated},
		{[]string{"cluster", "delete", "dev"}, 3, "", notCreated},
		{[]string{"shell"}, 3, "", notCreated},
		{[]string{"dns", "list"}, 3, "", notCreated},
		{[]string{"kubeconfig", "merge"}, 3, "", notCreated},
		{[]string{"fleet", "list"}, 3, "", notCreated},
		{[]string{"fleet", "apply", "-f", manifest}, 3, "", notCreated},
		// A plan needs no VM.
		{[]string{"cluster", "create", "dev", "--dry-run"}, 0, "Plan (--dry-run, nothing was changed):", ""},
		{[]string{"fleet", "apply", manifest, "--dry-run"}, 0, "Fleet demo — maxParallel=1 strategy=FailFast", ""},
	} {
		t.Run(strings.Join(c.args[:min(2, len(c.args))], " "), func(t *testing.T) {
			home := isolate(t)
			noVMLimactl(t)
			out, errs, code := runCLI(t, c.args...)
			errs = strings.ReplaceAll(errs, home, "$HOME")
			first, _, _ := strings.Cut(out, "\n")
			if code != c.code || !strings.HasPrefix(first, c.stdout) || c.stdout == "" && out != "" || errs != c.stderr {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			if _, err := os.Stat(filepath.Join(home, ".marina")); !os.IsNotExist(err) {
				t.Errorf("%v wrote ~/.marina: %v", c.args, err)
			}
		})
	}
}

// Without a VM, create's and apply's plans say what they cannot know yet:
// the slot is the next free one, and the kind config is slot 1's.
func TestPlansWithoutAVM(t *testing.T) {
	isolate(t)
	noVMLimactl(t)
	manifest := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: demo\nspec:\n  clusters:\n  - name: east\n  - name: west\n    num: 5\n    dependsOn: [east]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCLI(t, "cluster", "create", "dev", "--workers", "2", "--dry-run")
	for _, want := range []string{
		"create kind cluster dev in the next free slot N (1 on a VM without clusters): API server port 700N, the slot's services and pods, 1 control plane and 2 workers from kindest/node:",
		"install MetalLB v0.16.2 with the LoadBalancer pool 172.30.N.1-172.30.N.7, 172.30.N.16-172.30.N.254",
		"VM marina has not been created yet: run `marina up`; the plan is what the config decides.",
		"the kind config below is slot 1's.\n\nkind config:\napiVersion: kind.x-k8s.io/v1alpha4\n",
		"  apiServerPort: 7001\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("cluster create --dry-run without a VM: exit %d, lacks %q:\n%s%s", code, want, out, errs)
		}
	}
	out, errs, code = runCLI(t, "fleet", "apply", manifest, "--dry-run")
	for _, want := range []string{
		"east  next  create  -",
		"west  5     create  east",
		"every cluster is planned as a create, and a cluster without a num takes the next free slot",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("fleet apply --dry-run without a VM: exit %d, lacks %q:\n%s%s", code, want, out, errs)
		}
	}
}
