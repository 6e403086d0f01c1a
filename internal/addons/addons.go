// Package addons applies what marina installs in every new kind cluster —
// MetalLB and its address pool, CoreDNS forwarding — from the Mac, through
// client-go, and waits on the conditions that show each piece works.
//
// Every wait ends with its context: callers give the context a deadline.
package addons

import (
	"errors"
	"fmt"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// FieldManager is the name marina's server-side applies and updates carry
// in managedFields.
const FieldManager = "marina"

// hint says what to do about an error from the API server; the caller has
// already said what was being done.
func hint(err error) string {
	var netErr net.Error
	switch {
	case apierrors.IsUnauthorized(err):
		return "the API server refused the kubeconfig's credentials: use the kubeconfig marina wrote for this cluster (~/.kube/marina/<name>.kubeconfig) and retry"
	case apierrors.IsForbidden(err):
		return "the kubeconfig's user lacks the rights: use the admin kubeconfig marina wrote for this cluster (~/.kube/marina/<name>.kubeconfig)"
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return "the API server rejected the object as invalid; check the values marina was given"
	case errors.As(err, &netErr), apierrors.IsServerTimeout(err), apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err):
		return "the cluster's API server is not answering: check that the cluster runs (marina status) and retry"
	default:
		return "retry; if it persists, look at the cluster with kubectl get --raw /readyz using its kubeconfig"
	}
}

func wrap(err error, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", fmt.Sprintf(format, args...), err, hint(err))
}
