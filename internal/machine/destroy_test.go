package machine

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
	"sigs.k8s.io/yaml"
)

// destroyFixture is a running VM with clusters dev and east, each with
// its kubeconfig file and its entries merged into ~/.kube/config, next to
// entries of the user's own (prod) and a file in marina's folder for a
// cluster the VM does not have (gone).
func destroyFixture(t *testing.T, change func(*config.Config)) *sessiontest.World {
	t.Helper()
	f := sessiontest.New(t)
	f.Config(change)
	for i, n := range []string{"dev", "east"} {
		server := "https://192.168.64.3:700" + string(rune('1'+i))
		f.Cluster(n, i+1, server)
		if err := kubeconfig.Merge(f.KubeconfigFile(), n, f.MustKubeconfig(n, server), f.Env.KubeOwner(true)); err != nil {
			t.Fatal(err)
		}
	}
	userEntry(f, "prod")
	gone, _ := f.Env.Paths.Kubeconfig("gone")
	if err := os.WriteFile(gone, f.MustKubeconfig("gone", "https://192.168.64.3:7009"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// userEntry adds a cluster, user and context named name of the user's own
// (no marina mark) to ~/.kube/config.
func userEntry(f *sessiontest.World, name string) {
	f.T.Helper()
	b, err := os.ReadFile(f.KubeconfigFile())
	if err != nil {
		f.T.Fatal(err)
	}
	var kc map[string]any
	if err := yaml.Unmarshal(b, &kc); err != nil {
		f.T.Fatal(err)
	}
	add := func(sec string, item map[string]any) { kc[sec] = append(kc[sec].([]any), item) }
	add("clusters", map[string]any{"name": name, "cluster": map[string]any{"server": "https://prod.example:6443"}})
	add("users", map[string]any{"name": name, "user": map[string]any{"token": "secret"}})
	add("contexts", map[string]any{"name": name, "context": map[string]any{"cluster": name, "user": name}})
	if b, err = yaml.Marshal(kc); err != nil {
		f.T.Fatal(err)
	}
	if err := os.WriteFile(f.KubeconfigFile(), b, 0o600); err != nil {
		f.T.Fatal(err)
	}
}

func kubeconfigExists(f *sessiontest.World, name string) bool {
	f.T.Helper()
	p, err := f.Env.Paths.Kubeconfig(name)
	if err != nil {
		f.T.Fatal(err)
	}
	_, err = os.Lstat(p)
	return err == nil
}

// userKept checks that the user's own prod entries are as they were.
func userKept(f *sessiontest.World) {
	f.T.Helper()
	b, _ := os.ReadFile(f.KubeconfigFile())
	for _, want := range []string{"server: https://prod.example:6443", "token: secret", "name: prod"} {
		if !strings.Contains(string(b), want) {
			f.T.Errorf("the user's own entries went (%q):\n%s", want, b)
		}
	}
}

// destroy of a running VM removes the kubeconfig files and entries of the
// clusters its Docker lists, and nothing else; the plan and the
// confirmation name them.
func TestDestroyRemovesTheClustersKubeconfigs(t *testing.T) {
	f := destroyFixture(t, nil)
	dir := f.Env.Paths.KubeconfigDir()
	target := f.KubeconfigFile()
	before, _ := os.ReadFile(target)

	res, err := Destroy(context.Background(), f.Env, DestroyOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"delete VM marina (Running) and its disk, with every cluster and image in it",
		"remove the kubeconfig files dev.kubeconfig, east.kubeconfig from " + dir,
		"remove the cluster, user and context entries of dev, east that marina wrote from " + target + " (kind.autoRemoveKubeconfig)",
	} {
		if !slices.Contains(strings.Split(sessiontest.Said(res), "\n"), want) {
			t.Errorf("the plan lacks %q:\n%s", want, sessiontest.Said(res))
		}
	}
	if after, _ := os.ReadFile(target); string(after) != string(before) || !kubeconfigExists(f, "dev") || f.Instance == nil {
		t.Fatal("the dry run changed something")
	}

	// Answered no: nothing goes.
	f.Env.TTY, f.Env.Stdin = true, strings.NewReader("n\n")
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{}); !errors.Is(err, session.ErrCancelled) {
		t.Fatalf("error = %v", err)
	}
	q := "Delete VM marina and every cluster and image in it (dev, east), with their kubeconfig files in " + dir + " and their entries in " + target + "? (the registry cache in " + f.Env.Paths.RegistryCache() + " is kept) [y/N] "
	if !strings.Contains(f.Stderr.String(), q) {
		t.Errorf("the question:\n%s\nwant:\n%s", f.Stderr.String(), q)
	}
	if !kubeconfigExists(f, "dev") || !f.HasContext("dev") || f.Instance == nil {
		t.Fatal("an unconfirmed destroy removed something")
	}

	f.Env.Stdin = strings.NewReader("y\n")
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	for _, n := range []string{"dev", "east"} {
		if kubeconfigExists(f, n) || f.HasContext(n) {
			t.Errorf("%s's kubeconfig file (%v) or entries (%v) are left", n, kubeconfigExists(f, n), f.HasContext(n))
		}
	}
	if f.Instance != nil {
		t.Error("the VM is left")
	}
	// Docker said which clusters were the VM's: gone's file is not theirs.
	if !kubeconfigExists(f, "gone") {
		t.Error("the file of a cluster the VM did not have went")
	}
	userKept(f)
	if got := f.Called("guest."); len(got) != 0 {
		t.Errorf("destroy made guest round trips: %v", got)
	}
}

// Docker lists the clusters of a running VM, and only what marina wrote
// for them goes: a file without marina's mark or a link stays, with a
// warning that names it.
func TestDestroyRemovesOnlyWhatMarinaWrote(t *testing.T) {
	f := destroyFixture(t, nil)
	dir := f.Env.Paths.KubeconfigDir()
	// Clusters of the VM whose files are not marina's: one without its
	// mark, a link to elsewhere.
	f.Cluster("mine", 3, "")
	f.Cluster("link", 4, "")
	if err := os.WriteFile(filepath.Join(dir, "mine.kubeconfig"), []byte("apiVersion: v1\nkind: Config\ncontexts:\n- context: {cluster: x, user: x}\n  name: mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(elsewhere, f.MustKubeconfig("link", "https://192.168.64.3:7004"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "link.kubeconfig")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	for _, n := range []string{"dev", "east"} {
		if kubeconfigExists(f, n) || f.HasContext(n) {
			t.Errorf("%s's kubeconfig is left", n)
		}
	}
	for _, n := range []string{"mine", "link", "gone"} {
		if !kubeconfigExists(f, n) {
			t.Errorf("%s.kubeconfig, not marina's or not the VM's, went", n)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("notes.txt: %v", err)
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("the link's target: %v", err)
	}
	for _, want := range []string{
		filepath.Join(dir, "mine.kubeconfig") + " is left as it is: it is not marina's (yours); if it is a leftover, `rm " + filepath.Join(dir, "mine.kubeconfig") + "` removes it",
		filepath.Join(dir, "link.kubeconfig") + " is left as it is: it is not a file marina wrote (L---------)",
	} {
		if !strings.Contains(f.Stderr.String(), want) {
			t.Errorf("no warning %q:\n%s", want, f.Stderr.String())
		}
	}
	userKept(f)
}

// snapshot is the bytes of every file in marina's kubeconfig folder and of
// ~/.kube/config.
func snapshot(f *sessiontest.World) map[string]string {
	f.T.Helper()
	out := map[string]string{}
	dir := f.Env.Paths.KubeconfigDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, d := range ents {
		b, err := os.ReadFile(filepath.Join(dir, d.Name()))
		if err != nil {
			f.T.Fatal(err)
		}
		out[d.Name()] = string(b)
	}
	b, err := os.ReadFile(f.KubeconfigFile())
	if err != nil {
		f.T.Fatal(err)
	}
	out["~/.kube/config"] = string(b)
	return out
}

// kept checks that nothing of before changed, byte for byte.
func kept(f *sessiontest.World, before map[string]string) {
	f.T.Helper()
	after := snapshot(f)
	for k, v := range before {
		if got, ok := after[k]; !ok {
			f.T.Errorf("%s went", k)
		} else if got != v {
			f.T.Errorf("%s changed:\n%s\nwas:\n%s", k, got, v)
		}
	}
}

// keptNote is what destroy says of the kubeconfigs it leaves when it
// cannot tell which are the VM's clusters'.
func keptNote(f *sessiontest.World, why string) string {
	return "The kubeconfigs in ~/.kube/marina stay: " + why + ", so marina cannot tell which of them were its clusters' (~/.kube/marina is shared by every MARINA_HOME). " +
		"There: dev.kubeconfig, east.kubeconfig, gone.kubeconfig. For one that was VM marina's, `marina kubeconfig remove NAME` removes its entries from " + f.KubeconfigFile() +
		" and `rm ~/.kube/marina/NAME.kubeconfig` its file.\n"
}

// Without the VM's Docker listing its clusters (VM stopped, gone, or its
// Docker not answering) no kubeconfig goes: destroy says which files are
// left and how to remove one, and asks before deleting a VM.
func TestDestroyKeepsKubeconfigsItCannotTellAreTheVMs(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(f *sessiontest.World)
		why    string
		plan   []string // the plan's lines, besides the route
	}{
		{"no VM", func(f *sessiontest.World) { f.Instance = nil }, "VM marina does not exist", nil},
		{"VM stopped", func(f *sessiontest.World) { f.Instance.Status = vm.StatusStopped }, "VM marina is Stopped",
			[]string{"delete VM marina (Stopped) and its disk, with every cluster and image in it"}},
		{"Docker cannot list the clusters", func(f *sessiontest.World) { f.Fail["docker.kind-nodes"] = errBoom }, "the clusters of VM marina cannot be listed (boom)",
			[]string{"delete VM marina (Running) and its disk, with every cluster and image in it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := destroyFixture(t, nil)
			c.change(f)
			before := snapshot(f)
			hadVM := f.Instance != nil
			note := keptNote(f, c.why)

			res, err := Destroy(context.Background(), f.Env, DestroyOptions{DryRun: true})
			if err != nil {
				t.Fatalf("%v\n%s", err, f.Stderr.String())
			}
			plan := sessiontest.Said(res)
			if !strings.Contains(f.Stderr.String(), note) {
				t.Errorf("the dry run does not say what stays:\n%s\nwant:\n%s", f.Stderr.String(), note)
			}
			for _, want := range c.plan {
				if !strings.Contains(plan, want) {
					t.Errorf("the plan lacks %q:\n%s", want, plan)
				}
			}
			if strings.Contains(plan, "kubeconfig") || strings.Contains(plan, "entries") {
				t.Errorf("the plan removes kubeconfigs:\n%s", plan)
			}
			if c.name == "Docker cannot list the clusters" {
				f.Fail["docker.kind-nodes"] = errBoom
			}
			// No terminal, no -y: a VM to delete needs a confirmation;
			// without one there is nothing destructive to confirm.
			f.Stderr.Reset()
			_, err = Destroy(context.Background(), f.Env, DestroyOptions{})
			switch {
			case hadVM && (err == nil || !strings.Contains(err.Error(), "needs a confirmation")):
				t.Errorf("error = %v", err)
			case !hadVM && err != nil:
				t.Errorf("error = %v\n%s", err, f.Stderr.String())
			}
			kept(f, before)
			if !strings.Contains(f.Stderr.String(), note) {
				t.Errorf("destroy does not say what stays:\n%s", f.Stderr.String())
			}
			if !hadVM {
				return
			}
			if c.name == "Docker cannot list the clusters" {
				f.Fail["docker.kind-nodes"] = errBoom
			}
			// A terminal: the question says the kubeconfigs stay.
			f.Env.TTY, f.Env.Stdin = true, strings.NewReader("y\n")
			f.Stderr.Reset()
			if _, err := Destroy(context.Background(), f.Env, DestroyOptions{}); err != nil {
				t.Fatalf("%v\n%s", err, f.Stderr.String())
			}
			q := "Delete VM marina and every cluster and image in it? (the kubeconfigs in ~/.kube/marina and the registry cache in " + f.Env.Paths.RegistryCache() + " are kept) [y/N] "
			if !strings.Contains(f.Stderr.String(), q) {
				t.Errorf("the question:\n%s\nwant:\n%s", f.Stderr.String(), q)
			}
			if f.Instance != nil {
				t.Error("the VM is left")
			}
			kept(f, before)
			userKept(f)
		})
	}
}

// ~/.kube/marina is under $HOME, shared by every MARINA_HOME: destroying
// home B, whose VM is gone or stopped, leaves home A's cluster kubeconfigs
// and entries byte for byte.
func TestDestroyOfAnotherHomeKeepsThisHomesKubeconfigs(t *testing.T) {
	for _, c := range []struct {
		name  string
		vmOfB func(b *sessiontest.World)
	}{
		{"B has no VM", func(b *sessiontest.World) { b.Instance = nil }},
		{"B's VM is stopped", func(b *sessiontest.World) { b.Instance.Status = vm.StatusStopped }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := destroyFixture(t, nil)
			before := snapshot(a)
			b := sharingHome(t, a)
			c.vmOfB(b)
			if _, err := Destroy(context.Background(), b.Env, DestroyOptions{Yes: true}); err != nil {
				t.Fatalf("%v\n%s", err, b.Stderr.String())
			}
			kept(a, before)
			if b.Instance != nil {
				t.Error("B's VM is left")
			}
			if a.Instance == nil || len(a.Called("vm.delete")) != 0 {
				t.Error("A's VM was touched")
			}
			// A's own destroy still removes its clusters'.
			if _, err := Destroy(context.Background(), a.Env, DestroyOptions{Yes: true}); err != nil {
				t.Fatalf("%v\n%s", err, a.Stderr.String())
			}
			for _, n := range []string{"dev", "east"} {
				if kubeconfigExists(a, n) || a.HasContext(n) {
					t.Errorf("A's destroy left %s's kubeconfig", n)
				}
			}
		})
	}
}

// sharingHome is a second MARINA_HOME (its own config, Lima home and VM
// world) under a's HOME.
func sharingHome(t *testing.T, a *sessiontest.World) *sessiontest.World {
	t.Helper()
	b := sessiontest.New(t)
	b.Vars["HOME"] = a.Vars["HOME"]
	// Short, as sessiontest.New's: Lima's socket paths under it must fit.
	dir, err := os.MkdirTemp("", "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b.Vars["MARINA_HOME"] = dir
	paths, err := config.ResolvePaths(func(k string) string { return b.Vars[k] }, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b.Env.Paths = paths
	b.Config(nil)
	if paths.KubeconfigDir() != a.Env.Paths.KubeconfigDir() || paths.Dir == a.Env.Paths.Dir {
		t.Fatalf("homes: %+v and %+v", paths, a.Env.Paths)
	}
	return b
}

// kind.autoRemoveKubeconfig false keeps the entries (and says how to
// remove them), as an invalid config does; the files go either way.
func TestDestroyKeepsEntriesUnlessTheConfigSays(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(f *sessiontest.World)
		want  string
	}{
		{"autoRemoveKubeconfig false", func(f *sessiontest.World) { f.Config(func(c *config.Config) { c.Kind.AutoRemoveKubeconfig = false }) },
			"The entries of dev, east in %s stay (kind.autoRemoveKubeconfig is false): `marina kubeconfig remove dev east` removes them"},
		{"invalid config", func(f *sessiontest.World) {
			if err := os.WriteFile(f.Env.Paths.Config, []byte("vm:\n  cpus: many\n"), 0o600); err != nil {
				f.T.Fatal(err)
			}
		}, "kind.autoRemoveKubeconfig is not read from an invalid config: the entries of dev, east in %s stay (`marina kubeconfig remove dev east` removes them)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := destroyFixture(t, nil)
			c.write(f)
			if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
				t.Fatalf("%v\n%s", err, f.Stderr.String())
			}
			for _, n := range []string{"dev", "east"} {
				if kubeconfigExists(f, n) || !f.HasContext(n) {
					t.Errorf("%s: file left %v, entries kept %v", n, kubeconfigExists(f, n), f.HasContext(n))
				}
			}
			if want := strings.ReplaceAll(c.want, "%s", f.KubeconfigFile()); !strings.Contains(f.Stderr.String(), want) {
				t.Errorf("no %q:\n%s", want, f.Stderr.String())
			}
		})
	}
}

// What cannot be removed is named with its fix; the VM is deleted and the
// route removed all the same, and the exit status says something is left.
func TestDestroyGoesOnWhenAKubeconfigCannotGo(t *testing.T) {
	f := destroyFixture(t, nil)
	made := f.MustMade()
	if err := made.Add(f.Network.Subnet, f.Lima0.Addr()); err != nil {
		t.Fatal(err)
	}
	f.Route = &hostRoute{Dest: f.Network.Subnet, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	devFile, _ := f.Env.Paths.Kubeconfig("dev")
	target := f.KubeconfigFile()
	// Between the plan and its end, dev's file becomes a folder with a
	// file in it, and ~/.kube/config a link to nowhere.
	f.Before = func(call string) {
		if call != "vm.delete marina" {
			return
		}
		if err := os.Remove(devFile); err != nil {
			t.Error(err)
		}
		if err := os.MkdirAll(filepath.Join(devFile, "x"), 0o700); err != nil {
			t.Error(err)
		}
		if err := os.Rename(target, target+".moved"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(target+".nowhere", target); err != nil {
			t.Error(err)
		}
	}
	_, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true})
	if err == nil {
		t.Fatal("destroy succeeded with kubeconfigs left")
	}
	for _, want := range []string{
		"the kubeconfig file of dev is left: remove " + devFile + ": directory not empty; `rm " + devFile + "` removes it",
		"the entries of dev stay in " + target + ": " + target + " is a symlink to " + target + ".nowhere, which does not exist",
		"`marina kubeconfig remove dev` removes them once that is fixed",
		"`marina kubeconfig remove east` removes them once that is fixed",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if f.Instance != nil {
		t.Error("the VM is left")
	}
	if got := f.Called("host.privileged"); len(got) != 1 || !strings.Contains(got[0], "route") {
		t.Errorf("the route was not removed: %v", got)
	}
	if kubeconfigExists(f, "east") {
		t.Error("east's file is left although it could go")
	}
}

// The VM's deletion failing leaves every kubeconfig as it was: its
// clusters are still there.
func TestDestroyKeepsKubeconfigsWhenTheVMStays(t *testing.T) {
	f := destroyFixture(t, nil)
	f.Fail["vm.delete"] = errBoom
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error = %v", err)
	}
	for _, n := range []string{"dev", "east"} {
		if !kubeconfigExists(f, n) || !f.HasContext(n) {
			t.Errorf("%s's kubeconfig went with the VM still there", n)
		}
	}
}

// S4: routes.json recording a VPN's 10.0.0.0/8 through its gateway, and
// the VPN's resolver file with exactly what it holds, makes destroy delete
// neither: only network.cidr's route and dns.domain's file are marina's.
func TestDestroyLeavesWhatTheRecordCannotMakeMarinas(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	vpn := netip.MustParsePrefix("10.0.0.0/8")
	f.Route = &host.Route{Dest: vpn, Gateway: netip.MustParseAddr("10.8.0.1"), Interface: "utun3"}
	corp := filepath.Join(f.ResolverDir, "corp.example.com")
	if err := os.MkdirAll(f.ResolverDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(corp, []byte("nameserver 10.8.0.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	record := `{"routes":[{"cidr":"10.0.0.0/8","gateway":"10.8.0.1"}],"resolvers":[{"path":"` + corp + `","content":"nameserver 10.8.0.53\n"}]}`
	if err := os.WriteFile(f.Env.Paths.Routes(), []byte(record), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if got := f.Called("host.privileged"); len(got) != 0 {
		t.Errorf("destroy ran as root: %v", got)
	}
	if _, err := os.Stat(corp); err != nil {
		t.Errorf("the VPN's resolver file went: %v", err)
	}
	if !strings.Contains(f.Stderr.String(), "a route to 10.0.0.0/8 via 10.8.0.1") {
		t.Errorf("what was left is not said:\n%s", f.Stderr.String())
	}
}

// S11: home B's VM runs and its Docker lists a cluster dev, as home A's
// does (or as B's VM says it does): B's destroy, B's kubeconfig merge of
// every cluster and B's cluster delete of dev leave A's dev file and
// entries byte for byte; B's explicit merge and remove of dev refuse,
// naming A's home. A's own destroy still removes them.
func TestHomesDoNotTrustEachOthersVMs(t *testing.T) {
	ctx := context.Background()
	a := destroyFixture(t, nil)
	before := snapshot(a)
	b := sharingHome(t, a)
	b.Cluster("dev", 1, "")
	b.Scripts["export kubeconfigs"] = vm.Result{Stdout: []byte(b.Export("dev"))}

	if _, err := kindcluster.MergeKubeconfigs(ctx, b.Env, nil, false); err == nil || !strings.Contains(err.Error(), "another marina home's ("+a.Env.KubeOwner(false).Home+")") {
		t.Errorf("B's merge of every cluster: %v", err)
	}
	kept(a, before)
	if _, err := kindcluster.MergeKubeconfigs(ctx, b.Env, []string{"dev"}, false); err == nil || !strings.Contains(err.Error(), "another marina home's") {
		t.Errorf("B's merge of dev: %v", err)
	}
	if _, err := kindcluster.RemoveKubeconfigs(b.Env, []string{"dev"}); err == nil || !strings.Contains(err.Error(), "another marina home's") {
		t.Errorf("B's remove of dev: %v", err)
	}
	kept(a, before)
	if _, err := kindcluster.Delete(ctx, b.Env, kindcluster.DeleteOptions{Names: []string{"dev"}, Yes: true}); err != nil {
		t.Fatalf("B's delete of dev: %v\n%s", err, b.Stderr.String())
	}
	kept(a, before)
	b.Cluster("dev", 1, "")
	if _, err := Destroy(ctx, b.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, b.Stderr.String())
	}
	kept(a, before)
	if _, err := Destroy(ctx, a.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, a.Stderr.String())
	}
	for _, n := range []string{"dev", "east"} {
		if kubeconfigExists(a, n) || a.HasContext(n) {
			t.Errorf("A's destroy left %s's kubeconfig", n)
		}
	}
}

// S11: entries and files an older marina marked without a home are left
// by destroy and said; an explicit kubeconfig remove of the name takes
// them (the user named the cluster).
func TestOlderMarksAreLeftAndSaid(t *testing.T) {
	f := destroyFixture(t, nil)
	for _, p := range []string{f.KubeconfigFile(), filepath.Join(f.Env.Paths.KubeconfigDir(), "dev.kubeconfig")} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		old := strings.ReplaceAll(string(b), "      home: "+f.Env.KubeOwner(false).Home+"\n", "")
		if old == string(b) {
			t.Fatalf("no home in the marks of %s (the test proves nothing):\n%s", p, b)
		}
		if err := os.WriteFile(p, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	// Every entry in ~/.kube/config is an older marina's now, and dev's
	// file; east's file is this home's.
	if !kubeconfigExists(f, "dev") || !f.HasOldContext("dev") || !f.HasOldContext("east") {
		t.Errorf("an older marina's kubeconfig went with destroy")
	}
	if kubeconfigExists(f, "east") {
		t.Error("east's file, this home's, stayed")
	}
	if !strings.Contains(f.Stderr.String(), "older marina") || !strings.Contains(f.Stderr.String(), "marina kubeconfig remove dev") {
		t.Errorf("what stays is not said:\n%s", f.Stderr.String())
	}
	if _, err := kindcluster.RemoveKubeconfigs(f.Env, []string{"dev"}); err != nil || f.HasOldContext("dev") {
		t.Errorf("an explicit remove of dev: %v", err)
	}
}

// The sudoers drop-in marina sudoers installed goes with destroy, after
// the route whose removal may need it; a record naming anything else is
// refused before anything changes.
func TestDestroyRemovesTheSudoersDropIn(t *testing.T) {
	f := destroyFixture(t, nil)
	if err := host.SaveSudoers(f.Env.Paths.Sudoers(), &host.SudoersRecord{Path: "/etc/sudoers.d/marina-ada", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	res, err := Destroy(context.Background(), f.Env, DestroyOptions{DryRun: true})
	if err != nil || !strings.Contains(sessiontest.Said(res), "remove the sudoers drop-in /etc/sudoers.d/marina-ada") {
		t.Fatalf("%v\n%s", err, sessiontest.Said(res))
	}
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	got := f.Called("host.privileged")
	if len(got) == 0 || got[len(got)-1] != "host.privileged /bin/rm -f /etc/sudoers.d/marina-ada" {
		t.Errorf("destroy ran %v", got)
	}
	if rec, err := host.LoadSudoers(f.Env.Paths.Sudoers()); rec != nil || err != nil {
		t.Errorf("the record stays: %+v %v", rec, err)
	}

	f = destroyFixture(t, nil)
	if err := os.WriteFile(f.Env.Paths.Sudoers(), []byte(`{"path": "/etc/sudoers", "content": ""}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err == nil || f.Instance == nil || len(f.Called("host.privileged")) != 0 {
		t.Errorf("a record naming /etc/sudoers: %v, %v", err, f.Calls)
	}
}
