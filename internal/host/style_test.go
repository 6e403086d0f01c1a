package host

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/run"
)

func TestChooseStyle(t *testing.T) {
	for _, c := range []struct {
		goos, setting string
		want          Style
		err           bool
	}{
		{"darwin", "", BSD, false},
		{"linux", "", Linux, false},
		{"freebsd", "", Linux, false},
		{"linux", "bsd", BSD, false}, // the lab
		{"darwin", "linux", Linux, false},
		{"darwin", "BSD", BSD, true},
		{"linux", "macos", Linux, true},
	} {
		got, err := chooseStyle(c.goos, c.setting)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s with %q: %s, %v; want %s (error %v)", c.goos, c.setting, got, err, c.want, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), StyleEnv) {
			t.Errorf("the error does not name %s: %v", StyleEnv, err)
		}
	}
}

// The style decides every command and the lookup, whatever the platform.
func TestStyleDrivesCommands(t *testing.T) {
	missing := Classify(kindNet, lima0, nil)
	r, _ := ParseRouteGet(read(t, "route-get-ours.txt"))
	ours := Classify(kindNet, lima0, r, lima0)
	for _, c := range []struct {
		style            Style
		fix, remove, del string
	}{
		{BSD, "/sbin/route -n add -net 172.30.0.0/16 192.168.64.3", "/sbin/route -n delete -net 172.30.0.0/16 192.168.64.3", "/sbin/route -n delete -net 172.30.0.0/16 192.168.64.9"},
		{Linux, "ip route replace 172.30.0.0/16 via 192.168.64.3", "ip route del 172.30.0.0/16 via 192.168.64.3", "ip route del 172.30.0.0/16 via 192.168.64.9"},
	} {
		h := &Host{Style: c.style}
		if got := strings.Join(h.RouteFix(missing), " "); got != c.fix {
			t.Errorf("%s fix: %q, want %q", c.style, got, c.fix)
		}
		if got := strings.Join(h.RouteRemove(ours), " "); got != c.remove {
			t.Errorf("%s remove: %q, want %q", c.style, got, c.remove)
		}
		if got := strings.Join(h.DeleteCommand(kindNet, netip.MustParseAddr("192.168.64.9")), " "); got != c.del {
			t.Errorf("%s delete: %q, want %q", c.style, got, c.del)
		}
	}
}

// New reads MARINA_ROUTE_STYLE; a value it does not know stops every
// lookup and change with a message naming the variable, and runs nothing.
func TestNewReadsStyleEnv(t *testing.T) {
	t.Setenv(StyleEnv, "bsd")
	if h := New(run.Runner{}, false, nil, nil); h.Style != BSD || h.styleErr != nil {
		t.Errorf("bsd: %s, %v", h.Style, h.styleErr)
	}
	t.Setenv(StyleEnv, "")
	if h := New(run.Runner{}, false, nil, nil); h.Style != platformStyle(runtime.GOOS) {
		t.Errorf("unset: %s", h.Style)
	}
	t.Setenv(StyleEnv, "macos")
	var stderr bytes.Buffer
	h := New(run.Runner{}, false, nil, &stderr)
	if _, err := h.Lookup(context.Background(), kindNet); err == nil || !strings.Contains(err.Error(), `MARINA_ROUTE_STYLE="macos"`) {
		t.Errorf("lookup with an unknown style: %v", err)
	}
	witness := filepath.Join(t.TempDir(), "ran")
	h.Root = true
	if err := h.Privileged(context.Background(), []string{"touch", witness}); err == nil || !strings.Contains(err.Error(), StyleEnv) {
		t.Errorf("privileged with an unknown style: %v", err)
	}
	h.Root = false
	if err := h.Privileged(context.Background(), []string{"touch", witness}); err == nil {
		t.Error("privileged through sudo with an unknown style did not fail")
	}
	if _, err := os.Stat(witness); err == nil || stderr.Len() != 0 {
		t.Errorf("a command ran with an unknown style (stderr %q)", stderr.String())
	}
}

// fakeRoute puts a script at routePath for the test: it prints what a
// Mac's route(8) prints for the argument list it expects, and fails loudly
// for any other.
func fakeRoute(t *testing.T, wantArgs, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"out": stdout, "err": stderr} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\n" +
		`[ "$*" = "` + wantArgs + `" ] || { echo "fake route: unexpected arguments: $*" >&2; exit 99; }` + "\n" +
		"cat " + filepath.Join(dir, "out") + "\ncat " + filepath.Join(dir, "err") + " >&2\nexit 0\n"
	path := filepath.Join(dir, "route")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	old := routePath
	routePath = path
	t.Cleanup(func() { routePath = old })
}

// macOS route(8) exits 0 when it finds no route at all: the answer is on
// stderr (network_cmds route.c), and is "no route", not garbage.
func TestBSDLookupNoRouteExitsZero(t *testing.T) {
	fakeRoute(t, "-n get 172.30.0.1", "", read(t, "route-get-no-route.txt"))
	r, err := (&Host{Style: BSD}).Lookup(context.Background(), kindNet)
	if err != nil || r != nil {
		t.Fatalf("no route: %+v, %v", r, err)
	}
	fakeRoute(t, "-n get 172.30.0.1", read(t, "route-get-ours.txt"), "")
	r, err = (&Host{Style: BSD}).Lookup(context.Background(), kindNet)
	if err != nil || r == nil || r.Dest != kindNet || r.Gateway != lima0 || r.Interface != "bridge100" {
		t.Fatalf("our route: %+v, %v", r, err)
	}
}

// route(8) exits 0 when the kernel refuses a change: marina must not take
// that for success (and record a route it did not make).
func TestPrivilegedCatchesRouteRefusal(t *testing.T) {
	add := "-n add -net 172.30.0.0/16 192.168.64.3"
	fakeRoute(t, add, "add net 172.30.0.0: gateway 192.168.64.3: File exists\n", "route: writing to routing socket: File exists\n")
	h := &Host{Style: BSD, Root: true}
	argv := h.RouteFix(Classify(kindNet, lima0, nil))
	err := h.Privileged(context.Background(), argv)
	if err == nil || !strings.Contains(err.Error(), "route: writing to routing socket: File exists") || !strings.Contains(err.Error(), "changed nothing") {
		t.Errorf("a refused add: %v", err)
	}
	fakeRoute(t, add, "add net 172.30.0.0: gateway 192.168.64.3\n", "")
	if err := h.Privileged(context.Background(), h.RouteFix(Classify(kindNet, lima0, nil))); err != nil {
		t.Errorf("a route added: %v", err)
	}
}

// Not root and no terminal: the command is printed, then run through
// `sudo -n` exactly; sudo's own refusal says what to run by hand.
func TestPrivilegedThroughSudo(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "sudo.log")
	sudo := "#!/bin/sh\necho \"$*\" >>" + log + "\n" +
		`[ "$SUDO_FAKE" = refuse ] && { echo "sudo: a password is required" >&2; exit 1; }` + "\n" +
		`[ "$SUDO_FAKE" = sudoers ] && { echo "sudo: you are not in the sudoers file.  This incident has been reported to the administrator." >&2; exit 1; }` + "\n" +
		`shift; exec "$@"` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "sudo"), []byte(sudo), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	fakeRoute(t, "-n add -net 172.30.0.0/16 192.168.64.3", "add net 172.30.0.0: gateway 192.168.64.3\n", "")
	var stderr bytes.Buffer
	h := &Host{Style: BSD, Stderr: &stderr}
	argv := h.RouteFix(Classify(kindNet, lima0, nil))
	if err := h.Privileged(context.Background(), argv); err != nil {
		t.Fatal(err)
	}
	if want := "marina runs: sudo " + routePath + " -n add -net 172.30.0.0/16 192.168.64.3\n"; stderr.String() != want {
		t.Errorf("printed %q, want %q", stderr.String(), want)
	}
	if b, _ := os.ReadFile(log); string(b) != "-n "+strings.Join(argv, " ")+"\n" {
		t.Errorf("sudo ran with %q", b)
	}
	t.Setenv("SUDO_FAKE", "refuse")
	err := h.Privileged(context.Background(), argv)
	if err == nil || !strings.Contains(err.Error(), "run `sudo "+routePath+" -n add -net 172.30.0.0/16 192.168.64.3` yourself") {
		t.Errorf("sudo without a password: %v", err)
	}
	// Any refusal of sudo's own names the way out too.
	t.Setenv("SUDO_FAKE", "sudoers")
	err = h.Privileged(context.Background(), argv)
	if err == nil || !strings.Contains(err.Error(), "not in the sudoers file") || !strings.Contains(err.Error(), "yourself, then the same marina command again") {
		t.Errorf("sudo refusing the user: %v", err)
	}
	// route(8)'s own failure is its own: no word about sudo.
	t.Setenv("SUDO_FAKE", "")
	fakeRoute(t, "-n add -net 172.30.0.0/16 192.168.64.3", "", "route: writing to routing socket: File exists\n")
	err = h.Privileged(context.Background(), h.RouteFix(Classify(kindNet, lima0, nil)))
	if err == nil || !strings.Contains(err.Error(), "File exists") || strings.Contains(err.Error(), "yourself") {
		t.Errorf("route's own failure blamed on sudo: %v", err)
	}
}
