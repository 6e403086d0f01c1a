package vm

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// ProvisionEdit gives an instance's lima.yaml (instance) the provision
// section of the template marina renders now (template), leaving every
// other setting as it is. changed is false when they are the same.
func ProvisionEdit(instance, template []byte) (out []byte, changed bool, err error) {
	var doc, want yaml.Node
	if err := yaml.Unmarshal(instance, &doc); err != nil {
		return nil, false, fmt.Errorf("read the instance's lima.yaml: %w", err)
	}
	if err := yaml.Unmarshal(template, &want); err != nil {
		return nil, false, fmt.Errorf("read marina's Lima template: %w", err)
	}
	wanted := value(&want, "provision")
	if wanted == nil {
		return nil, false, fmt.Errorf("marina's Lima template has no provision section (a marina bug)")
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, false, fmt.Errorf("the instance's lima.yaml is not a mapping")
	}
	root := doc.Content[0]
	if have := value(&doc, "provision"); have != nil {
		var a, b any
		if have.Decode(&a) == nil && wanted.Decode(&b) == nil && equalYAML(a, b) {
			return instance, false, nil
		}
	}
	replaced := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "provision" {
			root.Content[i+1] = wanted
			replaced = true
		}
	}
	if !replaced {
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "provision"}, wanted)
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
