package machine

// Commands run through the fake world: their sequencing, rollback and
// confirmations, without a VM.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/podnet"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
	"sigs.k8s.io/yaml"
)

// clean-cache stops the mirrors, empties their caches in one round trip and
// starts them again, in that order, even when emptying fails.
func TestCleanCacheOrder(t *testing.T) {
	for _, failEmpty := range []bool{false, true} {
		name := "emptied"
		if failEmpty {
			name = "emptying fails"
		}
		t.Run(name, func(t *testing.T) {
			f := sessiontest.New(t)
			f.Config(func(c *config.Config) { c.Registries.CacheStorage = config.CacheGuest })
			for _, m := range config.Default().Registries.Mirrors {
				f.Mirrors = append(f.Mirrors, docker.Container{ID: m.Name + "-id", Name: m.Name, State: "running", Labels: map[string]string{registry.LabelMirror: m.Name}})
			}
			if failEmpty {
				f.Fail["guest.run empty the mirror caches"] = errBoom
			}
			_, err := CleanCache(context.Background(), f.Env, nil, CleanCacheOptions{Yes: true})
			if failEmpty != (err != nil) || (failEmpty && !strings.Contains(err.Error(), "boom")) {
				t.Fatalf("error = %v", err)
			}
			var order []string
			for _, c := range strings.Split(f.Log(), "\n") {
				switch {
				case strings.HasPrefix(c, "docker.remove"):
					order = append(order, "stop")
				case strings.HasPrefix(c, "guest.run empty"):
					order = append(order, "empty")
				case strings.HasPrefix(c, "docker.run"):
					order = append(order, "start")
				}
			}
			n := len(config.Default().Registries.Mirrors)
			want := strings.Repeat("stop ", n) + "empty " + strings.Repeat("start ", n)
			if got := strings.Join(order, " ") + " "; got != want {
				t.Errorf("order %q, want %q\n%s", got, want, f.Log())
			}
			for _, m := range config.Default().Registries.Mirrors {
				if !strings.Contains(f.Bodies["empty the mirror caches"], "rm -rf -- /var/lib/marina/registry-cache/"+m.Name+"\n") {
					t.Errorf("the cache of %s was not emptied:\n%s", m.Name, f.Bodies["empty the mirror caches"])
				}
			}
			// The mirrors run again: nothing is left to say.
			if f.Env.Leftover() != "" {
				t.Errorf("leftover %q after %s", f.Env.Leftover(), name)
			}
		})
	}
}

// up after lima0 moved re-exports exactly the kubeconfigs that name the
// old address, merges them again where they were merged, and moves the
// route marina made.
func TestUpFollowsALima0Move(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.DisablePortMirroring = true })
	f.Cluster("old", 1, "https://192.168.64.3:7001")
	f.Cluster("cur", 2, "https://192.168.64.7:7002")
	if err := kubeconfig.Merge(f.KubeconfigFile(), "old", f.MustKubeconfig("old", "https://192.168.64.3:7001"), f.Env.KubeOwner(true)); err != nil {
		t.Fatal(err)
	}
	cidr := f.Network.Subnet
	made := f.MustMade()
	if err := made.Add(cidr, f.Lima0.Addr()); err != nil {
		t.Fatal(err)
	}
	f.Route = &hostRoute{Dest: cidr, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	curPath, _ := f.Env.Paths.Kubeconfig("cur")
	curBefore, _ := os.ReadFile(curPath)

	f.Lima0 = mustPrefix("192.168.64.7/24")
	f.Scripts["export kubeconfigs"] = vm.Result{Stdout: []byte(f.Export("old"))}
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	body := f.Bodies["export kubeconfigs"]
	if !strings.Contains(body, "--name old\n") || strings.Contains(body, "cur") {
		t.Errorf("exported:\n%s", body)
	}
	oldPath, _ := f.Env.Paths.Kubeconfig("old")
	kc, _ := os.ReadFile(oldPath)
	if s, _ := kubeconfig.Server(kc); s != "https://192.168.64.7:7001" {
		t.Errorf("old's kubeconfig names %s", s)
	}
	if after, _ := os.ReadFile(curPath); string(after) != string(curBefore) {
		t.Errorf("cur's current kubeconfig was rewritten")
	}
	target, _ := os.ReadFile(f.KubeconfigFile())
	if !strings.Contains(string(target), "https://192.168.64.7:7001") || strings.Contains(string(target), "192.168.64.3") {
		t.Errorf("~/.kube/config:\n%s", target)
	}
	if got := f.Called("host.privileged ip route"); len(got) != 1 || !strings.Contains(got[0], "192.168.64.7") {
		t.Errorf("route change: %v", got)
	}
	// A second up finds nothing stale and changes nothing.
	f.Calls = nil
	f.Route.Gateway = f.Lima0.Addr()
	f.RegistrySums = f.MirrorSums()
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := append(f.Called("guest.run"), f.Called("host.privileged")...); len(got) != 0 {
		t.Errorf("a warm up changed: %v", got)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("a warm up made %d guest round trips, want 1: %v", len(got), got)
	}
}

// The recovery after an interrupted up: the config files in the VM are
// current already, but a mirror container still carries the old config's
// digest, and is recreated.
func TestUpRecreatesAMirrorWithAStaleDigest(t *testing.T) {
	f := sessiontest.New(t)
	specs := f.DefaultMirrorsRunning()
	f.Mirrors[0].Labels[registry.LabelConfig] = "sha256:from-before"
	f.DNSWarm()
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if got := f.Called("docker.run"); len(got) != 1 || got[0] != "docker.run "+specs[0].Name {
		t.Errorf("recreated %v, want only %s\n%s", got, specs[0].Name, f.Log())
	}
	if got := f.Called("guest.run"); len(got) != 0 {
		t.Errorf("current config files written again: %v", got)
	}
}

// A mirror taken out of the config goes before its config file does: one
// that restarts after the file is gone (its upstream unreachable, so it
// restarts until it can) would have Docker make a folder at the file's
// path (the lab saw it happen).
func TestUpRemovesAGoneMirrorBeforeItsConfigFile(t *testing.T) {
	f := sessiontest.New(t)
	f.DefaultMirrorsRunning()
	f.Mirrors = append(f.Mirrors, docker.Container{ID: "registry-gone-id", Name: "registry-gone", State: "restarting", Labels: map[string]string{registry.LabelMirror: "registry-gone", registry.LabelConfig: "sha256:old"}})
	f.RegistrySums[registry.ConfigDir+"/registry-gone.yml"] = "0123"
	f.DNSWarm()
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	removed, wrote := -1, -1
	for i, c := range f.Called("") {
		switch {
		case c == "docker.remove registry-gone-id":
			removed = i
		case strings.HasPrefix(c, "guest.run install the VM's") && strings.Contains(c, "mirror configs"):
			wrote = i
		}
	}
	if removed < 0 || wrote < 0 || removed > wrote {
		t.Errorf("registry-gone removed at call %d, its config file at %d: the container must go first\n%s", removed, wrote, f.Log())
	}
}

// The first up writes the default config and creates the VM from a
// template that carries the guest's provisioning script, then brings the
// VM's networking up.
func TestUpCreatesTheVM(t *testing.T) {
	f := sessiontest.New(t)
	f.Instance = nil
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if _, err := os.Stat(f.Env.Paths.Config); err != nil {
		t.Errorf("no default config: %v", err)
	}
	if got := f.Called("vm.create"); len(got) != 1 {
		t.Fatalf("vm.create calls: %v\n%s", got, f.Log())
	}
	var y struct {
		Provision []struct{ Mode, Script string }
	}
	if err := yaml.Unmarshal(f.Template, &y); err != nil {
		t.Fatal(err)
	}
	if len(y.Provision) != 1 || y.Provision[0].Mode != "system" || y.Provision[0].Script != guest.Provision("v9.9.9") {
		t.Errorf("the template does not carry guest.Provision():\n%s", f.Template)
	}
	if len(f.Called("guest.run install the VM's")) != 1 || len(f.Called("host.privileged ip route")) != 1 {
		t.Errorf("the VM's networking was not brought up:\n%s", f.Log())
	}
}

// Only marina's own config file is written with the defaults: up with a
// --config that names no file stops before it looks at anything, and
// writes neither that file nor marina's own.
func TestUpRefusesAMissingNamedConfig(t *testing.T) {
	for _, dry := range []bool{true, false} {
		f := sessiontest.New(t)
		f.Instance = nil
		own := f.Env.Paths.Config
		f.Env.Paths.Config, f.Env.Paths.Named = filepath.Join(t.TempDir(), "typo.yaml"), true
		_, err := Up(context.Background(), f.Env, UpOptions{DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), "--config names "+f.Env.Paths.Config+", which does not exist") {
			t.Errorf("up (dry run %v) with a missing --config: %v", dry, err)
		}
		for _, p := range []string{f.Env.Paths.Config, own} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("up (dry run %v) wrote %s: %v", dry, p, err)
			}
		}
		if log := f.Log(); log != "" {
			t.Errorf("up (dry run %v) went on:\n%s", dry, log)
		}
	}
}

// destroy without a terminal and without -y changes nothing.
func TestDestroyNeedsAConfirmation(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	made := f.MustMade()
	if err := made.Add(f.Network.Subnet, f.Lima0.Addr()); err != nil {
		t.Fatal(err)
	}
	f.Route = &hostRoute{Dest: f.Network.Subnet, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	_, err := Destroy(context.Background(), f.Env, DestroyOptions{})
	if err == nil || !strings.Contains(err.Error(), "needs a confirmation: run it in a terminal, or pass -y") {
		t.Fatalf("error = %v", err)
	}
	for _, c := range strings.Split(f.Log(), "\n") {
		if !strings.HasPrefix(c, "vm.get") && !strings.HasPrefix(c, "host.lookup") && c != "docker.kind-nodes" {
			t.Errorf("destroy did %q before its confirmation", c)
		}
	}
	if f.Instance == nil {
		t.Error("the VM is gone")
	}
	// With -y it goes, route and all.
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if f.Instance != nil || len(f.Called("host.privileged")) != 1 {
		t.Errorf("destroy -y:\n%s", f.Log())
	}
}

// up --dry-run plans everything and changes nothing, not even marina's own
// label key.
func TestUpDryRunChangesNothing(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Route = nil // no route yet
	r, err := Up(context.Background(), f.Env, UpOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"run the mirror registry-dockerio", "route 172.30.0.0/16 to the VM"} {
		if !strings.Contains(planned(r), step) {
			t.Errorf("plan lacks %q:\n%s", step, planned(r))
		}
	}
	// Only looks: no call that changes anything.
	looks := []string{"vm.get ", "host.lookup ", "host.routes ", "guest.observe", "docker.version", "docker.wait-ready", "docker.inspect-network ", "docker.list ", "docker.kind-nodes"}
	for _, c := range strings.Split(f.Log(), "\n") {
		if !slices.ContainsFunc(looks, func(p string) bool { return strings.HasPrefix(c, p) }) {
			t.Errorf("dry run did %q", c)
		}
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("dry run made %d guest round trips, want 1: %v", len(got), got)
	}
	if _, err := os.Stat(f.Env.Paths.LabelKey()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run wrote the label key: %v", err)
	}
}

// planned is what r's --dry-run plan says, one step a line.
func planned(r *Ready) string {
	if r == nil || r.Plan == nil {
		return ""
	}
	return sessiontest.Said(session.Result{Plan: r.Plan})
}

// Upstreams that do not answer from the VM are said once, as what they
// mean, and change nothing: the mirrors keep running from their caches,
// and the guest's observation stays one round trip with its probes.
func TestUpSaysOnceThatItIsOffline(t *testing.T) {
	for _, c := range []struct {
		name string
		down []string
		want string
	}{
		{"online", nil, ""},
		{"one upstream", []string{"registry-quayio"}, "the upstreams of registry-quayio do not answer from the VM (quay.io:443: no answer within 3 s)"},
		{"every upstream", []string{"registry-dockerio", "registry-quayio", "registry-gcrio", "registry-us-docker-pkgdev", "registry-us-central1-docker-pkgdev"},
			"offline: no mirror's upstream answers from the VM (registry-1.docker.io:443: no answer within 3 s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.Warm(t)
			f.Doctor.Upstreams = map[string]guest.UpstreamResult{}
			for _, m := range c.down {
				f.Doctor.Upstreams[m] = guest.UpstreamResult{Detail: "no answer within 3 s"}
			}
			if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
				t.Fatalf("%v\n%s", err, f.Stderr.String())
			}
			out := f.Stderr.String()
			if c.want == "" {
				if strings.Contains(out, "upstream") {
					t.Errorf("online, up said:\n%s", out)
				}
			} else if strings.Count(out, c.want) != 1 || strings.Count(out, "nothing needs restarting") != 1 {
				t.Errorf("up said\n%s\nwant once: %s", out, c.want)
			}
			if got := f.Called("docker.r"); len(got) != 0 {
				t.Errorf("mirrors changed: %v", got)
			}
			if got := f.Called("guest.observe"); len(got) != 1 {
				t.Errorf("guest observations %v, want one", got)
			}
		})
	}
}

// Mirrors up runs itself (a new VM's) are probed after they start, in one
// round trip more, so that up offline says so there too; once only, and
// only when the first observation could not probe them.
func TestUpSaysItIsOfflineForMirrorsItRan(t *testing.T) {
	for _, down := range []bool{false, true} {
		t.Run(map[bool]string{false: "online", true: "offline"}[down], func(t *testing.T) {
			f := sessiontest.New(t)
			f.Config(nil)
			f.DNSWarm()
			f.Doctor.Upstreams = map[string]guest.UpstreamResult{}
			if down {
				for _, m := range config.Default().Registries.Mirrors {
					f.Doctor.Upstreams[m.Name] = guest.UpstreamResult{Detail: "no answer within 3 s"}
				}
			}
			if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
				t.Fatalf("%v\n%s", err, f.Stderr.String())
			}
			if got := f.Called("docker.run"); len(got) == 0 {
				t.Fatal("up ran no mirror")
			}
			said := strings.Count(f.Stderr.String(), "offline: no mirror's upstream answers from the VM")
			if want := map[bool]int{false: 0, true: 1}[down]; said != want {
				t.Errorf("up said it was offline %d times, want %d:\n%s", said, want, f.Stderr.String())
			}
			if got := f.Called("guest.observe"); len(got) != 2 {
				t.Errorf("guest observations %v, want two: the first, and the new mirrors' probes", got)
			}
		})
	}
}

// A published address something else holds is said as that, for the
// Docker Hub mirror and the push registry, not as a name conflict; a name
// conflict still is one.
func TestUpNamesWhatHoldsAMirrorsAddress(t *testing.T) {
	const bind = "Error response from daemon: failed to set up container networking: driver failed programming external connectivity on endpoint x: Error starting userland proxy: listen tcp4 %s: bind: address already in use"
	for _, c := range []struct {
		mirror, err, want string
	}{
		{"registry-dockerio", fmt.Sprintf(bind, "127.0.0.2:5555"), "where the VM's Docker reaches the Docker Hub mirror registry-dockerio"},
		{registry.LocalName, fmt.Sprintf(bind, "127.0.0.1:5001"), "set registries.local.port to a free port"},
		{"registry-quayio", `Conflict. The container name "/registry-quayio" is already in use by container "abc"`, "a container marina did not make is named registry-quayio"},
	} {
		t.Run(c.mirror, func(t *testing.T) {
			f := sessiontest.New(t)
			f.Config(nil)
			f.DNSWarm()
			f.Fail["docker.run "+c.mirror] = errors.New(c.err)
			_, err := Up(context.Background(), f.Env, UpOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("up = %v, want it to say %q", err, c.want)
			}
		})
	}
}

// The push registry holds the user's own images: clean-cache empties it
// only when it is named, after a confirmation, and then only it.
func TestCleanCacheOfThePushRegistry(t *testing.T) {
	const body = "empty the mirror caches"
	t.Run("every cache leaves it alone", func(t *testing.T) {
		f := sessiontest.New(t)
		f.DefaultMirrorsRunning()
		if _, err := CleanCache(context.Background(), f.Env, nil, CleanCacheOptions{Yes: true}); err != nil {
			t.Fatal(err)
		}
		if got := f.Called("docker.remove " + registry.LocalName); len(got) != 0 || strings.Contains(f.Bodies[body], registry.LocalData) {
			t.Errorf("clean-cache -y touched the push registry: %v\n%s", got, f.Bodies[body])
		}
	})
	t.Run("named, without a terminal or -y", func(t *testing.T) {
		f := sessiontest.New(t)
		f.DefaultMirrorsRunning()
		_, err := CleanCache(context.Background(), f.Env, []string{registry.LocalName}, CleanCacheOptions{})
		if err == nil || !strings.Contains(err.Error(), "clean-cache marina-registry needs a confirmation: run it in a terminal, or pass -y") {
			t.Errorf("err = %v", err)
		}
		if got := f.Called("docker.remove"); len(got) != 0 || len(f.Called("guest.run")) != 0 {
			t.Errorf("changed before the confirmation:\n%s", f.Log())
		}
	})
	t.Run("named, with -y", func(t *testing.T) {
		f := sessiontest.New(t)
		f.DefaultMirrorsRunning()
		if _, err := CleanCache(context.Background(), f.Env, []string{registry.LocalName}, CleanCacheOptions{Yes: true}); err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		if got := strings.Join(append(f.Called("docker.remove"), f.Called("docker.run")...), ", "); got != "docker.remove marina-registry-id, docker.run marina-registry" {
			t.Errorf("containers: %s", got)
		}
		if got := f.Bodies[body]; got != "set -eu\nrm -rf -- "+registry.LocalData+"\nmkdir -p -- "+registry.LocalData+"\n" {
			t.Errorf("emptied:\n%s", got)
		}
	})
	t.Run("named, but off", func(t *testing.T) {
		f := sessiontest.New(t)
		f.Config(func(c *config.Config) { c.Registries.Local.Enabled = false })
		_, err := CleanCache(context.Background(), f.Env, []string{registry.LocalName}, CleanCacheOptions{Yes: true})
		if err == nil || !strings.Contains(err.Error(), "the push registry is off") || len(f.Called("docker.")) != 0 || len(f.Called("guest.")) != 0 {
			t.Errorf("err = %v\n%s", err, f.Log())
		}
	})
}

// network.podRouting: up adds the Mac's eleven pod routes and records
// them, installs the VM's pod routing in the same round trip as the rest;
// off again, it removes exactly the routes it recorded and the VM's part.
func TestUpRoutesPods(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) { c.Network.PodRouting = true })
	r, err := Up(context.Background(), f.Env, UpOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := planned(r); !strings.Contains(p, "route 11 prefixes of 10.0.0.0/8") || !strings.Contains(p, "install /usr/local/sbin/marina-podnet") {
		t.Errorf("plan:\n%s", p)
	}
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	var adds []string
	for _, c := range f.Called("host.privileged") {
		if strings.Contains(c, " add -net 10.") || strings.Contains(c, "ip route replace 10.") {
			adds = append(adds, c)
		}
	}
	if len(adds) != 11 {
		t.Errorf("%d pod routes added, want 11: %v", len(adds), f.Called("host.privileged"))
	}
	if got := f.Called("guest.run install"); len(got) != 1 || !strings.Contains(got[0], "pod routes") {
		t.Errorf("guest installs: %v", got)
	}
	made := f.MustMade()
	gw := made.Gateways(f.Network.Subnet)[0] // lima0's address, as the kind network's route
	var table []host.Route
	for _, p := range podnet.HostRoutes() {
		if gws := made.Gateways(p); len(gws) != 1 || gws[0] != gw {
			t.Errorf("%s recorded via %v, want %s", p, gws, gw)
		}
		table = append(table, host.Route{Dest: p, Gateway: gw, Interface: "bridge100"})
	}
	// Off: the routes marina recorded go (podnet's tests keep others').
	f.Config(func(c *config.Config) { c.Network.PodRouting = false })
	f.Doctor.Table = append(table, host.Route{Dest: f.Network.Subnet, Gateway: gw, Interface: "bridge100"})
	before := len(f.Called("host.privileged"))
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	var dels []string
	for _, c := range f.Called("host.privileged")[before:] {
		if strings.Contains(c, " delete -net 10.") || strings.Contains(c, "ip route del 10.") {
			dels = append(dels, c)
		}
	}
	if len(dels) != 11 || podnet.Recorded(f.MustMade()) {
		t.Errorf("off: %d pod routes removed, want 11: %v", len(dels), f.Called("host.privileged")[before:])
	}
}
