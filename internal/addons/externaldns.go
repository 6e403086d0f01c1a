package addons

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/kube"
)

// ApplyExternalDNS applies ExternalDNS's manifest with its etcd
// credentials, secret, right after the manifest's first object (its
// namespace) and before the Deployment that reads them, so the pod never
// starts without them. The Secret travels apart from the manifest, which
// dry runs print.
func ApplyExternalDNS(ctx context.Context, k *kube.Cluster, manifest []byte, secret *corev1.Secret) error {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return err
	}
	s, err := secretObject(secret)
	if err != nil {
		return err
	}
	return applyObjects(ctx, k, withSecret(objs, s))
}

// withSecret is objs with s after the first Namespace, or first when
// there is none.
func withSecret(objs []*unstructured.Unstructured, s *unstructured.Unstructured) []*unstructured.Unstructured {
	at := 0
	for i, o := range objs {
		if o.GetKind() == "Namespace" {
			at = i + 1
			break
		}
	}
	out := append([]*unstructured.Unstructured{}, objs[:at]...)
	out = append(out, s)
	return append(out, objs[at:]...)
}

func secretObject(secret *corev1.Secret) (*unstructured.Unstructured, error) {
	if secret == nil || secret.Name == "" || secret.Namespace == "" {
		return nil, fmt.Errorf("ExternalDNS's etcd credentials have no Secret to go in (a marina bug)")
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(secret)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	u.SetAPIVersion("v1")
	u.SetKind("Secret")
	return u, nil
}

// externalDNS is ExternalDNS publishing the cluster's LoadBalancer
// Services on the local DNS, with the cluster's etcd user.
type externalDNS struct {
	zone     string
	manifest []byte
	etcd     dns.Creds
	wait     time.Duration
}

// NewExternalDNS is ExternalDNS (manifest, as dns.ExternalDNS makes it)
// writing the names of zone with the etcd user etcd.
func NewExternalDNS(zone string, manifest []byte, etcd dns.Creds, wait time.Duration) Addon {
	return externalDNS{zone: zone, manifest: manifest, etcd: etcd, wait: wait}
}

func (x externalDNS) Name() string { return "ExternalDNS" }

func (x externalDNS) What() string { return "installing ExternalDNS" }

func (x externalDNS) Plan() string {
	return fmt.Sprintf("install ExternalDNS %s: its LoadBalancer Services answer as <service>.<namespace>.%s", dns.ExternalDNSVersion, x.zone)
}

func (x externalDNS) Steps() ([]Step, error) {
	objs, err := decodeManifest(x.manifest)
	if err != nil {
		return nil, err
	}
	secret := dns.ExternalDNSCreds(x.etcd)
	s, err := secretObject(secret)
	if err != nil {
		return nil, err
	}
	return []Step{
		{Label: "Installing ExternalDNS " + dns.ExternalDNSVersion, What: x.What(), Run: func(ctx context.Context, c Cluster) error {
			return within(ctx, x.wait, func(ctx context.Context) error {
				return c.Do(ctx, Op{Name: "apply-external-dns", Objects: withSecret(objs, s), Run: func(ctx context.Context, k *kube.Cluster) error {
					return ApplyExternalDNS(ctx, k, x.manifest, secret)
				}})
			})
		}},
		{Label: "Waiting for ExternalDNS to be available", What: x.What(), Run: func(ctx context.Context, c Cluster) error {
			return within(ctx, x.wait, func(ctx context.Context) error {
				return c.Wait(ctx, DeploymentWait(dns.ExternalDNSNamespace, dns.ExternalDNSName))
			})
		}},
	}, nil
}

func (x externalDNS) pods() []byte { return x.manifest }
