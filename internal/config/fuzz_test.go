package config

import (
	"testing"
)

// FuzzParse feeds arbitrary documents to the loader and the validator: they
// must return an error or a config, never panic or hang.
func FuzzParse(f *testing.F) {
	f.Add(string(DefaultFile()))
	f.Add("vm:\n  cpus: 2\nnetwrok: {}\n")
	f.Add("registries:\n  mirrors:\n    - name: quay.io\n      port: 99999\n")
	f.Add("vm: &a\n  name: x\nnetwork: *a\n")
	f.Add("kind:\n  customDnsResolvers:\n    - domain: a.b\n      resolvers: [1.1.1.1, '::1']\n")
	f.Add("- a\n- b\n")
	f.Add("vm: [1, 2]\n")
	f.Add("? [a, b]\n: c\n")
	paths := Paths{Home: "/Users/me", Dir: "/Users/me/.marina", Config: "config.yaml"}
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, lines, err := Parse("config.yaml", []byte(doc))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		for _, p := range Validate(cfg, paths) {
			_ = lines.find(p.Path)
			if p.Msg == "" {
				t.Fatalf("problem without a message at %s", p.Path)
			}
		}
	})
}
