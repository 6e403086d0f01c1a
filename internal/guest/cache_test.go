package guest

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/vm"
)

// hostileNames are folder names a mirror name could never be, but that the
// scripts must still carry as one word each, running none of it.
var hostileNames = []string{
	"plain",
	"a b",
	"it's",
	`"dq"`,
	"$(touch PWNED)",
	"`touch PWNED`",
	"x;touch PWNED",
	"-rf",
	"tab\there",
	"*",
}

// withCacheRoot points the scripts at a temporary cache root for one test.
func withCacheRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	old := cacheRoot
	cacheRoot = root
	t.Cleanup(func() { cacheRoot = old })
	return root
}

func bashN(t *testing.T, script string) {
	t.Helper()
	if out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v\n%s\n%s", err, out, script)
	}
}

// The measuring script, run for real, prints one line per folder that
// exists, which ParseSizes reads back to the same folder names, whatever
// they hold; nothing in a name runs.
func TestMeasureDirsRunsOnHostileNames(t *testing.T) {
	root := withCacheRoot(t)
	var dirs []string
	want := map[string]int64{}
	for i, n := range hostileNames {
		d := filepath.Join(root, n)
		dirs = append(dirs, d)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "blob"), make([]byte, 1000*(i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		// du -sb counts the folder itself too: ask du for the real figure.
		out, err := exec.Command("du", "-sb", "--", d).Output()
		if err != nil {
			t.Fatal(err)
		}
		want[d] = ParseSizes(string(out))[d]
		if want[d] < int64(1000*(i+1)) {
			t.Fatalf("du says %q holds %d bytes", d, want[d])
		}
	}
	missing := filepath.Join(root, "missing one")
	script, err := MeasureDirs(append(dirs, missing))
	if err != nil {
		t.Fatal(err)
	}
	bashN(t, script)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("measure: %v", err)
	}
	got := ParseSizes(string(out))
	for d, n := range want {
		if got[d] != n {
			t.Errorf("%q: %d bytes, want %d", d, got[d], n)
		}
	}
	if _, ok := got[missing]; ok || len(got) != len(want) {
		t.Errorf("sizes = %v, want exactly the folders that exist", got)
	}
	if _, err := os.Stat(filepath.Join(root, "PWNED")); err == nil {
		t.Error("a folder name ran as shell code")
	}
}

// The emptying script, run for real, leaves each folder empty and in
// place, touches nothing beside them, and runs nothing in a name.
func TestEmptyDirsRunsOnHostileNames(t *testing.T) {
	root := withCacheRoot(t)
	keep := filepath.Join(root, "other mirror")
	if err := os.MkdirAll(filepath.Join(keep, "docker", "registry"), 0o755); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, n := range hostileNames {
		d := filepath.Join(root, n)
		dirs = append(dirs, d)
		if err := os.MkdirAll(filepath.Join(d, "docker", "registry", "v2"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "docker", "registry", "v2", "blob"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One folder missing: emptying makes it.
	dirs = append(dirs, filepath.Join(root, "not yet made"))
	script, err := EmptyDirs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	bashN(t, script)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("empty: %v\n%s", err, out)
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil || len(ents) != 0 {
			t.Errorf("%q: %d entries left (%v), want an empty folder", d, len(ents), err)
		}
	}
	if _, err := os.Stat(filepath.Join(keep, "docker", "registry")); err != nil {
		t.Errorf("a folder that was not asked for was touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "PWNED")); err == nil {
		t.Error("a folder name ran as shell code")
	}
}

// A failure to empty is an error, and nothing runs after it: a folder
// that could not be removed is not made again as if all went well.
func TestEmptyDirsStopsAtTheFirstFailure(t *testing.T) {
	root := withCacheRoot(t)
	bin := t.TempDir()
	log := filepath.Join(bin, "log")
	fakes := map[string]string{
		"rm":    "#!/bin/sh\necho \"rm: cannot remove $3: Device or resource busy\" >&2\nexit 1\n",
		"mkdir": "#!/bin/sh\necho \"mkdir $*\" >>" + log + "\n",
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := EmptyDirs([]string{filepath.Join(root, "a"), filepath.Join(root, "b")})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	if err := cmd.Run(); err == nil {
		t.Error("a failed rm passed")
	}
	if made, _ := os.ReadFile(log); len(made) > 0 {
		t.Errorf("the script went on after a failed rm: %s", made)
	}
}

// Only a mirror's folder directly under the cache root is ever measured or
// emptied; everything else is refused before a script exists.
func TestCacheScriptsRefuseOtherFolders(t *testing.T) {
	root := vm.GuestCacheDir
	for _, d := range []string{
		"/",
		"",
		"relative/dir",
		root,
		root + "/",
		root + "/a/b",
		root + "/..",
		root + "/../registry",
		root + "/./a",
		root + "//a",
		root + "/a/",
		"/var/lib/marina",
		"/etc/marina/registry",
		"/var/lib/marina/registry-cache-other/a",
		root + "/line\nbreak",
		root + "/nul\x00byte",
	} {
		if _, err := EmptyDirs([]string{root + "/ok", d}); err == nil {
			t.Errorf("EmptyDirs accepted %q", d)
		}
		if _, err := MeasureDirs([]string{d}); err == nil {
			t.Errorf("MeasureDirs accepted %q", d)
		}
		if _, err := CachedFiles(map[string][]string{d: {"a"}}); err == nil {
			t.Errorf("CachedFiles accepted %q", d)
		}
	}
	for _, f := range []string{"/etc/passwd", "../registry-quayio/x", "..", "a/../../b", "a//b", "a/", "", "line\nbreak"} {
		if _, err := CachedFiles(map[string][]string{root + "/registry-dockerio": {"ok", f}}); err == nil {
			t.Errorf("CachedFiles accepted the file %q", f)
		}
	}
	for _, d := range []string{root + "/registry-dockerio", root + "/a b", root + "/$(x)"} {
		if _, err := EmptyDirs([]string{d}); err != nil {
			t.Errorf("EmptyDirs refused %q: %v", d, err)
		}
	}
}

func TestParseSizes(t *testing.T) {
	out := "123\t/var/lib/marina/registry-cache/a\n" +
		"0\t/var/lib/marina/registry-cache/with\ttab\n" +
		"du: cannot read directory 'x': Permission denied\n" +
		"-5\t/neg\n" +
		"12x\t/bad\n" +
		"7\t\n" +
		"\n"
	got := ParseSizes(out)
	want := map[string]int64{"/var/lib/marina/registry-cache/a": 123, "/var/lib/marina/registry-cache/with\ttab": 0}
	if len(got) != len(want) {
		t.Errorf("sizes = %v, want %v", got, want)
	}
	for d, n := range want {
		if got[d] != n {
			t.Errorf("%q = %d, want %d", d, got[d], n)
		}
	}
}

// The look-up script, run for real, prints the regular files it finds
// under each folder, which ParseCached reads back to the same names: not
// a link (even to a real file), not a missing file, and nothing in a name
// runs.
func TestCachedFilesRunsOnHostileNames(t *testing.T) {
	root := withCacheRoot(t)
	files := map[string][]string{}
	want := map[string]bool{}
	for _, n := range hostileNames {
		d := filepath.Join(root, n)
		if err := os.MkdirAll(filepath.Join(d, n), 0o755); err != nil {
			t.Fatal(err)
		}
		there := n + "/data"
		if err := os.WriteFile(filepath.Join(d, there), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("data", filepath.Join(d, n, "link")); err != nil {
			t.Fatal(err)
		}
		files[d] = []string{there, n + "/link", n + "/missing"}
		want[d+"/"+there] = true
	}
	script, err := CachedFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	bashN(t, script)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("look: %v", err)
	}
	if got := ParseCached(string(out)); !maps.Equal(got, want) {
		t.Errorf("found %v\nwant %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(root, "PWNED")); err == nil {
		t.Error("a name ran as shell code")
	}
}

// The node images' measure, run for real, counts what the Mac-side
// reading counts on the same cache: each linked blob once, no link
// followed; and it refuses what is no cache folder or repository.
func TestMeasureReposAgreesWithTheMac(t *testing.T) {
	root := withCacheRoot(t)
	dir := filepath.Join(root, "registry-dockerio")
	v2 := filepath.Join(dir, "docker", "registry", "v2")
	files := map[string]int{}
	for i, c := range "abc" {
		h := strings.Repeat(string(c), 64)
		files[filepath.Join("blobs", "sha256", h[:2], h, "data")] = 100 * (i + 1)
		files[filepath.Join("repositories", "kindest", "node", "_layers", "sha256", h, "link")] = 71
	}
	h := strings.Repeat("a", 64) // linked twice, counted once
	files[filepath.Join("repositories", "kindest", "node", "_manifests", "revisions", "sha256", h, "link")] = 71
	files[filepath.Join("repositories", "kindest", "node", "_layers", "sha256", "$(touch PWNED)", "link")] = 71
	for f, n := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(v2, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v2, f), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := strings.Repeat("c", 64) // a link out of the cache counts nothing
	if err := os.Remove(filepath.Join(v2, "blobs", "sha256", "cc", c, "data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(v2, "blobs", "sha256", "cc", c, "data")); err != nil {
		t.Fatal(err)
	}
	script, err := MeasureRepos(dir, []string{"kindest/node", "not/pulled"})
	if err != nil {
		t.Fatal(err)
	}
	bashN(t, script)
	cmd := exec.Command("bash", "-c", "set -u\n"+script)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	mac, err := registry.HostCache{Root: root}.RepoBytes("registry-dockerio", []string{"kindest/node", "not/pulled"})
	if got := ParseSizes(string(out))["repos:"+dir]; err != nil || got != 300 || got != mac {
		t.Errorf("in the VM %d (%q), on the Mac %d (%v); want 300", got, out, mac, err)
	}
	if _, err := os.Stat(filepath.Join(cmd.Dir, "PWNED")); err == nil {
		t.Error("a name in the cache ran")
	}
	if _, err := MeasureRepos(root, []string{"kindest/node"}); err == nil {
		t.Error("the cache root itself was taken as a mirror's folder")
	}
	if _, err := MeasureRepos(dir, []string{"../../x"}); err == nil {
		t.Error("a repository path with .. was taken")
	}
}

// The measures ride in an observation as a section of their own, read
// into Health.Sizes; the sections around them stay whole.
func TestSizesProbe(t *testing.T) {
	root := withCacheRoot(t)
	d := filepath.Join(root, "registry-dockerio")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "blob"), make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := MeasureDirs([]string{d})
	if err != nil {
		t.Fatal(err)
	}
	body := "set -u\necho '@@ docker'\necho active\n" + SizesProbe(script) + "echo '@@ binfmt'\necho rosetta\n"
	bashN(t, body)
	out, err := exec.Command("bash", "-c", body).Output()
	if err != nil {
		t.Fatal(err)
	}
	h := parseHealth(sections(string(out)))
	if h.Sizes[d] < 5000 || h.Docker != "active" || !h.RosettaBinfmt {
		t.Errorf("health %+v from\n%s", h, out)
	}
	if SizesProbe("") != "" {
		t.Error("an empty measure is a probe")
	}
}
