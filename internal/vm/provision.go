package vm

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// bootSections are the settings of lima.yaml that Lima reads at every
// boot and marina keeps current on an existing VM: the provisioning
// script and the host resolver's names (host.docker.internal).
var bootSections = []string{"provision", "hostResolver"}

// BootEdit gives an instance's lima.yaml (instance) the bootSections of
// the template marina renders now (template), leaving every other setting
// as it is. changed is false when they are the same.
func BootEdit(instance, template []byte) (out []byte, changed bool, err error) {
	var doc, want yaml.Node
	if err := yaml.Unmarshal(instance, &doc); err != nil {
		return nil, false, fmt.Errorf("read the instance's lima.yaml: %w", err)
	}
	if err := yaml.Unmarshal(template, &want); err != nil {
		return nil, false, fmt.Errorf("read marina's Lima template: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, false, fmt.Errorf("the instance's lima.yaml is not a mapping")
	}
	root := doc.Content[0]
	for _, key := range bootSections {
		wanted := value(&want, key)
		if wanted == nil {
			return nil, false, fmt.Errorf("marina's Lima template has no %s section (a marina bug)", key)
		}
		if have := value(&doc, key); have != nil {
			var a, b any
			if have.Decode(&a) == nil && wanted.Decode(&b) == nil && equalYAML(a, b) {
				continue
			}
		}
		changed = true
		replaced := false
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				root.Content[i+1] = wanted
				replaced = true
			}
		}
		if !replaced {
			root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, wanted)
		}
	}
	if !changed {
		return instance, false, nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, false, err
	}
	return b.Bytes(), true, nil
}

// value is the value of key in the document's top mapping, or nil.
func value(doc *yaml.Node, key string) *yaml.Node {
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func equalYAML(a, b any) bool {
	x, err1 := yaml.Marshal(a)
	y, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
