package cluster

import (
	"testing"

	"github.com/bcollard/marina/internal/golden"
	"github.com/bcollard/marina/internal/registry"
)

// kind's config for a realistic cluster (direct mode, a worker, a fleet,
// a user label, the mirrors' certs.d), byte for byte. After a meant
// change: go test ./internal/cluster -run TestGolden -update, and review
// the diff.
func TestGolden(t *testing.T) {
	b, err := Spec{
		Name: "dev", Slot: 2, Region: DefaultRegion(2), Zone: DefaultZone(2),
		Labels: Labels{"team": "net"}, Fleet: "demo", Workers: 1,
		ListenAddress: "0.0.0.0", SANs: []string{"192.168.64.3", "127.0.0.1"},
		CertsD: "/etc/marina/clusters/dev/certs.d", ContainerdPatch: registry.ContainerdPatch,
	}.KindConfig()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "kind-config.yaml.golden", b)
}
