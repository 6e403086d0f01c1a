package addons

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/bcollard/marina/internal/kube"
)

// Where metrics-server's components.yaml puts it.
const (
	MetricsServerNamespace = "kube-system"
	MetricsServerName      = "metrics-server"
	// InsecureTLSArg lets metrics-server scrape kubelets whose serving
	// certificates are self-signed, as kind's are.
	InsecureTLSArg = "--kubelet-insecure-tls"
)

// metricsServerDigests pins the sha256 of the components.yaml that
// metrics-server's GitHub release of each version publishes.
//
// The release workflow builds that file with `kubectl kustomize
// manifests/overlays/release`; building the same overlay from the Go module
// sigs.k8s.io/metrics-server at the version gives these bytes (a test does
// it), and copies of the release asset kept in several public repositories
// that download it have the same sha256.
var metricsServerDigests = map[string]string{
	"v0.7.2": "f103539a54ed72efe66616afc74a8bfaed651703cb3918797599046af5617441",
	"v0.8.0": "ff64d1a13b9ac3b0635f0dd985815fb44c23eed4706c04e5db1daadf6bc0a83b",
}

// MetricsServerVersions lists the metrics-server versions marina has a
// pinned manifest for, oldest first: the last is the default.
func MetricsServerVersions() []string {
	vs := make([]string, 0, len(metricsServerDigests))
	for v := range metricsServerDigests {
		vs = append(vs, v)
	}
	// The pins are semantic versions.
	slices.SortFunc(vs, func(a, b string) int {
		c, _ := version.MustParseSemantic(a).Compare(b)
		return c
	})
	return vs
}

var metricsServerSource = manifestSource{
	what: "metrics-server", dir: "metrics-server", file: "components.yaml",
	urlPath: func(v string) string { return "/releases/download/" + v + "/components.yaml" },
	fix:     "set addons.metricsServer.version in the fleet manifest to one of those",
	baseURL: "https://github.com/kubernetes-sigs/metrics-server",
	client:  &http.Client{Timeout: downloadTimeout},
	pins:    metricsServerDigests,
}

// MetricsServerManifest returns the components.yaml of metrics-server
// version, verified and cached as Manifest does MetalLB's.
func MetricsServerManifest(ctx context.Context, cacheDir, version string) ([]byte, error) {
	return metricsServerSource.manifest(ctx, cacheDir, version)
}

// ApplyMetricsServer applies metrics-server's manifest, adding
// --kubelet-insecure-tls to its container when insecureTLS; it does not
// wait (MetricsServerWait does).
func ApplyMetricsServer(ctx context.Context, k *kube.Cluster, manifest []byte, insecureTLS bool) error {
	objs, err := metricsServerObjects(manifest, insecureTLS)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, k, objs); err != nil {
		return fmt.Errorf("install metrics-server: %w", err)
	}
	return nil
}

// MetricsServerWait waits for metrics-server's Deployment to be available.
func MetricsServerWait() Wait { return DeploymentWait(MetricsServerNamespace, MetricsServerName) }

// metricsServerObjects are the manifest's objects, with the argument added
// to the metrics-server container of its Deployment when insecureTLS. A
// manifest without that Deployment and container is refused: the pin says
// which file it is, so this is a mistake in marina.
func metricsServerObjects(manifest []byte, insecureTLS bool) ([]*unstructured.Unstructured, error) {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	found := false
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetNamespace() != MetricsServerNamespace || o.GetName() != MetricsServerName {
			continue
		}
		containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return nil, fmt.Errorf("metrics-server manifest: %w", err)
		}
		for i, c := range containers {
			cm, ok := c.(map[string]any)
			if !ok || cm["name"] != MetricsServerName {
				continue
			}
			found = true
			if !insecureTLS {
				break
			}
			args, _, err := unstructured.NestedStringSlice(cm, "args")
			if err != nil {
				return nil, fmt.Errorf("metrics-server manifest: %w", err)
			}
			if !slices.Contains(args, InsecureTLSArg) {
				args = append(args, InsecureTLSArg)
			}
			if err := unstructured.SetNestedStringSlice(cm, args, "args"); err != nil {
				return nil, err
			}
			containers[i] = cm
		}
		if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return nil, err
		}
	}
	if !found {
		return nil, fmt.Errorf("the metrics-server manifest has no Deployment %s/%s with a container %s", MetricsServerNamespace, MetricsServerName, MetricsServerName)
	}
	return objs, nil
}

// MetricsServer is metrics-server as a cluster gets it (a Fleet's
// addons.metricsServer).
type MetricsServer struct {
	Version string
	// InsecureTLS adds --kubelet-insecure-tls: kind's kubelets serve
	// self-signed certificates.
	InsecureTLS bool
}

// metricsServer is metrics-server, as a Fleet may ask for it.
type metricsServer struct {
	spec     MetricsServer
	manifest []byte
	wait     time.Duration
}

// NewMetricsServer is metrics-server as spec says, from its pinned
// manifest; its install and its wait share one deadline, wait.
func NewMetricsServer(spec MetricsServer, manifest []byte, wait time.Duration) Addon {
	return metricsServer{spec: spec, manifest: manifest, wait: wait}
}

func (m metricsServer) Name() string { return "metrics-server" }

func (m metricsServer) What() string { return "installing metrics-server" }

func (m metricsServer) Manifest() Ref { return Ref{Name: MetricsServerSource, Version: m.spec.Version} }

func (m metricsServer) Plan() string {
	do := "install metrics-server " + m.spec.Version
	if m.spec.InsecureTLS {
		do += " with " + InsecureTLSArg
	}
	return do
}

func (m metricsServer) Steps() ([]Step, error) {
	objs, err := metricsServerObjects(m.manifest, m.spec.InsecureTLS)
	if err != nil {
		return nil, err
	}
	var deadline time.Time
	return []Step{
		{Label: "Installing metrics-server " + m.spec.Version, What: m.What(), Run: func(ctx context.Context, c Cluster) error {
			deadline = time.Now().Add(m.wait)
			ctx, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			return c.Do(ctx, Op{Name: fmt.Sprintf("apply-metrics-server insecure=%v", m.spec.InsecureTLS), Objects: objs, Run: func(ctx context.Context, k *kube.Cluster) error {
				return ApplyMetricsServer(ctx, k, m.manifest, m.spec.InsecureTLS)
			}})
		}},
		{Label: "Waiting for metrics-server to be available", What: m.What(), Run: func(ctx context.Context, c Cluster) error {
			ctx, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			return c.Wait(ctx, MetricsServerWait())
		}},
	}, nil
}

func (m metricsServer) pods() []byte { return m.manifest }
