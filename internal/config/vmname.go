package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// VMName finds vm.name in a config document without reading anything else
// from it, so that a file broken elsewhere still names its VM. It returns
// the default name when the document sets none, and an error when it
// cannot tell for sure (the key twice, an alias, a flow mapping in a file
// that does not parse): guessing could stop or delete the wrong VM. The
// name is not validated here.
func VMName(data []byte) (string, error) {
	doc, err := oneDocument(data)
	if err == nil {
		return vmNameFromTree(doc)
	}
	// The file is not YAML (a tab, a stray quote…): read the vm block line
	// by line, as a person would.
	name, lerr := vmNameFromLines(string(data))
	if lerr != nil {
		return "", fmt.Errorf("%v, and the file does not parse: %s", lerr, cleanYAMLErr(err.Error()))
	}
	return name, nil
}

func vmNameFromTree(doc yaml.Node) (string, error) {
	if len(doc.Content) == 0 {
		return DefaultVMName, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return DefaultVMName, nil
	}
	if root.Kind != yaml.MappingNode {
		return "", errors.New("its top level is not a mapping of keys")
	}
	vm, err := onlyValue(root, "vm")
	if err != nil || vm == nil {
		return DefaultVMName, err
	}
	switch {
	case vm.Kind == yaml.ScalarNode && vm.Tag == "!!null":
		return DefaultVMName, nil
	case vm.Kind != yaml.MappingNode:
		return "", fmt.Errorf("line %d: vm is not a mapping of keys", vm.Line)
	}
	name, err := onlyValue(vm, "name")
	if err != nil || name == nil {
		return DefaultVMName, err
	}
	switch {
	case name.Kind != yaml.ScalarNode:
		return "", fmt.Errorf("line %d: vm.name is not a plain value", name.Line)
	case name.Tag == "!!null":
		return DefaultVMName, nil
	}
	return name.Value, nil
}

// onlyValue is the value of key in mapping m: nil when it is absent, an
// error when it is there twice or is built from an alias or merge key.
func onlyValue(m *yaml.Node, key string) (*yaml.Node, error) {
	var found *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" {
			return nil, fmt.Errorf("line %d: a merge key (<<) may hide %s", k.Line, key)
		}
		if k.Kind != yaml.ScalarNode || k.Value != key {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("line %d: %s is set a second time", k.Line, key)
		}
		if v.Kind == yaml.AliasNode {
			return nil, fmt.Errorf("line %d: %s is an alias", k.Line, key)
		}
		found = v
	}
	return found, nil
}

var (
	// a key at the start of a line: indentation, the key (maybe quoted),
	// a colon, the rest.
	keyLine = regexp.MustCompile(`^([ \t]*)(?:"([^"]*)"|'([^']*)'|([^\s:#"'{}\[\],&*!|>%@` + "`" + `][^:#]*?))[ \t]*:(?:[ \t]+(.*)|)$`)
	// vm or name as a key anywhere, in block or flow style.
	anyVMKey   = regexp.MustCompile(`(^|[\s{,])["']?vm["']?[ \t]*:`)
	anyNameKey = regexp.MustCompile(`(^|[\s{,])["']?name["']?[ \t]*:`)
)

type line struct {
	indent string
	key    string
	rest   string // the value after the colon, comment removed
	raw    string
}

func parseLine(s string) (line, bool) {
	m := keyLine.FindStringSubmatch(s)
	if m == nil {
		return line{raw: s}, false
	}
	return line{indent: m[1], key: m[2] + m[3] + m[4], rest: stripComment(m[5]), raw: s}, true
}

// stripComment removes a trailing " # comment" outside quotes.
func stripComment(v string) string {
	quote := byte(0)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || v[i-1] == ' ' || v[i-1] == '\t'):
			return strings.TrimSpace(v[:i])
		}
	}
	return strings.TrimSpace(v)
}

func isBlankOrComment(s string) bool {
	t := strings.TrimSpace(s)
	return t == "" || strings.HasPrefix(t, "#")
}

// vmNameFromLines reads vm.name from the text of a file YAML cannot parse:
// the one top-level "vm:" line, then the one "name:" line in its indented
// block. Anything it cannot read for sure is an error.
func vmNameFromLines(text string) (string, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	vmAt := -1
	for i, s := range lines {
		l, ok := parseLine(s)
		if ok && l.indent == "" && l.key == "vm" {
			if vmAt >= 0 {
				return "", fmt.Errorf("line %d: vm is set a second time", i+1)
			}
			vmAt = i
		}
	}
	if vmAt < 0 {
		for i, s := range lines {
			if !isBlankOrComment(s) && anyVMKey.MatchString(stripComment(s)) {
				return "", fmt.Errorf("line %d: vm is written in a way marina cannot read without parsing the file", i+1)
			}
		}
		return DefaultVMName, nil
	}
	head, _ := parseLine(lines[vmAt])
	switch head.rest {
	case "":
	case "~", "null", "Null", "NULL":
		return DefaultVMName, nil
	default:
		return "", fmt.Errorf("line %d: vm is not written as an indented block", vmAt+1)
	}
	name, nameAt := "", -1
	for i := vmAt + 1; i < len(lines); i++ {
		s := lines[i]
		if isBlankOrComment(s) {
			continue
		}
		if s[0] != ' ' && s[0] != '\t' {
			break // the next top-level key: the block ended
		}
		l, ok := parseLine(s)
		if !ok || l.key != "name" {
			if anyNameKey.MatchString(stripComment(s)) {
				return "", fmt.Errorf("line %d: vm.name is written in a way marina cannot read without parsing the file", i+1)
			}
			continue
		}
		if nameAt >= 0 {
			return "", fmt.Errorf("line %d: vm.name is set a second time", i+1)
		}
		v, err := scalar(l.rest)
		if err != nil {
			return "", fmt.Errorf("line %d: vm.name %v", i+1, err)
		}
		name, nameAt = v, i
	}
	if nameAt < 0 || name == "" {
		return DefaultVMName, nil
	}
	return name, nil
}

// scalar reads a one-line plain or quoted YAML scalar.
func scalar(v string) (string, error) {
	switch {
	case v == "" || v == "~" || v == "null" || v == "Null" || v == "NULL":
		return "", nil
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		if strings.ContainsAny(v[1:len(v)-1], `"\`) {
			return "", errors.New("holds escapes")
		}
		return v[1 : len(v)-1], nil
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		if strings.Contains(v[1:len(v)-1], "'") {
			return "", errors.New("holds quotes")
		}
		return v[1 : len(v)-1], nil
	case strings.ContainsAny(v[:1], `"'{}[]&*!|>%@`+"`"):
		return "", errors.New("is not a plain value")
	}
	return v, nil
}
