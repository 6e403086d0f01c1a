package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The Mac reaches a cluster's API server at the VM's lima0 address.
const vmAddr = "192.168.64.2"

// labLines runs lab/lab with args and returns the lines it printed on
// standard output; a failure ends the test with what it said.
func labLines(t testing.TB, args ...string) []string {
	t.Helper()
	c := exec.Command(labScript, args...)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("lab/lab %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The node images' references: the stand-in has marina's default node
// version as its tag, the real image the Kubernetes it carries.
var (
	standInRefRe = regexp.MustCompile(`^localhost:\d+/kindest/node:v1\.36\.4@sha256:[0-9a-f]{64}$`)
	realRefRe    = regexp.MustCompile(`^localhost:\d+/kindest/node:v1\.36\.1@sha256:[0-9a-f]{64}$`)
)

// nodeImage returns `lab/lab node-image --stand-in`'s digest-pinned reference.
func nodeImage(t testing.TB) string { t.Helper(); return labNodeImage(t, true) }

// realNodeImage returns `lab/lab node-image`'s: the real node image.
func realNodeImage(t testing.TB) string { t.Helper(); return labNodeImage(t, false) }

func labNodeImage(t testing.TB, standIn bool) string {
	t.Helper()
	args, re := []string{"node-image"}, realRefRe
	if standIn {
		args, re = append(args, "--stand-in"), standInRefRe
	}
	lines := labLines(t, args...)
	if ref := lines[len(lines)-1]; len(lines) == 1 && re.MatchString(ref) {
		return ref
	}
	t.Fatalf("lab/lab %s printed %q, want one reference matching %s", strings.Join(args, " "), lines, re)
	return ""
}

// kindCluster is a cluster the test made with the real kind CLI in the guest.
type kindCluster struct {
	name string
	port int
	cs   kubernetes.Interface
}

// kindCreate runs `kind create cluster` in the guest, as marina does, with
// a marina-style config: the API server published on 0.0.0.0:port, the
// slot's subnets, a node label, the VM's address as a certificate SAN and
// marina's containerd patch. It returns a client for the cluster as the Mac
// sees it (kind's kubeconfig, server rewritten to the VM's address).
func kindCreate(t *testing.T, ref, name string, port, workers int) *kindCluster {
	t.Helper()
	var nodes strings.Builder
	for _, role := range append([]string{"control-plane"}, strings.Split(strings.Repeat("worker,", workers), ",")...) {
		if role == "" {
			continue
		}
		fmt.Fprintf(&nodes, "  - role: %s\n    labels:\n      marina.test/cluster: %s\n", role, name)
	}
	cfg := fmt.Sprintf(`kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
%snetworking:
  apiServerAddress: 0.0.0.0
  apiServerPort: %d
  serviceSubnet: 10.%d.0.0/16
  podSubnet: 10.%d.0.0/16
kubeadmConfigPatches:
  - |
    kind: ClusterConfiguration
    apiServer:
      certSANs: [%q]
containerdConfigPatches:
  - |
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "/etc/containerd/certs.d"
`, nodes.String(), port, 100+port%100, 200+port%100, vmAddr)
	// The guest's /tmp is the lab's vm/tmp.
	if err := os.WriteFile(filepath.Join(labRoot(), "vm", "tmp", name+".yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	kubeconfig := "/tmp/" + name + ".kubeconfig" // in the guest; keeps kind off ~/.kube
	t.Cleanup(func() {
		_, _ = labCmd(t, "vm", "kind", "delete", "cluster", "--name", name, "--kubeconfig", kubeconfig)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, labScript, "vm", "kind", "create", "cluster", "--name", name,
		"--image", ref, "--config", "/tmp/"+name+".yaml", "--kubeconfig", kubeconfig, "--wait", "2m").CombinedOutput()
	if err != nil {
		logs, _ := labCmd(t, "docker", "logs", name+"-control-plane")
		apiLog, _ := labCmd(t, "docker", "exec", name+"-control-plane", "tail", "-n", "30", "/var/log/kube-apiserver.log")
		t.Fatalf("kind create cluster %s: %v\n%s\nnode log:\n%s\nAPI server log:\n%s", name, err, out, logs, apiLog)
	}
	t.Logf("kind create cluster %s: %s", name, time.Since(start).Round(time.Second))

	raw, err := exec.Command(labScript, "vm", "kind", "get", "kubeconfig", "--name", name).Output()
	if err != nil {
		t.Fatalf("kind get kubeconfig --name %s: %v", name, err)
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	cl := kc.Clusters["kind-"+name]
	if cl == nil {
		t.Fatalf("kind's kubeconfig has no cluster kind-%s", name)
	}
	if want := fmt.Sprintf("https://0.0.0.0:%d", port); cl.Server != want {
		t.Errorf("kind's kubeconfig server %q, want %q", cl.Server, want)
	}
	cl.Server = fmt.Sprintf("https://%s:%d", vmAddr, port)
	rc, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	rc.Timeout = 20 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &kindCluster{name: name, port: port, cs: cs}
}

// check looks at the cluster from the Mac: its nodes with their labels and
// Ready, kubeadm's CoreDNS ConfigMap, the version the API server reports.
func (k *kindCluster) check(t *testing.T, workers int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := k.cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("%s: the API server through %s:%d: %v", k.name, vmAddr, k.port, err)
	}
	if v.GitVersion != "v1.36.1" {
		t.Errorf("%s: API server version %q", k.name, v.GitVersion)
	}
	nodes, err := k.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "marina.test/cluster=" + k.name})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{k.name + "-control-plane": true}
	for i := 1; i <= workers; i++ {
		w := k.name + "-worker"
		if i > 1 {
			w += fmt.Sprint(i)
		}
		want[w] = true
	}
	for _, n := range nodes.Items {
		if !want[n.Name] {
			t.Errorf("%s: unexpected node %s", k.name, n.Name)
			continue
		}
		delete(want, n.Name)
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			t.Errorf("%s: node %s is not Ready: %+v", k.name, n.Name, n.Status.Conditions)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == "node.kubernetes.io/not-ready" {
				t.Errorf("%s: node %s is tainted not-ready", k.name, n.Name)
			}
		}
		_, cp := n.Labels["node-role.kubernetes.io/control-plane"]
		if cp != strings.HasSuffix(n.Name, "-control-plane") {
			t.Errorf("%s: node %s labels %v", k.name, n.Name, n.Labels)
		}
	}
	if len(want) > 0 {
		t.Errorf("%s: nodes with the config's label missing: %v (listed %d)", k.name, want, len(nodes.Items))
	}
	cm, err := k.cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["Corefile"], "kubernetes cluster.local in-addr.arpa ip6.arpa") {
		t.Errorf("%s: Corefile:\n%s", k.name, cm.Data["Corefile"])
	}
}

// TestKindNode runs the real kind CLI in the guest with the lab's node
// image: two clusters at once (one with a worker), each with a real API
// server that the Mac reaches on the VM's address, then deletes them.
func TestKindNode(t *testing.T) {
	needLab(t)
	mustMarina(t, "up") // the VM and marina's kind network
	t.Cleanup(func() { marina(t, "destroy", "-y") })

	ref := nodeImage(t)
	if again := nodeImage(t); again != ref {
		t.Errorf("lab/lab node-image changed its answer: %s, then %s", ref, again)
	}
	labDocker(t, "image", "inspect", ref) // kind will not try to pull it

	t1 := kindCreate(t, ref, "t1", 7009, 0)
	t2 := kindCreate(t, ref, "t2", 7010, 1)
	t1.check(t, 0)
	t2.check(t, 1)

	// The control-plane taint is gone from the single-node cluster (kind
	// removes it), not from the one with a worker.
	n, err := t1.cs.CoreV1().Nodes().Get(context.Background(), "t1-control-plane", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) != 0 {
		t.Errorf("t1-control-plane taints %v", n.Spec.Taints)
	}

	for _, k := range []*kindCluster{t1, t2} {
		if out, err := labCmd(t, "vm", "kind", "delete", "cluster", "--name", k.name, "--kubeconfig", "/tmp/"+k.name+".kubeconfig"); err != nil {
			t.Fatalf("kind delete cluster %s: %v\n%s", k.name, err, out)
		}
		if left := labDocker(t, "ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster="+k.name); left != "" {
			t.Errorf("kind delete cluster %s left containers: %s", k.name, left)
		}
	}
}
