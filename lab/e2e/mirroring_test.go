package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// setMirroring sets network.disablePortMirroring in the lab Mac user's
// config.
func setMirroring(t *testing.T, disable bool) {
	t.Helper()
	p := filepath.Join(marinaHome(), "config.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "disablePortMirroring: true", "")
	s = strings.ReplaceAll(s, "disablePortMirroring: false", "")
	s = strings.Replace(s, "network:\n", "", 1)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	v := "false"
	if disable {
		v = "true"
	}
	s += "network:\n  disablePortMirroring: " + v + "\n"
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ignoresPorts reports whether the instance's lima.yaml (as limactl keeps
// it) turns Lima's port mirroring off.
func ignoresPorts(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(instDir(), "lima.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), "ignore: true")
}

// reaches checks that cluster name answers through its context in the
// user's kubeconfig, with client-go's full TLS verification.
func reaches(t *testing.T, name, server string) {
	t.Helper()
	c, err := clientcmd.LoadFromFile(kubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if cl := c.Clusters[name]; cl == nil || cl.Server != server || cl.InsecureSkipTLSVerify {
		t.Fatalf("context %s: %+v, want server %s with TLS verified", name, cl, server)
	}
	if _, err := contextClient(t, name).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("cluster %s through its kubeconfig (%s): %v", name, server, err)
	}
}

// The port mirroring mode changes on an existing VM, both ways: up offers
// the restart (without a terminal it only warns), applies it through
// limactl, and every cluster keeps a kubeconfig that reaches it — after
// the switch and after a lima0 move; a cluster the new mode cannot serve
// stops the switch.
func TestPortMirroringSwitch(t *testing.T) {
	needLab(t)
	t.Cleanup(func() { destroyAll(t) })
	writeConfig(t, "registries:\n  mirrors: []\n")
	mustMarina(t, "up")
	image := nodeImage(t)
	writeConfig(t, "registries:\n  mirrors: []\nkind:\n  nodeVersion: v1.36.4\n  nodeImages:\n    v1.36.4: "+image+"\n")
	mustMarina(t, "up")
	seedMetalLB(t)
	ctl := startControllers(t)
	direct := "https://" + vmIP + ":7001"

	ctl.add("direct", 7001)
	mustMarina(t, "cluster", "create", "direct")
	reaches(t, "direct", direct)
	if !ignoresPorts(t) {
		t.Fatal("a VM made in direct mode mirrors ports")
	}

	t.Run("mirroring on: offered, warned without a terminal, applied with --yes", func(t *testing.T) {
		setMirroring(t, false)
		r := mustMarina(t, "up")
		if !strings.Contains(r.stderr, "run `marina up --yes`") || !ignoresPorts(t) {
			t.Fatalf("up without a terminal:\n%s", r.stderr)
		}
		r = mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "restart VM marina to turn Lima's port mirroring on") || !ignoresPorts(t) {
			t.Fatalf("up --dry-run:\n%s", r.stdout)
		}
		r = mustMarina(t, "up", "--yes")
		if !strings.Contains(r.stderr, "Restarted VM marina") || ignoresPorts(t) {
			t.Fatalf("up --yes:\n%s", r.stderr)
		}
		if s := limaStatus(t); s != "Running" {
			t.Fatalf("VM after the restart: %s", s)
		}
		reaches(t, "direct", direct)
		// Applied: nothing more to offer.
		if r := mustMarina(t, "up"); strings.Contains(r.stderr, "port mirroring") {
			t.Errorf("a second up:\n%s", r.stderr)
		}
	})

	t.Run("a loopback cluster is reached through the mirrored port", func(t *testing.T) {
		ctl.addLoopback("lo", 7002)
		mustMarina(t, "cluster", "create", "lo")
		reaches(t, "lo", "https://127.0.0.1:7002")
		reaches(t, "direct", direct)
	})

	// From here on lima0 has another address, as after a new vzNAT lease.
	moved := "https://192.168.70.2:7001"
	t.Cleanup(func() { marina(t, "up") }) // after moveLima0's own clean-up
	moveLima0(t)
	t.Run("after a lima0 move the direct cluster follows it, the loopback one keeps 127.0.0.1", func(t *testing.T) {
		mustMarina(t, "up")
		reaches(t, "direct", moved)
		reaches(t, "lo", "https://127.0.0.1:7002")
	})
	direct = moved

	t.Run("mirroring off is refused while it would strand the loopback cluster", func(t *testing.T) {
		setMirroring(t, true)
		r := mustMarina(t, "up", "--yes")
		for _, want := range []string{"1 cluster (lo) would then be unreachable", "marina cluster delete lo"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("up --yes lacks %q:\n%s", want, r.stderr)
			}
		}
		if ignoresPorts(t) || strings.Contains(r.stderr, "Restarted VM") {
			t.Fatal("the VM was switched with a loopback cluster in it")
		}
		// Its kubeconfig was not pointed at lima0, where nothing listens.
		mustMarina(t, "kubeconfig", "merge")
		reaches(t, "lo", "https://127.0.0.1:7002")
		reaches(t, "direct", direct)
	})

	t.Run("mirroring off once nothing would be stranded", func(t *testing.T) {
		mustMarina(t, "cluster", "delete", "lo", "-y")
		r := mustMarina(t, "up", "--yes")
		if !strings.Contains(r.stderr, "Restarted VM marina") || !ignoresPorts(t) {
			t.Fatalf("up --yes:\n%s", r.stderr)
		}
		reaches(t, "direct", direct)
	})
}
