package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/bcollard/marina/internal/config"
)

func home() string       { return os.Getenv("HOME") }
func marinaHome() string { return os.Getenv("MARINA_HOME") }
func socket() string     { return filepath.Join(home(), ".marina.docker.sock") }
func instDir() string    { return filepath.Join(marinaHome(), "lima", "marina") }

// limaList is what the (fake) limactl reports, read as marina reads it.
func limaStatus(t *testing.T) string {
	t.Helper()
	cmd := []string{"list", "--json"}
	out, err := runEnv(t, []string{"LIMA_HOME=" + filepath.Join(marinaHome(), "lima")}, "limactl", cmd...)
	if err != nil {
		t.Fatalf("limactl list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var in struct{ Name, Status string }
		if json.Unmarshal([]byte(line), &in) == nil && in.Name == "marina" {
			return in.Status
		}
	}
	return ""
}

// dockerVersion asks the daemon behind the forwarded socket for its version.
func dockerVersion(t *testing.T) (string, error) {
	t.Helper()
	c, err := client.New(client.WithHost("unix://" + socket()))
	if err != nil {
		return "", err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := c.ServerVersion(ctx, client.ServerVersionOptions{})
	return v.Version, err
}

var tripsRe = regexp.MustCompile(`guest round trips: (\d+)`)

func trips(t *testing.T, stderr string) int { return tripCount(t, stderr) }

func tripCount(t testing.TB, stderr string) int {
	t.Helper()
	m := tripsRe.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no round-trip count in --debug output:\n%s", stderr)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func statusJSON(t *testing.T) map[string]any {
	t.Helper()
	r := shownStatus(t, "status", "-o", "json")
	var s struct{ VM map[string]any }
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status -o json is not JSON: %v\n%s", err, r.stdout)
	}
	return s.VM
}

func TestLifecycle(t *testing.T) {
	needLab(t)

	t.Run("dry run on a fresh machine changes nothing", func(t *testing.T) {
		r := mustMarina(t, "up", "--dry-run")
		for _, want := range []string{"write the default config", "create and boot VM marina"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("plan lacks %q:\n%s", want, r.stdout)
			}
		}
		if _, err := os.Stat(filepath.Join(marinaHome(), "config.yaml")); !os.IsNotExist(err) {
			t.Errorf("--dry-run wrote the config (stat: %v)", err)
		}
		if s := limaStatus(t); s != "" {
			t.Errorf("--dry-run created an instance (%s)", s)
		}
	})

	t.Run("a bad config stops up before anything changes", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(cfg, []byte("vm:\n  cpus: 2\nregistries:\n  mirrors:\n    - name: quay.io\n      port: 5010\n      remoteURL: https://quay.io\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := marina(t, "--config", cfg, "up")
		if r.code == 0 {
			t.Fatal("marina up accepted a mirror named like a hostname")
		}
		if !strings.Contains(r.stderr, "bad.yaml:5: registries.mirrors[0].name") {
			t.Errorf("error does not point at the line:\n%s", r.stderr)
		}
		if s := limaStatus(t); s != "" {
			t.Errorf("an instance was created (%s)", s)
		}
	})

	t.Run("fresh up creates the VM and waits for Docker", func(t *testing.T) {
		// The default config pins the official registry image by digest;
		// nothing can pull it in the lab, as on a Mac without a network.
		// Without --debug, and without a terminal: the first boot shows
		// Lima's boot stages as plain lines, not Lima's own log.
		r := marina(t, "up")
		if r.code == 0 || !strings.Contains(r.stderr, "pull "+config.DefaultRegistryImage) || !strings.Contains(r.stderr, "the VM needs to reach its registry once") {
			t.Errorf("up with the official registry image offline: exit %d\n%s", r.code, r.stderr)
		}
		for _, want := range []string{
			" • Creating VM marina",
			"\n   starting the VM",
			"\n   waiting for ssh (essential requirement 1 of 2)",
			"\n   waiting for boot scripts must have finished (final requirement 1 of 1)",
			" ✓ Created VM marina",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the first boot does not show %q:\n%s", want, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "level=info") || strings.Contains(r.stderr, "\x1b[") {
			t.Errorf("the first boot shows Lima's log or terminal codes:\n%s", r.stderr)
		}
		if s := limaStatus(t); s != "Running" {
			t.Errorf("the instance was not created through limactl: %q", s)
		}
		// The lab's own registry:3.1.2, pinned by its digest, in the
		// default file marina wrote.
		cfg := filepath.Join(marinaHome(), "config.yaml")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		lab := strings.Replace(string(b), "image: "+config.DefaultRegistryImage, "image: "+registryImage(), 1)
		lab = strings.Replace(lab, "  domain: "+config.DefaultDNSDomain+"\n", "  domain: "+config.DefaultDNSDomain+"\n"+dnsImagesYAML(), 1)
		if lab == string(b) {
			t.Fatalf("the default config does not name the registry image:\n%s", b)
		}
		if err := os.WriteFile(cfg, []byte(lab), 0o600); err != nil {
			t.Fatal(err)
		}
		r = mustMarina(t, "up", "--debug")
		if !strings.Contains(r.stdout, "lima0 192.168.64.2") {
			t.Errorf("up does not report the lima0 address:\n%s", r.stdout)
		}
		if s := limaStatus(t); s != "Running" {
			t.Fatalf("limactl reports %q, want Running", s)
		}
		v, err := dockerVersion(t)
		if err != nil || !strings.HasPrefix(v, "29.") {
			t.Fatalf("Docker over the forwarded socket: %q, %v", v, err)
		}
		st, err := os.Stat(filepath.Join(marinaHome(), "config.yaml"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("default config: %v, mode %v", err, st.Mode().Perm())
		}
	})

	t.Run("warm up changes nothing in at most 2 round trips", func(t *testing.T) {
		before := snapshot(t)
		r := mustMarina(t, "up", "--debug")
		if n := trips(t, r.stderr); n > 2 {
			t.Errorf("warm up made %d guest round trips, want at most 2", n)
		}
		if strings.Contains(r.stderr, "limactl start") || strings.Contains(r.stderr, "limactl --version") {
			t.Errorf("warm up ran limactl to change the VM:\n%s", r.stderr)
		}
		if after := snapshot(t); after != before {
			t.Errorf("warm up changed files:\nbefore %s\nafter  %s", before, after)
		}
		r = mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "No changes") {
			t.Errorf("dry run on a running VM plans changes:\n%s", r.stdout)
		}
	})

	t.Run("status reports the VM", func(t *testing.T) {
		vm := statusJSON(t)
		if vm["status"] != "Running" || vm["lima0"] != "192.168.64.2/24" || vm["vmType"] != "vz" {
			t.Errorf("status = %v", vm)
		}
		if v, _ := vm["docker"].(string); !strings.HasPrefix(v, "29.") {
			t.Errorf("status docker = %v", vm["docker"])
		}
		r := shownStatus(t, "status", "-v")
		for _, want := range []string{"=== VM ===", "status:   Running", "lima0:    192.168.64.2/24"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status text lacks %q:\n%s", want, r.stdout)
			}
		}
	})

	t.Run("guest channel", testGuestChannel)

	t.Run("shell runs a command in the guest", func(t *testing.T) {
		r := mustMarina(t, "shell", "--", "sh", "-c", "echo \"$USER\" && test -S /var/run/docker.sock")
		if strings.TrimSpace(r.stdout) != "lima" {
			t.Errorf("shell ran as %q", r.stdout)
		}
		r = marina(t, "shell", "--", "sh", "-c", "exit 7")
		if r.code != 7 {
			t.Errorf("shell exit status = %d, want 7", r.code)
		}
	})

	t.Run("down then up brings it back", func(t *testing.T) {
		mustMarina(t, "down")
		if s := limaStatus(t); s != "Stopped" {
			t.Fatalf("after down limactl reports %q", s)
		}
		if _, err := dockerVersion(t); err == nil {
			t.Error("Docker still answers after down")
		}
		if vm := statusJSON(t); vm["status"] != "Stopped" {
			t.Errorf("status after down = %v", vm["status"])
		}
		r := mustMarina(t, "up", "--debug")
		if !strings.Contains(r.stderr, "limactl start --tty=false marina") {
			t.Errorf("up did not start the stopped instance:\n%s", r.stderr)
		}
		if v, err := dockerVersion(t); err != nil || !strings.HasPrefix(v, "29.") {
			t.Fatalf("Docker after up: %q, %v", v, err)
		}
	})

	t.Run("changed resources apply when a stopped VM starts", func(t *testing.T) {
		mustMarina(t, "down")
		t.Run("completion offers nothing live and no files", testCompletionVMDown)
		cfg := filepath.Join(marinaHome(), "config.yaml")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "cpus: 4", "cpus: 6", 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		r := mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "start VM marina with 6 CPUs (was 4)") {
			t.Errorf("plan:\n%s", r.stdout)
		}
		mustMarina(t, "up")
		if vm := statusJSON(t); vm["cpus"] != float64(6) {
			t.Errorf("cpus after up = %v", vm["cpus"])
		}
	})

	t.Run("settings fixed at creation are reported, not silently ignored", func(t *testing.T) {
		cfg := filepath.Join(marinaHome(), "config.yaml")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(cfg, b, 0o600)
		changed := strings.Replace(string(b), "disablePortMirroring: true", "disablePortMirroring: false", 1)
		if changed == string(b) {
			t.Fatal("the default config does not set disablePortMirroring")
		}
		if err := os.WriteFile(cfg, []byte(changed), 0o600); err != nil {
			t.Fatal(err)
		}
		// Port mirroring is applied with a restart, which up without a
		// terminal only offers (TestPortMirroringSwitch applies it).
		r := mustMarina(t, "up")
		if !strings.Contains(r.stderr, "the config asks to turn Lima's port mirroring on (network.disablePortMirroring: false), which needs a restart of VM marina: run `marina up --yes`") {
			t.Errorf("no warning:\n%s", r.stderr)
		}
	})

	t.Run("destroy asks, then leaves no instance and no socket", func(t *testing.T) {
		r := marina(t, "destroy")
		if r.code == 0 || !strings.Contains(r.stderr, "pass -y") {
			t.Fatalf("destroy without a terminal or -y: exit %d\n%s", r.code, r.stderr)
		}
		if s := limaStatus(t); s != "Running" {
			t.Fatalf("unconfirmed destroy changed the VM: %s", s)
		}
		mustMarina(t, "destroy", "-y")
		if s := limaStatus(t); s != "" {
			t.Errorf("instance still listed: %s", s)
		}
		if _, err := os.Lstat(socket()); !os.IsNotExist(err) {
			t.Errorf("socket %s still there (%v)", socket(), err)
		}
		if _, err := os.Stat(instDir()); !os.IsNotExist(err) {
			t.Errorf("instance folder still there (%v)", err)
		}
		if vm := statusJSON(t); vm["status"] != "NotCreated" {
			t.Errorf("status after destroy = %v", vm["status"])
		}
		if _, err := os.Stat(filepath.Join(marinaHome(), "config.yaml")); err != nil {
			t.Errorf("destroy removed the config: %v", err)
		}
	})
}

// snapshot summarises the files up could touch: names, sizes and times.
func snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{filepath.Join(marinaHome(), "config.yaml"), filepath.Join(instDir(), "lima.yaml"), filepath.Join(instDir(), "ha.pid")} {
		st, err := os.Stat(p)
		if err != nil {
			b.WriteString(p + ": missing; ")
			continue
		}
		b.WriteString(p + ": " + strconv.FormatInt(st.Size(), 10) + " " + st.ModTime().String() + "; ")
	}
	return b.String()
}
