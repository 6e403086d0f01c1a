package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// klimaxLimaYAML is the Lima template klimax made its VM from, as far as
// the fake limactl reads it: klimax's socket and cache mount paths.
func klimaxLimaYAML(home string) string {
	return fmt.Sprintf(`vmType: vz
cpus: 4
memory: 10GiB
disk: 40GiB
images:
  - location: https://cloud-images.ubuntu.com/releases/24.04/release/ubuntu-24.04-server-cloudimg-arm64.img
    arch: aarch64
  - location: https://cloud-images.ubuntu.com/releases/24.04/release/ubuntu-24.04-server-cloudimg-amd64.img
    arch: x86_64
containerd:
  system: false
  user: false
networks:
  - vzNAT: true
mountType: virtiofs
mounts:
  - location: %[1]s/.klimax/registry-cache
    mountPoint: /var/lib/klimax/registry-cache
    writable: true
portForwards:
  - guestIP: 0.0.0.0
    guestPortRange: [1, 65535]
    proto: tcp
    ignore: true
  - guestSocket: /run/docker.sock
    hostSocket: %[1]s/.klimax.docker.sock
`, home)
}

// klimaxRules are klimax's no-NAT rules (its no-nat-kind.sh), as it left
// them in the guest: the NAT exemption and the two DOCKER-USER accepts.
func klimaxRules(netID string) string {
	return `iptables -t nat -I POSTROUTING 1 -s 172.30.0.0/16 -d 192.168.64.0/24 -o lima0 -j ACCEPT
iptables -I DOCKER-USER 1 -s 192.168.64.1/32 -d 172.30.0.0/16 -m conntrack --ctstate NEW,RELATED,ESTABLISHED -j ACCEPT
iptables -I DOCKER-USER 2 -s 192.168.64.1/32 -d 172.30.0.0/16 -i lima0 -o ` + netID[:12] + ` -j ACCEPT
mkdir -p /usr/local/sbin /etc/systemd/system/docker.service.d
printf '#!/bin/sh\nexit 0\n' >/usr/local/sbin/no-nat-kind.sh
chmod 0755 /usr/local/sbin/no-nat-kind.sh
printf '[Service]\nType=oneshot\nExecStart=/usr/local/sbin/no-nat-kind.sh\n' >/etc/systemd/system/lima-no-nat-kind.service
printf '[Service]\nExecStartPost=/usr/local/sbin/no-nat-kind.sh\n' >/etc/systemd/system/docker.service.d/99-no-nat-kind.conf
`
}

var klimaxRuleRe = regexp.MustCompile(`(?m)-s 172\.30\.0\.0/16 -d 192\.168\.64\.0/24 -o lima0 -j ACCEPT|-s 192\.168\.64\.1/32 -d 172\.30\.0\.0/16`)

// A klimax installation — its VM under ~/.klimax's LIMA_HOME, its kind
// network (no ip-range, Docker's bridge name, no trusted interface), a
// cluster with klimax's labels, its kubeconfigs, its rules and route — is
// migrated: the VM is marina's, status is all ✓, the Mac reaches a
// container at its own address with its own source address, the cluster
// keeps its node's address, has marina's labels and answers through the
// kubeconfig migrate wrote. The commands are the README's "Coming from
// klimax".
func TestMigrate(t *testing.T) {
	needLab(t)
	destroyAll(t)
	// A Mac with klimax and no marina yet: no marina caches either (the
	// earlier tests' stay after destroy, as caches do).
	cacheDir := filepath.Join(marinaHome(), "registry-cache")
	if err := os.RemoveAll(cacheDir); err != nil {
		t.Fatal(err)
	}
	kdir := filepath.Join(home(), ".klimax")
	klimaxEnv := []string{"LIMA_HOME=" + kdir}
	t.Cleanup(func() {
		_, _ = runEnv(t, klimaxEnv, "limactl", "stop", "klimax")
		_, _ = runEnv(t, klimaxEnv, "limactl", "delete", "klimax")
		destroyAll(t)
		_, _ = exec.Command("ip", "route", "del", "172.30.0.0/16").CombinedOutput()
		matches, _ := filepath.Glob(filepath.Join(home(), ".klimax*"))
		for _, p := range matches {
			_ = os.RemoveAll(p)
		}
		_ = os.RemoveAll(filepath.Join(marinaHome(), "migrate.json"))
		_ = os.RemoveAll(cacheDir)
		_ = os.RemoveAll(filepath.Join(marinaHome(), "lima", "_config"))
	})

	// klimax's files.
	write := func(p, body string, perm os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), perm); err != nil {
			t.Fatal(err)
		}
	}
	klimaxConfig := "# my klimax lab\nvm:\n  cpus: 4 # enough for two clusters\nnetwork:\n  kindBridgeCIDR: 172.30.0.0/16\nregistries:\n  mirrors: []\n"
	write(filepath.Join(kdir, "config.yaml"), klimaxConfig, 0o600)
	write(filepath.Join(kdir, "registry-cache", "registry-dockerio", "docker", "registry", "v2", "blobs", "layer"), "a cached layer", 0o644)
	write(filepath.Join(kdir, "_config", "user"), "klimax's Lima key (the lab's VM uses its own)\n", 0o600)
	write(filepath.Join(kdir, "_config", "user.pub"), "ssh-ed25519 AAAA klimax\n", 0o644)
	tmpl := filepath.Join(t.TempDir(), "klimax.yaml")
	write(tmpl, klimaxLimaYAML(home()), 0o644)
	if out, err := runEnv(t, klimaxEnv, "limactl", "start", "--tty=false", "--name=klimax", tmpl); err != nil {
		t.Fatalf("start klimax's VM: %v\n%s", err, out)
	}

	// klimax's network, rules, route, an echo server and a cluster.
	labDocker(t, "network", "create", "-d", "bridge", "--subnet=172.30.0.0/16", "--gateway=172.30.0.1",
		"-o", "com.docker.network.bridge.enable_ip_masquerade=true", "-o", "com.docker.network.driver.mtu=1500", "kind")
	netID := labDocker(t, "network", "inspect", "-f", "{{.Id}}", "kind")
	inGuest(t, klimaxRules(netID))
	if out, err := exec.Command("ip", "route", "replace", "172.30.0.0/16", "via", vmIP).CombinedOutput(); err != nil {
		t.Fatalf("klimax's route: %v\n%s", err, out)
	}
	importEcho(t)
	labDocker(t, "run", "-d", "--restart", "always", "--name", "klimax-echo", "--network", "kind", "--network-alias", "echo.klimax", echoImage, "serve", ":8080")
	echoIP := containerIP(t, "klimax-echo", "kind")
	// Docker 28.2+ drops what lima0 sends to a container on a network
	// that does not trust it: klimax's VM is unreachable from the Mac.
	if peer, err := dialFromMac(echoIP + ":8080"); err == nil {
		t.Logf("before the migration the Mac reached %s (peer %s): Docker did not drop it", echoIP, peer)
	}
	image := nodeImage(t)
	inGuest(t, `mkdir -p /tmp/klimax && kind create cluster --name dev --image `+shellQuote(image)+` --kubeconfig /tmp/klimax/dev.kubeconfig --config - <<'EOF'
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  apiServerAddress: 0.0.0.0
  apiServerPort: 7001
  podSubnet: 10.1.0.0/16
  serviceSubnet: 10.11.0.0/16
kubeadmConfigPatches:
  - |
    kind: ClusterConfiguration
    apiServer:
      certSANs: ["`+vmIP+`", "127.0.0.1"]
nodes:
  - role: control-plane
    labels:
      managed-by: klimax
      klimax.dev/fleet: demo
      topology.kubernetes.io/region: lab-1
EOF`)
	nodeIP := containerIP(t, "dev-control-plane", "kind")
	kc := inGuest(t, "kind get kubeconfig --name dev")
	kc = strings.ReplaceAll(kc, "kind-dev", "dev")
	kc = regexp.MustCompile(`server: https://[^\s]+`).ReplaceAllString(kc, "server: https://"+vmIP+":7001")
	write(filepath.Join(home(), ".kube", "klimax", "dev.kubeconfig"), kc, 0o600)
	// klimax merged it into the user's kubeconfig, beside the user's own.
	write(kubeconfigPath(), kc, 0o600)
	addUserEntries(t, "prod")
	mine := userEntries(t, "prod")
	ctl := startControllers(t)
	ctl.add("dev", 7001)

	// The README's commands, in its order; without a terminal the test
	// answers migrate's question with -y, as the README says.
	readme := readmeCommands(t, "Coming from klimax")
	dryRun, migrate, status, cleanup := readme[0], readme[1], readme[2], readme[3]
	yes := func(args []string) []string { return append(slices.Clone(args), "-y") }

	t.Run("marina says how to migrate", func(t *testing.T) {
		r := marina(t, "status")
		if !strings.Contains(r.stderr, "`marina migrate --dry-run` shows how") {
			t.Errorf("status with klimax's home and no marina config says nothing of migrate:\n%s", r.stderr)
		}
	})

	var before map[string]string
	t.Run("dry run plans every step and changes nothing", func(t *testing.T) {
		before = dockerTree(t, home())
		r := mustMarina(t, dryRun...)
		for _, want := range []string{"Plan (--dry-run, nothing was changed):", "stop klimax's VM klimax", "convert the Docker network kind", "relabel", "nodeVersion"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("the plan lacks %q:\n%s", want, r.stdout)
			}
		}
		if after := dockerTree(t, home()); !sameDockerTree(before, after) {
			t.Error("--dry-run changed the home folder")
		}
		if s := labDocker(t, "network", "inspect", "-f", "{{.Id}}", "kind"); s != netID {
			t.Error("--dry-run changed the kind network")
		}
	})

	t.Run("migrate stops where the offline lab cannot go on, and carries on when run again", func(t *testing.T) {
		// The pinned DNS images cannot be pulled here, as on an offline
		// Mac: migrate stops at up and says how to carry on.
		r := marina(t, yes(migrate)...)
		if r.code == 0 || !strings.Contains(r.stderr, "migrate stopped at: run marina up") || !strings.Contains(r.stderr, "`marina migrate` again carries on") {
			t.Fatalf("migrate with the DNS images unreachable: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		cfg := filepath.Join(marinaHome(), "config.yaml")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "enough for two clusters") || !strings.Contains(string(b), "cidr: 172.30.0.0/16") {
			t.Errorf("the migrated config:\n%s", b)
		}
		if !strings.Contains(r.stdout, "registry-dockerio is no mirror of klimax's config: left alone") {
			t.Errorf("the plan does not say the cache of no mirror stays:\n%s", r.stdout)
		}
		write(cfg, labImages(string(b)), 0o600)
		mustMarina(t, yes(migrate)...)
	})

	t.Run("status is all ✓", func(t *testing.T) {
		r := mustMarina(t, append(slices.Clone(status), "-v")...)
		if strings.Contains(r.stdout, "✗") || !strings.Contains(r.stdout, "✓ kind network: 172.30.0.0/16 on br-kind") || !regexp.MustCompile(`dev  slot 1  running  1 node`).MatchString(r.stdout) {
			t.Errorf("status after the migration:\n%s", r.stdout)
		}
		if vm := statusJSON(t); vm["status"] != "Running" {
			t.Errorf("marina's VM after the migration: %v", vm)
		}
		if _, err := os.Stat(filepath.Join(kdir, "klimax")); !os.IsNotExist(err) {
			t.Errorf("klimax's instance folder is still there: %v", err)
		}
	})

	t.Run("the Mac reaches the container it had, with its own source address", func(t *testing.T) {
		if ip := containerIP(t, "klimax-echo", "kind"); ip != echoIP {
			t.Errorf("the echo server moved from %s to %s", echoIP, ip)
		}
		peer, err := dialFromMac(echoIP + ":8080")
		if err != nil || peer != "192.168.64.1" {
			t.Errorf("from the Mac to %s: peer %q, %v", echoIP, peer, err)
		}
		if ip := containerIP(t, "dev-control-plane", "kind"); ip != nodeIP {
			t.Errorf("dev's node moved from %s to %s", nodeIP, ip)
		}
		if out := inGuest(t, "iptables -t nat -S POSTROUTING; iptables -S DOCKER-USER"); klimaxRuleRe.MatchString(out) {
			t.Errorf("klimax's rules are still in the guest:\n%s", out)
		}
		if out := inGuest(t, "ls /usr/local/sbin/no-nat-kind.sh /etc/systemd/system/lima-no-nat-kind.service 2>&1 || true"); !strings.Contains(out, "No such file") {
			t.Errorf("klimax's files are still in the guest:\n%s", out)
		}
	})

	t.Run("the cluster has marina's labels and its kubeconfig reaches it", func(t *testing.T) {
		rows := listClusters(t)
		if len(rows) != 1 || rows[0].Name != "dev" || rows[0].Labels["managed-by"] != "marina" || rows[0].Labels["marina.dev/fleet"] != "demo" {
			t.Errorf("cluster list: %+v", rows)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(home(), ".kube", "marina", "dev.kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		n, err := cs.CoreV1().Nodes().Get(context.Background(), "dev-control-plane", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("through marina's kubeconfig of dev: %v", err)
		}
		if n.Labels["managed-by"] != "marina" || n.Labels["marina.dev/fleet"] != "demo" || n.Labels["klimax.dev/fleet"] != "" || n.Labels["topology.kubernetes.io/region"] != "lab-1" {
			t.Errorf("dev's node labels: %v", n.Labels)
		}
		if _, err := contextClient(t, "dev").CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("through context dev of ~/.kube/config: %v", err)
		}
		if got := userEntries(t, "prod"); got != mine {
			t.Errorf("the user's own entries changed:\n%s\nwant\n%s", got, mine)
		}
		// klimax's config turns its mirrors off (mirrors: []): the cache
		// folder it left is no mirror's, and stays where it is; marina's
		// cache folder, which its VM mounts, was made empty.
		if b, err := os.ReadFile(filepath.Join(kdir, "registry-cache", "registry-dockerio", "docker", "registry", "v2", "blobs", "layer")); err != nil || string(b) != "a cached layer" {
			t.Errorf("klimax's cache of no mirror did not stay: %q %v", b, err)
		}
		if ents, err := os.ReadDir(cacheDir); err != nil || len(ents) != 0 {
			t.Errorf("marina's cache folder: %v %v", ents, err)
		}
	})

	t.Run("a second migrate plans nothing; --cleanup puts klimax's home aside", func(t *testing.T) {
		if r := mustMarina(t, yes(migrate)...); !strings.Contains(r.stdout, "Nothing to migrate") {
			t.Errorf("a second migrate:\n%s", r.stdout)
		}
		mustMarina(t, yes(cleanup)...)
		if _, err := os.Stat(kdir); !os.IsNotExist(err) {
			t.Errorf("~/.klimax after --cleanup: %v", err)
		}
		if m, _ := filepath.Glob(kdir + ".migrated-*"); len(m) != 1 {
			t.Errorf("~/.klimax.migrated-*: %v", m)
		}
		if r := mustMarina(t, "status"); strings.Contains(r.stderr, "migrate") {
			t.Errorf("status still speaks of migrate:\n%s", r.stderr)
		}
	})
}

// readmeCommands are the marina commands of the first sh block in the
// README's section titled title, comments dropped, checked to be the four
// that TestMigrate runs in that order.
func readmeCommands(t *testing.T, title string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## "+title+"\n")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatalf("the README has no %q section with an sh block", title)
	}
	var cmds [][]string
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "marina" {
			t.Fatalf("the README's %q runs %q, not marina", title, line)
		}
		cmds = append(cmds, f[1:])
		got = append(got, strings.Join(f[1:], " "))
	}
	want := []string{"migrate --dry-run", "migrate", "status", "migrate --cleanup"}
	if !slices.Equal(got, want) {
		t.Fatalf("the README's %q commands are %q; this test runs %q: change both together", title, got, want)
	}
	return cmds
}
