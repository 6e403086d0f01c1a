package vm

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// BootEdit gives an instance's lima.yaml (instance) what Lima reads at
// every boot from the template marina renders now (template): its
// provisioning script, replaced whole (it is marina's), and its host
// resolver's names (host.docker.internal), each added only where the
// instance has no entry of that name, so that the user's own names,
// hostResolver.enabled and ipv6 stay as they are. Every other setting is
// left alone; changed is false when nothing was missing.
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
	script := value(&want, "provision")
	hosts := value(value(&want, "hostResolver"), "hosts")
	if script == nil || hosts == nil || hosts.Kind != yaml.MappingNode {
		return nil, false, fmt.Errorf("marina's Lima template has no provision section or no hostResolver.hosts (a marina bug)")
	}
	if have := value(&doc, "provision"); have == nil || !sameYAML(have, script) {
		set(root, "provision", script)
		changed = true
	}
	resolver := value(&doc, "hostResolver")
	switch {
	case isNull(resolver):
		set(root, "hostResolver", value(&want, "hostResolver"))
		changed = true
	case resolver.Kind != yaml.MappingNode:
		return nil, false, fmt.Errorf("the instance's lima.yaml has a hostResolver that is not a mapping: fix it or remove the key")
	default:
		have := value(resolver, "hosts")
		if isNull(have) {
			set(resolver, "hosts", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
			have = value(resolver, "hosts")
		}
		if have.Kind != yaml.MappingNode {
			return nil, false, fmt.Errorf("the instance's lima.yaml has a hostResolver.hosts that is not a mapping: fix it or remove the key")
		}
		for i := 0; i+1 < len(hosts.Content); i += 2 {
			if value(have, hosts.Content[i].Value) == nil {
				have.Content = append(have.Content, hosts.Content[i], hosts.Content[i+1])
				changed = true
			}
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

// set gives key of mapping m the value v, appending the key when m has
// none.
func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// isNull reports whether a key's value is missing or null (`key:` with
// nothing, or only comments, after it), which Lima reads as not set.
func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func sameYAML(a, b *yaml.Node) bool {
	var x, y any
	return a.Decode(&x) == nil && b.Decode(&y) == nil && equalYAML(x, y)
}

// value is the value of key in mapping n (or in a document's top
// mapping), or nil.
func value(n *yaml.Node, key string) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func equalYAML(a, b any) bool {
	x, err1 := yaml.Marshal(a)
	y, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
