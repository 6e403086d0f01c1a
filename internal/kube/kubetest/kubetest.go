// Package kubetest gives tests a kube.Cluster over client-go's fake
// dynamic client, holding the objects given. Only tests import it, so the
// scheme of every API group it needs stays out of marina's binary.
package kubetest

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/bcollard/marina/internal/kube"
)

// New is a cluster holding objs (k8s.io/api types), and the fake client
// behind it, for its actions, reactors and tracker. It serves resources
// only: what asks the server itself (ServerVersion, Ready, Mapping) is
// tested against an httptest server with kube.New.
func New(objs ...runtime.Object) (*kube.Cluster, *fake.FakeDynamicClient) {
	dyn := fake.NewSimpleDynamicClient(scheme.Scheme, objs...)
	return &kube.Cluster{Dynamic: dyn}, dyn
}
