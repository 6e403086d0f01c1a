//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// corefile is the Corefile kubeadm's CoreDNS addon writes, for a cluster
// domain.
func corefile(domain string) string {
	return `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes ` + domain + ` in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success ` + domain + `
       disable denial ` + domain + `
    }
    loop
    reload
    loadbalance
}
`
}

// initObjects creates what kubeadm init's later phases and the kubelet
// would have: the admin binding, the control-plane Node, the join token and
// what it may do, kubeadm-config, and the CoreDNS addon's objects.
func initObjects(ctx context.Context, cs kubernetes.Interface, c *kubeadmConfig, name string) error {
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		return nil
	}
	rbac := cs.RbacV1()
	if err := create("ClusterRoleBinding kubeadm:cluster-admins", func() error {
		_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:cluster-admins"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "kubeadm:cluster-admins"}},
		}, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}

	if err := registerNode(ctx, cs, c, name, true); err != nil {
		return fmt.Errorf("register node %s: %w", name, err)
	}
	fmt.Printf("[mark-control-plane] Registered node %s with its labels and the control-plane taint\n", name)

	// The join token: kubeadm join (the stand-in) registers its Node with it.
	if id, secret, ok := strings.Cut(c.BootstrapToken, "."); ok {
		if err := create("bootstrap token", func() error {
			_, err := cs.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
				Type:       corev1.SecretTypeBootstrapToken,
				StringData: map[string]string{
					"token-id": id, "token-secret": secret,
					"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
					"auth-extra-groups": bootstrapGroup,
					"description":       "the kind join token (marina lab)",
				},
			}, metav1.CreateOptions{})
			return err
		}()); err != nil {
			return err
		}
		if err := create("ClusterRole lab:node-join", func() error {
			_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: "lab:node-join"},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "create", "update", "patch"}},
					{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"update", "patch"}},
				},
			}, metav1.CreateOptions{})
			return err
		}()); err != nil {
			return err
		}
		if err := create("ClusterRoleBinding lab:node-join", func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "lab:node-join"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "lab:node-join"},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: bootstrapGroup}},
			}, metav1.CreateOptions{})
			return err
		}()); err != nil {
			return err
		}
	}

	cms := cs.CoreV1().ConfigMaps("kube-system")
	if err := create("ConfigMap kubeadm-config", func() error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config", Namespace: "kube-system"},
			Data:       map[string]string{"ClusterConfiguration": c.ClusterConfigurationYAML},
		}, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}

	// [addons] CoreDNS, as kubeadm lays it out (nothing runs its pods).
	if err := create("ConfigMap coredns", func() error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
			Data:       map[string]string{"Corefile": corefile(c.DNSDomain)},
		}, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	labels := map[string]string{"k8s-app": "kube-dns"}
	replicas := int32(2)
	if err := create("Deployment coredns", func() error {
		_, err := cs.AppsV1().Deployments("kube-system").Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system", Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						PriorityClassName: "system-cluster-critical",
						Containers: []corev1.Container{{
							Name:  "coredns",
							Image: "registry.k8s.io/coredns/coredns:v1.13.1",
							Args:  []string{"-conf", "/etc/coredns/Corefile"},
							Ports: []corev1.ContainerPort{
								{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
								{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
								{Name: "metrics", ContainerPort: 9153, Protocol: corev1.ProtocolTCP},
							},
							VolumeMounts: []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
						}},
						DNSPolicy: corev1.DNSDefault,
						Volumes: []corev1.Volume{{Name: "config-volume", VolumeSource: corev1.VolumeSource{
							ConfigMap: &corev1.ConfigMapVolumeSource{
								LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
								Items:                []corev1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
							},
						}}},
					},
				},
			},
		}, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system", Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)},
			},
		},
	}
	// kubeadm gives kube-dns the service range's tenth address.
	if _, n, err := net.ParseCIDR(strings.Split(c.ServiceSubnet, ",")[0]); err == nil {
		ip := append(net.IP(nil), n.IP.To16()...)
		ip[len(ip)-1] += 10
		svc.Spec.ClusterIP = ip.String()
	}
	if err := create("Service kube-dns", func() error {
		_, err := cs.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	fmt.Println("[addons] Applied essential addon: CoreDNS (its objects; no pods run in the lab)")
	return nil
}
