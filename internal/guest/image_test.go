package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var appID = "sha256:" + strings.Repeat("ab", 32)

func TestImageLoadRefusesWhatIsNotAName(t *testing.T) {
	good := Image{Ref: "docker.io/library/app:dev", ID: appID}
	for _, tc := range []struct {
		nodes []string
		img   Image
	}{
		{[]string{"dev-control-plane; rm -rf /"}, good},
		{[]string{"Dev"}, good},
		{[]string{"dev-worker"}, Image{Ref: "app:dev$(id)", ID: appID}},
		{[]string{"dev-worker"}, Image{Ref: "docker.io/library/app:dev", ID: "sha256:abc"}},
		{[]string{"dev-worker"}, Image{Ref: "docker.io/library/app:dev", ID: appID + "\nreboot"}},
	} {
		if s, err := ImageLoad(tc.nodes, []Image{tc.img}); err == nil {
			t.Errorf("ImageLoad(%q, %+v) made a script:\n%s", tc.nodes, tc.img, s)
		}
	}
}

// TestImageLoadScript runs the script with a docker on the PATH that plays
// two nodes' containerd: one holds the image under Docker's id, one under
// another digest. Only the second gets the archive.
func TestImageLoadScript(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	fake := `#!/bin/bash
echo "$*" >>` + log + `
case "$1 $2" in
"exec a-control-plane") printf 'REF TYPE DIGEST SIZE PLATFORMS LABELS\ndocker.io/library/app:dev application/vnd.oci.image.index.v1+json ` + appID + ` 1.0 MiB linux/arm64 -\n' ;;
"exec -i") cat >/dev/null; touch ` + dir + `/imported ;;
"exec a-worker")
	if [ -e ` + dir + `/imported ] && [ "$3" = ctr ]; then printf 'REF TYPE DIGEST\ndocker.io/library/app:dev x ` + appID + `\n'; fi ;;
"save docker.io/library/app:dev") echo tar ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := ImageLoad([]string{"a-control-plane", "a-worker"}, []Image{{Ref: "docker.io/library/app:dev", ID: appID}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", s)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rs, err := ParseImageLoad(string(out), 1)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rs {
		got[r.Node] = r.Did
	}
	if got["a-control-plane"] != "skipped" || got["a-worker"] != "loaded" || len(rs) != 2 {
		t.Errorf("results %+v from:\n%s", rs, out)
	}
	calls, _ := os.ReadFile(log)
	if n := strings.Count(string(calls), "exec -i"); n != 1 {
		t.Errorf("%d imports, want 1 (the worker's):\n%s", n, calls)
	}
}

func TestParseImageLoad(t *testing.T) {
	rs, err := ParseImageLoad("noise\n@@ image n1 0 loaded\n@@ image n2 1 failed ctr: content digest not found\n", 2)
	if err != nil || len(rs) != 2 || rs[1].Why != "ctr: content digest not found" || rs[1].Image != 1 {
		t.Errorf("%+v %v", rs, err)
	}
	for _, bad := range []string{"@@ image n1 2 loaded", "@@ image n1 x loaded", "@@ image n1 0 exploded", "@@ image n1"} {
		if _, err := ParseImageLoad(bad, 2); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
}
