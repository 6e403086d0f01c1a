package host

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The drop-in names exactly marina's route commands, through any address
// of lima0's /24 and with no wildcard that could match a further argument,
// and the resolver file's removal; sudo's own parser accepts it; what a
// rule cannot name plainly is refused, not quoted into a wider rule.
func TestSudoers(t *testing.T) {
	h := &Host{Style: BSD}
	cidr := netip.MustParsePrefix("172.30.0.0/16")
	lima0 := netip.MustParseAddr("192.168.64.3")
	got, err := h.Sudoers("ada", cidr, lima0, "/etc/resolver/demo.internal")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, verb := range []string{"add", "change", "delete"} {
		for _, last := range []string{"[0-9]", "[0-9][0-9]", "[0-9][0-9][0-9]"} {
			want = append(want, "/sbin/route -n "+verb+" -net 172.30.0.0/16 192.168.64."+last)
		}
	}
	want = append(want, "/sbin/route -n delete -net 172.30.0.0/16", "/bin/rm -f /etc/resolver/demo.internal", "/bin/rm -f /etc/sudoers.d/marina-ada")
	if !strings.HasSuffix(got, "ada ALL=(root) NOPASSWD: "+strings.Join(want, ", \\\n\t")+"\n") || !strings.HasPrefix(got, "# marina's rule for ada") || strings.Contains(got, "*") {
		t.Errorf("drop-in:\n%s\nwant its rule:\n%s", got, strings.Join(want, "\n"))
	}
	visudoAccepts(t, got, "")
	// With network.podRouting: the same commands for each pod route, and
	// visudo still accepts the rule.
	pods := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.112.0.0/12")}
	got, err = h.Sudoers("ada", cidr, lima0, "/etc/resolver/demo.internal", pods...)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"/sbin/route -n add -net 10.1.0.0/16 192.168.64.[0-9][0-9]", "/sbin/route -n change -net 10.112.0.0/12 192.168.64.[0-9]",
		"/sbin/route -n delete -net 10.112.0.0/12 192.168.64.[0-9][0-9][0-9]", "/sbin/route -n delete -net 10.1.0.0/16,", "/sbin/route -n add -net 172.30.0.0/16 192.168.64.[0-9],"} {
		if !strings.Contains(got, line) {
			t.Errorf("drop-in with pod routes lacks %q:\n%s", line, got)
		}
	}
	if n := strings.Count(got, "/sbin/route"); n != 3*(9+1) {
		t.Errorf("%d route commands, want 30:\n%s", n, got)
	}
	visudoAccepts(t, got, " with pod routes")
	for _, c := range []struct {
		user, resolver string
		lima0          netip.Addr
	}{
		{"ada", "/etc/resolver/a b", lima0},
		{"ada", "/etc/resolver/x,ALL", lima0},
		{"ada ALL", "/etc/resolver/demo.internal", lima0},
		{"root:x", "/etc/resolver/demo.internal", lima0},
		{"ada", "/etc/resolver/demo.internal", netip.Addr{}},
		{"ada", "/etc/resolver/demo.internal", netip.MustParseAddr("fd00::1")},
	} {
		if _, err := h.Sudoers(c.user, cidr, c.lima0, c.resolver); err == nil {
			t.Errorf("%+v: rendered", c)
		}
	}
	if _, err := (&Host{Style: Linux}).Sudoers("ada", cidr, lima0, "/etc/resolver/demo.internal"); err == nil || !strings.Contains(err.Error(), "marina sudoers is for a Mac") {
		t.Errorf("ip style: %v", err)
	}
	if p, err := SudoersPath("first.last"); err != nil || p != "/etc/sudoers.d/marina-first_last" {
		t.Errorf("SudoersPath = %q, %v", p, err)
	}
}

// The record names only a marina drop-in in /etc/sudoers.d.
func TestLoadSudoers(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "sudoers.json")
	if r, err := LoadSudoers(f); r != nil || err != nil {
		t.Fatalf("no record: %v %v", r, err)
	}
	if err := SaveSudoers(f, &SudoersRecord{Path: "/etc/sudoers.d/marina-ada", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	if r, err := LoadSudoers(f); err != nil || r.Path != "/etc/sudoers.d/marina-ada" {
		t.Fatalf("%+v %v", r, err)
	}
	for _, p := range []string{"/etc/sudoers", "/etc/sudoers.d/90-lima", "/etc/sudoers.d/../sudoers", "/tmp/marina-ada"} {
		if err := os.WriteFile(f, []byte(`{"path": "`+p+`", "content": ""}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSudoers(f); err == nil {
			t.Errorf("a record naming %s was accepted", p)
		}
	}
	if err := SaveSudoers(f, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Errorf("the record stays: %v", err)
	}
}

// visudoAccepts checks content with sudo's own parser, where visudo is
// installed.
func visudoAccepts(t *testing.T, content, what string) {
	t.Helper()
	visudo, err := exec.LookPath("visudo")
	if err != nil {
		return
	}
	f := filepath.Join(t.TempDir(), "marina-ada")
	if err := os.WriteFile(f, []byte(content), 0o440); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(visudo, "-c", "-f", f).CombinedOutput(); err != nil {
		t.Errorf("visudo -c%s: %v\n%s", what, err, out)
	}
}
