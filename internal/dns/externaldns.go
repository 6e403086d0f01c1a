package dns

import (
	"bytes"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
)

// Where ExternalDNS runs in every cluster.
const (
	ExternalDNSNamespace = "external-dns"
	ExternalDNSName      = "external-dns"
	// ExternalDNSVersion is the release marina runs.
	ExternalDNSVersion = "v0.23.0"
	metricsPort        = 7979
)

// ServiceName is the name cluster's ExternalDNS gives LoadBalancer
// Service svc of namespace ns (ExternalDNSArgs' template, in its zone).
func ServiceName(svc, ns, cluster, domain string) string {
	return svc + "." + ns + "." + ClusterZone(cluster, domain)
}

// ExternalDNSArgs are ExternalDNS's flags in cluster name: the cluster's
// LoadBalancer Services as <service>.<namespace>.<name>.<domain>, owned
// (TXT registry) by this cluster alone.
//
// Its provider reads and writes under its own zone's etcd prefix and no
// other (--coredns-prefix), with names relative to the zone
// (<service>.<namespace>): the provider makes an etcd key from the prefix
// and the name's labels reversed, so these are the keys CoreDNS reads
// for the full names. Its etcd user may use that prefix alone (ClusterGrant),
// and it reads nothing else, so a value another cluster's workload wrote
// anywhere else can neither stop its sync nor be taken for its own. The
// hostname annotations are ignored: every name comes from the template,
// inside the zone.
func ExternalDNSArgs(name, domain string) []string {
	zone := ClusterZone(name, domain)
	return []string{
		"--provider=coredns",
		"--coredns-prefix=" + KeyPrefix(zone),
		"--source=service",
		"--service-type-filter=LoadBalancer",
		"--policy=sync",
		"--registry=txt",
		"--txt-owner-id=" + name,
		"--fqdn-template={{.Name}}.{{.Namespace}}",
		"--ignore-hostname-annotation",
		// A sync each second, ExternalDNS's fastest. v0.23.0's controller
		// (Controller.Run) looks once a second, on a ticker, whether a
		// sync is due, and each sync makes the next due --interval later:
		// an interval under the tick syncs at every tick. --events would
		// not make it sooner: an event schedules a sync no earlier than
		// the next periodic one (ScheduleRunOnce). A new or deleted
		// Service's name thus changes within about a second; each sync
		// reads the informers' caches and one etcd range, nothing more.
		"--interval=500ms",
		fmt.Sprintf("--metrics-address=:%d", metricsPort),
	}
}

// ExternalDNSSecret holds the etcd user of cluster name's ExternalDNS
// (etcd's own variable names): applied apart from the manifest, which
// dry runs and goldens print.
const ExternalDNSSecret = "external-dns-etcd"

// ExternalDNSCreds is the Secret with c, as a Kubernetes object.
func ExternalDNSCreds(c Creds) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: tm("v1", "Secret"),
		ObjectMeta: metav1.ObjectMeta{Name: ExternalDNSSecret, Namespace: ExternalDNSNamespace, Labels: map[string]string{
			"app.kubernetes.io/name": ExternalDNSName, "app.kubernetes.io/managed-by": "marina"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"ETCD_USERNAME": []byte(c.User), "ETCD_PASSWORD": []byte(c.Password)},
	}
}

// ExternalDNS is the manifest that runs ExternalDNS in cluster name, with
// read-only access to services, endpointslices, pods and nodes (what its
// service source may read; with the LoadBalancer filter v0.23.0 watches
// services alone) and nothing else.
func ExternalDNS(name string, cfg config.Config) ([]byte, error) {
	if err := cluster.CheckName(name); err != nil {
		return nil, err
	}
	if !config.IsDomain(cfg.DNS.Domain) {
		return nil, fmt.Errorf("dns.domain %q is not a domain name", cfg.DNS.Domain)
	}
	cidr, err := parseCIDR(cfg.Network.CIDR)
	if err != nil {
		return nil, err
	}
	etcd, _ := Addrs(cidr)
	meta := func(n string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: ExternalDNSNamespace, Labels: map[string]string{
			"app.kubernetes.io/name": ExternalDNSName, "app.kubernetes.io/managed-by": "marina"}}
	}
	clusterMeta := func() metav1.ObjectMeta { m := meta("marina-external-dns"); m.Namespace = ""; return m }
	ro := []string{"get", "list", "watch"}
	objs := []any{
		&corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: ExternalDNSNamespace, Labels: meta("").Labels}},
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: meta(ExternalDNSName)},
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: clusterMeta(), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "pods", "nodes"}, Verbs: ro},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: ro},
		}},
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: clusterMeta(),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "marina-external-dns"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: ExternalDNSName, Namespace: ExternalDNSNamespace}}},
		deployment(meta(ExternalDNSName), cfg.DNS.ExternalDNS(), ExternalDNSArgs(name, cfg.DNS.Domain), EtcdURL(etcd)),
	}
	var b bytes.Buffer
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		// What a typed object carries unset: not marina's to apply.
		delete(u, "status")
		if spec, ok := u["spec"].(map[string]any); ok && len(spec) == 0 {
			delete(u, "spec")
		}
		unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u, "spec", "template", "metadata", "creationTimestamp")
		y, err := yaml.Marshal(u)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

func tm(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func deployment(m metav1.ObjectMeta, image string, args []string, etcdURL string) *appsv1.Deployment {
	one := int32(1)
	yes, no := true, false
	uid := int64(65534)
	sel := map[string]string{"app.kubernetes.io/name": ExternalDNSName}
	return &appsv1.Deployment{
		TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: m,
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			// Never two at once: both would sync the same records.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					ServiceAccountName: ExternalDNSName,
					SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid},
					Containers: []corev1.Container{{
						Name: ExternalDNSName, Image: image, Args: args,
						Env: []corev1.EnvVar{{Name: "ETCD_URLS", Value: etcdURL},
							secretEnv("ETCD_USERNAME"), secretEnv("ETCD_PASSWORD")},
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: metricsPort}},
						// Asked every 2 s, not the default 10: a new
						// cluster's create waits for it to be ready.
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(metricsPort)}}, PeriodSeconds: 2},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// secretEnv is the variable name read from ExternalDNSSecret's key of
// the same name: the password reaches the process, never the manifest.
func secretEnv(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ExternalDNSSecret}, Key: name}}}
}
