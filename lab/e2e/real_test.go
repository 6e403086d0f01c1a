package e2e

// marina's clusters on the lab's real node image (lab/node/pack real):
// systemd, containerd, kubelet and kubeadm v1.36.1, built here, with the
// real kind CLI. Nothing here plays a controller: MetalLB's controller and
// speaker run as pods, pulled by the nodes' containerd through marina's
// mirrors from lab-registries (lab/lab upstream), which answers as quay.io
// and registry.k8s.io on the kind network.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/guest"
)

// macAddr is the Mac's own address on the vzNAT bridge.
const macAddr = "192.168.64.1"

// startRegistries starts lab-registries and returns the digest-pinned
// references of the images it serves, by repository.
func startRegistries(t testing.TB) map[string]string {
	t.Helper()
	lines := labLines(t, "upstream")
	refs := map[string]string{}
	for _, l := range lines {
		if repo, _, ok := strings.Cut(l, "@sha256:"); ok {
			repo, _, _ = strings.Cut(repo, ":")
			refs[repo] = l
		}
	}
	if refs["registry.k8s.io/e2e-test-images/agnhost"] == "" {
		t.Fatalf("lab/lab upstream printed no agnhost image: %q", lines)
	}
	return refs
}

// realConfig is marina's config for clusters on the real image: the
// default mirrors (their upstreams are lab-registries here) plus one for
// registry.k8s.io, the lab's registry image, and corp.example's resolver.
func realConfig(image, corpDNS string) string {
	return fmt.Sprintf(`kind:
  nodeVersion: v1.36.1
  nodeImages:
    v1.36.1: %s
  customDnsResolvers:
    - domain: corp.example
      resolvers: [%s]
registries:
  image: %s
  mirrors:
    - name: registry-dockerio
      port: 5030
      remoteURL: https://registry-1.docker.io
    - name: registry-quayio
      port: 5010
      remoteURL: https://quay.io
    - name: registry-k8sio
      port: 5070
      remoteURL: https://registry.k8s.io
`, image, corpDNS, registryImage())
}

// podsReady waits until every pod of ns matching selector is Running and
// Ready, and there are want of them.
func podsReady(t *testing.T, cs *kubernetes.Clientset, ns, selector string, want int, within time.Duration) {
	t.Helper()
	var last string
	deadline := time.Now().Add(within)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			ready := 0
			var states []string
			for _, p := range pods.Items {
				ok := false // Running, with a Ready condition that is True
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady {
						ok = c.Status == corev1.ConditionTrue && p.Status.Phase == corev1.PodRunning
					}
				}
				if ok {
					ready++
				}
				states = append(states, p.Name+"="+string(p.Status.Phase))
			}
			if ready == want && len(pods.Items) == want {
				return
			}
			last = strings.Join(states, " ")
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s pods %q: want %d Running and Ready after %v; have %s", ns, selector, want, within, last)
		}
		time.Sleep(2 * time.Second)
	}
}

// nodesReady waits until the cluster has want nodes, all Ready.
func nodesReady(t *testing.T, cs *kubernetes.Clientset, want int, within time.Duration) {
	t.Helper()
	waitFor(t, within, fmt.Sprintf("%d Ready nodes", want), func() bool {
		nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil || len(nodes.Items) != want {
			return false
		}
		for _, n := range nodes.Items {
			ready := false // a node that reports no Ready condition is not
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status == corev1.ConditionTrue
				}
			}
			if !ready {
				return false
			}
		}
		return true
	})
}

// mirrorCounters are marina registry list's blob counters by mirror:
// hits (served from its cache) and misses (fetched from its upstream).
func mirrorCounters(t *testing.T) map[string][2]uint64 {
	t.Helper()
	r := mustMarina(t, "registry", "list", "-o", "json")
	var rows []struct {
		Name  string
		Blobs *struct{ Hits, Misses uint64 }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("registry list -o json: %v\n%s", err, r.stdout)
	}
	out := map[string][2]uint64{}
	for _, row := range rows {
		var c [2]uint64
		if row.Blobs != nil {
			c = [2]uint64{row.Blobs.Hits, row.Blobs.Misses}
		}
		out[row.Name] = c
	}
	return out
}

// mirrorsAnswer says whether marina registry list shows every mirror of
// names running, and answering for its counters.
func mirrorsAnswer(t *testing.T, names []string) bool {
	t.Helper()
	r := mustMarina(t, "registry", "list", "-o", "json")
	var rows []struct {
		Name, State string
		Blobs       *struct{ Hits, Misses uint64 }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("registry list -o json: %v\n%s", err, r.stdout)
	}
	answer := map[string]bool{}
	for _, row := range rows {
		answer[row.Name] = row.State == "running" && row.Blobs != nil
	}
	for _, n := range names {
		if !answer[n] {
			return false
		}
	}
	return true
}

// created is what marina cluster create -o json says of a create's time.
type created struct {
	Seconds float64 `json:"seconds"`
	Phases  []struct {
		Step    string  `json:"step"`
		Start   float64 `json:"start"`
		Seconds float64 `json:"seconds"`
	} `json:"phases"`
}

// timedCreate runs marina cluster create args… -o json, logs its time and
// the split of it marina reports (each step of kind and of each add-on,
// from the create's start), and returns the create's wall time and kind's.
func timedCreate(t testing.TB, args ...string) (total, kind time.Duration) {
	t.Helper()
	start := time.Now()
	r := mustMarina(t, append(append([]string{"cluster", "create"}, args...), "-o", "json")...)
	total = time.Since(start)
	var c created
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil || len(c.Phases) == 0 {
		t.Fatalf("cluster create -o json: %v\n%s", err, r.stdout)
	}
	var b strings.Builder
	for _, p := range c.Phases {
		fmt.Fprintf(&b, "\n  %6.1fs %+6.1fs  %s", p.Start, p.Seconds, p.Step)
		if strings.HasPrefix(p.Step, "kind: Creating cluster ") { // kind's whole run; its stages are "kind: " too
			kind = time.Duration(p.Seconds * float64(time.Second))
		}
	}
	line := fmt.Sprintf("marina cluster create %s: %v in all (marina says %.1fs), kind %v, after kind %v:%s", strings.Join(args, " "),
		total.Round(100*time.Millisecond), c.Seconds, kind.Round(100*time.Millisecond), (total - kind).Round(100*time.Millisecond), b.String())
	if _, bench := t.(*testing.B); bench {
		// A benchmark's log is cut after ten lines: the split goes
		// straight to the output.
		fmt.Fprintln(os.Stderr, line)
	} else {
		t.Logf("%s", line)
	}
	return total, kind
}

// corpDNS runs a DNS server for corp.example on the kind network, as a
// company resolver a cluster's customDnsResolvers name would be (the
// lab's CoreDNS image), and returns its address.
func corpDNS(t *testing.T, coredns string) string {
	t.Helper()
	dir := filepath.Join(labRoot(), "vm", "tmp", "corp-dns") // the guest's /tmp/corp-dns
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	corefile := "corp.example:53 {\n    hosts {\n        10.9.8.7 db.corp.example\n    }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "Corefile"), []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _ = labCmd(t, "docker", "rm", "-f", "corp-dns")
	labDocker(t, "run", "-d", "--name", "corp-dns", "--network", "kind", "-v", "/tmp/corp-dns:/etc/coredns:ro",
		coredns, "-conf", "/etc/coredns/Corefile")
	t.Cleanup(func() { _, _ = labCmd(t, "docker", "rm", "-f", "corp-dns") })
	return containerIP(t, "corp-dns", "kind")
}

// podLookup runs the agnhost stand-in's lookup of name in a pod of the
// default namespace and returns what it printed.
func podLookup(t *testing.T, cs *kubernetes.Clientset, image, name string) string {
	t.Helper()
	return podRun(t, cs, image, "lookup", name)
}

// podRun runs the agnhost stand-in with args in a pod of the default
// namespace and returns what it printed; it fails the test when the pod
// fails.
func podRun(t *testing.T, cs *kubernetes.Clientset, image string, args ...string) string {
	t.Helper()
	ctx := context.Background()
	name := strings.Join(args, " ")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: args[0] + "-"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: args[0], Image: image, Args: args}},
		},
	}
	p, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}) }()
	var phase corev1.PodPhase
	waitFor(t, 2*time.Minute, "the pod of "+name+" to end", func() bool {
		got, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		if err == nil {
			phase = got.Status.Phase
		}
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed
	})
	logs, err := cs.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s: %v", p.Name, err)
	}
	if phase != corev1.PodSucceeded {
		t.Fatalf("a pod's %s failed: %s", name, logs)
	}
	return strings.TrimSpace(string(logs))
}

// webService is an agnhost echo Deployment behind a LoadBalancer Service
// web in ns, which MetalLB gives an address and ExternalDNS a name.
func webService(t *testing.T, cs *kubernetes.Clientset, ns, image string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: image, Args: []string{"netexec", "--http-port=8080"},
				}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector:              labels,
			Ports:                 []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	waitFor(t, 2*time.Minute, "MetalLB to give web an address", func() bool {
		got, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err == nil && len(got.Status.LoadBalancer.Ingress) == 1 {
			ip = got.Status.LoadBalancer.Ingress[0].IP
		}
		return ip != ""
	})
	return ip
}

func TestRealCluster(t *testing.T) {
	needLab(t)
	t.Cleanup(func() { destroyAll(t) })
	writeConfig(t, "registries:\n  image: "+registryImage()+"\n  mirrors: []\n")
	mustMarina(t, "up")
	refs := startRegistries(t)
	agnhost := refs["registry.k8s.io/e2e-test-images/agnhost"]
	t.Cleanup(func() { _, _ = labCmd(t, "upstream", "stop") })
	corp := corpDNS(t, dnsImageRefs(t)["coredns"])
	// The real node image by kind's name, as marina pins kindest/node: not
	// in the guest's Docker, which pulls it through the Docker Hub mirror.
	image := refs["docker.io/kindest/node"]
	if image == "" {
		t.Fatal("lab/lab upstream printed no kindest/node image")
	}
	// Every cluster gets metrics-server (kind.metricsServer), and prefetch
	// --addons its image. Its release manifest pins the official image by
	// digest, which no build here can have: kind.addonImages runs the
	// lab's metrics-server instead, as a user's own copy would be.
	msVersion := addons.MetricsServerVersions()[len(addons.MetricsServerVersions())-1]
	ms := refs["registry.k8s.io/metrics-server/metrics-server"]
	if ms == "" {
		t.Fatal("lab/lab upstream printed no metrics-server image")
	}
	cfg := strings.Replace(realConfig(image, corp), "kind:\n", fmt.Sprintf("kind:\n  metricsServer: true\n  addonImages:\n    registry.k8s.io/metrics-server/metrics-server:%s: %s\n", msVersion, ms), 1)
	writeConfig(t, cfg)
	mustMarina(t, "up")
	seedMetalLB(t)
	seedMetricsServer(t, msVersion)

	// The add-ons' images and agnhost go into empty caches before any
	// cluster exists; the create then pulls them from the caches.
	var prefetched map[string][2]uint64
	t.Run("prefetch fills the caches before any cluster; a second run fetches nothing", func(t *testing.T) {
		mustMarina(t, "registry", "clean-cache", "-y")
		r := mustMarina(t, "registry", "prefetch", "--addons", agnhost)
		out := r.stdout + r.stderr
		for _, want := range []string{"agnhost:", "metrics-server:", "fetched", "into registry-k8sio", "into registry-quayio", "0 already cached"} {
			if !strings.Contains(out, want) {
				t.Errorf("first prefetch does not say %q:\n%s", want, out)
			}
		}
		prefetched = mirrorCounters(t)
		if q, k := prefetched["registry-quayio"], prefetched["registry-k8sio"]; q[1] == 0 || k[1] == 0 {
			t.Errorf("prefetch fetched no blob from the upstreams: %v", prefetched)
		}
		r = mustMarina(t, "registry", "prefetch", "--addons", agnhost)
		out = r.stdout + r.stderr
		if !strings.Contains(out, " 0 fetched (0B)") || strings.Contains(out, "blobs of") { // "Fetching X through M (n blobs of N, …)"
			t.Errorf("a second prefetch fetched again:\n%s", out)
		}
		if again := mirrorCounters(t); !maps.Equal(again, prefetched) {
			t.Errorf("a second prefetch moved the blob counters: %v, then %v", prefetched, again)
		}
	})

	t.Run("create: nodes Ready, CoreDNS, kube-proxy and MetalLB running by their own probes", func(t *testing.T) {
		timedCreate(t, "dev", "--workers", "1")
		cs := contextClient(t, "dev")
		nodesReady(t, cs, 2, 2*time.Minute)
		podsReady(t, cs, "kube-system", "k8s-app=kube-dns", 2, 3*time.Minute)
		podsReady(t, cs, "kube-system", "k8s-app=kube-proxy", 2, time.Minute)
		podsReady(t, cs, "kube-system", "app=kindnet", 2, time.Minute)
		podsReady(t, cs, "metallb-system", "component=controller", 1, time.Minute)
		podsReady(t, cs, "metallb-system", "component=speaker", 2, time.Minute)
		// The control plane alone is ingress-ready, and cluster list says so.
		nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			if cp := strings.HasSuffix(n.Name, "-control-plane"); cp != (n.Labels["ingress-ready"] == "true") {
				t.Errorf("node %s has ingress-ready=%q", n.Name, n.Labels["ingress-ready"])
			}
		}
		if rows := listClusters(t, "-l", "ingress-ready=true"); len(rows) != 1 || rows[0].Name != "dev" {
			t.Errorf("cluster list -l ingress-ready=true: %+v", rows)
		}
	})

	t.Run("the VM's Docker pulled the node image through the Docker Hub mirror, and registry list says how much it is", func(t *testing.T) {
		if got := labDocker(t, "info", "-f", "{{json .RegistryConfig.Mirrors}}"); !strings.Contains(got, "http://127.0.0.2:5555") {
			t.Errorf("the guest's Docker has registry mirrors %s", got)
		}
		if c := mirrorCounters(t); c["registry-dockerio"][1] <= prefetched["registry-dockerio"][1] {
			t.Errorf("registry-dockerio fetched nothing for the node image: %v, then %v", prefetched["registry-dockerio"], c["registry-dockerio"])
		}
		rows := registryRows(t)
		hub := rows["registry-dockerio"]
		if hub.NodeImageBytes < 1e9 || hub.NodeImageBytes > hub.CacheBytes {
			t.Errorf("registry-dockerio: node images %d of a cache of %d bytes, want the 1 GB node image", hub.NodeImageBytes, hub.CacheBytes)
		}
		if q := rows["registry-quayio"]; q.NodeImageBytes != 0 {
			t.Errorf("registry-quayio has node images: %d", q.NodeImageBytes)
		}
		if out := mustMarina(t, "registry", "list").stdout; !nodeShare.MatchString(out) {
			t.Errorf("registry list does not show the node images' share:\n%s", out)
		}
		if out := marina(t, "status").stdout; !strings.Contains(out, "registry-dockerio holds ") || !strings.Contains(out, " of node images") {
			t.Errorf("status does not show the node images' share:\n%s", out)
		}
	})

	imageLoad(t, dnsImageRefs(t)["coredns"])

	t.Run("the nodes pulled the prefetched images from the quay.io and registry.k8s.io caches", func(t *testing.T) {
		c := mirrorCounters(t)
		for _, m := range []string{"registry-quayio", "registry-k8sio"} { // MetalLB's images; ExternalDNS's
			if c[m][0] <= prefetched[m][0] || c[m][1] != prefetched[m][1] {
				t.Errorf("%s: hits/misses %v after prefetch, %v after create: want more hits and no new miss", m, prefetched[m], c[m])
			}
		}
	})

	t.Run("verify from the Mac: the real MetalLB's address, the Mac's own source", func(t *testing.T) {
		r := mustMarina(t, "cluster", "verify", "dev", "--image", agnhost)
		if !strings.Contains(r.stdout+r.stderr, "this machine's own address") {
			t.Errorf("verify:\n%s%s", r.stdout, r.stderr)
		}
	})

	t.Run("a pod resolves a customDnsResolvers name through the cluster's CoreDNS", func(t *testing.T) {
		if got := podLookup(t, contextClient(t, "dev"), agnhost, "db.corp.example."); got != "10.9.8.7" {
			t.Errorf("db.corp.example from a pod: %q, want 10.9.8.7", got)
		}
	})

	t.Run("kubectl top nodes answers on a cluster made with kind.metricsServer", func(t *testing.T) {
		podsReady(t, contextClient(t, "dev"), "kube-system", "k8s-app=metrics-server", 1, 2*time.Minute)
		var out []byte
		waitFor(t, 3*time.Minute, "kubectl top nodes to answer", func() bool {
			var err error
			out, err = exec.Command(labCacheBin("kubectl"), "--kubeconfig", kubeconfigPath(), "--context", "dev", "top", "nodes").CombinedOutput()
			return err == nil && strings.Contains(string(out), "dev-control-plane") && strings.Contains(string(out), "dev-worker")
		})
		t.Logf("kubectl top nodes:\n%s", out)
	})

	t.Run("in the VM: kubectl of the nodes' minor; the VM and a pod reach the Mac as host.docker.internal", func(t *testing.T) {
		if out := mustMarina(t, "shell", "--", "kubectl", "version", "--client").stdout; !strings.Contains(out, "Client Version: v1.36.") {
			t.Errorf("kubectl version --client in the VM:\n%s", out)
		}
		// With kind's kubeconfig, as docs/vm.md says.
		if out := mustMarina(t, "shell", "--", "sh", "-c", "kind get kubeconfig --name dev >/tmp/dev.kubeconfig && kubectl --kubeconfig /tmp/dev.kubeconfig get nodes -o name").stdout; !strings.Contains(out, "node/dev-control-plane") {
			t.Errorf("kubectl get nodes in the VM:\n%s", out)
		}
		if rec := inGuest(t, "cat "+guest.RecordPath); !strings.Contains(rec, "\nkubectl=v1.36.") {
			t.Errorf("the VM's provisioning record has no kubectl:\n%s", rec)
		}
		// Lima's host resolver answers host.docker.internal with the Mac
		// on the user-mode network: the lab's Mac has that address.
		const slirpMac = "192.168.5.2"
		if out := mustMarina(t, "shell", "--", "getent", "ahostsv4", "host.docker.internal").stdout; !strings.HasPrefix(out, slirpMac+" ") {
			t.Errorf("host.docker.internal in the VM:\n%s", out)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(slirpMac, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Fprintf(c, "the Mac answers %s\n", c.RemoteAddr())
				c.Close()
			}
		}()
		cs := contextClient(t, "dev")
		if got := podLookup(t, cs, agnhost, "host.docker.internal"); got != slirpMac {
			t.Errorf("host.docker.internal from a pod: %q, want %s", got, slirpMac)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if got := podRun(t, cs, agnhost, "dial", fmt.Sprintf("host.docker.internal:%d", port)); !strings.HasPrefix(got, "the Mac answers ") {
			t.Errorf("a pod's connection to host.docker.internal:%d: %q", port, got)
		}
	})

	var webIP string
	t.Run("a Service's name: ExternalDNS in the cluster, answered from the Mac and from a pod", func(t *testing.T) {
		cs := contextClient(t, "dev")
		ip := webService(t, cs, "shop", agnhost)
		webIP = ip
		name := "web.shop.dev.demo.internal"
		took := waitAnswer(t, name, ip, 90*time.Second)
		t.Logf("%s answered %s from the Mac %v after MetalLB gave the address", name, ip, took.Round(10*time.Millisecond))
		if got := podLookup(t, cs, agnhost, name+"."); got != ip {
			t.Errorf("%s from a pod: %q, want %s", name, got, ip)
		}
		// The Service keeps the client's address (externalTrafficPolicy
		// Local): the echo server sees the Mac's own.
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + ip + "/clientip")
		if err != nil {
			t.Fatalf("GET http://%s/clientip from the Mac: %v", ip, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if host, _, _ := strings.Cut(string(body), ":"); host != macAddr {
			t.Errorf("web at %s saw the Mac as %q, want %s:PORT", ip, body, macAddr)
		}
	})

	if webIP != "" {
		podRouting(t, cfg, agnhost)
		stopStart(t, agnhost, webIP)
		dashboardLab(t, agnhost, webIP)
		upgradeRestart(t, agnhost, webIP)
	}
	logsArchive(t, agnhost)

	t.Run("offline: mirrors that start with no upstream stay up, up says so once, doctor warns", func(t *testing.T) {
		if out, err := labCmd(t, "upstream", "stop"); err != nil {
			t.Fatalf("lab/lab upstream stop: %v\n%s", err, out)
		}
		// As in a VM that boots on a plane: every mirror starts again with
		// no upstream to ask (Docker's DNS no longer knows its name).
		mirrors := []string{"registry-dockerio", "registry-quayio", "registry-k8sio"}
		labDocker(t, append([]string{"restart"}, mirrors...)...)
		waitFor(t, time.Minute, "the mirrors to answer again", func() bool { return mirrorsAnswer(t, mirrors) })
		if got := labDocker(t, append([]string{"inspect", "-f", "{{.Name}} {{.State.Status}} {{.RestartCount}}"}, mirrors...)...); strings.Count(got, " running 0") != len(mirrors) {
			t.Errorf("mirrors started offline did not stay up:\n%s", got)
		}
		up := mustMarina(t, "up")
		if got := up.stdout + up.stderr; strings.Count(got, "offline: no mirror's upstream answers from the VM") != 1 || !strings.Contains(got, "images not in them cannot be pulled") {
			t.Errorf("up offline said:\n%s", got)
		}
		rep, _ := doctor(t, false)
		for _, m := range mirrors {
			if st, f, _ := rep.check(t, "mirror "+m); st != "warn" || !strings.Contains(f, "serving from its cache") {
				t.Errorf("doctor offline, mirror %s: %s: %s", m, st, f)
			}
		}
		nodesReady(t, contextClient(t, "dev"), 2, time.Minute)
	})

	t.Run("the network back: a mirror that started offline reaches its upstream again, restarted by no one", func(t *testing.T) {
		const m = "registry-k8sio"
		started := labDocker(t, "inspect", "-f", "{{.State.StartedAt}}", m)
		const reached = "Challenge established with upstream" // distribution's log of its first answer from the upstream
		if logs := labDocker(t, "logs", "--since", started, m); strings.Contains(logs, reached) {
			t.Fatalf("%s reached its upstream while it was gone:\n%s", m, logs)
		}
		if out, err := labCmd(t, "upstream"); err != nil {
			t.Fatalf("lab/lab upstream: %v\n%s", err, out)
		}
		// By tag: the mirror asks its upstream which digest it names now.
		byTag, _, _ := strings.Cut(agnhost, "@")
		mustMarina(t, "registry", "prefetch", byTag)
		if logs := labDocker(t, "logs", "--since", started, m); !strings.Contains(logs, reached) {
			t.Errorf("%s did not reach its upstream once it was back:\n%s", m, logs)
		}
		if now := labDocker(t, "inspect", "-f", "{{.State.StartedAt}}", m); now != started {
			t.Errorf("%s was restarted (%s, then %s)", m, started, now)
		}
		rep, _ := doctor(t, false)
		if st, f, _ := rep.check(t, "mirror "+m); st != "ok" {
			t.Errorf("doctor with the network back, mirror %s: %s: %s", m, st, f)
		}
	})

	t.Run("destroy, then up with no upstream: a cluster of a used version comes from the caches alone", func(t *testing.T) {
		// The guest's disk goes (its Docker's images, lab-registries); the
		// caches on the Mac stay.
		mustMarina(t, "destroy", "-y")
		// The new VM's mirrors were not running when up looked: it asks
		// their upstreams once they run, and says it is offline once.
		if up := mustMarina(t, "up"); strings.Count(up.stderr, "offline: no mirror's upstream answers from the VM") != 1 {
			t.Errorf("up of a new VM offline said:\n%s", up.stderr)
		}
		if got := labDocker(t, "ps", "-a", "--format", "{{.Names}}"); strings.Contains(got, "lab-registries") {
			t.Fatalf("the upstream survived destroy:\n%s", got)
		}
		if _, err := labCmd(t, "docker", "image", "inspect", image); err == nil {
			t.Fatalf("the new VM's Docker has the node image before any create")
		}
		timedCreate(t, "two")
		cs := contextClient(t, "two")
		nodesReady(t, cs, 1, 2*time.Minute)
		podsReady(t, cs, "kube-system", "k8s-app=kube-dns", 2, time.Minute)
		podsReady(t, cs, "metallb-system", "component=controller", 1, time.Minute)
		podsReady(t, cs, "external-dns", "app.kubernetes.io/name=external-dns", 1, time.Minute)
		c := mirrorCounters(t) // the mirrors' containers are new: counters from zero
		if h := c["registry-dockerio"]; h[0] == 0 || h[1] != 0 {
			t.Errorf("registry-dockerio hits/misses %v: want the node image from the cache alone", h)
		}
		for _, m := range []string{"registry-quayio", "registry-k8sio"} {
			if c[m][0] == 0 || c[m][1] != 0 {
				t.Errorf("%s hits/misses %v: want the add-ons from the cache alone", m, c[m])
			}
		}
	})

	t.Run("offline, a create that needs an image no cache holds names it, and leaves nothing behind", func(t *testing.T) {
		mustMarina(t, "registry", "clean-cache", "registry-k8sio", "-y") // ExternalDNS's and metrics-server's images
		r := marina(t, "cluster", "create", "three")
		for l := range strings.SplitSeq(r.stderr, "\n") {
			if strings.Contains(l, "cannot pull") {
				t.Logf("create three said: %s", l)
			}
		}
		// Whichever of the two add-ons waits on its pull first is named.
		if r.code == 0 || !offlinePull.MatchString(r.stderr) || !strings.Contains(r.stderr, "marina registry prefetch") {
			t.Errorf("create three offline without ExternalDNS's and metrics-server's images: exit %d, want it to say %q:\n%s", r.code, offlinePull, r.stderr)
		}
		if n := nodeContainers(t, "three"); len(n) != 0 || hasContext(t, "three") {
			t.Errorf("the failed create left %d nodes, a context: %v", len(n), hasContext(t, "three"))
		}
		// The rollback took nothing of the other cluster.
		cs := contextClient(t, "two")
		nodesReady(t, cs, 1, time.Minute)
		podsReady(t, cs, "external-dns", "app.kubernetes.io/name=external-dns", 1, time.Minute)
		podsReady(t, cs, "metallb-system", "component=speaker", 1, time.Minute)
	})
}

// offlinePull is create's error for an add-on image no cache holds while
// the mirrors are offline.
var offlinePull = regexp.MustCompile(`cannot pull registry\.k8s\.io/(external-dns/external-dns|metrics-server/metrics-server):`)

// nodeShare is registry list's note of a cache's node images, about 1 GB.
var nodeShare = regexp.MustCompile(`registry-dockerio .*\(node images [0-9.]+(MiB|GiB)\)`)

// mirrorRow is the part of a registry list -o json row the tests read.
type mirrorRow struct {
	Name                       string
	CacheBytes, NodeImageBytes int64
}

// registryRows are marina registry list -o json's rows by name.
func registryRows(t *testing.T) map[string]mirrorRow {
	t.Helper()
	r := mustMarina(t, "registry", "list", "-o", "json")
	var rows []mirrorRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("registry list -o json: %v\n%s", err, r.stdout)
	}
	out := map[string]mirrorRow{}
	for _, row := range rows {
		out[row.Name] = row
	}
	return out
}
