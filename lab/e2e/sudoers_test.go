package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// marina sudoers, as the Mac's user with the real sudo and visudo: the
// drop-in it prints is installed with one sudo (the lab's rule stands
// for the password typed once), and then, with the lab's own route and
// resolver rules gone, down and up change the route and the resolver file
// through it alone, sudo refuses a route it does not name, and destroy
// removes it.
func TestSudoersDropIn(t *testing.T) {
	needLab(t)
	dir := filepath.Join(labRoot(), "mac", "root", "sudoers.d")
	labRule := filepath.Join(dir, "marina-lab")
	orig, err := os.ReadFile(labRule)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(labRule, orig, 0o440); err != nil {
			t.Errorf("restore the lab's rule: %v", err)
		}
		_ = os.Remove(filepath.Join(dir, "marina-macuser"))
		_ = os.RemoveAll(filepath.Join(marinaHome(), "config.yaml"))
	})
	writeConfig(t, "registries:\n  mirrors: []\n")
	asMacUser(t)
	mustUserMarina(t, "up")

	r := mustUserMarina(t, "sudoers")
	for _, want := range []string{
		"macuser ALL=(root) NOPASSWD: /sbin/route -n add -net 172.30.0.0/16 192.168.64.[0-9], \\\n",
		"\t/bin/rm -f " + resolverPath() + ", \\\n",
		"\t/bin/rm -f /etc/sudoers.d/marina-macuser\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("marina sudoers lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "not installed: `marina sudoers --install`") {
		t.Errorf("stderr: %s", r.stderr)
	}
	printed := r.stdout

	// The one password: the lab's rule allows exactly the install.
	setRule := func(body string) {
		t.Helper()
		if err := os.WriteFile(labRule, []byte(body), 0o440); err != nil {
			t.Fatal(err)
		}
	}
	setRule(string(orig) + "macuser ALL=(root) NOPASSWD: /usr/bin/install -m 0440 -o 0 -g 0 * /etc/sudoers.d/marina-macuser\n")
	mustUserMarina(t, "sudoers", "--install")
	drop := filepath.Join(dir, "marina-macuser")
	fi, err := os.Stat(drop)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o440 || st.Uid != 0 || st.Gid != 0 {
		t.Errorf("%s: mode %v, owner %d:%d; want 0440 root:root", drop, fi.Mode().Perm(), st.Uid, st.Gid)
	}
	if b, _ := os.ReadFile(drop); string(b) != printed {
		t.Errorf("installed:\n%s\nprinted:\n%s", b, printed)
	}
	if r := mustUserMarina(t, "sudoers"); !strings.Contains(r.stderr, "is installed and current") {
		t.Errorf("after install: %s", r.stderr)
	}

	// The lab's route rule goes: marina's drop-in alone allows the route
	// now. (The resolver file is written with a password, the lab's rule
	// here: its content comes from a file the user owns, which no
	// passwordless rule lets root read.)
	var kept []string
	for _, l := range strings.Split(string(orig), "\n") {
		if !strings.Contains(l, "/sbin/route") {
			kept = append(kept, l)
		}
	}
	setRule(strings.Join(kept, "\n"))
	r = mustUserMarina(t, "down", "--remove-route")
	wantSudo(t, r, "down --remove-route", "/sbin/route -n delete -net 172.30.0.0/16 192.168.64.2", rmResolver())
	wantResolver(t, false)
	r = mustUserMarina(t, "up")
	wantSudo(t, r, "up", "/sbin/route -n add -net 172.30.0.0/16 192.168.64.2", installResolver())
	wantKindRoute(t, "192.168.64.2")
	wantResolver(t, true)

	// Nothing else: another network's route, a gateway outside lima0's
	// /24, or a further argument (route(8)'s -dst would move the default
	// route) still needs a password.
	for _, args := range [][]string{
		{"add", "-net", "10.99.0.0/16", "192.168.64.2"},
		{"add", "-net", "172.30.0.0/16", "10.0.0.1"},
		{"change", "-net", "172.30.0.0/16", "192.168.64.2", "-dst", "default"},
		{"delete", "-net", "172.30.0.0/16", "192.168.64.2", "0.0.0.0"},
	} {
		argv := append([]string{"sudo", "-n", "/sbin/route", "-n"}, args...)
		if r := macUser(t, argv...); r.code == 0 || !strings.Contains(r.stderr, "a password is required") {
			t.Errorf("%v as the Mac's user: exit %d\n%s", argv, r.code, r.stderr)
		}
	}

	mustUserMarina(t, "destroy", "-y")
	if _, err := os.Stat(drop); !os.IsNotExist(err) {
		t.Errorf("destroy left %s: %v", drop, err)
	}
	wantResolver(t, false)
	if got := kindRoute(t); got != "" {
		t.Errorf("destroy left the route %q", got)
	}
}
