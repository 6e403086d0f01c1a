package config

import (
	"strings"
	"testing"
)

// A key only klimax's config has says so and names the fix, in place of
// the usual "did you mean" or list of known keys.
func TestKlimaxKeysNameTheFix(t *testing.T) {
	cases := []struct {
		name, body string
		want       string
	}{
		{"kindBridgeCIDR", "network:\n  kindBridgeCIDR: 172.30.0.0/16\n",
			`config.yaml:2: network.kindBridgeCIDR: unknown key "kindBridgeCIDR": it is klimax's (marina calls it network.cidr); run marina migrate to convert a klimax config, or rename it`},
		{"coreDNSDomains", "kind:\n  nodeVersion: v1.36.4\n  coreDNSDomains: [runlocal.dev]\n",
			`config.yaml:3: kind.coreDNSDomains: unknown key "coreDNSDomains": it is klimax's (marina sends a domain elsewhere with kind.customDnsResolvers); run marina migrate to convert a klimax config, or replace it`},
		{"localRegistry", "registries:\n  localRegistry:\n    enabled: true\n    port: 5000\n",
			`config.yaml:2: registries.localRegistry: unknown key "localRegistry": it is klimax's (marina's push registry is registries.local); run marina migrate to convert a klimax config, or use registries.local.{enabled,port}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, c.body)
			if err == nil {
				t.Fatal("loaded without error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error does not say:\n  %s\ngot:\n%s", c.want, err)
			}
		})
	}
}

// Only the key at klimax's own place gets the hint: elsewhere the same
// name is an ordinary unknown key.
func TestKlimaxHintOnlyAtKlimaxPath(t *testing.T) {
	_, err := load(t, "vm:\n  kindBridgeCIDR: 172.30.0.0/16\n")
	if err == nil {
		t.Fatal("loaded without error")
	}
	if strings.Contains(err.Error(), "klimax") {
		t.Fatalf("vm.kindBridgeCIDR is not klimax's key, but the error says so:\n%s", err)
	}
	if !strings.Contains(err.Error(), `vm.kindBridgeCIDR: unknown key "kindBridgeCIDR" (known keys: `) {
		t.Fatalf("unexpected error:\n%s", err)
	}
}
