package kube

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Only LoadBalancer Services, sorted; an ingress that is not an address
// (read back from the cluster) is left out.
func TestLoadBalancersOf(t *testing.T) {
	svc := func(ns, name string, typ corev1.ServiceType, ips ...string) corev1.Service {
		s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	got := LoadBalancersOf([]corev1.Service{
		svc("shop", "web", corev1.ServiceTypeLoadBalancer, "172.30.1.1", "<img src=x>", ""),
		svc("default", "kubernetes", corev1.ServiceTypeClusterIP),
		svc("a", "pending", corev1.ServiceTypeLoadBalancer),
	})
	http := []Port{{Name: "http", Port: 80, Protocol: "TCP"}}
	want := []LoadBalancer{
		{Namespace: "a", Name: "pending", Addresses: []string{}, Ports: http},
		{Namespace: "shop", Name: "web", Addresses: []string{"172.30.1.1"}, Ports: http},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}
