package guest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBash runs script with bash and returns its stdout; a failure is
// returned, not fatal, for the tests that want one.
func runBash(t *testing.T, script string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", f).Output()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		t.Logf("stderr: %s", ee.Stderr)
	}
	return string(out), err
}

// Whatever the content holds (the here-document's delimiter, shell code,
// quotes, carriage returns, bytes that are not UTF-8), the file gets
// exactly those bytes and nothing in them runs.
func TestPutWritesHostileContentExactly(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "PWNED")
	contents := []string{
		"",
		"\n",
		"EOF\n",
		"EOF\nEOF_1\nEOF_2\n",
		"a\nEOF\nrm -rf /\n",
		"$(touch " + mark + ")\n`touch " + mark + "`\n${x:?boom}\n",
		"it's \"quoted\" \\ and '\\''\n",
		"windows\r\nEOF\r\n",
		"\xff\xfe not UTF-8 \x80\n",
		"  EOF\nEOF  \n\tEOF\n",
		strings.Repeat("long line ", 20000) + "\n",
	}
	b := NewBatch()
	for i, c := range contents {
		p := filepath.Join(dir, "f"+string(rune('a'+i)))
		if err := b.Put(File{Path: p, Mode: "0640", Content: c}, ""); err != nil {
			t.Fatal(err)
		}
	}
	b.Sh("echo done")
	out, err := runBash(t, b.Script())
	if err != nil || out != "done\n" {
		t.Fatalf("batch: %v, stdout %q", err, out)
	}
	for i, c := range contents {
		p := filepath.Join(dir, "f"+string(rune('a'+i)))
		got, err := os.ReadFile(p)
		if err != nil || string(got) != c {
			t.Errorf("content %d: wrote %q (%v), want %q", i, got, err, c)
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o640 {
			t.Errorf("content %d: mode %v (%v), want 0640", i, st.Mode().Perm(), err)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("content ran as shell code")
	}
}

// put reports a change exactly when the content or the mode differ, which
// is what decides a daemon-reload or a Docker restart.
func TestPutFlagsOnlyChanges(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "f.conf")
	run := func(content, mode string) string {
		t.Helper()
		b := NewBatch()
		b.Sh("changed=0")
		if err := b.Put(File{Path: p, Mode: mode, Content: content}, "changed"); err != nil {
			t.Fatal(err)
		}
		b.Sh(`echo "$changed"`)
		out, err := runBash(t, b.Script())
		if err != nil {
			t.Fatalf("batch: %v", err)
		}
		return strings.TrimSpace(out)
	}
	steps := []struct {
		what, content, mode, want string
	}{
		{"new file", "a = 1\n", "0644", "1"},
		{"same again", "a = 1\n", "0644", "0"},
		{"same, mode written without the 0", "a = 1\n", "644", "0"},
		{"mode differs", "a = 1\n", "0600", "1"},
		{"content differs", "a = 2\n", "0600", "1"},
		{"same again", "a = 2\n", "0600", "0"},
	}
	for _, s := range steps {
		if got := run(s.content, s.mode); got != s.want {
			t.Errorf("%s: changed=%s, want %s", s.what, got, s.want)
		}
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
}

// A put that cannot write ends the whole script with an error: the steps
// after it (restarting a daemon on a half-written config) never run.
func TestPutFailureEndsTheScript(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"", "changed"} {
		b := NewBatch()
		if err := b.Put(File{Path: blocker + "/under-a-file", Mode: "0644", Content: "x\n"}, flag); err != nil {
			t.Fatal(err)
		}
		b.Sh("echo after")
		out, err := runBash(t, b.Script())
		if err == nil || strings.Contains(out, "after") {
			t.Errorf("flag %q: a failed put let the script go on: %v, stdout %q", flag, err, out)
		}
	}
}

// What a here-document cannot carry exactly is refused before anything is
// sent.
func TestPutRefusesContent(t *testing.T) {
	for _, c := range []string{"no final newline", "nul\x00byte\n"} {
		if err := NewBatch().Put(File{Path: "/etc/x", Mode: "0644", Content: c}, ""); err == nil {
			t.Errorf("content %q accepted", c)
		}
	}
}
