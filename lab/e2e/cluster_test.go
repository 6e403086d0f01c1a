package e2e

// marina's clusters in the lab: the real kind CLI creates node containers
// from the lab's stand-in node image (lab/node: a real kube-apiserver and
// etcd behind a stand-in kubeadm) in the real Docker Engine 29; marina then
// installs MetalLB's own manifest, its pool and the CoreDNS change through
// that API server from the mac namespace, over the L3 route, and writes the
// kubeconfigs. No pod runs on the stand-in node, so the test plays the
// controllers (real_test.go runs clusters on the real node image): it marks
// MetalLB's controller, ExternalDNS and CoreDNS Deployments and the speaker
// DaemonSet ready and takes the webhook away, each only for the clusters it
// is told to; a cluster it leaves alone is how a failure after kind is
// injected.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/bcollard/marina/internal/run"
)

const vmIP = "192.168.64.2"

// adminConfig reads cluster name's admin credentials from its control
// plane, for the test's own use before marina wrote any kubeconfig.
func adminConfig(name string, port int) (*rest.Config, error) { return adminConfigAt(name, vmIP, port) }

// adminConfigAt is adminConfig for an API server reached at host.
func adminConfigAt(name, host string, port int) (*rest.Config, error) {
	out, err := exec.Command(labScript, "docker", "exec", name+"-control-plane", "cat", "/etc/kubernetes/admin.conf").Output()
	if err != nil {
		return nil, err
	}
	c, err := clientcmd.Load(out)
	if err != nil {
		return nil, err
	}
	for _, cl := range c.Clusters {
		cl.Server = fmt.Sprintf("https://%s:%d", host, port)
		cl.TLSServerName = "localhost"
	}
	return clientcmd.NewDefaultClientConfig(*c, nil).ClientConfig()
}

// controllers stands in for MetalLB's controller, speaker and webhook, and
// for MetalLB answering LoadBalancer Services, in the clusters it serves.
type controllers struct {
	mu    sync.Mutex
	serve map[string]int    // cluster → API port
	lbIPs map[string]string // cluster → address for LoadBalancer Services
	hosts map[string]string // cluster → the address its API answers on (vmIP when unset)
	stop  chan struct{}
	done  chan struct{}
}

func startControllers(t *testing.T) *controllers {
	c := &controllers{serve: map[string]int{}, lbIPs: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	t.Cleanup(func() { close(c.stop); <-c.done })
	return c
}

func (c *controllers) add(name string, port int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serve[name] = port
}

// addLoopback serves a cluster whose API server the VM publishes on its
// loopback: reached on this Mac's 127.0.0.1, through Lima's mirroring.
func (c *controllers) addLoopback(name string, port int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serve[name] = port
	if c.hosts == nil {
		c.hosts = map[string]string{}
	}
	c.hosts[name] = "127.0.0.1"
}

func (c *controllers) loadBalancer(name, ip string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lbIPs[name] = ip
}

func (c *controllers) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		c.mu.Lock()
		serve := map[string]int{}
		for k, v := range c.serve {
			serve[k] = v
		}
		lbs := map[string]string{}
		for k, v := range c.lbIPs {
			lbs[k] = v
		}
		hosts := map[string]string{}
		for k, v := range c.hosts {
			hosts[k] = v
		}
		c.mu.Unlock()
		for name, port := range serve {
			host := hosts[name]
			if host == "" {
				host = vmIP
			}
			c.tick(name, host, port, lbs[name])
		}
	}
}

// tick makes MetalLB's readiness true in one cluster once its objects are
// there, and gives pending LoadBalancer Services their address.
func (c *controllers) tick(name, host string, port int, lbIP string) {
	if port == 0 {
		out, err := exec.Command(labScript, "docker", "port", name+"-control-plane", "6443/tcp").Output()
		if err != nil {
			return
		}
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		if _, err := fmt.Sscanf(first[strings.LastIndex(first, ":")+1:], "%d", &port); err != nil {
			return
		}
	}
	cfg, err := adminConfigAt(name, host, port)
	if err != nil {
		return // not created yet
	}
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	ctx := context.Background()
	if d, err := cs.AppsV1().Deployments("metallb-system").Get(ctx, "controller", metav1.GetOptions{}); err == nil && d.Status.ObservedGeneration < d.Generation {
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}},
		}
		_, _ = cs.AppsV1().Deployments("metallb-system").UpdateStatus(ctx, d, metav1.UpdateOptions{})
	}
	// ExternalDNS's Deployment: the DNS tests run the real binary beside
	// the cluster, with this Deployment's arguments. CoreDNS's, which
	// marina rolls after changing the Corefile. metrics-server's, which a
	// fleet installs.
	for _, nn := range [][2]string{{"external-dns", "external-dns"}, {"kube-system", "coredns"}, {"kube-system", "metrics-server"}} {
		if d, err := cs.AppsV1().Deployments(nn[0]).Get(ctx, nn[1], metav1.GetOptions{}); err == nil && d.Status.ObservedGeneration < d.Generation {
			n := int32(1)
			if d.Spec.Replicas != nil {
				n = *d.Spec.Replicas
			}
			d.Status = appsv1.DeploymentStatus{
				ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}},
			}
			_, _ = cs.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
	}
	if ds, err := cs.AppsV1().DaemonSets("metallb-system").Get(ctx, "speaker", metav1.GetOptions{}); err == nil && ds.Status.ObservedGeneration < ds.Generation {
		ds.Status = appsv1.DaemonSetStatus{
			ObservedGeneration: ds.Generation, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1,
			UpdatedNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1,
		}
		_, _ = cs.AppsV1().DaemonSets("metallb-system").UpdateStatus(ctx, ds, metav1.UpdateOptions{})
	}
	// The lab's API server cannot call MetalLB's webhook (no pod serves
	// it): take it away, as if it had let the pool through.
	_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "metallb-webhook-configuration", metav1.DeleteOptions{})
	if lbIP == "" {
		return
	}
	svcs, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, s := range svcs.Items {
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lbIP}}
			_, _ = cs.CoreV1().Services(s.Namespace).UpdateStatus(ctx, &s, metav1.UpdateOptions{})
		}
	}
}

// destroyAll destroys the VM and removes what clusters left on the Mac:
// the next test starts from a Mac that never ran marina.
func destroyAll(t testing.TB) {
	marina(t, "destroy", "-y")
	for _, p := range []string{filepath.Join(marinaHome(), "config.yaml"), filepath.Join(marinaHome(), "cache"), filepath.Join(marinaHome(), "slots"), filepath.Join(home(), ".kube")} {
		_ = os.RemoveAll(p)
	}
}

// kubeconfigPath is the lab Mac user's kubeconfig.
func kubeconfigPath() string { return filepath.Join(home(), ".kube", "config") }

// contextClient is a client for context name of the user's kubeconfig, as
// kubectl --context name would make it.
func contextClient(t testing.TB, name string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfigPath()},
		&clientcmd.ConfigOverrides{CurrentContext: name}).ClientConfig()
	if err != nil {
		t.Fatalf("context %s: %v", name, err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func hasContext(t *testing.T, name string) bool {
	t.Helper()
	c, err := clientcmd.LoadFromFile(kubeconfigPath())
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	_, ok := c.Contexts[name]
	return ok
}

type clusterRow struct {
	Name           string
	Num            int
	APIPort        int
	KubeconfigPath string
	Nodes          int
	State          string
	Labels         map[string]string
}

func listClusters(t *testing.T, args ...string) []clusterRow {
	t.Helper()
	r := mustMarina(t, append([]string{"cluster", "list", "-o", "json"}, args...)...)
	var rows []clusterRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("cluster list -o json: %v\n%s", err, r.stdout)
	}
	return rows
}

// nodeContainers are the kind node containers of cluster name, inspected.
func nodeContainers(t *testing.T, name string) []client.ContainerInspectResult {
	t.Helper()
	c, err := client.New(client.WithHost("unix://" + socket()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "io.x-k8s.kind.cluster="+name)})
	if err != nil {
		t.Fatal(err)
	}
	var out []client.ContainerInspectResult
	for _, s := range list.Items {
		in, err := c.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

var poolGVR = schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "ipaddresspools"}

func TestClusters(t *testing.T) {
	needLab(t)
	t.Cleanup(func() { destroyAll(t) })
	writeConfig(t, "registries:\n  mirrors: []\n")
	mustMarina(t, "up")
	password := "pw-cluster"
	startUpstream(t, password)
	image := nodeImage(t)
	writeConfig(t, fmt.Sprintf(`kind:
  nodeVersion: v1.36.4
  nodeImages:
    v1.36.4: %s
  customDnsResolvers:
    - domain: corp.example
      resolvers: [10.0.0.53, "10.0.0.54:5353"]
`, image)+mirrorsConfig("host", password, "https://quay.io"))
	mustMarina(t, "up")
	seedMetalLB(t)
	ctl := startControllers(t)

	t.Run("dry run prints the plan and kind config and changes nothing", func(t *testing.T) {
		r := mustMarina(t, "cluster", "create", "dev", "--dry-run", "-l", "team=net")
		for _, want := range []string{"slot 1", "https://" + vmIP + ":7001", "10.1.0.0/16", "10.11.0.0/16", "172.30.1.1-172.30.1.7", "team=net", "apiServerPort: 7001", "apiServerAddress: 0.0.0.0", "corp.example"} {
			if !strings.Contains(r.stdout+r.stderr, want) {
				t.Errorf("dry run lacks %q:\n%s%s", want, r.stdout, r.stderr)
			}
		}
		if len(nodeContainers(t, "dev")) != 0 {
			t.Error("the dry run created nodes")
		}
		if ents, _ := os.ReadDir(filepath.Join(marinaHome(), "slots")); len(ents) != 0 {
			t.Errorf("the dry run left slot reservations: %v", ents)
		}
	})

	t.Run("bad input is refused before anything changes", func(t *testing.T) {
		for _, args := range [][]string{
			{"cluster", "create", "Dev"},
			{"cluster", "create", strings.Repeat("a", 50)},
			{"cluster", "create", "x", "-l", "kubernetes.io/role=x"},
			{"cluster", "create", "x", "-l", "novalue"},
			{"cluster", "create", "x", "--node-version", "v1.20.0"},
			{"cluster", "create", "x", "--workers", "-1"},
			{"cluster", "delete", "nosuch"},
		} {
			r := marina(t, args...)
			if r.code == 0 || !strings.Contains(r.stderr, "ERROR:") {
				t.Errorf("marina %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
			}
		}
		if len(listClusters(t)) != 0 {
			t.Error("a refused create made a cluster")
		}
	})

	t.Run("create: kind takes marina's config; MetalLB, CoreDNS and the kubeconfig follow", func(t *testing.T) {
		ctl.add("dev", 7001)
		r := mustMarina(t, "cluster", "create", "dev", "--region", "lab-1", "--zone", "lab-1a", "-l", "team=net", "--debug")
		if n := tripCount(t, r.stderr); n != 3 {
			t.Errorf("create made %d guest round trips, want 3 (observe, then kind and beside it the wait for kubeadm's admin kubeconfig)", n)
		}
		if strings.Contains(r.stdout+r.stderr, password) {
			t.Error("create printed the mirror password")
		}
		nodes := nodeContainers(t, "dev")
		if len(nodes) != 1 {
			t.Fatalf("%d node containers", len(nodes))
		}
		n := nodes[0].Container
		if n.Config.Labels["io.x-k8s.kind.cluster"] != "dev" || n.Config.Labels["io.x-k8s.kind.role"] != "control-plane" {
			t.Errorf("labels %v", n.Config.Labels)
		}
		if n.Config.Image != image {
			t.Errorf("image %s, want %s", n.Config.Image, image)
		}
		if _, ok := n.NetworkSettings.Networks["kind"]; !ok {
			t.Errorf("networks %v", n.NetworkSettings.Networks)
		}
		var bound []string
		for p, bs := range n.HostConfig.PortBindings {
			for _, b := range bs {
				bound = append(bound, fmt.Sprintf("%s→%s:%s", p, b.HostIP, b.HostPort))
			}
		}
		if strings.Join(bound, ",") != "6443/tcp→0.0.0.0:7001" {
			t.Errorf("port bindings %v", bound)
		}
		// The mirrors' hosts.toml are in the node, read-only.
		hosts := labDocker(t, "exec", "dev-control-plane", "cat", "/etc/containerd/certs.d/"+upstreamHost+"/hosts.toml")
		if !strings.Contains(hosts, `[host."http://registry-lab:5060"]`) {
			t.Errorf("hosts.toml in the node:\n%s", hosts)
		}
		if _, err := labCmd(t, "docker", "exec", "dev-control-plane", "touch", "/etc/containerd/certs.d/x"); err == nil {
			t.Error("the node can write its certs.d")
		}

		kc := filepath.Join(home(), ".kube", "marina", "dev.kubeconfig")
		if fi, err := os.Stat(kc); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", kc, fi, err)
		}
		if fi, err := os.Stat(kubeconfigPath()); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("~/.kube/config: %v %v", fi, err)
		}
		cs := contextClient(t, "dev")
		node, err := cs.CoreV1().Nodes().Get(context.Background(), "dev-control-plane", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("through context dev: %v", err)
		}
		for k, v := range map[string]string{"managed-by": "marina", "topology.kubernetes.io/region": "lab-1", "topology.kubernetes.io/zone": "lab-1a", "team": "net"} {
			if node.Labels[k] != v {
				t.Errorf("node label %s=%q, want %q", k, node.Labels[k], v)
			}
		}
		cfg, _ := clientcmd.BuildConfigFromFlags("", kc)
		dyn := dynamic.NewForConfigOrDie(cfg)
		pool, err := dyn.Resource(poolGVR).Namespace("metallb-system").Get(context.Background(), "marina", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		addrs, _, _ := unstructured.NestedStringSlice(pool.Object, "spec", "addresses")
		if strings.Join(addrs, ",") != "172.30.1.1-172.30.1.7,172.30.1.16-172.30.1.254" {
			t.Errorf("pool addresses %v", addrs)
		}
		cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cm.Data["Corefile"], "corp.example:53") || !strings.Contains(cm.Data["Corefile"], "forward . 10.0.0.53 10.0.0.54:5353") || !strings.Contains(cm.Data["Corefile"], "kubernetes cluster.local") {
			t.Errorf("Corefile:\n%s", cm.Data["Corefile"])
		}
		rows := listClusters(t)
		if len(rows) != 1 || rows[0].Name != "dev" || rows[0].Num != 1 || rows[0].APIPort != 7001 || rows[0].KubeconfigPath != kc || rows[0].State != "running" || rows[0].Labels["team"] != "net" {
			t.Errorf("list = %+v", rows)
		}
	})

	t.Run("the user's own kubeconfig entries are never touched", func(t *testing.T) {
		addUserEntries(t, "prod", "dev-staging")
		before := userEntries(t, "prod", "dev-staging")
		r := marina(t, "cluster", "create", "prod")
		if r.code == 0 || !strings.Contains(r.stderr, `already has a cluster, context, user named "prod" that marina did not write`) {
			t.Errorf("create prod over the user's prod: exit %d\n%s", r.code, r.stderr)
		}
		if len(nodeContainers(t, "prod")) != 0 {
			t.Error("kind ran although the name clashes")
		}
		r = marina(t, "kubeconfig", "remove", "prod")
		if r.code == 0 || !strings.Contains(r.stderr, "marina did not write") || strings.Contains(r.stdout, "Removed") {
			t.Errorf("kubeconfig remove prod: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := mustMarina(t, "kubeconfig", "remove", "nosuch"); !strings.Contains(r.stdout, "nothing to remove") {
			t.Errorf("kubeconfig remove nosuch: %s", r.stdout)
		}
		if after := userEntries(t, "prod", "dev-staging"); after != before {
			t.Errorf("the user's entries changed:\n%s\nwere:\n%s", after, before)
		}
	})

	t.Run("an export from the VM carrying a plugin runs nothing and merges nothing", func(t *testing.T) {
		mark := filepath.Join(home(), "PWNED")
		plugin := filepath.Join(home(), "plugin")
		if err := os.WriteFile(plugin, []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		// Root in the VM puts an exec plugin into what kind exports.
		hostile := `#!/bin/sh
if [ "$1 $2" = "get kubeconfig" ]; then
	/usr/local/bin/kind.real "$@" | awk '{ print } /^  user:$/ { print "    exec:"; print "      apiVersion: client.authentication.k8s.io/v1"; print "      command: ` + plugin + `"; print "      interactiveMode: Never" }'
	exit
fi
exec /usr/local/bin/kind.real "$@"
`
		inGuest(t, "mv /usr/local/bin/kind /usr/local/bin/kind.real && printf '%s' "+shellQuote(hostile)+" >/usr/local/bin/kind && chmod 0755 /usr/local/bin/kind")
		t.Cleanup(func() { inGuest(t, "mv /usr/local/bin/kind.real /usr/local/bin/kind") })
		if out := inGuest(t, "kind get kubeconfig --name dev"); !strings.Contains(out, "command: "+plugin) {
			t.Fatalf("the hostile kind did not inject the plugin:\n%s", out)
		}
		kcFile := filepath.Join(home(), ".kube", "marina", "dev.kubeconfig")
		before, _ := os.ReadFile(kubeconfigPath())
		own, _ := os.ReadFile(kcFile)
		r := marina(t, "kubeconfig", "merge", "dev")
		if r.code == 0 || !strings.Contains(r.stderr, "user.exec") {
			t.Errorf("merge of a hostile export: exit %d\n%s", r.code, r.stderr)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Error("the plugin ran on the Mac")
		}
		if after, _ := os.ReadFile(kubeconfigPath()); string(after) != string(before) {
			t.Error("~/.kube/config changed")
		}
		if after, _ := os.ReadFile(kcFile); string(after) != string(own) {
			t.Error("dev's own kubeconfig changed")
		}
		// marina's client still works from what it wrote before.
		if _, err := contextClient(t, "dev").CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("dev after the refused merge: %v", err)
		}
	})

	t.Run("nothing else on the vzNAT network reaches nodes, API servers or mirrors", func(t *testing.T) {
		node := containerIP(t, "dev-control-plane", "kind")
		mirror := containerIP(t, "registry-lab", "kind")
		dial := intruder(t)
		for _, addr := range []string{node + ":6443", vmIP + ":7001", mirror + ":5060", mirror + ":5001"} {
			if err := dial(addr); err == nil {
				t.Errorf("another VM on the vzNAT network reached %s", addr)
			}
			c, err := net.DialTimeout("tcp", addr, 3*time.Second)
			if err != nil {
				t.Errorf("the Mac cannot reach %s: %v", addr, err)
				continue
			}
			if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != "192.168.64.1" {
				t.Errorf("the Mac reached %s from %s, not its own address", addr, got)
			}
			c.Close()
		}
		// Control: an accept for that VM lets it reach the API server, so
		// it is marina's rules that keep it out.
		inGuest(t, "iptables -I MARINA-FORWARD 1 -s "+intruderIP+" -j ACCEPT")
		err := dial(vmIP + ":7001")
		inGuest(t, "iptables -D MARINA-FORWARD -s "+intruderIP+" -j ACCEPT")
		if err != nil {
			t.Errorf("with an accept rule the other VM still cannot reach the API server: %v (the test proves nothing)", err)
		}
	})

	t.Run("a signal during create rolls it back; a second stops at once and names what is left", func(t *testing.T) {
		// Nothing marks MetalLB ready in these clusters: create waits there.
		r := signalled(t, []string{"cluster", "create", "sig", "--wait", "2m"}, "sig", syscall.SIGTERM)
		if r.code != 128+int(syscall.SIGTERM) || !strings.Contains(r.stderr, "stopping, and undoing what it can") || !strings.Contains(r.stderr, "the cluster was removed") {
			t.Errorf("create after SIGTERM: exit %d\n%s", r.code, r.stderr)
		}
		if len(nodeContainers(t, "sig")) != 0 || hasContext(t, "sig") {
			t.Error("SIGTERM left the cluster behind")
		}
		if _, err := os.Stat(filepath.Join(home(), ".kube", "marina", "sig.kubeconfig")); !os.IsNotExist(err) {
			t.Errorf("SIGTERM left its kubeconfig: %v", err)
		}

		start := time.Now()
		r = signalled(t, []string{"cluster", "create", "sig2", "--wait", "2m"}, "sig2", syscall.SIGHUP, syscall.SIGINT)
		if d := time.Since(start); r.code != 128+int(syscall.SIGINT) || !strings.Contains(r.stderr, "stopped without waiting for the rollback") ||
			!strings.Contains(r.stderr, "Left behind: cluster sig2 may be half made") || !strings.Contains(r.stderr, "`marina cluster delete sig2` removes it") {
			t.Errorf("create after SIGHUP then SIGINT (%s): exit %d\n%s", d, r.code, r.stderr)
		}
		// What it named removes what is left.
		mustMarina(t, "cluster", "delete", "sig2")
		if len(nodeContainers(t, "sig2")) != 0 {
			t.Error("cluster delete sig2 left nodes")
		}
	})

	t.Run("two creates at the same time get different slots", func(t *testing.T) {
		ctl.add("east", 0) // 0: the port is read from the node once it exists
		ctl.add("west", 0)
		var wg sync.WaitGroup
		res := map[string]result{}
		var mu sync.Mutex
		for _, n := range []string{"east", "west"} {
			wg.Go(func() {
				r := marina(t, "cluster", "create", n)
				mu.Lock()
				res[n] = r
				mu.Unlock()
			})
		}
		wg.Wait()
		for n, r := range res {
			if r.code != 0 {
				t.Fatalf("create %s: exit %d\n%s%s", n, r.code, r.stdout, r.stderr)
			}
		}
		var slots []int
		for _, row := range listClusters(t) {
			slots = append(slots, row.Num)
		}
		sort.Ints(slots)
		if fmt.Sprint(slots) != "[1 2 3]" {
			t.Errorf("slots %v, want [1 2 3]", slots)
		}
	})

	t.Run("label and select", func(t *testing.T) {
		mustMarina(t, "cluster", "label", "east", "-l", "tier=gold", "-l", "team=sre")
		rows := listClusters(t, "-l", "tier=gold")
		if len(rows) != 1 || rows[0].Name != "east" || rows[0].Labels["team"] != "sre" {
			t.Errorf("-l tier=gold: %+v", rows)
		}
		mustMarina(t, "cluster", "label", "east", "-l", "tier-")
		if rows := listClusters(t, "-l", "tier"); len(rows) != 0 {
			t.Errorf("after removing tier: %+v", rows)
		}
		if r := marina(t, "cluster", "list", "-l", "tier in (gold"); r.code != 2 || r.stdout != "" {
			t.Errorf("a broken selector: exit %d, want 2 (a usage error)\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := mustMarina(t, "cluster", "list", "-l", "tier=none"); r.stdout != "" || !strings.Contains(r.stderr, "No cluster's nodes match -l tier=none") {
			t.Errorf("a selector that matches nothing:\n%s%s", r.stdout, r.stderr)
		}
	})

	t.Run("completion offers the clusters, their regions, the contexts and the mirrors", testCompletion)

	t.Run("a failure after kind leaves nothing behind", func(t *testing.T) {
		// Nothing marks MetalLB ready in "broken": its wait fails.
		r := marina(t, "cluster", "create", "broken", "--wait", "15s")
		if r.code == 0 {
			t.Fatal("create succeeded without MetalLB")
		}
		if !strings.Contains(r.stderr, "cluster broken: installing MetalLB failed") || !strings.Contains(r.stderr, "deployment metallb-system/controller") || !strings.Contains(r.stderr, "the cluster was removed") {
			t.Errorf("error:\n%s", r.stderr)
		}
		if n := nodeContainers(t, "broken"); len(n) != 0 {
			t.Errorf("%d node containers are left", len(n))
		}
		if _, err := os.Stat(filepath.Join(home(), ".kube", "marina", "broken.kubeconfig")); !os.IsNotExist(err) {
			t.Errorf("its kubeconfig file is left: %v", err)
		}
		if hasContext(t, "broken") {
			t.Error("its context is left")
		}
		if out := inGuest(t, "ls /etc/marina/clusters"); strings.Contains(out, "broken") {
			t.Errorf("its folder is left in the VM: %s", out)
		}
		if ents, _ := os.ReadDir(filepath.Join(marinaHome(), "slots")); len(ents) != 0 {
			t.Errorf("its slot reservation is left: %v", ents)
		}
	})

	t.Run("verify: the echo server sees this machine's own address", func(t *testing.T) {
		importEcho(t)
		labDocker(t, "run", "-d", "--name", "verify-echo", "--network", "kind", "--ip", "172.30.1.1", echoImage, "http", ":80")
		t.Cleanup(func() { _, _ = labCmd(t, "docker", "rm", "-f", "verify-echo") })
		ctl.loadBalancer("dev", "172.30.1.1")
		mustMarina(t, "kubeconfig", "use", "dev")
		r := mustMarina(t, "cluster", "verify", "--wait", "60s")
		if !regexp.MustCompile(`saw 192\.168\.64\.1:\d+, this machine's own address`).MatchString(r.stdout) {
			t.Errorf("verify:\n%s%s", r.stdout, r.stderr)
		}
		// The workload is gone afterwards.
		nss, err := contextClient(t, "dev").CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range nss.Items {
			if strings.HasPrefix(ns.Name, "marina-verify-") && ns.DeletionTimestamp == nil {
				t.Errorf("namespace %s is left", ns.Name)
			}
		}
	})

	t.Run("a new lima0 address: up points the kubeconfigs at it", func(t *testing.T) {
		// Cleanups run last first: the addresses come back, then up.
		t.Cleanup(func() { marina(t, "up") })
		moveLima0(t)
		r := mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "export the kubeconfigs of dev, east, west again with the API servers at 192.168.70.2") {
			t.Errorf("up --dry-run after the move:\n%s", r.stdout)
		}
		if c, _ := clientcmd.LoadFromFile(kubeconfigPath()); c == nil || !strings.HasPrefix(c.Clusters["dev"].Server, "https://"+vmIP) {
			t.Error("the dry run changed the kubeconfig")
		}
		mustMarina(t, "up")
		c, err := clientcmd.LoadFromFile(kubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"dev", "east", "west"} {
			cl := c.Clusters[n]
			if cl == nil || !strings.HasPrefix(cl.Server, "https://192.168.70.2:") || cl.TLSServerName != "localhost" {
				t.Errorf("cluster %s after up: %+v", n, cl)
			}
		}
		// The certificate has no SAN for the new address; the kubeconfig
		// still verifies it.
		if _, err := contextClient(t, "dev").CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("dev through its kubeconfig after the move: %v", err)
		}
	})

	t.Run("kubeconfig path, env, remove, merge, use", func(t *testing.T) {
		r := mustMarina(t, "kubeconfig", "path", "east")
		if strings.TrimSpace(r.stdout) != filepath.Join(home(), ".kube", "marina", "east.kubeconfig") {
			t.Errorf("path: %s", r.stdout)
		}
		r = mustMarina(t, "kubeconfig", "env", "east")
		if !strings.HasPrefix(r.stdout, "export KUBECONFIG=") {
			t.Errorf("env: %s", r.stdout)
		}
		mustMarina(t, "kubeconfig", "remove", "east")
		if hasContext(t, "east") {
			t.Error("remove kept the context")
		}
		if r := marina(t, "kubeconfig", "use", "east"); r.code == 0 {
			t.Error("use of a removed context succeeded")
		}
		mustMarina(t, "kubeconfig", "merge", "east")
		mustMarina(t, "kubeconfig", "use", "east")
		c, _ := clientcmd.LoadFromFile(kubeconfigPath())
		if c.CurrentContext != "east" {
			t.Errorf("current context %q", c.CurrentContext)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if r := marina(t, "cluster", "delete", "-l", "managed-by=marina"); r.code == 0 || !strings.Contains(r.stderr, "-y") {
			t.Errorf("delete -l without a terminal or -y: exit %d\n%s", r.code, r.stderr)
		}
		mustMarina(t, "cluster", "delete", "east", "west")
		for _, n := range []string{"east", "west"} {
			if len(nodeContainers(t, n)) != 0 || hasContext(t, n) {
				t.Errorf("%s is left", n)
			}
			if _, err := os.Stat(filepath.Join(home(), ".kube", "marina", n+".kubeconfig")); !os.IsNotExist(err) {
				t.Errorf("%s's kubeconfig is left", n)
			}
		}
		mustMarina(t, "cluster", "delete", "-l", "team=net", "-y")
		if rows := listClusters(t); len(rows) != 0 {
			t.Errorf("left: %+v", rows)
		}
		// Deleting dev (a prefix of dev-staging) took only marina's dev.
		for _, n := range []string{"prod", "dev-staging"} {
			if !hasContext(t, n) {
				t.Errorf("the user's %s went", n)
			}
		}
	})
}

// addUserEntries puts entries of the user's own into ~/.kube/config: a
// cluster, a user with a token and a context for each name.
func addUserEntries(t *testing.T, names ...string) {
	t.Helper()
	c, err := clientcmd.LoadFromFile(kubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		c.Clusters[n] = &clientcmdapi.Cluster{Server: "https://" + n + ".corp.example.com"}
		c.AuthInfos[n] = &clientcmdapi.AuthInfo{Token: "token-of-" + n}
		c.Contexts[n] = &clientcmdapi.Context{Cluster: n, AuthInfo: n}
	}
	c.CurrentContext = names[0]
	if err := clientcmd.WriteToFile(*c, kubeconfigPath()); err != nil {
		t.Fatal(err)
	}
}

// userEntries prints the entries of names in ~/.kube/config, and the
// current context.
func userEntries(t *testing.T, names ...string) string {
	t.Helper()
	c, err := clientcmd.LoadFromFile(kubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	out := "current-context: " + c.CurrentContext + "\n"
	for _, n := range names {
		out += fmt.Sprintf("%s: %+v %+v %+v\n", n, c.Clusters[n], c.AuthInfos[n], c.Contexts[n])
	}
	return out
}

// shellQuote quotes s for the guest's shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// signalled runs marina with args, sends it sigs once cluster's node
// container runs and marina waits for MetalLB (one signal after the
// other, 200 ms apart), and waits for it to end.
func signalled(t *testing.T, args []string, cluster string, sigs ...os.Signal) result {
	t.Helper()
	var out, errb run.Buffer
	c := exec.Command(marinaBin, args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	waitFor(t, 3*time.Minute, "the node container of "+cluster, func() bool {
		ns := nodeContainers(t, cluster)
		return len(ns) == 1 && ns[0].Container.State != nil && ns[0].Container.State.Running
	})
	// Into the add-ons, after kind: MetalLB may have begun while kind
	// ran, and its line is the one of kind's end (" ✓ kind  Creating …",
	// without a terminal).
	waitFor(t, time.Minute, "marina to wait for MetalLB after kind", func() bool {
		return strings.Contains(errb.String(), "Installing MetalLB") && strings.Contains(errb.String(), " ✓ kind ")
	})
	for i, s := range sigs {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		_ = c.Process.Signal(s)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		_ = c.Process.Kill()
		t.Fatalf("marina did not end after %v:\n%s", sigs, errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: c.ProcessState.ExitCode()}
}

// seedMetalLB puts MetalLB's manifest, from its Go module, into marina's
// download cache: nothing can be downloaded in the lab.
func seedMetalLB(t testing.TB) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "go.universe.tf/metallb@v0.16.2").Output()
	if err != nil {
		t.Fatalf("go mod download metallb: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(mod.Dir, "config", "manifests", "metallb-native.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(marinaHome(), "cache", "metallb", "v0.16.2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metallb-native.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
