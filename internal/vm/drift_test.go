package vm

import (
	"reflect"
	"testing"

	"github.com/bcollard/marina/internal/config"
)

func TestTemplateDrift(t *testing.T) {
	paths := config.Paths{Home: "/Users/me", Dir: "/Users/me/.marina"}
	render := func(change func(*config.Config)) []byte {
		c := config.Default()
		if change != nil {
			change(&c)
		}
		b, err := Template(TemplateInput{Config: c, Paths: paths, HostArch: "arm64", Provision: testProvision})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base := render(nil)
	cases := []struct {
		name   string
		change func(*config.Config)
		want   []string
	}{
		{"same", nil, nil},
		{"resources only", func(c *config.Config) { c.VM.CPUs = 8 }, nil},
		// marina up applies a port mirroring change with a restart.
		{"loopback mode", func(c *config.Config) { c.Network.DisablePortMirroring = false }, nil},
		{"guest cache", func(c *config.Config) { c.Registries.CacheStorage = config.CacheGuest }, []string{"the registry cache mount (registries.cacheStorage)"}},
		{"rosetta", func(c *config.Config) { c.VM.Rosetta = true }, []string{"Rosetta (vm.rosetta)"}},
	}
	for _, c := range cases {
		got, err := TemplateDrift(base, render(c.change))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: drift = %q, want %q", c.name, got, c.want)
		}
	}
}
