package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dockerCLI is the machine's docker CLI, the one a Mac user runs: it
// reads marina's context the way docker does.
const dockerCLI = "/usr/local/bin/docker"

// labServerVersion is the version the lab's Docker Engine reports.
const labServerVersion = "29.0.0-lab"

// userDocker runs the docker CLI as the Mac's user (no DOCKER_HOST: lab/lab
// mac-user clears it) and fails the test when it fails.
func userDocker(t *testing.T, args ...string) string {
	t.Helper()
	r := succeeded(t, macUser(t, append([]string{dockerCLI}, args...)...), "docker "+strings.Join(args, " ")+" (as the Mac's user)")
	return strings.TrimSpace(r.stdout)
}

// TestDockerContext: marina's Docker context and DOCKER_HOST export, read
// by the real docker CLI as the Mac's user, reach the lab's Docker Engine
// through the VM's forwarded socket.
func TestDockerContext(t *testing.T) {
	needLab(t)
	if _, err := os.Stat(dockerCLI); err != nil {
		t.Skipf("no docker CLI at %s: %v", dockerCLI, err)
	}
	dockerDir := filepath.Join(home(), ".docker")
	t.Cleanup(func() {
		_ = os.RemoveAll(dockerDir)
		_ = os.RemoveAll(filepath.Join(marinaHome(), "config.yaml"))
	})
	writeConfig(t, "registries:\n  mirrors: []\n")
	// The user's own VM, socket and ~/.docker, as on a Mac.
	asMacUser(t)
	mustUserMarina(t, "up")
	sock := socket()
	host := "unix://" + sock

	t.Run("docker-env points docker at the VM in bash", func(t *testing.T) {
		r := mustUserMarina(t, "docker-env", "--shell", "bash")
		if !strings.HasPrefix(r.stdout, "export DOCKER_HOST="+host+"\n") {
			t.Errorf("docker-env:\n%s", r.stdout)
		}
		if r.stderr != "" {
			t.Errorf("warnings with the VM up:\n%s", r.stderr)
		}
		script := `eval "$(` + marinaBin + ` docker-env)" && ` + dockerCLI + ` version --format '{{.Server.Version}} {{.Client.Version}}'`
		out := strings.TrimSpace(succeeded(t, macUser(t, "env", "SHELL=/bin/bash", "bash", "-c", script), "eval docker-env; docker version").stdout)
		if !strings.HasPrefix(out, labServerVersion+" ") {
			t.Errorf("docker version after eval docker-env: %q, want server %s", out, labServerVersion)
		}
		script = `export DOCKER_HOST=` + host + `; eval "$(` + marinaBin + ` docker-env --unset)"; printf %s "${DOCKER_HOST-unset}"`
		if out := succeeded(t, macUser(t, "bash", "-c", script), "eval docker-env --unset").stdout; out != "unset" {
			t.Errorf("DOCKER_HOST after --unset: %q", out)
		}
	})

	t.Run("docker-context makes the VM's Docker docker's current one", func(t *testing.T) {
		r := mustUserMarina(t, "docker-context", "--dry-run")
		if !strings.Contains(r.stdout, "create Docker context marina with docker endpoint "+host) {
			t.Errorf("dry run:\n%s", r.stdout)
		}
		if _, err := os.Stat(dockerDir); !os.IsNotExist(err) {
			t.Errorf("--dry-run wrote %s (%v)", dockerDir, err)
		}
		r = mustUserMarina(t, "docker-context")
		for _, want := range []string{"Created Docker context marina with docker endpoint " + host + ".", "Docker's current context is now marina (it was default)"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("docker-context lacks %q:\n%s", want, r.stdout)
			}
		}
		t.Logf("marina docker-context:\n%s", r.stdout)
		ls := userDocker(t, "context", "ls")
		t.Logf("docker context ls:\n%s", ls)
		var row string
		for _, l := range strings.Split(ls, "\n") {
			if strings.HasPrefix(l, "marina ") {
				row = l
			}
		}
		if !strings.HasPrefix(row, "marina *") || !strings.Contains(row, "Docker in marina's VM marina") || !strings.Contains(row, host) {
			t.Errorf("docker context ls has no current marina context with %s:\n%s", host, ls)
		}
		if got := userDocker(t, "context", "show"); got != "marina" {
			t.Errorf("docker context show = %q", got)
		}
		if v := userDocker(t, "--context", "marina", "version", "--format", "{{.Server.Version}}"); v != labServerVersion {
			t.Errorf("docker --context marina version: server %q, want %s", v, labServerVersion)
		}
		// No DOCKER_HOST, no --context: the current context.
		if v := userDocker(t, "version", "--format", "{{.Server.Version}}"); v != labServerVersion {
			t.Errorf("docker version: server %q, want %s", v, labServerVersion)
		}
		before := dockerTree(t, dockerDir)
		r = mustUserMarina(t, "docker-context")
		if !strings.Contains(r.stdout, "Docker context marina is already current, with docker endpoint "+host+": nothing to change.") {
			t.Errorf("a second docker-context:\n%s", r.stdout)
		}
		if after := dockerTree(t, dockerDir); !sameDockerTree(before, after) {
			t.Errorf("a second docker-context changed %s", dockerDir)
		}
	})

	t.Run("docker-context --unset switches back to default", func(t *testing.T) {
		r := mustUserMarina(t, "docker-context", "--unset")
		if !strings.HasPrefix(r.stdout, "Docker's current context is default again (it was marina).") {
			t.Errorf("--unset:\n%s", r.stdout)
		}
		if got := userDocker(t, "context", "show"); got != "default" {
			t.Errorf("docker context show after --unset = %q", got)
		}
		// The context stays for --context.
		if v := userDocker(t, "--context", "marina", "version", "--format", "{{.Server.Version}}"); v != labServerVersion {
			t.Errorf("docker --context marina version after --unset: %q", v)
		}
		// Plain docker no longer goes to the VM.
		if r := macUser(t, dockerCLI, "version", "--format", "{{.Server.Version}}"); r.code == 0 && strings.TrimSpace(r.stdout) == labServerVersion {
			t.Errorf("docker still reaches the VM with the default context:\n%s", r.stdout)
		}
	})

	t.Run("a context docker made is never overwritten", func(t *testing.T) {
		userDocker(t, "context", "rm", "marina")
		userDocker(t, "context", "create", "marina", "--docker", "host=unix:///tmp/elsewhere.sock")
		before := userDocker(t, "context", "inspect", "marina")
		r := userMarina(t, "docker-context")
		if r.code == 0 || !strings.Contains(r.stderr, "Docker context marina exists and was not made by marina (its docker endpoint is unix:///tmp/elsewhere.sock)") || !strings.Contains(r.stderr, "`docker context rm marina`") {
			t.Errorf("docker-context over docker's own context: exit %d\n%s", r.code, r.stderr)
		}
		if after := userDocker(t, "context", "inspect", "marina"); after != before {
			t.Errorf("the context changed:\n%s\n%s", before, after)
		}
		if got := userDocker(t, "context", "show"); got != "default" {
			t.Errorf("docker context show = %q", got)
		}
	})
}

// dockerTree is every file under root with its mode, time and bytes.
func dockerTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		var b []byte
		if info.Mode().IsRegular() {
			if b, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		out[p] = info.Mode().String() + " " + info.ModTime().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameDockerTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
