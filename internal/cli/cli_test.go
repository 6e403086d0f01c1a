package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs marina in-process with a private MARINA_HOME and PATH.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("MARINA_HOME", filepath.Join(home, ".marina"))
	t.Setenv("PATH", t.TempDir()) // no limactl, no editor
	t.Setenv("LIMACTL", "")
	return home
}

func TestUnknownOutputFormat(t *testing.T) {
	isolate(t)
	_, errs, code := runCLI(t, "status", "-o", "xml")
	if code != 2 || !strings.Contains(errs, `unknown output format "xml": use text, json or yaml`) {
		t.Errorf("status -o xml: %d %q", code, errs)
	}
}

func TestUpWithoutLimaChangesNothing(t *testing.T) {
	home := isolate(t)
	_, errs, code := runCLI(t, "up")
	if code != 1 || !strings.Contains(errs, "limactl was not found") || !strings.Contains(errs, "brew install lima") {
		t.Errorf("up without limactl: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(home, ".marina")); !os.IsNotExist(err) {
		t.Errorf("up wrote to ~/.marina although it could not run (%v)", err)
	}
}

func TestConfigPathShow(t *testing.T) {
	home := isolate(t)
	out, errs, code := runCLI(t, "config", "path")
	if code != 0 || strings.TrimSpace(out) != filepath.Join(home, ".marina", "config.yaml") || !strings.Contains(errs, "does not exist yet") {
		t.Errorf("config path: %d %q %q", code, out, errs)
	}
	cfg := filepath.Join(home, "custom.yaml")
	if err := os.WriteFile(cfg, []byte("registries:\n  mirrors:\n    - name: ghcr\n      port: 5060\n      remoteURL: https://ghcr.io\n      username: bot\n      password: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = runCLI(t, "--config", cfg, "config", "show")
	if code != 0 || !strings.Contains(out, "username: bot") || strings.Contains(out, "hunter2") || !strings.Contains(out, "cidr: 172.30.0.0/16") {
		t.Errorf("config show: %d\n%s", code, out)
	}
}

func TestConfigEdit(t *testing.T) {
	home := isolate(t)
	editor := filepath.Join(home, "ed")
	// The editor gets the file as its last argument; "-w" stands for the
	// flags editors like `code -w` take.
	script := "#!/bin/sh\n[ \"$1\" = -w ] || exit 9\nprintf 'vm:\\n  cpus: 2\\n  cpu: 3\\n' >\"$2\"\n"
	if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EDITOR", editor+" -w")
	_, errs, code := runCLI(t, "config", "edit")
	if code != 1 || !strings.Contains(errs, "config.yaml:3: vm.cpu: unknown key") || !strings.Contains(errs, "marina config edit") {
		t.Errorf("config edit with a typo: %d %q", code, errs)
	}
	st, err := os.Stat(filepath.Join(home, ".marina", "config.yaml"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("config file after edit: %v", err)
	}
}

// destroy of a VM that exists, without a terminal and without -y, stops at
// its confirmation: limactl (a stand-in that logs) is asked for the VM and
// nothing else.
func TestDestroyNeedsConfirmationWithoutATerminal(t *testing.T) {
	isolate(t)
	// A short home: Lima's socket paths under it must fit macOS's limit.
	home, err := os.MkdirTemp("", "m")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("HOME", home)
	t.Setenv("MARINA_HOME", filepath.Join(home, ".marina"))
	bin := t.TempDir()
	log := filepath.Join(bin, "log")
	limactl := filepath.Join(bin, "limactl")
	script := `#!/bin/sh
echo "$*" >> "` + log + `"
case "$1" in
list) echo '{"name":"marina","status":"Stopped","dir":"` + home + `/.marina/lima/marina"}' ;;
*) exit 1 ;;
esac
`
	if err := os.WriteFile(limactl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LIMACTL", limactl)
	// The route lookup needs the system's tools; limactl is not among them.
	t.Setenv("PATH", bin+":/usr/sbin:/usr/bin:/sbin:/bin")
	if err := os.MkdirAll(filepath.Join(home, ".marina"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".marina", "config.yaml"), []byte("vm:\n  name: marina\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runCLI(t, "destroy")
	if code != 1 || !strings.Contains(errs, "marina destroy deletes VM marina with every cluster in it and needs a confirmation: run it in a terminal, or pass -y") {
		t.Errorf("destroy without a terminal: %d %q", code, errs)
	}
	calls, _ := os.ReadFile(log)
	if strings.TrimSpace(string(calls)) != "list --json --tty=false" {
		t.Errorf("limactl was asked for:\n%s", calls)
	}
}

// A --config that names no file is an error for every command that reads
// or writes the config, before anything is looked at or written: only
// marina's own $MARINA_HOME/config.yaml is ever written with the defaults.
// The commands that need no config still run.
func TestMissingNamedConfig(t *testing.T) {
	home := isolate(t)
	typo := filepath.Join(home, "confg.yaml")
	for _, args := range [][]string{
		{"up", "--dry-run"}, {"up"}, {"status"}, {"status", "-o", "json"}, {"down", "--dry-run"}, {"doctor"},
		{"config", "show"}, {"config", "edit"}, {"config", "path"},
		{"cluster", "create", "dev", "--dry-run"}, {"cluster", "list"}, {"registry", "list"}, {"migrate", "--dry-run"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errs, code := runCLI(t, append([]string{"--config", typo}, args...)...)
			if code == 0 || out != "" || !strings.Contains(errs, "ERROR: --config names "+typo+", which does not exist: check the path") ||
				!strings.Contains(errs, filepath.Join(home, ".marina", "config.yaml")+", which marina up writes") {
				t.Errorf("exit %d\nstdout %q\nstderr %q", code, out, errs)
			}
			for _, p := range []string{typo, filepath.Join(home, ".marina")} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("wrote %s (%v)", p, err)
				}
			}
		})
	}
	for _, args := range [][]string{{"version"}, {"--version"}, {"skill", "install", "--print"}, {"help", "up"}, {"up", "--help"}} {
		if _, errs, code := runCLI(t, append([]string{"--config", typo}, args...)...); code != 0 {
			t.Errorf("%v with a missing --config: exit %d, %q", args, code, errs)
		}
	}
	// A completion offers nothing, no file names either, and no error.
	out, errs, code := runCLI(t, "--config", typo, "__complete", "cluster", "delete", "")
	if code != 0 || strings.Contains(errs, "ERROR") || strings.TrimSpace(out) != ":4" {
		t.Errorf("completion with a missing --config: %d %q %q", code, out, errs)
	}
	// The file once created (empty: the defaults) is read.
	if err := os.WriteFile(typo, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := runCLI(t, "--config", typo, "config", "show"); code != 0 || !strings.Contains(out, "cidr: 172.30.0.0/16") {
		t.Errorf("config show of an empty --config: %d %q %q", code, out, errs)
	}
}

// cluster delete -f is a fleet's delete: it says what fleet delete -f says,
// and refuses names or -l beside it before anything is read.
func TestClusterDeleteFileIsAFleetDelete(t *testing.T) {
	home := isolate(t)
	file := filepath.Join(home, "fleet.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: demo\nspec:\n  clusters: [east]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCLI(t, "cluster", "delete", "-f", file, "--dry-run")
	fout, ferrs, fcode := runCLI(t, "fleet", "delete", "-f", file, "--dry-run")
	if out != fout || errs != ferrs || code != fcode || errs == "" {
		t.Errorf("cluster delete -f: %d %q %q\nfleet delete -f: %d %q %q", code, out, errs, fcode, fout, ferrs)
	}
	for _, args := range [][]string{{"dev"}, {"-l", "env=test"}} {
		_, errs, code := runCLI(t, append([]string{"cluster", "delete", "-f", file}, args...)...)
		if code != 1 || !strings.Contains(errs, "-f deletes a fleet manifest's clusters: do not name clusters or give -l with it") {
			t.Errorf("cluster delete -f with %v: %d %q", args, code, errs)
		}
	}
}
