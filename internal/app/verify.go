package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/kubeconfig"
)

// DefaultVerifyImage answers GET /clientip with the caller's address
// (agnhost netexec, the echo server of Kubernetes' own e2e tests), pinned
// by digest as the kueue project's e2e tests pin it.
const DefaultVerifyImage = "registry.k8s.io/e2e-test-images/agnhost:2.53@sha256:99c6b4bb4a1e1df3f0b3752168c89358794d02258ebebc26bf21c29399011a85"

// DefaultVerifyWait bounds the wait for the echo server and its address.
const DefaultVerifyWait = 3 * time.Minute

// VerifyOptions are the flags of marina cluster verify.
type VerifyOptions struct {
	Name  string // "" is the current context's cluster
	Image string
	Wait  time.Duration
}

// VerifyCluster puts an echo server behind a LoadBalancer Service with
// externalTrafficPolicy Local, calls it from this machine, and checks that
// the server saw this machine's own address: the whole layer-3 path (host
// route, the VM's rules, MetalLB's announcement) with no NAT on the way.
func VerifyCluster(ctx context.Context, e *Env, opts VerifyOptions) error {
	name := opts.Name
	if name == "" {
		cur, err := currentContext(e)
		if err != nil {
			return err
		}
		name = cur
	}
	if err := cluster.CheckName(name); err != nil {
		return err
	}
	if opts.Image == "" {
		opts.Image = DefaultVerifyImage
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultVerifyWait
	}
	cs, err := clusterClient(e, name, 30*time.Second)
	if err != nil {
		return err
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	ns := "marina-verify-" + hex.EncodeToString(suffix)
	defer func() {
		// Whatever happened, the workload goes.
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = cs.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{})
	}()
	var lb netip.Addr
	if err := e.step("Deploying an echo server behind a LoadBalancer in "+name+"/"+ns, "", func() error {
		if err := deployEcho(ctx, cs, ns, opts.Image); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, opts.Wait)
		defer cancel()
		lb, err = waitLoadBalancer(wctx, cs, ns, "echo")
		return err
	}); err != nil {
		return err
	}
	var seen, mine string
	if err := e.step("Calling http://"+lb.String()+"/clientip from this machine", "", func() error {
		wctx, cancel := context.WithTimeout(ctx, opts.Wait)
		defer cancel()
		seen, mine, err = callEcho(wctx, lb)
		return err
	}); err != nil {
		return err
	}
	seenHost, _, _ := net.SplitHostPort(seen)
	if seenHost != mine {
		return fmt.Errorf("the echo server at %s saw %s, not this machine's address %s: something on the way translates addresses (run `marina status`; the VM's rules or the host route may be missing)", lb, seenHost, mine)
	}
	fmt.Fprintf(e.Stdout, "✓ LoadBalancer %s in %s answered this machine directly: it saw %s, this machine's own address\n", lb, name, seen)
	return nil
}

// currentContext is the current context of the user's kubeconfig, when it
// names a marina cluster.
func currentContext(e *Env) (string, error) {
	target := e.kubeconfigTarget()
	cur, err := kubeconfig.Current(target)
	if err != nil || cur == "" {
		return "", fmt.Errorf("name the cluster to verify (%s has no current context)", target)
	}
	return cur, nil
}

func deployEcho(ctx context.Context, cs *kubernetes.Clientset, ns, image string) error {
	labels := map[string]string{"app": "echo"}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{cluster.ManagedBy: "marina"}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "echo", Image: image,
					Args:  []string{"netexec", "--http-port=8080"},
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment %s/echo: %w", ns, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector:              labels,
			Ports:                 []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s/echo: %w", ns, err)
	}
	return nil
}

// waitLoadBalancer waits for MetalLB to give the Service an address.
func waitLoadBalancer(ctx context.Context, cs *kubernetes.Clientset, ns, name string) (netip.Addr, error) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, in := range svc.Status.LoadBalancer.Ingress {
				if a, err := netip.ParseAddr(in.IP); err == nil {
					return a, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return netip.Addr{}, fmt.Errorf("service %s/%s got no LoadBalancer address: is MetalLB running? (kubectl -n metallb-system get pods; kubectl -n %s describe service %s)", ns, name, ns, name)
		case <-tick.C:
		}
	}
}

// callEcho asks the echo server at lb who called, until it answers: the
// address it saw and the one this machine used.
func callEcho(ctx context.Context, lb netip.Addr) (seen, mine string, err error) {
	var local string
	tr := &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			if err == nil {
				local, _, _ = net.SplitHostPort(c.LocalAddr().String())
			}
			return c, err
		},
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	url := "http://" + netip.AddrPortFrom(lb, 80).String() + "/clientip"
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, rerr := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return strings.TrimSpace(string(body)), local, nil
			}
			err = errors.Join(rerr, fmt.Errorf("HTTP %s", resp.Status))
		}
		last = err
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("no answer from %s: %v (the pod may not run yet: kubectl get pods -A; or the route is missing: marina status)", url, last)
		case <-time.After(time.Second):
		}
	}
}
