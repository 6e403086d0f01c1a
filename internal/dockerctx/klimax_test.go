package dockerctx

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"
)

const klimaxHost = "unix:///Users/me/.klimax.docker.sock"

// klimaxContext is the context klimax's docker-context made: `docker
// context create klimax --docker host=unix://$HOME/.klimax.docker.sock`,
// then `docker context use klimax`; md is its metadata.
func klimaxContext(t *testing.T, dir string, md map[string]any, ep docker.EndpointMeta) {
	t.Helper()
	if md == nil {
		md = map[string]any{}
	}
	err := dockerStore(dir).CreateOrUpdate(store.Metadata{Name: "klimax", Metadata: md,
		Endpoints: map[string]any{docker.DockerEndpoint: ep}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths": {}, "currentContext": "klimax"}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

func adoptPlan(t *testing.T, dir, host string) (*State, Plan, error) {
	t.Helper()
	st, err := Read(dir, "klimax")
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.AdoptPlan("klimax", host)
	return st, p, err
}

func TestAdoptKlimaxsContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".docker")
	klimaxContext(t, dir, map[string]any{"Description": "set by hand", "other.tool/field": "x"}, docker.EndpointMeta{Host: klimaxHost})

	// Planning (a dry run) writes nothing.
	before := tree(t, dir)
	st, p, err := adoptPlan(t, dir, klimaxHost)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Adopt || !p.Write || p.Create || p.Use || p.None() || p.Was != klimaxHost || p.From != "klimax" {
		t.Errorf("plan = %+v", p)
	}
	if after := tree(t, dir); !equal(before, after) {
		t.Fatalf("AdoptPlan wrote:\n%v\n%v", before, after)
	}

	if err := st.Apply(p); err != nil {
		t.Fatal(err)
	}
	m, err := dockerStore(dir).GetMetadata("klimax")
	if err != nil {
		t.Fatal(err)
	}
	md := m.Metadata.(map[string]any)
	if md[ManagedKey] != ManagedValue || md["Description"] != "set by hand" || md["other.tool/field"] != "x" || len(md) != 3 {
		t.Errorf("metadata = %v", md)
	}
	if ep := m.Endpoints[docker.DockerEndpoint].(docker.EndpointMeta); ep != (docker.EndpointMeta{Host: klimaxHost}) || len(m.Endpoints) != 1 {
		t.Errorf("endpoints = %#v", m.Endpoints)
	}
	if cf, err := dockerconfig.Load(dir); err != nil || cf.CurrentContext != "klimax" {
		t.Errorf("currentContext = %q, %v", cf.CurrentContext, err)
	}

	// It is marina's now: nothing more to adopt, and Ensure takes it.
	before = tree(t, dir)
	st, p, err = adoptPlan(t, dir, klimaxHost)
	if err != nil || !p.None() || !st.Named.Marina {
		t.Errorf("AdoptPlan again = %+v, %v", p, err)
	}
	if err := st.Apply(p); err != nil {
		t.Fatal(err)
	}
	if p, err := st.Ensure("klimax", klimaxHost, ""); err != nil || !p.None() {
		t.Errorf("Ensure after adoption = %+v, %v", p, err)
	}
	if after := tree(t, dir); !equal(before, after) {
		t.Errorf("a second adoption wrote:\n%v\n%v", before, after)
	}
}

// A context of the name that is not klimax's as it made it stays the
// user's.
func TestAdoptRefusesOtherContexts(t *testing.T) {
	cases := map[string]struct {
		ep   docker.EndpointMeta
		tls  bool
		want string
	}{
		"another host":    {docker.EndpointMeta{Host: "tcp://10.0.0.9:2376"}, false, "tcp://10.0.0.9:2376"},
		"another socket":  {docker.EndpointMeta{Host: "unix:///Users/me/.colima/docker.sock"}, false, "colima"},
		"no endpoint":     {docker.EndpointMeta{}, false, "endpoint is none"},
		"skip-tls-verify": {docker.EndpointMeta{Host: klimaxHost, SkipTLSVerify: true}, false, "skips TLS verification"},
		"TLS files":       {docker.EndpointMeta{Host: klimaxHost}, true, "TLS files"},
	}
	for what, c := range cases {
		t.Run(what, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".docker")
			klimaxContext(t, dir, nil, c.ep)
			if c.tls {
				err := dockerStore(dir).ResetEndpointTLSMaterial("klimax", docker.DockerEndpoint, &store.EndpointTLSData{Files: map[string][]byte{"ca.pem": []byte("x")}})
				if err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, dir)
			_, p, err := adoptPlan(t, dir, klimaxHost)
			var fe *ForeignError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || fe.Context.Name != "klimax" {
				t.Errorf("AdoptPlan = %+v, %v", p, err)
			}
			if after := tree(t, dir); !equal(before, after) {
				t.Error("AdoptPlan wrote")
			}
		})
	}
}

func TestAdoptNothingThere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".docker")
	_, p, err := adoptPlan(t, dir, klimaxHost)
	if err != nil || !p.None() {
		t.Errorf("AdoptPlan with no context = %+v, %v", p, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("Docker's config folder was made")
	}
	st, err := Read(dir, "klimax")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"default", "-x"} {
		if _, err := st.AdoptPlan(name, klimaxHost); err == nil {
			t.Errorf("AdoptPlan(%q): no error", name)
		}
	}
}

// Apply writes the context Read found: a plan for another name than the
// one read is refused.
func TestAdoptPlanOfAnotherName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".docker")
	klimaxContext(t, dir, nil, docker.EndpointMeta{Host: klimaxHost})
	for read, plan := range map[string]string{"klimax": "east", "east": "klimax"} {
		st, err := Read(dir, read)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := st.AdoptPlan(plan, klimaxHost); err == nil || !strings.Contains(err.Error(), "read for") {
			t.Errorf("read for %s, AdoptPlan(%s) = %+v, %v", read, plan, p, err)
		}
	}
}

// The context as the docker CLI itself makes it, when the machine has
// one, is adopted, and docker still reads it.
func TestAdoptDockerCLIsContext(t *testing.T) {
	bin, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker CLI on PATH")
	}
	dir := filepath.Join(t.TempDir(), ".docker")
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
	run("context", "create", "klimax", "--docker", "host="+klimaxHost)
	run("context", "use", "klimax")
	st, p, err := adoptPlan(t, dir, klimaxHost)
	if err != nil || !p.Adopt {
		t.Fatalf("AdoptPlan = %+v, %v", p, err)
	}
	if err := st.Apply(p); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Name      string
		Endpoints map[string]struct{ Host string }
	}
	if err := json.Unmarshal([]byte(run("context", "inspect", "klimax")), &got); err != nil || len(got) != 1 || got[0].Endpoints["docker"].Host != klimaxHost {
		t.Errorf("docker context inspect: %+v, %v", got, err)
	}
	if run("context", "show") != "klimax" {
		t.Error("the current context changed")
	}
	if st, err := Read(dir, "klimax"); err != nil || !st.Named.Marina {
		t.Errorf("not marina's: %+v, %v", st, err)
	}
}
