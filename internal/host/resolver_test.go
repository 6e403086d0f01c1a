package host

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const want = "nameserver 172.30.255.53\n"

func resolverSetup(t *testing.T) (dir string, made *Made) {
	t.Helper()
	root := t.TempDir()
	t.Setenv(ResolverDirEnv, filepath.Join(root, "resolver"))
	made, err := LoadMade(filepath.Join(root, "routes.json"), Own{Resolver: filepath.Join(root, "resolver", "demo.internal"), ResolverContent: want})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "resolver"), made
}

// The four states, and the one rule: marina changes a file only when it
// is missing or holds exactly what marina wrote there.
func TestResolverStates(t *testing.T) {
	dir, made := resolverSetup(t)
	path := filepath.Join(dir, "demo.internal")
	r, err := ReadResolver(dir, "demo.internal", want, made)
	if err != nil || r.State != ResolverMissing {
		t.Fatalf("no file: %v %v", r.State, err)
	}
	fix := ResolverFix(r, "/src")
	if len(fix) != 2 || !slices.Equal(fix[0], []string{"/usr/bin/install", "-d", "-m", "0755", dir}) || !slices.Equal(fix[1], []string{"/usr/bin/install", "-m", "0644", "/src", path}) {
		t.Errorf("fix for a missing file and folder: %q", fix)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if r, _ := ReadResolver(dir, "demo.internal", want, made); len(ResolverFix(r, "/src")) != 1 {
		t.Errorf("the folder exists: %q", ResolverFix(r, "/src"))
	}
	// Someone else's file: left alone, and never removed.
	if err := os.WriteFile(path, []byte("nameserver 10.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, _ := ReadResolver(dir, "demo.internal", want, made); r.State != ResolverForeign || ResolverFix(r, "/src") != nil {
		t.Errorf("a foreign file: %v, fix %q", r.State, ResolverFix(r, "/src"))
	}
	if cmds := ResolverRemovals(made, ""); len(cmds) != 0 {
		t.Errorf("removes a foreign file: %q", cmds)
	}
	// marina's, with an older server: rewritten.
	old := "nameserver 172.31.255.53\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := made.Wrote(path, old); err != nil {
		t.Fatal(err)
	}
	if r, _ := ReadResolver(dir, "demo.internal", want, made); r.State != ResolverStale || len(ResolverFix(r, "/src")) != 1 {
		t.Errorf("marina's stale file: %v", r.State)
	}
	// marina's, edited since: the user's now.
	if err := os.WriteFile(path, []byte(old+"port 5353\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, _ := ReadResolver(dir, "demo.internal", want, made); r.State != ResolverForeign {
		t.Errorf("marina's file edited by the user: %v", r.State)
	}
	if cmds := ResolverRemovals(made, ""); len(cmds) != 0 {
		t.Errorf("removes a file the user edited: %q", cmds)
	}
	// Right: nothing to do; removed only while it holds what marina wrote.
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := made.Wrote(path, want); err != nil {
		t.Fatal(err)
	}
	if r, _ := ReadResolver(dir, "demo.internal", want, made); r.State != ResolverOK || ResolverFix(r, "/src") != nil {
		t.Errorf("a right file: %v", r.State)
	}
	rms := ResolverRemovals(made, "")
	if len(rms) != 1 || !slices.Equal(rms[0].Argv, []string{"/bin/rm", "-f", path}) || rms[0].Path != path {
		t.Errorf("removal: %q", rms)
	}
	if cmds := ResolverRemovals(made, path); len(cmds) != 0 {
		t.Errorf("removes the file it keeps: %q", cmds)
	}
}

// The record is untrusted: an entry that names no domain's file is dropped,
// so it can never make marina remove another path.
func TestMadeDropsBadResolverPaths(t *testing.T) {
	t.Setenv(ResolverDirEnv, "")
	p := filepath.Join(t.TempDir(), "routes.json")
	body := `{"routes":[],"resolvers":[{"path":"/etc/passwd","content":"x"},{"path":"relative/demo.internal","content":"x"},{"path":"/etc/resolver/../demo.internal","content":"x"},{"path":"/etc/resolver/demo.internal","content":"x"}]}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := LoadMade(p, Own{Resolver: "/etc/resolver/demo.internal"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Resolvers) != 1 || m.Resolvers[0].Path != "/etc/resolver/demo.internal" {
		t.Errorf("kept %v", m.Resolvers)
	}
}

func TestResolverDir(t *testing.T) {
	t.Setenv(ResolverDirEnv, "")
	if ResolverDir() != "/etc/resolver" {
		t.Errorf("default %s", ResolverDir())
	}
	t.Setenv(ResolverDirEnv, "relative/dir")
	if ResolverDir() != "/etc/resolver" {
		t.Errorf("a relative setting is used: %s", ResolverDir())
	}
	t.Setenv(ResolverDirEnv, "/tmp/lab/resolver/")
	if ResolverDir() != "/tmp/lab/resolver" {
		t.Errorf("setting: %s", ResolverDir())
	}
}

// A link, even a dangling one, is not marina's to replace.
func TestResolverLinkIsForeign(t *testing.T) {
	dir, made := resolverSetup(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/elsewhere", filepath.Join(dir, "demo.internal")); err != nil {
		t.Fatal(err)
	}
	r, err := ReadResolver(dir, "demo.internal", want, made)
	if err != nil || r.State != ResolverForeign || ResolverFix(r, "/src") != nil {
		t.Errorf("a dangling link: %v %v, fix %q", r.State, err, ResolverFix(r, "/src"))
	}
}
