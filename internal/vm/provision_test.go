package vm

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// An instance's lima.yaml gets the template's provision and hostResolver
// sections, and keeps everything else as it was, including what the
// template would set otherwise; the same sections change nothing.
func TestBootEdit(t *testing.T) {
	instance := []byte("# mine\ncpus: 2\nmounts: [{location: /x}]\nprovision:\n  - mode: system\n    script: old\n")
	template := []byte("cpus: 4\nhostResolver:\n  hosts:\n    host.docker.internal: host.lima.internal\nprovision:\n  - mode: system\n    script: new\n")
	out, changed, err := BootEdit(instance, template)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["cpus"] != 2 || got["mounts"] == nil {
		t.Errorf("other settings changed: %s", out)
	}
	if !strings.Contains(string(out), "script: new") || !strings.Contains(string(out), "host.docker.internal: host.lima.internal") {
		t.Errorf("sections not replaced: %s", out)
	}
	again, changed, err := BootEdit(out, template)
	if err != nil || changed || string(again) != string(out) {
		t.Errorf("a second edit: changed=%v err=%v", changed, err)
	}
	if _, _, err := BootEdit(instance, []byte("cpus: 4\nprovision: []\n")); err == nil || !strings.Contains(err.Error(), "hostResolver") {
		t.Errorf("a template without hostResolver: %v", err)
	}
	if _, _, err := BootEdit([]byte("- a\n"), template); err == nil {
		t.Error("a lima.yaml that is not a mapping was edited")
	}
	if _, _, err := BootEdit([]byte("hostResolver: [x]\n"), template); err == nil {
		t.Error("a hostResolver that is not a mapping was edited")
	}
}

// The user's own host resolver settings stay: marina adds its name where
// it is missing and changes no other entry, nor enabled or ipv6.
func TestBootEditKeepsTheUsersResolver(t *testing.T) {
	template := []byte("hostResolver:\n  hosts:\n    host.docker.internal: host.lima.internal\nprovision:\n  - mode: system\n    script: new\n")
	mine := "provision:\n  - mode: system\n    script: new\nhostResolver:\n  enabled: false\n  ipv6: true\n  hosts:\n    my.db: 10.0.0.5\n"
	out, changed, err := BootEdit([]byte(mine), template)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	var got struct {
		HostResolver struct {
			Enabled *bool
			IPv6    *bool `yaml:"ipv6"`
			Hosts   map[string]string
		} `yaml:"hostResolver"`
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	r := got.HostResolver
	if r.Enabled == nil || *r.Enabled || r.IPv6 == nil || !*r.IPv6 || len(r.Hosts) != 2 || r.Hosts["my.db"] != "10.0.0.5" || r.Hosts["host.docker.internal"] != "host.lima.internal" {
		t.Errorf("the user's resolver became:\n%s", out)
	}
	// A name the user points elsewhere is theirs.
	theirs := "provision:\n  - mode: system\n    script: new\nhostResolver:\n  hosts:\n    host.docker.internal: 10.9.9.9\n"
	if out, changed, err := BootEdit([]byte(theirs), template); err != nil || changed || string(out) != theirs {
		t.Errorf("the user's host.docker.internal was changed: %v %v\n%s", changed, err, out)
	}
	// Null, as Lima's own default.yaml leaves them: not set.
	for _, null := range []string{"hostResolver:\n", "hostResolver: null\n", "hostResolver:\n  hosts:\n  # a: b\n", "hostResolver:\n  hosts: null\n"} {
		out, changed, err := BootEdit([]byte("provision:\n  - mode: system\n    script: old\n"+null), template)
		if err != nil || !changed || !strings.Contains(string(out), "host.docker.internal: host.lima.internal") || !strings.Contains(string(out), "script: new") {
			t.Errorf("%q: changed=%v err=%v\n%s", null, changed, err, out)
		}
	}
	// No hosts yet: the mapping is made.
	if out, _, err := BootEdit([]byte("hostResolver:\n  enabled: true\n"), template); err != nil || !strings.Contains(string(out), "host.docker.internal: host.lima.internal") {
		t.Errorf("no hosts: %v\n%s", err, out)
	}
}
