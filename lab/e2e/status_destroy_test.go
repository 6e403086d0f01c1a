package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// With a real cluster in the VM: up says what to do next, status lists
// the clusters from Docker (no guest round trip more), the destroy of
// another MARINA_HOME leaves this one's kubeconfigs, and destroy removes
// the kubeconfig file and the entries marina wrote, and keeps the user's.
func TestClustersInStatusAndDestroy(t *testing.T) {
	needLab(t)
	t.Cleanup(func() { destroyAll(t) })
	writeConfig(t, "registries:\n  mirrors: []\n")
	r := mustMarina(t, "up")
	for _, want := range []string{"Next:\n", `  eval "$(marina docker-env)"    use the VM's Docker from this shell`, "  marina cluster create NAME     create a kind cluster"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("up's end lacks %q:\n%s", want, r.stdout)
		}
	}
	// The node image is in the guest's Docker once the VM runs.
	writeConfig(t, fmt.Sprintf("kind:\n  nodeImages:\n    v1.36.4: %s\nregistries:\n  mirrors: []\n", nodeImage(t)))
	seedMetalLB(t)
	ctl := startControllers(t)

	if r := shownStatus(t, "status", "-v"); !strings.HasSuffix(r.stdout, "=== Clusters ===\n  (none): `marina cluster create NAME` makes one\n") {
		t.Errorf("status without clusters:\n%s", r.stdout)
	}
	ctl.add("dev", 7001)
	mustMarina(t, "cluster", "create", "dev")
	addUserEntries(t, "prod")
	mine := userEntries(t, "prod")

	t.Run("status lists the cluster in the same one round trip", func(t *testing.T) {
		r := shownStatus(t, "st", "--debug")
		if !regexp.MustCompile(`\nCLUSTER +SLOT +STATE +NODES\ndev +1 +running +1\n$`).MatchString(r.stdout) {
			t.Errorf("status text:\n%s", r.stdout)
		}
		if r := shownStatus(t, "st", "-v"); !regexp.MustCompile(`=== Clusters ===\n  dev  slot 1  running  1 node\n`).MatchString(r.stdout) {
			t.Errorf("status -v text:\n%s", r.stdout)
		}
		if n := trips(t, r.stderr); n != 1 {
			t.Errorf("status made %d guest round trips, want 1", n)
		}
		var st struct {
			Clusters []map[string]any `json:"clusters"`
		}
		out := shownStatus(t, "status", "-o", "json").stdout
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Clusters) != 1 || st.Clusters[0]["name"] != "dev" || st.Clusters[0]["slot"] != float64(1) || st.Clusters[0]["state"] != "running" || st.Clusters[0]["nodes"] != float64(1) {
			t.Errorf("status -o json clusters = %v\n%s", st.Clusters, out)
		}
	})

	t.Run("up names the clusters next", func(t *testing.T) {
		if r := mustMarina(t, "up"); !strings.Contains(r.stdout, "  marina cluster list            your 1 cluster: dev\n") {
			t.Errorf("up's end:\n%s", r.stdout)
		}
	})

	// ~/.kube/marina is under $HOME, shared by every MARINA_HOME: the
	// destroy of another home, whose VM does not exist, cannot tell the
	// files there are not its clusters' and leaves them all.
	t.Run("destroy of another MARINA_HOME leaves this home's kubeconfigs byte for byte", func(t *testing.T) {
		other, err := os.MkdirTemp("", "b") // short: Lima's socket paths under it
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(other)
		// The same config (VM name, kind network), another home.
		cfg, err := os.ReadFile(filepath.Join(marinaHome(), "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, "config.yaml"), cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		kc := filepath.Join(home(), ".kube", "marina", "dev.kubeconfig")
		read := func() [2]string {
			t.Helper()
			a, err := os.ReadFile(kc)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(kubeconfigPath())
			if err != nil {
				t.Fatal(err)
			}
			return [2]string{string(a), string(b)}
		}
		before := read()
		out, err := runEnv(t, []string{"MARINA_HOME=" + other}, marinaBin, "destroy", "-y")
		if err != nil {
			t.Fatalf("destroy of the other home: %v\n%s", err, out)
		}
		for _, want := range []string{
			"The kubeconfigs in ~/.kube/marina stay: VM marina does not exist, so marina cannot tell which of them were its clusters' (~/.kube/marina is shared by every MARINA_HOME). There: dev.kubeconfig.",
			"`marina kubeconfig remove NAME` removes its entries from " + kubeconfigPath() + " and `rm ~/.kube/marina/NAME.kubeconfig` its file.",
			// Nor is this home's route the other's to remove.
			"the host's route to 172.30.0.0/16 (",
			") is not one marina recorded making: it is left as it is",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the other home's destroy lacks %q:\n%s", want, out)
			}
		}
		if after := read(); after != before {
			t.Errorf("the other home's destroy changed this home's kubeconfigs:\n%s\nwere:\n%s", after, before)
		}
		if s := limaStatus(t); s != "Running" {
			t.Errorf("this home's VM: %q", s)
		}
	})

	t.Run("destroy removes what marina wrote for the cluster, and only that", func(t *testing.T) {
		kc := filepath.Join(home(), ".kube", "marina", "dev.kubeconfig")
		r := mustMarina(t, "destroy", "--dry-run")
		for _, want := range []string{
			"remove the kubeconfig file dev.kubeconfig from " + filepath.Dir(kc),
			"remove the cluster, user and context entries of dev that marina wrote from " + kubeconfigPath(),
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("destroy --dry-run lacks %q:\n%s", want, r.stdout)
			}
		}
		if _, err := os.Stat(kc); err != nil || !hasContext(t, "dev") {
			t.Fatalf("the dry run removed dev's kubeconfig (%v) or entries", err)
		}
		mustMarina(t, "destroy", "-y")
		if s := limaStatus(t); s != "" {
			t.Errorf("instance still listed: %s", s)
		}
		if _, err := os.Stat(kc); !os.IsNotExist(err) {
			t.Errorf("%s is left (%v)", kc, err)
		}
		if hasContext(t, "dev") {
			t.Error("dev's context is left in ~/.kube/config")
		}
		if got := userEntries(t, "prod"); got != mine {
			t.Errorf("the user's entries changed:\n%s\nwere:\n%s", got, mine)
		}
	})
}
