package dockerctx

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"
)

const host = "unix:///Users/me/.marina.docker.sock"

// umask makes the modes the tests see those of a usual login (022).
func umask(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
}

// dockerStore is Docker's own reading of dir's contexts, as the docker CLI
// configures it.
func dockerStore(dir string) *store.ContextStore {
	return store.New(filepath.Join(dir, "contexts"), store.NewConfig(
		func() any { return &map[string]any{} },
		store.EndpointTypeGetter(docker.DockerEndpoint, func() any { return &docker.EndpointMeta{} }),
	))
}

func ensure(t *testing.T, dir, name, host string) Plan {
	t.Helper()
	st, err := Read(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Ensure(name, host, "Docker in marina's VM "+name)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestCreateIsDockersFormat(t *testing.T) {
	umask(t)
	dir := filepath.Join(t.TempDir(), ".docker")
	p := ensure(t, dir, "marina", host)
	if !p.Create || !p.Write || !p.Use || p.From != Default {
		t.Errorf("plan = %+v", p)
	}
	m, err := dockerStore(dir).GetMetadata("marina")
	if err != nil {
		t.Fatal(err)
	}
	ep, ok := m.Endpoints[docker.DockerEndpoint].(docker.EndpointMeta)
	if !ok || ep.Host != host || ep.SkipTLSVerify {
		t.Errorf("docker endpoint = %#v", m.Endpoints)
	}
	md := m.Metadata.(map[string]any)
	if md["Description"] != "Docker in marina's VM marina" || md[ManagedKey] != ManagedValue {
		t.Errorf("metadata = %v", md)
	}
	cf, err := dockerconfig.Load(dir)
	if err != nil || cf.CurrentContext != "marina" {
		t.Errorf("config.json currentContext = %q, %v", cf.CurrentContext, err)
	}
	// The modes docker writes: its config folder and config.json private,
	// the store's folders and metadata world-readable.
	meta := dockerStore(dir).GetStorageInfo("marina").MetadataPath
	for path, want := range map[string]os.FileMode{
		dir: 0o700, filepath.Join(dir, "config.json"): 0o600,
		filepath.Join(dir, "contexts"): 0o755, meta: 0o755, filepath.Join(meta, "meta.json"): 0o644,
	} {
		if got := mode(t, path); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
}

// The docker CLI itself, when the machine has it, reads what marina wrote.
func TestDockerCLIReadsIt(t *testing.T) {
	bin, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker CLI on PATH")
	}
	dir := filepath.Join(t.TempDir(), ".docker")
	ensure(t, dir, "marina", host)
	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = []string{"DOCKER_CONFIG=" + dir, "HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run("context", "show"); got != "marina" {
		t.Errorf("docker context show = %q", got)
	}
	var got []struct {
		Name, Description string
		Endpoints         map[string]struct{ Host string }
	}
	if err := json.Unmarshal([]byte(run("context", "inspect", "marina")), &got); err != nil || len(got) != 1 {
		t.Fatalf("docker context inspect: %v %v", got, err)
	}
	if got[0].Name != "marina" || got[0].Endpoints["docker"].Host != host {
		t.Errorf("docker context inspect = %+v", got[0])
	}
	// And a description set with the docker CLI keeps the context marina's.
	run("context", "update", "--description", "mine now", "marina")
	st, err := Read(dir, "marina")
	if err != nil || st.Named == nil || !st.Named.Marina || st.Named.Description != "mine now" {
		t.Errorf("after docker context update: %+v, %v", st.Named, err)
	}
}

func TestUpdateKeepsTheRest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".docker")
	ensure(t, dir, "marina", "unix:///old/.marina.docker.sock")
	// What else the context holds (a description of the user's, another
	// tool's field, a TLS file) is the context's: an update keeps all but
	// the docker endpoint's TLS, as `docker context update --docker` does.
	s := dockerStore(dir)
	m, _ := s.GetMetadata("marina")
	md := m.Metadata.(map[string]any)
	md["Description"], md["other.tool/field"] = "my lab", float64(7)
	m.Metadata = md
	if err := s.CreateOrUpdate(m); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetEndpointTLSMaterial("marina", docker.DockerEndpoint, &store.EndpointTLSData{Files: map[string][]byte{"ca.pem": []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	p := ensure(t, dir, "marina", host)
	if p.Create || !p.Write || p.Use || p.Was != "unix:///old/.marina.docker.sock" {
		t.Errorf("plan = %+v", p)
	}
	m, err := s.GetMetadata("marina")
	if err != nil {
		t.Fatal(err)
	}
	md = m.Metadata.(map[string]any)
	if md["Description"] != "my lab" || md["other.tool/field"] != float64(7) || md[ManagedKey] != ManagedValue {
		t.Errorf("metadata after the update = %v", md)
	}
	if ep := m.Endpoints[docker.DockerEndpoint].(docker.EndpointMeta); ep.Host != host {
		t.Errorf("endpoint after the update = %+v", ep)
	}
	if files, err := s.ListTLSFiles("marina"); err != nil || len(files) != 0 {
		t.Errorf("TLS files after the update: %v %v", files, err)
	}
}

// tree is every file under root with its bytes and mode.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b := []byte{}
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

func TestAlreadyCurrentWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".docker")
	ensure(t, dir, "marina", host)
	before := tree(t, dir)
	p := ensure(t, dir, "marina", host)
	if !p.None() {
		t.Errorf("second run plans %+v", p)
	}
	if after := tree(t, dir); !equal(before, after) {
		t.Errorf("second run changed files:\n%v\n%v", before, after)
	}
}

func equal(a, b map[string]string) bool {
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

func TestForeignContextIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".docker")
	s := dockerStore(dir)
	// As `docker context create marina --docker host=tcp://…` makes it.
	err := s.CreateOrUpdate(store.Metadata{Name: "marina", Metadata: map[string]any{},
		Endpoints: map[string]any{docker.DockerEndpoint: docker.EndpointMeta{Host: "tcp://10.0.0.9:2376"}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Read(dir, "marina")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Ensure("marina", host, "")
	var fe *ForeignError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "tcp://10.0.0.9:2376") {
		t.Errorf("Ensure over a foreign context: %v", err)
	}
}

func TestUnknownConfigFieldsSurvive(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	// A field docker's configfile does not know, credentials, a mode of
	// the user's, and a config.json that is a symlink (dotfiles).
	real := filepath.Join(dir, "dotfiles-config.json")
	body := `{"auths": {"r.example": {"auth": "dTpw"}}, "Experimental": "enabled", "stackOrchestrator": {"a": [1, 2]}, "currentContext": "desktop-linux"}`
	if err := os.WriteFile(real, []byte(body), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, cfg); err != nil {
		t.Fatal(err)
	}
	ensure(t, dir, "marina", host)
	if fi, err := os.Lstat(cfg); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("config.json is no longer the symlink: %v", err)
	}
	if got := mode(t, real); got != 0o640 {
		t.Errorf("mode %v, want the user's 0640", got)
	}
	b, _ := os.ReadFile(real)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("config.json is not JSON: %v\n%s", err, b)
	}
	if string(m["Experimental"]) != `"enabled"` || !strings.Contains(string(b), "\"stackOrchestrator\": {\n\t\t\"a\": [\n") {
		t.Errorf("fields docker does not know were lost:\n%s", b)
	}
	cf, err := dockerconfig.Load(dir)
	if err != nil || cf.CurrentContext != "marina" || cf.AuthConfigs["r.example"].Username != "u" || cf.AuthConfigs["r.example"].Password != "p" {
		t.Errorf("docker reads back %+v, %v\n%s", cf, err, b)
	}
}

// config.json as docker leaves it in odd cases: empty, or null.
func TestEmptyConfigFile(t *testing.T) {
	for _, body := range []string{"", "null", " \n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		ensure(t, dir, "marina", host)
		if cf, err := dockerconfig.Load(dir); err != nil || cf.CurrentContext != "marina" {
			t.Errorf("config.json %q: current %q, %v", body, cf.CurrentContext, err)
		}
	}
}

func TestUseDefault(t *testing.T) {
	dir := t.TempDir()
	ensure(t, dir, "marina", host)
	st, err := Read(dir, Default)
	if err != nil || st.Current != "marina" || st.CurrentContext == nil || !st.CurrentContext.Marina {
		t.Fatalf("Read: %+v, %v", st, err)
	}
	if err := st.UseDefault(); err != nil {
		t.Fatal(err)
	}
	cf, err := dockerconfig.Load(dir)
	if err != nil || cf.CurrentContext != "" {
		t.Errorf("currentContext = %q, %v", cf.CurrentContext, err)
	}
	if _, err := dockerStore(dir).GetMetadata("marina"); err != nil {
		t.Errorf("the context went: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext": `), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir, "marina"); err == nil || !strings.Contains(err.Error(), "fix or move") {
		t.Errorf("Read of a broken config.json: %v", err)
	}
	st, err := Read(t.TempDir(), "marina")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"default", "a", "-x", ""} {
		if _, err := st.Ensure(name, host, ""); err == nil {
			t.Errorf("Ensure(%q) took a name docker refuses", name)
		}
	}
}

func TestDir(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got := Dir(getenv, "/home/me"); got != "/home/me/.docker" {
		t.Errorf("Dir = %s", got)
	}
	env[EnvConfig] = "/etc/dock/"
	if got := Dir(getenv, "/home/me"); got != "/etc/dock" {
		t.Errorf("Dir with DOCKER_CONFIG = %s", got)
	}
}

// S10: a config.json that is a link to nothing is refused, naming both,
// and nothing is created where it points (docker-context used to create a
// regular file at the first missing part of the link's target).
func TestDanglingConfigLinkRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "dotfiles", "docker", "config.json")
	if err := os.Symlink(target, filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	_, err := Read(dir, "marina")
	if err == nil || !strings.Contains(err.Error(), "is a link to "+target+", which does not exist") {
		t.Fatalf("Read: %v", err)
	}
	if _, err := os.Lstat(filepath.Dir(target)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something was created where the link points: %v", err)
	}
}
