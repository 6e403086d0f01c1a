package addons

import (
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/golden"
)

// kubeadm's Corefile after marina's edit for two custom resolvers, byte
// for byte. After a meant change:
// go test ./internal/addons -run TestGolden -update, and review the diff.
func TestGolden(t *testing.T) {
	got, err := Corefile(kubeadmCorefile(t), []config.DNSResolver{
		{Domain: "demo.internal", Resolvers: []string{"172.30.255.53"}},
		{Domain: "corp.example.com", Resolvers: []string{"10.0.0.53", "10.0.0.54:5353"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "Corefile.golden", []byte(got))
}
