package dockerctx

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

// dockerFixture is a fixture whose home is sub inside the temporary one
// (a path with a space and quotes, say), with the default config.
func dockerFixture(t *testing.T, sub string) *sessiontest.World {
	t.Helper()
	f := sessiontest.New(t)
	if sub != "" {
		home := filepath.Join(f.Vars["HOME"], sub)
		f.Vars["HOME"] = home
		paths, err := config.ResolvePaths(func(k string) string { return f.Vars[k] }, "")
		if err != nil {
			t.Fatal(err)
		}
		f.Env.Paths = paths
		if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f.Config(nil)
	return f
}

func sock(f *sessiontest.World) string { return filepath.Join(f.Vars["HOME"], ".marina.docker.sock") }

// listen makes the VM's socket answer, as Lima's forward does.
func listen(f *sessiontest.World) {
	l, err := net.Listen("unix", sock(f))
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { l.Close() })
}

func reset(f *sessiontest.World) { f.Stdout.Reset(); f.Stderr.Reset() }

// dockerEnv runs docker-env; what it says is in f.Stdout, one line each.
func dockerEnv(f *sessiontest.World, o EnvOptions) error {
	reset(f)
	return said(f)(Env(context.Background(), f.Env, o))
}

// dockerContext runs docker-context; what it says is in f.Stdout.
func dockerContext(f *sessiontest.World, o ContextOptions) error {
	reset(f)
	return said(f)(UseContext(context.Background(), f.Env, o))
}

// said keeps what a Result says in f.Stdout, for the tests to read.
func said(f *sessiontest.World) func(session.Result, error) error {
	return func(res session.Result, err error) error {
		if s := sessiontest.Said(res); s != "" {
			f.Stdout.WriteString(s + "\n")
		}
		return err
	}
}

// shellRun runs script in the named shell and returns what it printed;
// it skips when the machine has no such shell.
func shellRun(t *testing.T, sh shell, script string, env ...string) string {
	t.Helper()
	argv := map[shell][]string{
		shBash: {"bash", "-c"}, shZsh: {"zsh", "-f", "-c"}, shFish: {"fish", "--no-config", "-c"},
		shPowerShell: {"pwsh", "-NoProfile", "-NonInteractive", "-Command"},
	}[sh]
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		t.Skipf("no %s on this machine: only the exact text is checked", argv[0])
	}
	c := exec.Command(bin, append(argv[1:], script)...)
	c.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", sh, err, out)
	}
	return string(out)
}

// Every shell gets DOCKER_HOST quoted its own way, for a home with a
// space, quotes, backslashes (one before a quote) and a dollar; the shell itself, where the
// machine has it, reads back exactly the socket's address.
func TestDockerEnvQuotesForEachShell(t *testing.T) {
	f := dockerFixture(t, `it\'s a "home" \ $HOME`)
	listen(f)
	host := "unix://" + sock(f)
	tmp := strings.TrimSuffix(sock(f), `/it\'s a "home" \ $HOME/.marina.docker.sock`)
	for _, c := range []struct {
		sh         shell
		set, unset string
		apply      string
		eval       string // runs the file $F, then prints DOCKER_HOST
	}{
		{shBash, `export DOCKER_HOST='unix://` + tmp + `/it\'\''s a "home" \ $HOME/.marina.docker.sock'`, "unset DOCKER_HOST",
			`eval "$(marina docker-env --shell bash)"`, `eval "$(cat "$F")"; printf %s "${DOCKER_HOST-unset}"`},
		{shZsh, `export DOCKER_HOST='unix://` + tmp + `/it\'\''s a "home" \ $HOME/.marina.docker.sock'`, "unset DOCKER_HOST",
			`eval "$(marina docker-env --shell zsh)"`, `eval "$(cat "$F")"; printf %s "${DOCKER_HOST-unset}"`},
		{shFish, `set -gx DOCKER_HOST 'unix://` + tmp + `/it\\\'s a "home" \\ $HOME/.marina.docker.sock';`, "set -e DOCKER_HOST;",
			`marina docker-env --shell fish | source`, `source $F; set -q DOCKER_HOST; and printf %s "$DOCKER_HOST"; or printf unset`},
		{shPowerShell, `$Env:DOCKER_HOST = 'unix://` + tmp + `/it\''s a "home" \ $HOME/.marina.docker.sock'`, `Remove-Item Env:\DOCKER_HOST -ErrorAction SilentlyContinue`,
			`& marina docker-env --shell powershell | Invoke-Expression`, `Get-Content -Raw $Env:F | Invoke-Expression; if ($Env:DOCKER_HOST) { [Console]::Write($Env:DOCKER_HOST) } else { [Console]::Write('unset') }`},
	} {
		t.Run(string(c.sh), func(t *testing.T) {
			if err := dockerEnv(f, EnvOptions{Shell: string(c.sh)}); err != nil {
				t.Fatal(err)
			}
			set := f.Stdout.String()
			lines := strings.Split(strings.TrimSuffix(set, "\n"), "\n")
			if lines[0] != c.set {
				t.Errorf("got  %s\nwant %s", lines[0], c.set)
			}
			for _, l := range lines[1:] {
				if !strings.HasPrefix(l, "# ") {
					t.Errorf("a line that is not a comment: %q", l)
				}
			}
			if !strings.Contains(set, "#   "+c.apply+"\n") {
				t.Errorf("no usage line %q:\n%s", c.apply, set)
			}
			if f.Stderr.Len() != 0 {
				t.Errorf("warnings with the VM up and its socket answering:\n%s", f.Stderr.String())
			}
			if err := dockerEnv(f, EnvOptions{Shell: string(c.sh), Unset: true}); err != nil {
				t.Fatal(err)
			}
			unset := f.Stdout.String()
			if first, _, _ := strings.Cut(unset, "\n"); first != c.unset {
				t.Errorf("unset: got %q, want %q", first, c.unset)
			}
			dir := t.TempDir()
			setFile, unsetFile := filepath.Join(dir, "set"), filepath.Join(dir, "unset")
			os.WriteFile(setFile, []byte(set), 0o600)
			os.WriteFile(unsetFile, []byte(unset), 0o600)
			if got := shellRun(t, c.sh, c.eval, "F="+setFile); got != host {
				t.Errorf("%s read DOCKER_HOST as %q, want %q", c.sh, got, host)
			}
			if got := shellRun(t, c.sh, c.eval, "F="+unsetFile, "DOCKER_HOST="+host); got != "unset" {
				t.Errorf("%s after the unset: DOCKER_HOST %q", c.sh, got)
			}
		})
	}
}

func TestDockerEnvShellFromSHELL(t *testing.T) {
	f := dockerFixture(t, "")
	for login, want := range map[string]string{
		"/bin/zsh": "export DOCKER_HOST=", "/opt/homebrew/bin/fish": "set -gx DOCKER_HOST '",
		"/usr/local/bin/pwsh": "$Env:DOCKER_HOST = '", "/bin/bash": "export DOCKER_HOST=",
		"/bin/tcsh": "export DOCKER_HOST=", "": "export DOCKER_HOST=",
	} {
		f.Vars["SHELL"] = login
		if err := dockerEnv(f, EnvOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(f.Stdout.String(), want+"unix://") {
			t.Errorf("SHELL=%s: %s", login, f.Stdout.String())
		}
		// The usage line is the bare command: $SHELL picks the same again.
		if strings.Contains(f.Stdout.String(), "--shell") {
			t.Errorf("SHELL=%s: the usage names --shell:\n%s", login, f.Stdout.String())
		}
	}
	f.Vars["SHELL"] = "/bin/zsh"
	if err := dockerEnv(f, EnvOptions{Shell: "tcsh"}); err == nil || !strings.Contains(err.Error(), "use bash, zsh, fish or powershell") {
		t.Errorf("--shell tcsh: %v", err)
	}
	if f.Stdout.Len() != 0 {
		t.Errorf("a bad --shell printed:\n%s", f.Stdout.String())
	}
}

// What stands between docker and the VM is said on stderr, with the fix;
// stdout stays shell code.
func TestDockerEnvWarnings(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(*sessiontest.World)
		want  string
	}{
		{"no VM", func(f *sessiontest.World) { f.Instance = nil }, "VM marina has not been created yet, so nothing answers on %s: run `marina up`"},
		{"stopped", func(f *sessiontest.World) { f.Instance.Status = vm.StatusStopped }, "VM marina is Stopped, so nothing answers on %s: start it with `marina up`"},
		{"no socket", func(*sessiontest.World) {}, "%s does not exist: the VM's Docker socket is not forwarded; `marina up` forwards it again"},
		{"a dead socket", func(f *sessiontest.World) {
			l, err := net.Listen("unix", sock(f))
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
		}, "nothing answers on %s ("},
		{"TLS variables", func(f *sessiontest.World) { listen(f); f.Vars["DOCKER_TLS_VERIFY"] = "1" }, "DOCKER_TLS_VERIFY is set: docker would ask for TLS on VM marina's socket, which speaks none, and fail; unset it: `unset DOCKER_TLS_VERIFY`"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := dockerFixture(t, "")
			c.setup(f)
			if err := dockerEnv(f, EnvOptions{Shell: "bash"}); err != nil {
				t.Fatal(err)
			}
			want := strings.Replace(c.want, "%s", sock(f), 1)
			if !strings.Contains(f.Stderr.String(), "WARNING: "+want) {
				t.Errorf("stderr:\n%s\nwant %s", f.Stderr.String(), want)
			}
			if !strings.HasPrefix(f.Stdout.String(), "export DOCKER_HOST=unix://"+sock(f)+"\n") || strings.Contains(f.Stdout.String(), "WARNING") {
				t.Errorf("stdout:\n%s", f.Stdout.String())
			}
		})
	}
}

// docker-env reads vm.name alone: a config marina up refuses still
// names the VM (with a warning), and the VM's own name is used.
func TestDockerEnvReadsVMNameOnly(t *testing.T) {
	f := dockerFixture(t, "")
	bad := "vm:\n  name: lab\nregistries:\n  mirrors:\n    - name: quay.io\n      port: 5010\n      remoteURL: https://quay.io\n"
	if err := os.WriteFile(f.Env.Paths.Config, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := dockerEnv(f, EnvOptions{Shell: "bash"}); err != nil {
		t.Fatal(err)
	}
	if want := "export DOCKER_HOST=unix://" + filepath.Join(f.Vars["HOME"], ".lab.docker.sock") + "\n"; !strings.HasPrefix(f.Stdout.String(), want) {
		t.Errorf("stdout:\n%s", f.Stdout.String())
	}
	if !strings.Contains(f.Stderr.String(), "marina up refuses the config") {
		t.Errorf("no warning about the rest of the config:\n%s", f.Stderr.String())
	}
	if err := os.WriteFile(f.Env.Paths.Config, []byte("vm:\n  name: Bad_Name\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := dockerEnv(f, EnvOptions{Shell: "bash"}); err == nil || !strings.Contains(err.Error(), "vm.name") || f.Stdout.Len() != 0 {
		t.Errorf("a bad vm.name: %v\n%s", err, f.Stdout.String())
	}
}

func TestDockerEnvUnset(t *testing.T) {
	f := dockerFixture(t, "")
	f.Vars["DOCKER_HOST"] = "unix://" + sock(f)
	if err := dockerEnv(f, EnvOptions{Unset: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Stdout.String(), "unset DOCKER_HOST\n") || !strings.Contains(f.Stdout.String(), `#   eval "$(marina docker-env --unset)"`) || f.Stderr.Len() != 0 {
		t.Errorf("stdout:\n%s\nstderr:\n%s", f.Stdout.String(), f.Stderr.String())
	}
	// Another daemon's DOCKER_HOST is unset too (the user asked), with a
	// word on stderr.
	f.Vars["DOCKER_HOST"] = "tcp://10.1.2.3:2376"
	if err := dockerEnv(f, EnvOptions{Unset: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Stdout.String(), "unset DOCKER_HOST\n") || !strings.Contains(f.Stderr.String(), "DOCKER_HOST is tcp://10.1.2.3:2376, not VM marina's socket") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", f.Stdout.String(), f.Stderr.String())
	}
	// And without a config at all.
	os.Remove(f.Env.Paths.Config)
	if err := dockerEnv(f, EnvOptions{Unset: true}); err != nil || !strings.HasPrefix(f.Stdout.String(), "unset DOCKER_HOST\n") {
		t.Errorf("--unset without a config: %v\n%s", err, f.Stdout.String())
	}
	// docker-env itself works from the defaults: the VM up would make.
	f.Instance = nil
	if err := dockerEnv(f, EnvOptions{Shell: "bash"}); err != nil || !strings.HasPrefix(f.Stdout.String(), "export DOCKER_HOST=unix://"+filepath.Join(f.Vars["HOME"], ".marina.docker.sock")+"\n") ||
		!strings.Contains(f.Stderr.String(), "VM marina has not been created yet") {
		t.Errorf("docker-env without a config: %v\n%s\n%s", err, f.Stdout.String(), f.Stderr.String())
	}
}

func TestDockerEnvRefusesAControlCharacter(t *testing.T) {
	f := dockerFixture(t, "a\nrm -rf ~")
	err := dockerEnv(f, EnvOptions{Shell: "bash"})
	if err == nil || !strings.Contains(err.Error(), "control character") || f.Stdout.Len() != 0 {
		t.Errorf("%v\n%s", err, f.Stdout.String())
	}
}

// dockerDir is the fixture's Docker config folder.
func dockerDir(f *sessiontest.World) string { return filepath.Join(f.Vars["HOME"], ".docker") }

// readContext reads context name back with the docker CLI's own store,
// and config.json's current context with its own configfile.
func readContext(t *testing.T, dir, name string) (host string, meta map[string]any, current string) {
	t.Helper()
	s := store.New(filepath.Join(dir, "contexts"), store.NewConfig(nil, store.EndpointTypeGetter(docker.DockerEndpoint, func() any { return &docker.EndpointMeta{} })))
	m, err := s.GetMetadata(name)
	if err != nil {
		t.Fatalf("docker's store: %v", err)
	}
	cf, err := dockerconfig.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ = m.Metadata.(map[string]any)
	return m.Endpoints[docker.DockerEndpoint].(docker.EndpointMeta).Host, meta, cf.CurrentContext
}

func TestDockerContextCreateThenAlreadyCurrent(t *testing.T) {
	f := dockerFixture(t, "")
	listen(f)
	host := "unix://" + sock(f)
	if err := dockerContext(f, ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "Created Docker context marina with docker endpoint " + host + ".\n" +
		"Docker's current context is now marina (it was default): docker talks to VM marina. `marina docker-context --unset` switches back.\n"
	if f.Stdout.String() != want || f.Stderr.Len() != 0 {
		t.Errorf("stdout:\n%s\nstderr:\n%s", f.Stdout.String(), f.Stderr.String())
	}
	h, meta, cur := readContext(t, dockerDir(f), "marina")
	if h != host || cur != "marina" || meta[ManagedKey] != ManagedValue {
		t.Errorf("read back: host %s, current %s, metadata %v", h, cur, meta)
	}
	before := snapshotTree(t, dockerDir(f))
	if err := dockerContext(f, ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "Docker context marina is already current, with docker endpoint " + host + ": nothing to change.\n"; f.Stdout.String() != want {
		t.Errorf("second run:\n%s", f.Stdout.String())
	}
	if after := snapshotTree(t, dockerDir(f)); after != before {
		t.Errorf("the second run wrote:\n%s\n%s", before, after)
	}
}

// snapshotTree is every file under root with its mode, time and bytes.
func snapshotTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + info.Mode().String() + " " + info.ModTime().String() + "\n")
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
			b.WriteString("\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// markedContext puts a context of marina's into dir as an older marina
// made it, with the user's description.
func markedContext(t *testing.T, dir, name, host string) {
	t.Helper()
	s := store.New(filepath.Join(dir, "contexts"), store.NewConfig(nil))
	err := s.CreateOrUpdate(store.Metadata{Name: name,
		Metadata:  map[string]any{"Description": "my lab", ManagedKey: ManagedValue},
		Endpoints: map[string]any{docker.DockerEndpoint: docker.EndpointMeta{Host: host}}})
	if err != nil {
		t.Fatal(err)
	}
}

func writeDockerConfig(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The socket moved (another HOME, say): the endpoint follows, the rest
// of the context stays.
func TestDockerContextUpdate(t *testing.T) {
	f := dockerFixture(t, "")
	listen(f)
	markedContext(t, dockerDir(f), "marina", "unix:///old/home/.marina.docker.sock")
	writeDockerConfig(t, dockerDir(f), `{"auths": {}, "currentContext": "desktop-linux"}`)
	if err := dockerContext(f, ContextOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"change the docker endpoint of Docker context marina to unix://" + sock(f) + " (it is unix:///old/home/.marina.docker.sock)",
		"make marina Docker's current context in " + filepath.Join(dockerDir(f), "config.json") + " (it is desktop-linux)",
	} {
		if !strings.Contains(f.Stdout.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, f.Stdout.String())
		}
	}
	if h, _, cur := readContext(t, dockerDir(f), "marina"); cur != "desktop-linux" || h != "unix:///old/home/.marina.docker.sock" {
		t.Errorf("--dry-run changed the context: %s, current %s", h, cur)
	}
	if err := dockerContext(f, ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "Changed the docker endpoint of Docker context marina to unix://" + sock(f) + " (it was unix:///old/home/.marina.docker.sock).\n" +
		"Docker's current context is now marina (it was desktop-linux)"
	if !strings.HasPrefix(f.Stdout.String(), want) {
		t.Errorf("stdout:\n%s", f.Stdout.String())
	}
	h, meta, cur := readContext(t, dockerDir(f), "marina")
	if h != "unix://"+sock(f) || cur != "marina" || meta["Description"] != "my lab" {
		t.Errorf("read back: host %s, current %s, metadata %v", h, cur, meta)
	}
}

// A context of the VM's name that marina did not make is left byte for
// byte, and the error names both ways out.
func TestDockerContextRefusesAForeignContext(t *testing.T) {
	f := dockerFixture(t, "")
	s := store.New(filepath.Join(dockerDir(f), "contexts"), store.NewConfig(nil))
	err := s.CreateOrUpdate(store.Metadata{Name: "marina", Metadata: map[string]any{},
		Endpoints: map[string]any{docker.DockerEndpoint: docker.EndpointMeta{Host: "ssh://me@build-box"}}})
	if err != nil {
		t.Fatal(err)
	}
	writeDockerConfig(t, dockerDir(f), `{"auths": {}, "currentContext": "marina"}`)
	before := snapshotTree(t, dockerDir(f))
	for _, dry := range []bool{true, false} {
		err := dockerContext(f, ContextOptions{DryRun: dry})
		for _, want := range []string{"Docker context marina exists and was not made by marina (its docker endpoint is ssh://me@build-box)", "`docker context rm marina`", "another vm.name (`marina config edit`)"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("dry run %v: %v, want %q", dry, err, want)
			}
		}
		if after := snapshotTree(t, dockerDir(f)); after != before {
			t.Errorf("the foreign context changed:\n%s\n%s", before, after)
		}
	}
	// --unset leaves it current: it is not marina's.
	if err := dockerContext(f, ContextOptions{Unset: true}); err != nil {
		t.Fatal(err)
	}
	if want := "Docker's current context is marina, a context marina did not make: it is left as it is (`docker context use default` switches by hand).\n"; f.Stdout.String() != want {
		t.Errorf("--unset:\n%s", f.Stdout.String())
	}
	if after := snapshotTree(t, dockerDir(f)); after != before {
		t.Errorf("--unset changed the foreign context:\n%s\n%s", before, after)
	}
}

func TestDockerContextUnset(t *testing.T) {
	f := dockerFixture(t, "")
	listen(f)
	if err := dockerContext(f, ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	// --dry-run says it and changes nothing.
	if err := dockerContext(f, ContextOptions{Unset: true, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Stdout.String(), "make default Docker's current context in ") {
		t.Errorf("--unset --dry-run:\n%s", f.Stdout.String())
	}
	if _, _, cur := readContext(t, dockerDir(f), "marina"); cur != "marina" {
		t.Errorf("--dry-run switched to %q", cur)
	}
	if err := dockerContext(f, ContextOptions{Unset: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Stdout.String(), "Docker's current context is default again (it was marina).") {
		t.Errorf("--unset:\n%s", f.Stdout.String())
	}
	// The context stays, for docker --context marina.
	if h, _, cur := readContext(t, dockerDir(f), "marina"); cur != "" || h != "unix://"+sock(f) {
		t.Errorf("after --unset: current %q, host %s", cur, h)
	}
	if err := dockerContext(f, ContextOptions{Unset: true}); err != nil {
		t.Fatal(err)
	}
	if f.Stdout.String() != "Docker's current context is already default: nothing to change.\n" {
		t.Errorf("--unset again:\n%s", f.Stdout.String())
	}
	// Someone else's current context is left alone.
	markedContext(t, dockerDir(f), "other", "unix:///x")
	s := store.New(filepath.Join(dockerDir(f), "contexts"), store.NewConfig(nil))
	if err := s.CreateOrUpdate(store.Metadata{Name: "desktop-linux", Endpoints: map[string]any{docker.DockerEndpoint: docker.EndpointMeta{Host: "unix:///d.sock"}}}); err != nil {
		t.Fatal(err)
	}
	writeDockerConfig(t, dockerDir(f), `{"auths": {}, "currentContext": "desktop-linux"}`)
	before := snapshotTree(t, dockerDir(f))
	if err := dockerContext(f, ContextOptions{Unset: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Stdout.String(), "Docker's current context is desktop-linux, a context marina did not make: it is left as it is") {
		t.Errorf("--unset over desktop-linux:\n%s", f.Stdout.String())
	}
	if after := snapshotTree(t, dockerDir(f)); after != before {
		t.Errorf("--unset changed someone else's setup")
	}
}

// DOCKER_HOST overrides any context: the context is made all the same,
// and the warning says how to unset it.
func TestDockerContextWarnsAboutDOCKER_HOST(t *testing.T) {
	f := dockerFixture(t, "")
	listen(f)
	f.Vars["DOCKER_HOST"] = "unix://" + sock(f)
	f.Vars["DOCKER_CONTEXT"] = "desktop-linux"
	if err := dockerContext(f, ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"WARNING: DOCKER_HOST is set (unix://" + sock(f) + "): it overrides every Docker context, so docker does not use context marina while it is set; unset it: `unset DOCKER_HOST` (or `eval \"$(marina docker-env --unset)\"`)",
		"WARNING: DOCKER_CONTEXT is desktop-linux: it picks that context over the current one; unset it: `unset DOCKER_CONTEXT`",
	} {
		if !strings.Contains(f.Stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, f.Stderr.String())
		}
	}
	if _, _, cur := readContext(t, dockerDir(f), "marina"); cur != "marina" {
		t.Errorf("current = %q", cur)
	}
}

func TestDockerContextHonoursDOCKER_CONFIG(t *testing.T) {
	f := dockerFixture(t, "")
	dir := filepath.Join(t.TempDir(), "dc")
	f.Vars["DOCKER_CONFIG"] = dir
	if err := dockerContext(f, ContextOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Stdout.String(), "create Docker context marina with docker endpoint unix://"+sock(f)+" ("+dir+"/contexts/meta/") {
		t.Errorf("dry run:\n%s", f.Stdout.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("--dry-run made %s: %v", dir, err)
	}
	if err := dockerContext(f, ContextOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, cur := readContext(t, dir, "marina"); cur != "marina" {
		t.Errorf("current in DOCKER_CONFIG = %q", cur)
	}
	if _, err := os.Stat(dockerDir(f)); !os.IsNotExist(err) {
		t.Errorf("~/.docker was written with DOCKER_CONFIG set: %v", err)
	}
}

// Bad input changes nothing: a vm.name docker takes for no context of
// its own, a config.json docker cannot read.
func TestDockerContextBadInput(t *testing.T) {
	f := dockerFixture(t, "")
	f.Config(func(c *config.Config) { c.VM.Name = "default" })
	err := dockerContext(f, ContextOptions{})
	if err == nil || !strings.Contains(err.Error(), "vm.name default cannot name a Docker context") || !strings.Contains(err.Error(), "set another vm.name") {
		t.Errorf("vm.name default: %v", err)
	}
	if _, err := os.Stat(dockerDir(f)); !os.IsNotExist(err) {
		t.Errorf("a refused name wrote %s", dockerDir(f))
	}
	f.Config(nil)
	writeDockerConfig(t, dockerDir(f), `{"auths": {"x": {"auth": "not base64!"}}}`)
	before := snapshotTree(t, dockerDir(f))
	if err := dockerContext(f, ContextOptions{}); err == nil || !strings.Contains(err.Error(), "fix or move "+filepath.Join(dockerDir(f), "config.json")) {
		t.Errorf("unreadable config.json: %v", err)
	}
	if after := snapshotTree(t, dockerDir(f)); after != before {
		t.Errorf("an unreadable config.json led to changes")
	}
}
