package host

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The drop-in names exactly marina's route and resolver commands, for any
// gateway, and sudo's own parser accepts it; what a rule cannot name
// plainly is refused, not quoted into a wider rule.
func TestSudoers(t *testing.T) {
	h := &Host{Style: BSD}
	cidr := netip.MustParsePrefix("172.30.0.0/16")
	got, err := h.Sudoers("ada", cidr, "/etc/resolver/demo.internal", "/Users/ada/.marina/resolver/demo.internal")
	if err != nil {
		t.Fatal(err)
	}
	want := "ada ALL=(root) NOPASSWD: /sbin/route -n add -net 172.30.0.0/16 *, \\\n" +
		"\t/sbin/route -n change -net 172.30.0.0/16 *, \\\n" +
		"\t/sbin/route -n delete -net 172.30.0.0/16 *, \\\n" +
		"\t/sbin/route -n delete -net 172.30.0.0/16, \\\n" +
		"\t/usr/bin/install -d -m 0755 /etc/resolver, \\\n" +
		"\t/usr/bin/install -m 0644 /Users/ada/.marina/resolver/demo.internal /etc/resolver/demo.internal, \\\n" +
		"\t/bin/rm -f /etc/resolver/demo.internal, \\\n" +
		"\t/bin/rm -f /etc/sudoers.d/marina-ada\n"
	if !strings.HasSuffix(got, want) || !strings.HasPrefix(got, "# marina's rule for ada") {
		t.Errorf("drop-in:\n%s\nwant it to end with:\n%s", got, want)
	}
	if visudo, err := exec.LookPath("visudo"); err == nil {
		f := filepath.Join(t.TempDir(), "marina-ada")
		if err := os.WriteFile(f, []byte(got), 0o440); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(visudo, "-c", "-f", f).CombinedOutput(); err != nil {
			t.Errorf("visudo -c: %v\n%s", err, out)
		}
	}
	for _, c := range []struct{ user, resolver, src string }{
		{"ada", "/etc/resolver/demo.internal", "/Users/a da/.marina/resolver/demo.internal"},
		{"ada", "/etc/resolver/demo.internal", "/Users/ada,ALL/x"},
		{"ada", "/etc/resolver/demo.internal", "/Users/ada/*"},
		{"ada ALL", "/etc/resolver/demo.internal", "/x"},
		{"root:x", "/etc/resolver/demo.internal", "/x"},
	} {
		if _, err := h.Sudoers(c.user, cidr, c.resolver, c.src); err == nil {
			t.Errorf("%+v: rendered", c)
		}
	}
	if _, err := (&Host{Style: Linux}).Sudoers("ada", cidr, "/etc/resolver/demo.internal", "/x"); err == nil || !strings.Contains(err.Error(), "marina sudoers is for a Mac") {
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
