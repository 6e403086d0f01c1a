package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The flags reach the commands; stdout holds shell code only, even when
// marina cannot tell whether the VM runs (no limactl here).
func TestDockerEnvFlags(t *testing.T) {
	home := shortHome(t)
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "vm:\n  name: lab\n")
	t.Setenv("SHELL", "/usr/bin/fish")
	sock := filepath.Join(home, ".lab.docker.sock")

	out, errs, code := runCLI(t, "docker-env")
	if code != 0 || !strings.HasPrefix(out, "set -gx DOCKER_HOST 'unix://"+sock+"';\n") || !strings.Contains(out, "#   marina docker-env | source\n") {
		t.Errorf("docker-env with SHELL=fish: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"WARNING: cannot tell whether VM lab runs (limactl was not found", "WARNING: " + sock + " does not exist"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	out, _, code = runCLI(t, "docker-env", "--shell", "powershell", "--unset")
	if code != 0 || !strings.HasPrefix(out, `Remove-Item Env:\DOCKER_HOST -ErrorAction SilentlyContinue`+"\n") || !strings.Contains(out, "#   & marina docker-env --shell powershell --unset | Invoke-Expression\n") {
		t.Errorf("docker-env --shell powershell --unset: exit %d\n%s", code, out)
	}
	out, errs, code = runCLI(t, "docker-env", "--shell", "csh")
	if code != 2 || out != "" || !strings.Contains(errs, `ERROR: --shell "csh" is not a shell marina prints for: use bash, zsh, fish or powershell`) {
		t.Errorf("--shell csh: exit %d\n%s%s", code, out, errs)
	}
}

func TestDockerContextFlags(t *testing.T) {
	home := shortHome(t)
	fakeLima(t)
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "vm:\n  name: lab\n")
	out, errs, code := runCLI(t, "docker-context", "--dry-run")
	if code != 0 || !strings.Contains(out, "Plan (--dry-run, nothing was changed):\n  - create Docker context lab with docker endpoint unix://"+filepath.Join(home, ".lab.docker.sock")) {
		t.Errorf("docker-context --dry-run: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "WARNING: VM lab has not been created yet") {
		t.Errorf("no warning about the missing VM:\n%s", errs)
	}
	if _, err := os.Stat(filepath.Join(home, ".docker")); !os.IsNotExist(err) {
		t.Errorf("--dry-run wrote ~/.docker: %v", err)
	}
	out, _, code = runCLI(t, "docker-context", "--unset")
	if code != 0 || out != "Docker's current context is already default: nothing to change.\n" {
		t.Errorf("docker-context --unset: exit %d\n%s", code, out)
	}
	if _, _, code := runCLI(t, "docker-context", "extra"); code != 2 {
		t.Errorf("docker-context took an argument")
	}
}
