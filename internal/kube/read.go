package kube

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// PoolResource is MetalLB's IPAddressPool.
var PoolResource = schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "ipaddresspools"}

// ServerVersion asks the API server for its version (GET /version): the
// cheapest request that proves the server answers at the kubeconfig's
// address, with a certificate the kubeconfig's CA verifies.
func (k *Cluster) ServerVersion(ctx context.Context) (string, error) {
	raw, err := k.Typed.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("read the API server's /version: %w", err)
	}
	return v.GitVersion, nil
}

// IPAddressPool reads the addresses of MetalLB's IPAddressPool name in ns;
// found is false when there is no such pool (or MetalLB's resource is not
// there at all).
func (k *Cluster) IPAddressPool(ctx context.Context, ns, name string) (addrs []string, found bool, err error) {
	obj, err := k.Dynamic.Resource(PoolResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	addrs, _, err = unstructured.NestedStringSlice(obj.Object, "spec", "addresses")
	if err != nil {
		return nil, true, fmt.Errorf("read IPAddressPool %s/%s: %w", ns, name, err)
	}
	return addrs, true, nil
}
