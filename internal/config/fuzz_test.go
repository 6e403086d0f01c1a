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

// FuzzLoadVMName: whatever the file holds, the lenient loader returns a
// valid VM name or an error, never anything else; and where the strict
// loader accepts the file, both name the same VM.
func FuzzLoadVMName(f *testing.F) {
	f.Add(string(DefaultFile()))
	f.Add("vm:\n  name: lab\n\tcpus: 4\n")
	f.Add("vm:\n  name: lab\n  cpus: 4\n  cpus: 5\n")
	f.Add("vm:\n  name: '../..'\n")
	f.Add("vm: {name: lab}\n")
	f.Add("vm:\n  name: \"lab\" # c\nx: [\n")
	f.Add("vm:\n  name: a\n---\nvm:\n  name: b\n")
	f.Add("vm:\n  name: !!binary ai0w\n")
	f.Add("vm:\n  notes: |\n    name: evil\n\tx: 1\n")
	f.Add("x: \"start\nvm:\n  name: evil\"\n\tq: 1\n")
	f.Fuzz(func(t *testing.T, doc string) {
		paths := Paths{Home: "/Users/me", Dir: "/Users/me/.marina", Config: "config.yaml"}
		l, err := vmNameOf(paths, []byte(doc))
		name := l.Name
		if err == nil && l.Err == nil && l.Config.VM.Name != name {
			t.Fatalf("the strict reading names %q, the lenient %q", l.Config.VM.Name, name)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
		} else {
			var v validator
			v.vmName(name, paths)
			if len(v.probs) > 0 {
				t.Fatalf("LoadVMName returned an invalid name %q: %v", name, v.probs)
			}
		}
		if cfg, _, serr := loadData(paths, []byte(doc)); serr == nil && (err != nil || cfg.VM.Name != name) {
			t.Fatalf("Load names %q, LoadVMName %q (%v)", cfg.VM.Name, name, err)
		}
	})
}
