package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"
)

// PoolResource is MetalLB's IPAddressPool.
var PoolResource = schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "ipaddresspools"}

// ServerVersion asks the API server for its version (GET /version): the
// cheapest request that proves the server answers at the kubeconfig's
// address, with a certificate the kubeconfig's CA verifies.
func (k *Cluster) ServerVersion(ctx context.Context) (string, error) {
	raw, err := k.raw.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("read the API server's /version: %w", err)
	}
	return v.GitVersion, nil
}

// Get reads the object name (in namespace ns, "" for a cluster-wide one)
// of resource r: nil when there is none.
func (k *Cluster) Get(ctx context.Context, r schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	obj, err := k.Dynamic.Resource(r).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// Ready waits until the API server says it is ready (GET /readyz). A
// server that has just restarted (its node container restarted with the
// VM) answers /version seconds before it has loaded its RBAC roles, and
// until then it refuses every request as forbidden: a caller that goes on
// at once reports rights the user does have as missing. Refused
// credentials are final; anything else is waited through until ctx ends,
// and then the last answer is the error.
func (k *Cluster) Ready(ctx context.Context) error {
	// What the server last answered is the news; a request that failed
	// only because the deadline was near is not.
	var answered, other error
	err := wait.PollUntilContextCancel(ctx, PollInterval, true, func(ctx context.Context) (bool, error) {
		_, err := k.raw.Get().AbsPath("/readyz").Do(ctx).Raw()
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsUnauthorized(err):
			return false, fmt.Errorf("the API server refuses the kubeconfig's credentials: %w", err)
		}
		if st := apierrors.APIStatus(nil); errors.As(err, &st) {
			answered = err
		} else {
			other = err
		}
		return false, nil
	})
	if last := cmp.Or(answered, other); err != nil && last != nil && ctx.Err() != nil {
		return fmt.Errorf("the API server is not ready yet: %w", last)
	}
	return err
}
