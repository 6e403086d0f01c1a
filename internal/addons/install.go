package addons

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/kube"
)

// Op is one operation of an add-on on a cluster's API: applying its
// objects, editing CoreDNS, adding MetalLB's pool. Name says it in logs and
// to the tests' fake clusters; Objects, when set, are what it applies.
type Op struct {
	Name    string
	Objects []*unstructured.Unstructured
	Run     func(ctx context.Context, k *kube.Cluster) error
}

// Cluster is what an add-on needs of a cluster: to run an operation on its
// API, to wait for a condition, and to read an object. None of it names an
// add-on, so that a new add-on changes no port, no wiring and no fake.
type Cluster interface {
	Do(ctx context.Context, op Op) error
	Wait(ctx context.Context, w Wait) error
	// Get reads the object name (in namespace ns) of resource r: nil
	// when there is none.
	Get(ctx context.Context, r schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error)
}

// Step is one step of an add-on's install: its progress line, its name in
// a failure ("installing MetalLB"), what it needs, and what it does.
type Step struct {
	Label, What string
	// Nodes says the step needs every node of the cluster to have joined
	// (a DaemonSet ready on all of them, kubeadm's CoreDNS in place):
	// Install holds it until it is told they have. Every other step needs
	// only the API server, and the step before it in its add-on.
	Nodes bool
	Run   func(ctx context.Context, c Cluster) error
}

// Addon is one add-on a cluster gets: one file each (metallb.go,
// externaldns.go, coredns.go, metricsserver.go), listed in Default.
type Addon interface {
	// Name is its name on a line of progress: "MetalLB".
	Name() string
	// Plan is its line in a create's --dry-run.
	Plan() string
	// Steps are what installing it does, in order; an error is a
	// manifest that cannot be read.
	Steps() ([]Step, error)
	// What names it in a failure before its first step.
	What() string
}

// DefaultWait is how long an add-on's install waits for it to serve.
const DefaultWait = 5 * time.Minute

// Error is a failed step of an add-on's install: What names the step.
type Error struct {
	What string
	Err  error
}

func (e *Error) Error() string { return e.What + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Show runs fn, a step of add-on addon labelled label, showing it as it
// goes. Install calls it from several goroutines at once, one per add-on.
type Show func(addon, label string, fn func() error) error

// Install installs set on c. Each add-on's steps run in order, and the
// add-ons side by side: none needs another, and what one step needs of
// the cluster (MetalLB's webhook before its pool, CRDs before objects of
// their kinds) is the step before it in the same add-on. A step marked
// Nodes waits until nodes is closed (nil: every node has joined). The
// first failure stops the other add-ons and is returned as an *Error
// naming its step.
func Install(ctx context.Context, c Cluster, set []Addon, nodes <-chan struct{}, show Show) error {
	chains := make([][]Step, len(set))
	for i, a := range set {
		steps, err := a.Steps()
		if err != nil {
			return &Error{What: a.What(), Err: err}
		}
		chains[i] = steps
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) {
		once.Do(func() { first = err })
		cancel() // the others stop: the install has failed
	}
	for i, a := range set {
		wg.Go(func() {
			for _, st := range chains[i] {
				if st.Nodes && nodes != nil {
					select {
					case <-nodes:
					case <-ctx.Done():
						fail(&Error{What: st.What, Err: ctx.Err()})
						return
					}
				}
				if err := show(a.Name(), st.Label, func() error { return st.Run(ctx, c) }); err != nil {
					fail(&Error{What: st.What, Err: err})
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// Plans are the dry-run lines of set.
func Plans(set []Addon) []string {
	out := make([]string, len(set))
	for i, a := range set {
		out[i] = a.Plan()
	}
	return out
}

// within runs fn with ctx bounded by wait.
func within(ctx context.Context, wait time.Duration, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return fn(ctx)
}

// Defaults is what a cluster's add-ons are made from.
type Defaults struct {
	// Manifests are the fetched manifests the add-ons are made from, by
	// source (Manifests lists them); nil for a dry run's plans.
	Manifests map[string][]byte
	// MetalLBVersion serves Pool.
	MetalLBVersion string
	Pool           []string
	// Zone is the cluster's DNS zone; ExternalDNS (its manifest) writes
	// its names as the etcd user Etcd.
	Zone        string
	ExternalDNS []byte
	Etcd        dns.Creds
	// Forwards are the domains CoreDNS forwards.
	Forwards []config.DNSResolver
	// MetricsServer, when set, adds metrics-server.
	MetricsServer *MetricsServer
	// Hosting, when set, advertises the push registry (NewHosting).
	Hosting Addon
	// Wait bounds each add-on's install (DefaultWait when 0).
	Wait time.Duration
}

// Default is every add-on a new cluster gets, in the order they install:
// create runs them, and its --dry-run prints their plans.
func Default(d Defaults) []Addon {
	set := append([]Addon{NewMetalLB(d.MetalLBVersion, d.Manifests[MetalLBSource], d.Pool, d.wait())}, DNS(d)...)
	if d.MetricsServer != nil {
		set = append(set, NewMetricsServer(*d.MetricsServer, d.Manifests[MetricsServerSource], d.wait()))
	}
	if d.Hosting != nil {
		set = append(set, d.Hosting)
	}
	return set
}

// Ref names a pinned manifest: its source and version.
type Ref struct {
	Name, Version string
}

// Label is a fetch of r as a line of progress.
func (r Ref) Label() string {
	return "Fetching the " + sources[r.Name].what + " " + r.Version + " manifest"
}

// fetched is an add-on made from a pinned manifest.
type fetched interface {
	Manifest() Ref
}

// Manifests are the pinned manifests set is made from, in its order and
// each once: what a create fetches before kind runs, and fleet apply
// before any create starts.
func Manifests(set []Addon) []Ref {
	var out []Ref
	for _, a := range set {
		if f, ok := a.(fetched); ok && !slices.Contains(out, f.Manifest()) {
			out = append(out, f.Manifest())
		}
	}
	return out
}

// DNS are the add-ons that put a cluster on the local DNS: ExternalDNS and
// the CoreDNS edit. up gives them to clusters made before marina had them.
func DNS(d Defaults) []Addon {
	return []Addon{NewExternalDNS(d.Zone, d.ExternalDNS, d.Etcd, d.wait()), NewCoreDNS(d.Forwards, d.wait())}
}

func (d Defaults) wait() time.Duration {
	if d.Wait <= 0 {
		return DefaultWait
	}
	return d.Wait
}

// The add-ons marina fetches a pinned manifest for, by name: one line each.
var sources = map[string]manifestSource{
	MetalLBSource:       defaultSource,
	MetricsServerSource: metricsServerSource,
}

// The names of the add-ons' manifests, as Fetch takes them.
const (
	MetalLBSource       = "metallb"
	MetricsServerSource = "metrics-server"
)

// Fetch returns add-on name's pinned manifest of version, from cacheDir
// or downloaded once and checked against its pin.
func Fetch(ctx context.Context, cacheDir, name, version string) ([]byte, error) {
	src, ok := sources[name]
	if !ok {
		return nil, fmt.Errorf("marina fetches no manifest for an add-on called %q (a marina bug)", name)
	}
	return src.manifest(ctx, cacheDir, version)
}
