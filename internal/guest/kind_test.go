package guest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestKindScriptsParse(t *testing.T) {
	must := func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	scripts := map[string]string{
		"create": must(KindCreate(KindSpec{Name: "dev", Image: "kindest/node:v1.36.4@sha256:" + strings.Repeat("a", 64), Config: []byte("kind: Cluster\n'quote' $(x) `y`\n"),
			CertsD: map[string]string{"docker.io/hosts.toml": "server = \"x\"\n"}, Addons: "dns=demo.internal", Retain: true,
			Images: []string{"quay.io/metallb/controller:v0.16.2", "reg.example/x:1@sha256:" + strings.Repeat("b", 64)}})),
		"export": must(KindExport([]string{"dev", "east"})),
		"delete": must(KindDelete([]string{"dev"})),
	}
	for name, s := range scripts {
		if out, err := exec.Command("bash", "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s\n%s", name, err, out, s)
		}
	}
	c := scripts["create"]
	// The kind config travels base64-encoded: nothing of it is shell
	// text (the certs.d files travel in quoted here-documents, see put).
	if strings.Contains(c, "$(x)") || strings.Contains(c, "'quote'") {
		t.Error("the kind config reached the script as text")
	}
	for _, want := range []string{"--name dev", "--config -", "--retain", "/etc/marina/clusters/dev/certs.d/docker.io/hosts.toml"} {
		if !strings.Contains(c, want) {
			t.Errorf("create script lacks %q", want)
		}
	}
	if strings.Contains(must(KindCreate(KindSpec{Name: "dev", Image: "img@sha256:x"})), "--retain") {
		t.Error("--retain without asking")
	}
}

// A name from anywhere (Docker's labels, a flag) cannot reach outside the
// clusters' folder, and a certs.d key cannot leave certs.d.
func TestKindScriptsRefuseBadNames(t *testing.T) {
	for _, n := range []string{"..", "../etc", "a b", "", "dev\n@@ cert x", "-rf"} {
		if _, err := KindCreate(KindSpec{Name: n, Image: "img@sha256:x"}); err == nil {
			t.Errorf("KindCreate(%q) accepted", n)
		}
		if _, err := KindDelete([]string{"dev", n}); err == nil {
			t.Errorf("KindDelete(%q) accepted", n)
		}
		if _, err := KindExport([]string{n}); err == nil {
			t.Errorf("KindExport(%q) accepted", n)
		}
	}
	if _, err := KindCreate(KindSpec{Name: "dev", Image: "img@sha256:x", CertsD: map[string]string{"../../../root/.ssh/authorized_keys": "x"}}); err == nil {
		t.Error("a certs.d key left certs.d")
	}
}

func TestParseExports(t *testing.T) {
	out := "@@ kubeconfig dev\napiVersion: v1\nkind: Config\n@@ cert dev\n-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n@@ kubeconfig east\nk: v\n@@ cert east\n"
	ex := ParseExports(out)
	if len(ex) != 2 {
		t.Fatalf("exports = %v", ex)
	}
	if string(ex["dev"].Kubeconfig) != "apiVersion: v1\nkind: Config\n" || !strings.HasPrefix(string(ex["dev"].Cert), "-----BEGIN") {
		t.Errorf("dev = %q / %q", ex["dev"].Kubeconfig, ex["dev"].Cert)
	}
	if string(ex["east"].Kubeconfig) != "k: v\n" || len(ex["east"].Cert) != 0 {
		t.Errorf("east = %+v", ex["east"])
	}
}

// kind delete that finds a node Docker is still removing is tried again
// until it succeeds; any other failure ends the script at once, before
// the cluster's folder goes.
func TestKindDeleteWaitsOutARemovalInProgress(t *testing.T) {
	script, err := KindDelete([]string{"dev"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		fails  int    // times kind fails before it succeeds
		says   string // what it says when it fails
		ok     bool
		kinds  int  // kind runs
		rmRuns bool // the folder is removed
	}{
		{"at once", 0, "", true, 1, true},
		{"in progress twice", 2, `Error response from daemon: removal of container dev-control-plane is already in progress`, true, 3, true},
		{"another failure", 1, "ERROR: failed to delete cluster: permission denied", false, 1, false},
		{"in progress for good", 1000, "removal of container dev-control-plane is already in progress", false, 60, false},
		// A kind killed while it held the lock of the cluster's kubeconfig
		// left the lock file: the stand-in fails as kind does while it is
		// there (test fails on a kind_delete that leaves it).
		{"a lock left behind", -1, "", true, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "log")
			// Stand-ins on PATH: kind counts its runs, sleep does not
			// wait, rm only says what it would remove.
			stub := func(name, body string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			stub("kind", fmt.Sprintf(`echo kind >>%q
if [ %d -lt 0 ] && ! grep -qx 'rm -f -- /etc/marina/clusters/dev/kind.kubeconfig.lock' %q; then
	echo 'ERROR: failed to delete cluster "dev": failed to lock config file: open /etc/marina/clusters/dev/kind.kubeconfig.lock: file exists'; exit 1
fi
n=$(grep -cx kind %q)
if [ "$n" -le %d ]; then echo %q; exit 1; fi
echo "Deleting cluster \"dev\" ..."
`, log, c.fails, log, log, c.fails, c.says))
			stub("sleep", "")
			stub("rm", fmt.Sprintf(`echo "rm $*" >>%q`+"\n", log))
			cmd := exec.Command("bash", "-c", script)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if (err == nil) != c.ok {
				t.Fatalf("script: %v\n%s", err, out)
			}
			b, _ := os.ReadFile(log)
			got := string(b)
			if n := strings.Count(got, "kind\n"); n != c.kinds {
				t.Errorf("kind ran %d times, want %d", n, c.kinds)
			}
			if strings.Contains(got, "rm -rf /etc/marina/clusters/dev") != c.rmRuns {
				t.Errorf("folder removed: %v, want %v\n%s", !c.rmRuns, c.rmRuns, got)
			}
			if !c.ok && c.says != "" && !strings.Contains(string(out), c.says) {
				t.Errorf("kind's words are not passed on:\n%s", out)
			}
		})
	}
}

// kind's stages, from the lines KindCreate's stamp wrote: each begins at
// its " • " line and ends at the " ✓ " after it; other lines, and a stage
// kind never ended, are left out.
func TestParseStages(t *testing.T) {
	section := "1700000000.000000000 Creating cluster \"dev\" ...\n" +
		"1700000000.100000000  • Ensuring node image (kindest/node:v1.36.1) 🖼  ...\n" +
		"1700000000.600000000  ✓ Ensuring node image (kindest/node:v1.36.1) 🖼\n" +
		"1700000000.600000000  • Starting control-plane 🕹️  ...\n" +
		"1700000012.850000000  ✓ Starting control-plane 🕹️\n" +
		"not stamped\n" +
		"1700000013.000000000  • Installing CNI 🔌  ...\n"
	got := ParseStages([]byte(section))
	if len(got) != 2 || got[0].Name != "Ensuring node image (kindest/node:v1.36.1) 🖼" || got[1].Name != "Starting control-plane 🕹️" {
		t.Fatalf("stages %+v", got)
	}
	if d := got[1].End.Sub(got[1].Start); d < 12249*time.Millisecond || d > 12251*time.Millisecond {
		t.Errorf("control-plane took %v, want 12.25s", d)
	}
	if got := ParseStages(nil); len(got) != 0 {
		t.Errorf("no section: %+v", got)
	}
}

// The images a create pulls reach prepull as one word each, whatever they
// hold: bash reads back exactly the strings given, and runs none of them.
func TestKindCreatePrepullQuotesImages(t *testing.T) {
	hostile := []string{"x'; touch /tmp/marina-pwn #", "$(id)", "`id` y", "a\nb"}
	s, err := KindCreate(KindSpec{Name: "dev", Image: "img@sha256:x", Images: hostile})
	if err != nil {
		t.Fatal(err)
	}
	_, call, ok := strings.Cut(s, "\nprepull ")
	call, _, cut := strings.Cut(call, " </dev/null")
	if !ok || !cut {
		t.Fatalf("no prepull call in:\n%s", s)
	}
	out, err := exec.Command("bash", "-c", `prepull() { shift 2; printf '%s\0' "$@"; }; prepull `+call).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if fmt.Sprint(got) != fmt.Sprint(hostile) || len(got) != len(hostile) {
		t.Errorf("prepull got %q, want %q", got, hostile)
	}
}
