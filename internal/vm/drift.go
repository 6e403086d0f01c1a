package vm

import (
	"reflect"

	"gopkg.in/yaml.v3"
)

// settings Lima fixes when it creates an instance and marina does not
// change on an existing VM, with the config keys they come from.
// Port mirroring (portForwards) is not among them: marina up offers a
// restart that applies it (PortForwardsEdit).
var fixedAtCreation = []struct{ key, what string }{
	{"mounts", "the registry cache mount (registries.cacheStorage)"},
	{"vmOpts", "Rosetta (vm.rosetta)"},
	{"networks", "the VM's networks"},
}

// TemplateDrift lists the settings where the template an instance was
// created from (its lima.yaml) differs from the template the config
// renders now. Both are compared as data, not text.
func TemplateDrift(created, current []byte) ([]string, error) {
	var a, b map[string]any
	if err := yaml.Unmarshal(created, &a); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(current, &b); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fixedAtCreation {
		if !reflect.DeepEqual(a[f.key], b[f.key]) {
			out = append(out, f.what)
		}
	}
	return out, nil
}
