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
}
