package machine

import (
	"context"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

// warmFixture is a running VM that up has brought to the default config.
// up ends with what to do next: Docker from this shell, and a first
// cluster, or the clusters there are; never on a dry run, and with no call
// of its own.
func TestUpEndsWithNextSteps(t *testing.T) {
	sock := func(f *sessiontest.World) string {
		f.T.Helper()
		s := &session.Session{Env: f.Env, Name: "marina"}
		return s.Socket()
	}
	t.Run("no clusters", func(t *testing.T) {
		f := sessiontest.Warm(t)
		if err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		want := "VM marina is ready: lima0 192.168.64.3, Docker at unix://" + sock(f) + ", 172.30.0.0/16 routed to the VM\n" +
			"Next:\n" +
			"  eval \"$(marina docker-env)\"    use the VM's Docker from this shell\n" +
			"  marina cluster create NAME     create a kind cluster (marina fleet apply -f FILE: several)\n"
		if !strings.HasSuffix(f.Stdout.String(), want) {
			t.Errorf("up printed:\n%s\nwant it to end:\n%s", f.Stdout.String(), want)
		}
		if got := f.Called("docker.kind-nodes"); len(got) != 0 {
			t.Errorf("the hints asked Docker for the clusters: %v", got)
		}
	})
	t.Run("clusters, Docker already in this shell", func(t *testing.T) {
		f := sessiontest.Warm(t)
		f.Cluster("dev", 1, "https://192.168.64.3:7001")
		f.Cluster("east", 2, "https://192.168.64.3:7002")
		for _, n := range []string{"dev", "east"} {
			f.Addons[n] = guest.Addons{DNS: config.DefaultDNSDomain, Auth: true} // on the local DNS already
		}
		f.Vars["DOCKER_HOST"] = "unix://" + sock(f)
		if err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		want := "routed to the VM\nNext:\n  marina cluster list    your 2 clusters: dev, east\n"
		if !strings.HasSuffix(f.Stdout.String(), want) {
			t.Errorf("up printed:\n%s\nwant it to end:\n%s", f.Stdout.String(), want)
		}
		// The kubeconfig checks listed them; nothing more.
		if got := f.Called("docker.kind-nodes"); len(got) != 1 {
			t.Errorf("Docker was asked for the clusters %d times, want 1", len(got))
		}
	})
	t.Run("dry run", func(t *testing.T) {
		f := sessiontest.Warm(t)
		if err := Up(context.Background(), f.Env, UpOptions{DryRun: true}); err != nil {
			t.Fatal(err)
		}
		if out := f.Stdout.String(); strings.Contains(out, "Next:") || strings.Contains(out, "docker-env") {
			t.Errorf("a dry run printed hints:\n%s", out)
		}
	})
}
