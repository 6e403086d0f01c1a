package e2e

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/bcollard/marina/internal/run"
)

// podTarget is a cluster's echo pod and a ClusterIP Service in front of it.
type podTarget struct {
	pod, clusterIP string
	pods           netip.Prefix // the cluster's pod range: the lab's clusters take slots 1–9, whose pod ranges are /16s
}

// echoTarget puts a ClusterIP Service web-cip in front of web's pod in ns
// (webService), once, and finds both: a Ready pod whose container started
// at since or later (after a restart the API shows the old address as
// Ready until the kubelet says otherwise).
func echoTarget(t *testing.T, cs *kubernetes.Clientset, ns string, since time.Time) podTarget {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-cip"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	// The API server may be coming back (a Docker restart, a reboot).
	waitFor(t, 4*time.Minute, "the Service web-cip in "+ns, func() bool {
		_, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	var p podTarget
	waitFor(t, 4*time.Minute, "web's pod in "+ns+" to be Ready", func() bool {
		got, err := cs.CoreV1().Services(ns).Get(ctx, "web-cip", metav1.GetOptions{})
		if err != nil {
			return false
		}
		ps, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false
		}
		for _, pod := range ps.Items {
			for _, c := range pod.Status.Conditions {
				started := len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].State.Running != nil &&
					!pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time.Before(since.Truncate(time.Second))
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && pod.Status.PodIP != "" && started {
					a := netip.MustParseAddr(pod.Status.PodIP)
					p = podTarget{pod: pod.Status.PodIP, clusterIP: got.Spec.ClusterIP, pods: netip.PrefixFrom(a, 16).Masked()}
					return true
				}
			}
		}
		return false
	})
	return p
}

// reachedFromMac waits for the echo server at url to answer the Mac with
// the Mac's own address. After a restart the nodes' rules come back within
// a pass of marina-podnet (10 s) of kube-proxy's: the wait covers that.
func reachedFromMac(t *testing.T, url string, within time.Duration) {
	t.Helper()
	var got string
	var err error
	deadline := time.Now().Add(within)
	for {
		if got, err = clientIP(url); err == nil && got == macAddr {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s saw the Mac as %q (%v) until %v, want %s", url, got, err, within, macAddr)
			return
		}
		time.Sleep(2 * time.Second)
	}
}

// crossed asks, from a pod of from, the echo server at url who called: it
// must see the pod's own address, one of src.
func crossed(t *testing.T, from, agnhost, url string, src netip.Prefix) {
	t.Helper()
	var got string
	for range 3 { // as reachedFromMac: the rules may be a pass late after a restart
		got = podRun(t, contextClient(t, from), agnhost, "get", url)
		host, _, _ := strings.Cut(got, ":")
		if a, err := netip.ParseAddr(host); err == nil && src.Contains(a) {
			return
		}
		time.Sleep(10 * time.Second)
	}
	t.Errorf("from a pod of %s, %s saw %q, want an address of %s", from, url, got, src)
}

// vmPodRoutes are the VM's routes marina-podnet made, as printed.
func vmPodRoutes(t *testing.T) string {
	t.Helper()
	return mustMarina(t, "shell", "--", "ip", "-4", "route", "show", "proto", "200").stdout
}

// routesInto are the routes of out (vmPodRoutes) into p, destination to
// gateway.
func routesInto(out string, p netip.Prefix) map[netip.Prefix]string {
	m := map[netip.Prefix]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if d, err := netip.ParsePrefix(f[0]); err == nil && len(f) >= 3 && f[1] == "via" && p.Overlaps(d) {
			m[d] = f[2]
		}
	}
	return m
}

// clientIP asks the echo server at url who called, from this (the Mac's)
// namespace.
func clientIP(url string) (string, error) {
	// A new connection each time: a kept-alive one would carry the
	// translation conntrack chose when it opened (before a restarted
	// node's chain was back) however often it is asked again.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	host, _, _ := strings.Cut(string(body), ":")
	return host, err
}

// macRoutes are the mac namespace's routes of 10.0.0.0/8.
func macRoutes(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-4", "route", "show", "root", "10.0.0.0/8").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// podRouting proves network.podRouting on the real clusters: dev (a
// control plane and a worker, web already running in shop) and a second,
// single-node cluster.
func podRouting(t *testing.T, cfg, agnhost string) {
	var dev, other podTarget
	var since time.Time // pods Ready at or after it: none asked for yet
	before := macRoutes(t)
	t.Run("podRouting: up routes the pod space from the Mac, the VM routes each cluster to its nodes", func(t *testing.T) {
		writeConfig(t, cfg+"network:\n  podRouting: true\n")
		mustMarina(t, "up")
		var added []string
		for _, r := range strings.Split(macRoutes(t), "\n") {
			if !strings.Contains(before, r) {
				added = append(added, r)
			}
		}
		if len(added) != 11 {
			t.Errorf("up added %d routes of 10.0.0.0/8 to the Mac, want 11:\n%s", len(added), strings.Join(added, "\n"))
		}
		timedCreate(t, "pods")
		webService(t, contextClient(t, "pods"), "shop", agnhost)
		dev, other = echoTarget(t, contextClient(t, "dev"), "shop", since), echoTarget(t, contextClient(t, "pods"), "shop", since)
		out := vmPodRoutes(t)
		t.Logf("the VM's pod routes:\n%s", out)
		for _, p := range []podTarget{dev, other} {
			if len(routesInto(out, p.pods)) == 0 {
				t.Errorf("the VM routes nothing of %s:\n%s", p.pods, out)
			}
		}
		if up := mustMarina(t, "up", "--dry-run").stdout; strings.Contains(up, "marina-podnet") || strings.Contains(up, "pod and service ranges") {
			t.Errorf("a second up would change the pod routing:\n%s", up)
		}
	})
	t.Run("podRouting: the Mac reaches pod IPs and ClusterIPs of both clusters with its own address", func(t *testing.T) {
		for _, p := range []podTarget{dev, other} {
			reachedFromMac(t, "http://"+p.pod+":8080/clientip", time.Minute)
			reachedFromMac(t, "http://"+p.clusterIP+"/clientip", time.Minute)
		}
	})
	t.Run("podRouting: a pod in each cluster reaches the other's pod IP and ClusterIP with its own pod address", func(t *testing.T) {
		for _, c := range []struct {
			from     string
			src, dst podTarget
		}{{"dev", dev, other}, {"pods", other, dev}} {
			crossed(t, c.from, agnhost, "http://"+c.dst.pod+":8080/clientip", c.src.pods)
			crossed(t, c.from, agnhost, "http://"+c.dst.clusterIP+"/clientip", c.src.pods)
		}
		// Control: without marina's chain in pods' node, kindnetd's
		// masquerade hides the pod behind its node, so the chain is what
		// keeps the address. The service, stopped meanwhile (it checks the
		// chains every minute), puts it back once it forgets it applied it.
		inGuest(t, "systemctl stop marina-podnet.service && docker exec pods-control-plane sh -c 'for i in iptables-nft iptables-legacy; do $i -w -t nat -F MARINA-PODNET 2>/dev/null || true; done'")
		got := podRun(t, contextClient(t, "pods"), agnhost, "get", "http://"+dev.pod+":8080/clientip")
		if host, _, _ := strings.Cut(got, ":"); !strings.HasPrefix(host, "172.30.") {
			t.Errorf("without MARINA-PODNET dev's pod saw %q, want the pods node's address (the test proves nothing)", got)
		}
		inGuest(t, "rm -f /run/marina-podnet/rules-* && /usr/local/sbin/marina-podnet once && systemctl start marina-podnet.service")
		crossed(t, "pods", agnhost, "http://"+dev.pod+":8080/clientip", other.pods)
	})
	t.Run("podRouting: nothing else on the vzNAT network reaches a pod or a ClusterIP", func(t *testing.T) {
		dial := intruder(t)
		if out, err := exec.Command("ip", "-n", "marina-intruder", "route", "add", "10.0.0.0/8", "via", vmIP).CombinedOutput(); err != nil {
			t.Fatalf("the intruder's route: %v %s", err, out)
		}
		for _, addr := range []string{dev.pod + ":8080", dev.clusterIP + ":80", other.pod + ":8080"} {
			if err := dial(addr); err == nil {
				t.Errorf("another VM on the vzNAT network reached %s", addr)
			}
		}
		// Control: an accept for it lets it in, so marina's rules keep it out.
		inGuest(t, "iptables -I MARINA-FORWARD 1 -s "+intruderIP+" -j ACCEPT")
		err := dial(dev.pod + ":8080")
		inGuest(t, "iptables -D MARINA-FORWARD -s "+intruderIP+" -j ACCEPT")
		if err != nil {
			t.Errorf("with an accept rule the other VM still cannot reach %s: %v (the test proves nothing)", dev.pod, err)
		}
	})
	t.Run("podRouting: a Docker restart and a reboot keep it, without marina", func(t *testing.T) {
		since = time.Now()
		inGuest(t, "systemctl restart docker")
		dev, other = echoTarget(t, contextClient(t, "dev"), "shop", since), echoTarget(t, contextClient(t, "pods"), "shop", since)
		// Pod IPs and ClusterIPs keep the caller's address once the
		// nodes' chains are back (clientIP opens a new connection each
		// time: one kept alive from before keeps its translation).
		reachedFromMac(t, "http://"+dev.pod+":8080/clientip", 3*time.Minute)
		reachedFromMac(t, "http://"+other.clusterIP+"/clientip", 3*time.Minute)
		crossed(t, "dev", agnhost, "http://"+other.pod+":8080/clientip", dev.pods)
		crossed(t, "dev", agnhost, "http://"+other.clusterIP+"/clientip", dev.pods)

		since = time.Now()
		mustMarina(t, "down")
		if out, err := runEnv(t, []string{"LIMA_HOME=" + filepath.Join(marinaHome(), "lima")}, "limactl", "start", "--tty=false", "marina"); err != nil {
			t.Fatalf("limactl start: %v\n%s", err, out)
		}
		dev, other = echoTarget(t, contextClient(t, "dev"), "shop", since), echoTarget(t, contextClient(t, "pods"), "shop", since)
		reachedFromMac(t, "http://"+dev.clusterIP+"/clientip", 3*time.Minute)
		reachedFromMac(t, "http://"+other.pod+":8080/clientip", 3*time.Minute)
		crossed(t, "pods", agnhost, "http://"+dev.pod+":8080/clientip", other.pods)
		crossed(t, "pods", agnhost, "http://"+dev.clusterIP+"/clientip", other.pods)
	})
	t.Run("podRouting: cluster delete takes its routes; a new cluster in its slot gets its own", func(t *testing.T) {
		gone := other
		mustMarina(t, "cluster", "delete", "pods", "-y")
		out := vmPodRoutes(t)
		if len(routesInto(out, gone.pods)) > 0 {
			t.Errorf("the VM still routes the deleted cluster's pods:\n%s", out)
		}
		if _, err := clientIP("http://" + dev.pod + ":8080/clientip"); err != nil {
			t.Errorf("dev's pod after the other cluster went: %v", err)
		}
		// The new one brings its own CNI (--cni none), which the test
		// installs during the create's wait, as a user installs Cilium.
		createWithOwnCNI(t, "pods")
		webService(t, contextClient(t, "pods"), "shop", agnhost)
		other = echoTarget(t, contextClient(t, "pods"), "shop", since)
		node := containerIP(t, "pods-control-plane", "kind")
		out = vmPodRoutes(t)
		t.Logf("the VM's pod routes:\n%s", out)
		routed := routesInto(out, other.pods)
		if len(routed) == 0 {
			t.Errorf("the VM routes nothing of the new cluster's pods %s:\n%s", other.pods, out)
		}
		for d, gw := range routed {
			if gw != node {
				t.Errorf("the new cluster's pods %s go via %s, not its node %s", d, gw, node)
			}
		}
		reachedFromMac(t, "http://"+other.pod+":8080/clientip", time.Minute)
		crossed(t, "pods", agnhost, "http://"+dev.pod+":8080/clientip", other.pods)
		crossed(t, "dev", agnhost, "http://"+other.pod+":8080/clientip", dev.pods)
		mustMarina(t, "cluster", "delete", "pods", "-y")
	})
	t.Run("podRouting off: up takes the Mac's routes and the VM's service away; pods are out of reach", func(t *testing.T) {
		writeConfig(t, cfg)
		mustMarina(t, "up")
		if got := macRoutes(t); got != before {
			t.Errorf("the Mac's routes of 10.0.0.0/8 after podRouting went off:\n%s\nwant, as before:\n%s", got, before)
		}
		if r := marina(t, "shell", "--", "test", "-e", "/usr/local/sbin/marina-podnet"); r.code == 0 {
			t.Error("the VM still has marina-podnet")
		}
		if out := mustMarina(t, "shell", "--", "ip", "-4", "route", "show", "proto", "200").stdout; strings.TrimSpace(out) != "" {
			t.Errorf("the VM still has pod routes:\n%s", out)
		}
		if _, err := clientIP("http://" + dev.pod + ":8080/clientip"); err == nil {
			t.Errorf("dev's pod %s answers the Mac with podRouting off", dev.pod)
		}
	})
}

// createWithOwnCNI runs `marina cluster create name --cni none` and, once
// its kubeconfig is there, installs a CNI as a user would: kind's own
// kindnet manifest from the node image, with the cluster's pod range (the
// one value kind fills in, read from kubeadm's config), applied with
// kubectl. The create must have waited for it and then finished.
func createWithOwnCNI(t *testing.T, name string) {
	t.Helper()
	var out, errb run.Buffer
	c := exec.Command(marinaBin, "cluster", "create", name, "--cni", "none")
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	ended := false
	t.Cleanup(func() {
		if !ended { // a failed step must not leave the create running into the next subtest
			_ = c.Process.Kill()
			<-done
		}
	})
	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(labCacheBin("kubectl"), append([]string{"--kubeconfig", kubeconfigPath(), "--context", name}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	waitFor(t, 4*time.Minute, "the kubeconfig of "+name+", made without a CNI", func() bool {
		select {
		case err := <-done:
			ended = true
			t.Fatalf("the create ended before a CNI was installed: %v\n%s%s", err, out.String(), errb.String())
		default:
		}
		_, err := kubectl("", "get", "nodes")
		return err == nil
	})
	if got, err := kubectl("", "get", "daemonset", "-n", "kube-system", "kindnet", "--ignore-not-found", "-o", "name"); err != nil || strings.TrimSpace(got) != "" {
		t.Errorf("kind installed its CNI after all (%v): %s", err, got)
	}
	if got, _ := kubectl("", "get", "nodes", "--no-headers"); strings.Contains(got, " Ready ") {
		t.Errorf("a node is Ready without a CNI: %s", got)
	}
	b, err := exec.Command(labScript, "docker", "exec", name+"-control-plane", "cat", "/kind/manifests/default-cni.yaml").Output()
	if err != nil {
		t.Fatalf("kind's CNI manifest: %v", err)
	}
	kubeadm, err := kubectl("", "get", "configmap", "-n", "kube-system", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}")
	m := regexp.MustCompile(`podSubnet: (\S+)`).FindStringSubmatch(kubeadm)
	if err != nil || m == nil {
		t.Fatalf("the cluster's pod range from kubeadm's config: %v\n%s", err, kubeadm)
	}
	manifest := strings.ReplaceAll(string(b), "{{ .PodSubnet }}", m[1])
	if strings.Contains(manifest, "{{") {
		t.Fatalf("kind's CNI manifest has a value the test does not fill in:\n%s", manifest)
	}
	if got, err := kubectl(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the CNI: %v\n%s", err, got)
	}
	select {
	case err := <-done:
		ended = true
		if err != nil {
			t.Fatalf("cluster create --cni none: %v\n%s%s", err, out.String(), errb.String())
		}
	case <-time.After(6 * time.Minute):
		t.Fatalf("cluster create --cni none did not end:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), "Waiting up to 5m0s for your CNI") {
		t.Errorf("the create did not say it waits for the CNI:\n%s", errb.String())
	}
}
