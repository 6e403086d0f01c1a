package e2e

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// podTarget is a cluster's echo pod and a ClusterIP Service in front of it.
type podTarget struct {
	pod, clusterIP string
	pods           netip.Prefix // the cluster's pod range (its /16 or /17 slot half)
}

// echoTarget finds web's pod in ns (webService) and puts a ClusterIP
// Service web-cip in front of it.
func echoTarget(t *testing.T, cs *kubernetes.Clientset, ns string) podTarget {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-cip"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	got, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod string
	waitFor(t, 2*time.Minute, "web's pod in "+ns+" to run", func() bool {
		ps, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err == nil && len(ps.Items) > 0 && ps.Items[0].Status.PodIP != "" && ps.Items[0].Status.Phase == corev1.PodRunning {
			pod = ps.Items[0].Status.PodIP
		}
		return pod != ""
	})
	addr := netip.MustParseAddr(pod)
	return podTarget{pod: pod, clusterIP: got.Spec.ClusterIP, pods: netip.PrefixFrom(addr, 16).Masked()}
}

// clientIP asks the echo server at url who called, from this (the Mac's)
// namespace.
func clientIP(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
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
		dev, other = echoTarget(t, contextClient(t, "dev"), "shop"), echoTarget(t, contextClient(t, "pods"), "shop")
		out := mustMarina(t, "shell", "--", "ip", "-4", "route", "show", "proto", "200").stdout
		t.Logf("the VM's pod routes:\n%s", out)
		for _, p := range []podTarget{dev, other} {
			if !strings.Contains(out, p.pods.String()[:strings.LastIndex(p.pods.String(), ".0.0/")]) {
				t.Errorf("the VM routes nothing of %s:\n%s", p.pods, out)
			}
		}
		if up := mustMarina(t, "up", "--dry-run").stdout; strings.Contains(up, "marina-podnet") || strings.Contains(up, "pod and service ranges") {
			t.Errorf("a second up would change the pod routing:\n%s", up)
		}
	})
	t.Run("podRouting: the Mac reaches pod IPs and ClusterIPs of both clusters with its own address", func(t *testing.T) {
		for _, p := range []podTarget{dev, other} {
			for _, url := range []string{"http://" + p.pod + ":8080/clientip", "http://" + p.clusterIP + "/clientip"} {
				var got string
				var err error
				waitFor(t, time.Minute, url+" to answer from the Mac", func() bool {
					got, err = clientIP(url)
					return err == nil
				})
				if got != macAddr {
					t.Errorf("%s saw the Mac as %q (%v), want %s", url, got, err, macAddr)
				}
			}
		}
	})
	t.Run("podRouting: a pod in each cluster reaches the other's pod IP and ClusterIP with its own pod address", func(t *testing.T) {
		for _, c := range []struct {
			from     string
			src, dst podTarget
		}{{"dev", dev, other}, {"pods", other, dev}} {
			for _, url := range []string{"http://" + c.dst.pod + ":8080/clientip", "http://" + c.dst.clusterIP + "/clientip"} {
				got := podRun(t, contextClient(t, c.from), agnhost, "get", url)
				host, _, _ := strings.Cut(got, ":")
				a, err := netip.ParseAddr(host)
				if err != nil || !c.src.pods.Contains(a) {
					t.Errorf("from a pod of %s, %s saw %q, want an address of %s", c.from, url, got, c.src.pods)
				}
			}
		}
	})
	t.Run("podRouting: cluster delete takes its routes with it", func(t *testing.T) {
		mustMarina(t, "cluster", "delete", "pods", "-y")
		out := mustMarina(t, "shell", "--", "ip", "-4", "route", "show", "proto", "200").stdout
		if strings.Contains(out, other.pods.String()[:strings.LastIndex(other.pods.String(), ".0.0/")]+".") {
			t.Errorf("the VM still routes the deleted cluster's pods:\n%s", out)
		}
		if _, err := clientIP("http://" + dev.pod + ":8080/clientip"); err != nil {
			t.Errorf("dev's pod after the other cluster went: %v", err)
		}
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
