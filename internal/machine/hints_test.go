package machine

import (
	"context"
	"net/netip"
	"reflect"
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
		r, err := Up(context.Background(), f.Env, UpOptions{})
		if err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		want := &Ready{VM: "marina", Lima0: netip.MustParseAddr("192.168.64.3"), Socket: sock(f), Routed: netip.MustParsePrefix("172.30.0.0/16"), Next: []Hint{
			{`eval "$(marina docker-env)"`, "use the VM's Docker from this shell"},
			{"marina cluster create NAME", "create a kind cluster (marina fleet apply -f FILE: several)"},
		}}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("up ended with\n%+v\nwant\n%+v", r, want)
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
			f.Addons[n] = guest.Addons{DNS: config.DefaultDNSDomain, Auth: true, Registry: "localhost:5001"} // on the local DNS already
		}
		f.Vars["DOCKER_HOST"] = "unix://" + sock(f)
		r, err := Up(context.Background(), f.Env, UpOptions{})
		if err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		if want := []Hint{{"marina cluster list", "your 2 clusters: dev, east"}}; r == nil || !reflect.DeepEqual(r.Next, want) {
			t.Errorf("up ended with %+v, want next %+v", r, want)
		}
		// The kubeconfig checks listed them; nothing more.
		if got := f.Called("docker.kind-nodes"); len(got) != 1 {
			t.Errorf("Docker was asked for the clusters %d times, want 1", len(got))
		}
	})
	t.Run("dry run", func(t *testing.T) {
		f := sessiontest.Warm(t)
		r, err := Up(context.Background(), f.Env, UpOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if r == nil || r.Plan == nil || r.Next != nil || r.VM != "" {
			t.Errorf("a dry run ended with %+v, want its plan alone", r)
		}
	})
}
