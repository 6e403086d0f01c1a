package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// previous is the last commit of marina before the VM kept a provisioning
// record: the release an upgrading user has.
const previous = "08c03be"

// buildPrevious builds the marina of commit previous, from this
// repository's history, and returns the binary.
func buildPrevious(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", previous+"^{commit}").Run(); err != nil {
		t.Skipf("this clone lacks commit %s (a shallow clone): the upgrade from it cannot be built", previous)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "_", repo, previous, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", previous, err, out)
	}
	bin := filepath.Join(dir, "marina-previous")
	build := exec.Command("go", "build", "-o", bin, "./cmd/marina")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build marina %s: %v\n%s", previous, err, out)
	}
	return bin
}

// The previous marina makes the VM and a cluster; this one brings the VM
// up to date in place, keeping the cluster: a dry run lists it, up runs this marina's provisioning script in
// the VM (its record written, lima.yaml given the script for the next
// boots) without restarting Docker, and a second up changes nothing. Then
// the restart path: a daemon.json of an older marina makes up ask (no
// terminal: it changes nothing), --yes restarts Docker and marina's
// containers run again. A VM of another Ubuntu release is said to be too
// old.
func TestUpgradeInPlace(t *testing.T) {
	needLab(t)
	old := buildPrevious(t)
	t.Cleanup(func() { destroyAll(t) })
	writeConfig(t, "registries:\n  mirrors: []\n")
	succeeded(t, runResult(old, "up"), "the previous marina's up")
	if out := inGuest(t, "cat /var/lib/marina/provisioned 2>/dev/null || echo none"); strings.TrimSpace(out) != "none" {
		t.Fatalf("the previous marina's VM has a provisioning record:\n%s", out)
	}
	// The previous marina makes a cluster too (on the stand-in node
	// image): every step of the upgrade keeps it, with its API port, and
	// it answers.
	writeConfig(t, fmt.Sprintf("kind:\n  nodeVersion: v1.36.4\n  nodeImages:\n    v1.36.4: %s\nregistries:\n  mirrors: []\n", nodeImage(t)))
	seedMetalLB(t)
	ctl := startControllers(t)
	ctl.add("old", 0)
	succeeded(t, runResult(old, "cluster", "create", "old"), "the previous marina's cluster create")
	rows := listClusters(t)
	if len(rows) != 1 || rows[0].Name != "old" || rows[0].APIPort == 0 {
		t.Fatalf("cluster list after the previous marina's create: %+v", rows)
	}
	apiPort := rows[0].APIPort
	oldAnswers := func(t *testing.T, after string) {
		t.Helper()
		waitFor(t, 2*time.Minute, "cluster old's API server after "+after, func() bool {
			_, err := contextClient(t, "old").Discovery().ServerVersion()
			return err == nil
		})
		if rows := listClusters(t); len(rows) != 1 || rows[0].APIPort != apiPort || rows[0].State != "running" {
			t.Errorf("cluster list after %s: %+v, want old running on port %d", after, rows, apiPort)
		}
	}
	dockerPID := func() string { return strings.TrimSpace(inGuest(t, "cat /run/docker.pid")) }
	pid := dockerPID()

	t.Run("status, doctor and version say the VM is behind", func(t *testing.T) {
		if v := mustMarina(t, "version").stdout; !strings.Contains(v, "marina: no note of its provisioning yet (an older marina brought it up last)") {
			t.Errorf("version before the upgrade:\n%s", v)
		}
		r := shownStatus(t, "status")
		if !strings.Contains(r.stdout, "provisioned by an earlier marina") || !strings.Contains(r.stdout, "`marina up` provisions it again in place") {
			t.Errorf("status:\n%s", r.stdout)
		}
		d := marina(t, "doctor", "-o", "json")
		if !strings.Contains(d.stdout, "; the VM is provisioned by an earlier marina") {
			t.Errorf("doctor:\n%s\n%s", d.stdout, d.stderr)
		}
	})

	t.Run("up provisions the VM in place", func(t *testing.T) {
		r := mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "provision VM marina again with this marina's script, in place: provisioned by an earlier marina") || strings.Contains(r.stdout, "restart Docker") {
			t.Errorf("up --dry-run:\n%s", r.stdout)
		}
		mustMarina(t, "up")
		rec := inGuest(t, "cat /var/lib/marina/provisioned")
		for _, want := range []string{"marina=dev", "docker=29.", "kind=v0.33.0", "kubectl=v1.36."} {
			if !strings.Contains(rec, want) {
				t.Errorf("the record lacks %q:\n%s", want, rec)
			}
		}
		lima, err := os.ReadFile(filepath.Join(instDir(), "lima.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(lima), "What provisioned this VM") || !strings.Contains(string(lima), "vmType: vz") ||
			!strings.Contains(string(lima), "host.docker.internal: host.lima.internal") {
			t.Errorf("lima.yaml does not carry this marina's script and host name, or lost its settings:\n%s", lima)
		}
		if got := dockerPID(); got != pid {
			t.Errorf("Docker restarted (pid %s, then %s)", pid, got)
		}
		r = mustMarina(t, "up", "--dry-run")
		if strings.Contains(r.stdout, "provision") {
			t.Errorf("a second up still plans:\n%s", r.stdout)
		}
		if s := shownStatus(t, "status"); strings.Contains(s.stdout, "provisioned by") {
			t.Errorf("status after the upgrade:\n%s", s.stdout)
		}
		oldAnswers(t, "the upgrade in place")
		// marina version reads up's note, without reaching the VM.
		if v := mustMarina(t, "version").stdout; !strings.Contains(v, "marina, provisioned by this marina's script (marina dev, at marina up, ") {
			t.Errorf("version after the upgrade:\n%s", v)
		}
	})

	t.Run("a Docker restart is asked for, then made", func(t *testing.T) {
		// An older marina's daemon.json, without the Docker Hub mirror.
		inGuest(t, `printf '%s\n' '{' '  "firewall-backend": "iptables"' '}' >/etc/docker/daemon.json; rm -f /var/lib/marina/provisioned`)
		r := mustMarina(t, "up")
		if !strings.Contains(r.stderr, "run `marina up --yes` to do it") || dockerPID() != pid {
			t.Fatalf("up without a terminal restarted Docker or did not say how:\n%s", r.stderr)
		}
		r = mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "Docker's daemon.json") || !strings.Contains(r.stdout, "restart Docker in VM marina") {
			t.Errorf("up --dry-run:\n%s", r.stdout)
		}
		mustMarina(t, "up", "--yes")
		if dockerPID() == pid {
			t.Error("Docker did not restart")
		}
		if got := inGuest(t, "cat /etc/docker/daemon.json"); !strings.Contains(got, "registry-mirrors") {
			t.Errorf("daemon.json: %s", got)
		}
		// marina's containers run again, so does the previous marina's
		// cluster, and a second up changes nothing.
		oldAnswers(t, "the Docker restart")
		d := marina(t, "doctor")
		if d.code != 0 {
			t.Errorf("doctor after the restart: exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
		}
		r = mustMarina(t, "up", "--dry-run")
		if strings.Contains(r.stdout, "provision") {
			t.Errorf("a second up still plans:\n%s", r.stdout)
		}
	})

	t.Run("another Ubuntu release is too old to upgrade in place", func(t *testing.T) {
		inGuest(t, `sed -i 's/^VERSION_ID=.*/VERSION_ID="22.04"/' /etc/os-release; mv /var/lib/marina/provisioned /var/lib/marina/provisioned.aside`)
		t.Cleanup(func() {
			inGuest(t, `sed -i 's/^VERSION_ID=.*/VERSION_ID="24.04"/' /etc/os-release; mv /var/lib/marina/provisioned.aside /var/lib/marina/provisioned`)
		})
		r := mustMarina(t, "up")
		if !strings.Contains(r.stderr, "VM marina runs ubuntu 22.04, and marina provisions Ubuntu 24.04 only") || !strings.Contains(r.stderr, "`marina destroy && marina up` makes a new VM") {
			t.Errorf("up:\n%s", r.stderr)
		}
		if out := inGuest(t, "cat /var/lib/marina/provisioned 2>/dev/null || echo none"); strings.TrimSpace(out) != "none" {
			t.Errorf("up provisioned a VM of another release:\n%s", out)
		}
		if s := shownStatus(t, "status"); !strings.Contains(s.stdout, "it runs ubuntu 22.04, which marina cannot provision in place: `marina destroy && marina up` makes a new VM") {
			t.Errorf("status:\n%s", s.stdout)
		}
	})

	// Last: a reboot of the VM (marina down, then up) reads the host
	// resolver's names from lima.yaml, which the upgrade gave it.
	t.Run("the next boot reads lima.yaml's host resolver: host.docker.internal in the VM", func(t *testing.T) {
		if out := marina(t, "shell", "--", "getent", "ahostsv4", "host.docker.internal"); out.code == 0 {
			t.Fatalf("the previous marina's VM already resolves host.docker.internal:\n%s", out.stdout)
		}
		mustMarina(t, "down")
		mustMarina(t, "up")
		if out := mustMarina(t, "shell", "--", "getent", "ahostsv4", "host.docker.internal").stdout; !strings.HasPrefix(out, "192.168.5.2 ") {
			t.Errorf("host.docker.internal after the reboot:\n%s", out)
		}
	})
}

// upgradeRestart is the upgrade's restart path on real clusters: the VM
// made to look provisioned by an older marina (no record, and its
// daemon.json), up --yes restarts Docker, and afterwards both clusters
// answer, web keeps its address and name, verify passes, the caches keep
// their blobs, and a second up changes nothing.
func upgradeRestart(t *testing.T, agnhost, ip string) {
	t.Run("upgrade: a Docker restart brings every running cluster back with its addresses, names and caches", func(t *testing.T) {
		blobs := func() string {
			return strings.TrimSpace(inGuest(t, `find /var/lib/marina/registry-cache -path '*/blobs/*' -name data -type f | wc -l`))
		}
		before := blobs()
		pid := strings.TrimSpace(inGuest(t, "cat /run/docker.pid"))
		inGuest(t, `printf '%s\n' '{' '  "firewall-backend": "iptables"' '}' >/etc/docker/daemon.json; rm -f /var/lib/marina/provisioned`)
		r := mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "restart Docker in VM marina") {
			t.Errorf("up --dry-run:\n%s", r.stdout)
		}
		r = mustMarina(t, "up", "--yes")
		// Docker's restart policy brings the nodes back, or marina starts
		// them ("Starting the clusters that ran before"); either way up
		// waits for both API servers.
		if !strings.Contains(r.stderr, "API servers of dev, edge answer") {
			t.Errorf("up --yes did not wait for the clusters:\n%s", r.stderr)
		}
		if got := strings.TrimSpace(inGuest(t, "cat /run/docker.pid")); got == pid {
			t.Error("Docker did not restart")
		}
		for c, n := range map[string]int{"dev": 2, "edge": 1} {
			nodesReady(t, contextClient(t, c), n, 3*time.Minute)
		}
		// web's pod and MetalLB's speakers start again with their node's
		// containerd: up waits for the API servers, not for them.
		webServes(t, agnhost, ip, 3*time.Minute, "the restart")
		if after := blobs(); after != before {
			t.Errorf("the caches held %s blobs before the restart, %s after", before, after)
		}
		if r := mustMarina(t, "up", "--dry-run"); !strings.Contains(r.stdout, "match the config") {
			t.Errorf("a second up still plans:\n%s", r.stdout)
		}
	})
}
