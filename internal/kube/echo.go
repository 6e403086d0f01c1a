package kube

import (
	"context"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Echo is the workload of marina cluster verify: an echo server in its own
// namespace behind a LoadBalancer Service with externalTrafficPolicy Local,
// so that the server sees the caller's own address.
type Echo struct {
	Namespace string
	Image     string // answers GET /clientip with the caller's ip:port
	Labels    map[string]string
}

// echoName names the Deployment and the Service.
const echoName = "echo"

// DeployEcho creates e's namespace, Deployment and Service.
func (k *Cluster) DeployEcho(ctx context.Context, e Echo) error {
	ns := e.Namespace
	labels := map[string]string{"app": echoName}
	if err := Create(ctx, k, Namespaces, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: e.Labels}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: echoName, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: echoName, Image: e.Image,
					Args:  []string{"netexec", "--http-port=8080"},
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				}}},
			},
		},
	}
	if err := Create(ctx, k, Deployments, ns, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment %s/%s: %w", ns, echoName, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: echoName, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector:              labels,
			Ports:                 []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if err := Create(ctx, k, Services, ns, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s/%s: %w", ns, echoName, err)
	}
	return nil
}

// EchoAddress waits until MetalLB gives the echo Service in ns an address.
func (k *Cluster) EchoAddress(ctx context.Context, ns string) (netip.Addr, error) {
	var lb netip.Addr
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	state, err := PollOn(ctx, k.Changes(wctx, Services.GroupVersionResource, ns, echoName), func(ctx context.Context) (bool, string, error) {
		svc, err := Read[corev1.Service](ctx, k, Services, ns, echoName)
		if err != nil {
			return false, "", err
		}
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(in.IP); err == nil {
				lb = a
				return true, "", nil
			}
		}
		return false, "no address", nil
	})
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return netip.Addr{}, fmt.Errorf("read service %s/%s: %w: the cluster's kubeconfig may be stale (`marina kubeconfig merge`)", ns, echoName, err)
	}
	if err != nil {
		return netip.Addr{}, fmt.Errorf("service %s/%s got no LoadBalancer address (%s): is MetalLB running? (kubectl -n metallb-system get pods; kubectl -n %s describe service %s)", ns, echoName, state, ns, echoName)
	}
	return lb, nil
}

// DeleteNamespace deletes ns and everything in it, without waiting.
func (k *Cluster) DeleteNamespace(ctx context.Context, ns string) error {
	return Delete(ctx, k, Namespaces, "", ns)
}

// ClientIP asks the echo server at lb who called, until it answers: the
// address it saw (ip:port) and the one this machine sent from.
func ClientIP(ctx context.Context, lb netip.Addr) (seen, mine string, err error) {
	return clientIP(ctx, "http://"+netip.AddrPortFrom(lb, 80).String()+"/clientip")
}

func clientIP(ctx context.Context, url string) (seen, mine string, err error) {
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
	// No redirect is followed: the answer must come from the address
	// called, which marina checked is the cluster's own (S7).
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
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
			return "", "", fmt.Errorf("no answer from %s: %v (the pod may not run yet: kubectl get pods -A; or the route is missing: marina status)", url, last) //nolint:errorlint // the last try's error is said; the error is the wait's end
		case <-time.After(time.Second):
		}
	}
}
