package sudoers

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

// marina sudoers prints the drop-in for this config; --install checks it
// with visudo and installs it root-owned and read-only with one sudo,
// then records it; a second --install changes nothing; a change of
// network.cidr makes it stale; --remove removes what it installed.
func TestSudoers(t *testing.T) {
	if _, err := exec.LookPath("visudo"); err != nil {
		if _, err := os.Stat("/usr/sbin/visudo"); err != nil {
			t.Skip("no visudo here (sudo is not installed)")
		}
	}
	f := sessiontest.New(t)
	// CI runs the tests as root; the fake sudo installs nothing, so the
	// drop-in is there once the install ran.
	installed := false
	geteuid = func() int { return 1000 }
	stat = func(string) (os.FileInfo, error) {
		if !installed {
			return nil, os.ErrNotExist
		}
		return os.Stat(".")
	}
	t.Cleanup(func() { geteuid, stat = os.Geteuid, os.Stat })
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	path, err := host.SudoersPath(u.Username)
	if err != nil {
		t.Skipf("this user's name: %v", err)
	}
	ctx := context.Background()
	// The resolver file is there, as after an up.
	if err := os.MkdirAll(f.ResolverDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ResolverDir, "demo.internal"), []byte("nameserver 172.30.255.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _, err := Run(ctx, f.Env, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Path != path || rep.Installed || !strings.Contains(rep.Content, "/sbin/route -n add -net 172.30.0.0/16 192.168.64.[0-9], ") || !strings.Contains(rep.Content, "/bin/rm -f "+filepath.Join(f.ResolverDir, "demo.internal")) {
		t.Errorf("print: %+v", rep)
	}
	if len(f.Called("host.privileged")) != 0 {
		t.Fatal("printing ran sudo")
	}

	_, res, err := Run(ctx, f.Env, Options{Install: true, DryRun: true})
	if err != nil || res.Plan == nil || len(res.Plan.Steps) != 1 || len(f.Called("host.privileged")) != 0 {
		t.Fatalf("dry run: %+v %v %v", res.Plan, err, f.Calls)
	}
	if _, _, err := Run(ctx, f.Env, Options{Install: true}); err != nil {
		t.Fatal(err)
	}
	installed = true
	got := f.Called("host.privileged")
	if len(got) != 1 || !strings.HasPrefix(got[0], "host.privileged /usr/bin/install -m 0440 -o 0 -g 0 ") || !strings.HasSuffix(got[0], " "+path) {
		t.Errorf("install ran %v", got)
	}
	rec, err := host.LoadSudoers(f.Env.Paths.Sudoers())
	if err != nil || rec == nil || rec.Path != path || rec.Content != rep.Content {
		t.Fatalf("record: %+v %v", rec, err)
	}
	if _, res, err = Run(ctx, f.Env, Options{Install: true}); err != nil || res.Plan == nil || !strings.Contains(res.Plan.None, "installed and current") {
		t.Errorf("a second install: %+v %v", res.Plan, err)
	}

	// Removed by hand: not installed, whatever the record says.
	installed = false
	if rep, _, err := Run(ctx, f.Env, Options{}); err != nil || rep.Installed {
		t.Errorf("a drop-in removed by hand: %+v %v", rep, err)
	}
	installed = true

	f.Config(func(c *config.Config) { c.Network.CIDR = "172.31.0.0/16" })
	if rep, _, err = Run(ctx, f.Env, Options{}); err != nil || !rep.Installed || !rep.Stale {
		t.Errorf("after a network.cidr change: %+v %v", rep, err)
	}

	f.Calls = nil
	if _, _, err := Run(ctx, f.Env, Options{Remove: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.Called("host.privileged"); len(got) != 1 || got[0] != "host.privileged /bin/rm -f "+path {
		t.Errorf("remove ran %v", got)
	}
	if rec, err := host.LoadSudoers(f.Env.Paths.Sudoers()); rec != nil || err != nil {
		t.Errorf("the record stays: %+v %v", rec, err)
	}
}

// As root there is no one to write a rule for.
func TestSudoersAsRoot(t *testing.T) {
	f := sessiontest.New(t)
	geteuid = func() int { return 0 }
	t.Cleanup(func() { geteuid = os.Geteuid })
	if _, _, err := Run(context.Background(), f.Env, Options{Install: true}); err == nil || !strings.Contains(err.Error(), "run it as yourself") {
		t.Errorf("as root: %v", err)
	}
}
