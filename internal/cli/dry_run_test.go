package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

// The --dry-run of the commands that have no test of their own for it
// (up, down, destroy, docker-context, fleet apply, doctor --fix, skill
// install and migrate do) prints its plan, makes no call that changes
// anything, and leaves every file under the home folder as it was.
func TestDryRunsChangeNothing(t *testing.T) {
	ctx := context.Background()
	region := cluster.RegionLabel + "=r"
	cases := []struct {
		name string
		run  func(f *sessiontest.World) (session.Result, error)
		plan string // a step the plan must name
	}{
		{"cluster delete", func(f *sessiontest.World) (session.Result, error) {
			return kindcluster.Delete(ctx, f.Env, kindcluster.DeleteOptions{Names: []string{"a"}, DryRun: true})
		}, "delete 1 cluster a with their kubeconfig files"},
		{"cluster delete -l", func(f *sessiontest.World) (session.Result, error) {
			return kindcluster.Delete(ctx, f.Env, kindcluster.DeleteOptions{Selector: region, DryRun: true})
		}, "delete 2 clusters a, b with their kubeconfig files"},
		{"cluster label", func(f *sessiontest.World) (session.Result, error) {
			return kindcluster.Label(ctx, f.Env, "a", []string{"team=net", "env-"}, true)
		}, "on every node of a: set team=net; remove env"},
		{"fleet label", func(f *sessiontest.World) (session.Result, error) {
			return fleet.SetLabels(ctx, f.Env, "demo", []string{"team=net"}, true)
		}, "on every node of a, b: set team=net"},
		{"fleet delete", func(f *sessiontest.World) (session.Result, error) {
			return fleet.Delete(ctx, f.Env, "demo", "", false, true)
		}, "delete 2 clusters, in this order: a, b"},
		{"kubeconfig merge", func(f *sessiontest.World) (session.Result, error) {
			return kindcluster.MergeKubeconfigs(ctx, f.Env, nil, true)
		}, "export a from the cluster"},
		{"registry clean-cache", func(f *sessiontest.World) (session.Result, error) {
			return machine.CleanCache(ctx, f.Env, nil, machine.CleanCacheOptions{DryRun: true})
		}, "registry-dockerio"},
	}
	// The calls that only look.
	looks := []string{"vm.get ", "host.lookup ", "guest.observe", "docker.version", "docker.wait-ready", "docker.inspect-network ", "docker.list ", "docker.kind-nodes", "docker.named ", "docker.endpoints "}
	reads := func(c string) bool {
		if slices.ContainsFunc(looks, func(p string) bool { return strings.HasPrefix(c, p) }) {
			return true
		}
		// The clusters' API: reading node labels and nodes.
		f := strings.Fields(c)
		return len(f) >= 3 && f[0] == "kube" && (f[2] == "node-labels" || f[2] == "nodes")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.TwoClusters(t)
			f.Labels = map[string]map[string]string{
				"a": {cluster.RegionLabel: "r", cluster.FleetLabel: "demo", "env": "dev"},
				"b": {cluster.RegionLabel: "r", cluster.FleetLabel: "demo"},
			}
			for _, m := range config.Default().Registries.Mirrors {
				f.Mirrors = append(f.Mirrors, docker.Container{ID: m.Name + "-id", Name: m.Name, State: "running", Labels: map[string]string{registry.LabelMirror: m.Name}})
				blob := filepath.Join(f.Env.Paths.RegistryCache(), m.Name, "docker", "blob")
				if err := os.MkdirAll(filepath.Dir(blob), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(blob, []byte("layer"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := filesUnder(t, f.Vars["HOME"])
			f.Calls = nil
			res, err := c.run(f)
			if err != nil {
				t.Fatalf("%v\n%s", err, f.Stderr.String())
			}
			var b strings.Builder
			printResult(&b, res)
			if out := b.String(); !strings.Contains(out, "Plan (--dry-run, nothing was changed):\n") || !strings.Contains(out, c.plan) {
				t.Errorf("the plan lacks %q:\n%s", c.plan, out)
			}
			for _, call := range strings.Split(f.Log(), "\n") {
				if call != "" && !reads(call) {
					t.Errorf("the dry run did %q", call)
				}
			}
			if after := filesUnder(t, f.Vars["HOME"]); !slices.Equal(after, before) {
				t.Errorf("the dry run changed files:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// homeFiles is every file and folder under dir with its mode and, for a
// file, a digest of its content.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", strings.TrimPrefix(p, dir), fi.Mode())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
