// Package kube is marina's handle on one cluster's API: the client
// settings in one place, a dynamic client with typed reads and writes over
// it, a small map from kinds to resources, and the one poll loop every wait
// shares (MetalLB's, cluster verify's).
//
// It uses client-go's REST and dynamic clients only, not the typed
// clientset or discovery: those link every API group's types into the
// binary (half of its 78 MB), and loading and registering them cost every
// marina command about 18 ms at start, completion included, for the
// handful of kinds marina touches.
package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/bcollard/marina/internal/kubeconfig"
)

// Cluster is one cluster's API with the clients marina uses.
type Cluster struct {
	REST    *rest.Config
	Dynamic dynamic.Interface
	raw     rest.Interface // GETs of paths outside any resource: /version, /readyz, discovery
	kinds   kinds
}

// New builds the clients for rc. The client-side rate limits are raised:
// client-go's default (5 requests/s, bursts of 10) would make applying
// MetalLB's ~30 objects plus discovery crawl for seconds on a local cluster
// that can take far more. timeout bounds each request (0: none).
func New(rc *rest.Config, timeout time.Duration) (*Cluster, error) {
	if rc == nil {
		return nil, fmt.Errorf("no Kubernetes client configuration given (a marina bug: the cluster's kubeconfig was not loaded)")
	}
	c := rest.CopyConfig(rc)
	if c.QPS == 0 {
		c.QPS = 50
	}
	if c.Burst == 0 {
		c.Burst = 100
	}
	if c.UserAgent == "" {
		c.UserAgent = "marina"
	}
	if timeout > 0 {
		c.Timeout = timeout
	}
	k := &Cluster{REST: c}
	hc, err := rest.HTTPClientFor(c)
	if err == nil {
		if k.Dynamic, err = dynamic.NewForConfigAndClient(c, hc); err == nil {
			k.raw, err = rest.UnversionedRESTClientForConfigAndClient(dynamic.ConfigFor(c), hc)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create a Kubernetes client: %w: check the cluster's kubeconfig", err)
	}
	return k, nil
}

// Open is New from one of marina's own cluster kubeconfigs.
func Open(kc []byte, timeout time.Duration) (*Cluster, error) {
	rc, err := kubeconfig.RESTConfig(kc)
	if err != nil {
		return nil, err
	}
	return New(rc, timeout)
}

// PollInterval is how often waits look at the API server again. Half a
// second keeps a wait's extra latency small against pods that take seconds
// to start, at two cheap GETs a second. A wait that watches its object
// (PollOn with Changes) looks at once when it changes.
const PollInterval = 500 * time.Millisecond

// Poll calls check until it reports done, ctx ends, or it fails with an
// error that waiting cannot cure. check returns what it saw, so that a
// timeout can say what was still false. Errors that may pass (a dropped
// connection, an object not created yet) are polled through; a single
// failed read does not replace what was last seen (the last try before a
// deadline often fails only because the deadline is near), but reads that
// keep failing are reported.
func Poll(ctx context.Context, check func(context.Context) (done bool, state string, err error)) (string, error) {
	return PollOn(ctx, nil, check)
}

// PollOn is Poll that also looks again whenever wake signals (Changes):
// at once when the object changes, and every PollInterval whatever the
// watch does.
func PollOn(ctx context.Context, wake <-chan struct{}, check func(context.Context) (done bool, state string, err error)) (string, error) {
	return pollEvery(ctx, PollInterval, wake, check)
}

func pollEvery(ctx context.Context, interval time.Duration, wake <-chan struct{}, check func(context.Context) (done bool, state string, err error)) (string, error) {
	seen := "not checked yet"
	var readErr error
	failures := 0
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var err error
	for {
		var done bool
		if done, err = look(ctx, check, &seen, &readErr, &failures); done || err != nil {
			break
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
		case <-wake:
		}
		if err != nil {
			break
		}
	}
	state := seen
	switch {
	case readErr != nil && seen == "not checked yet":
		state = "unreadable: " + readErr.Error()
	case readErr != nil && failures > 1:
		state = fmt.Sprintf("%s (and the last %d reads failed: %v)", seen, failures, readErr)
	}
	return state, err
}

// Final is an error a poll's check returns to end the poll with it, where
// any other error is a read that failed and is tried again.
type Final struct{ Err error }

func (f *Final) Error() string { return f.Err.Error() }
func (f *Final) Unwrap() error { return f.Err }

// look is one check of a poll: done, or an error that ends it.
func look(ctx context.Context, check func(context.Context) (bool, string, error), seen *string, readErr *error, failures *int) (bool, error) {
	done, s, err := check(ctx)
	switch {
	case err == nil:
		*seen, *readErr, *failures = s, nil, 0
		return done, nil
	case apierrors.IsNotFound(err):
		*seen, *readErr, *failures = "not found", nil, 0
		return false, nil
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return false, err
	case errors.As(err, new(*Final)):
		return false, err
	case ctx.Err() != nil:
		return false, ctx.Err()
	default:
		*readErr = err
		*failures++
		return false, nil
	}
}

// Changes signals, without blocking, every change the API server reports
// to the object name of r in namespace ns ("" names every object of r),
// until ctx ends. A watch that ends or fails is started again after
// PollInterval; a poll woken by it covers the gaps.
func (k *Cluster) Changes(ctx context.Context, r schema.GroupVersionResource, ns, name string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	opts := metav1.ListOptions{}
	if name != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
	go func() {
		for ctx.Err() == nil {
			if w, err := k.Dynamic.Resource(r).Namespace(ns).Watch(ctx, opts); err == nil {
				for range w.ResultChan() {
					select {
					case ch <- struct{}{}:
					default: // a look is due already
					}
				}
				w.Stop()
			}
			select {
			case <-ctx.Done():
			case <-time.After(PollInterval):
			}
		}
	}()
	return ch
}
