package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Put writes exactly the path it is given, whatever it holds: nothing in
// a path or a mode reaches the shell as code.
func TestPutQuotesHostilePaths(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "PWNED")
	for _, p := range []string{
		dir + "/a b",
		dir + "/$(touch " + mark + ")",
		dir + "/x;touch " + mark,
		dir + "/`touch " + mark + "`",
		dir + "/x&(touch$IFS'" + mark + "')&x/hosts.toml",
	} {
		b := NewBatch()
		if err := b.Put(File{Path: p, Mode: "0644", Content: "hello\n"}, ""); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("bash", "-c", b.Script()).CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", p, err, out)
			continue
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != "hello\n" {
			t.Errorf("%q was not written as such: %q, %v", p, got, err)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("a path ran as shell code")
	}
}

// Put refuses, before anything is sent, what it cannot write safely.
func TestPutRefuses(t *testing.T) {
	for _, f := range []File{
		{Path: "relative/x", Mode: "0644"},
		{Path: "/etc/../etc/shadow", Mode: "0644"},
		{Path: "/a\nb", Mode: "0644"},
		{Path: "/etc/x", Mode: "0644; rm -rf /"},
		{Path: "/etc/x", Mode: "4755x"},
	} {
		if err := NewBatch().Put(f, ""); err == nil {
			t.Errorf("Put(%q, %q) accepted", f.Path, f.Mode)
		}
	}
	if err := NewBatch().Put(File{Path: "/etc/x", Mode: "0644"}, "x;y"); err == nil {
		t.Error("a flag that is not a variable name was accepted")
	}
}
