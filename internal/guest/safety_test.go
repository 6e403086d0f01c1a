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
		b.Put(File{Path: p, Mode: "0644", Content: "hello"}, "")
		out, err := exec.Command("bash", "-c", b.Script()).CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", p, err, out)
			continue
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != "hello" {
			t.Errorf("%q was not written as such: %q, %v", p, got, err)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("a path ran as shell code")
	}
}
