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
		p := syntaxProblem(data, err)
		if p.Line > 0 {
			p.Msg = fmt.Sprintf("line %d: %s", p.Line, p.Msg)
		}
		return "", fmt.Errorf("%w, and the file does not parse: %s", lerr, p.Msg)
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
	// Decoded as the strict loader decodes it (a !!binary value is its
	// base64 decoding, not its text), so that both name the same VM.
	var v string
	if err := name.Decode(&v); err != nil {
		return "", fmt.Errorf("line %d: vm.name: %s", name.Line, cleanYAMLErr(err.Error()))
	}
	return v, nil
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
// the one top-level "vm:" line, then the one "name:" line at the first
// indentation of its block. Anything it cannot read for sure is an error:
// a quote or bracket left open (the "vm:" seen may be inside a string), a
// block scalar or a deeper "name:" inside the vm block.
func vmNameFromLines(text string) (string, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	vmAt := -1
	for i, s := range lines {
		l, ok := parseLine(s)
		if !ok {
			if !isBlankOrComment(s) && unclosed(strings.TrimSpace(s)) {
				return "", fmt.Errorf("line %d: a quote or bracket is left open", i+1)
			}
			continue
		}
		if unclosed(l.rest) {
			return "", fmt.Errorf("line %d: a quote or bracket is left open", i+1)
		}
		if l.indent == "" && l.key == "vm" {
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
	return nameInBlock(lines, vmAt)
}

// nameInBlock reads vm.name from the block of the "vm:" at line vmAt.
func nameInBlock(lines []string, vmAt int) (string, error) {
	name, nameAt, indent := "", -1, ""
	for i := vmAt + 1; i < len(lines); i++ {
		s := lines[i]
		if isBlankOrComment(s) {
			continue
		}
		if s[0] != ' ' && s[0] != '\t' {
			break // the next top-level key: the block ended
		}
		l, ok := parseLine(s)
		if indent == "" && ok {
			indent = l.indent // the block's own keys sit here
		}
		if ok && l.indent == indent && (strings.HasPrefix(l.rest, "|") || strings.HasPrefix(l.rest, ">")) {
			return "", fmt.Errorf("line %d: a block scalar inside vm: marina cannot read vm.name without parsing the file", i+1)
		}
		if !ok || l.key != "name" || l.indent != indent {
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
			return "", fmt.Errorf("line %d: vm.name %w", i+1, err)
		}
		name, nameAt = v, i
	}
	if nameAt < 0 || name == "" {
		return DefaultVMName, nil
	}
	return name, nil
}

// unclosed reports whether a value opens a quote, a flow list or a flow
// mapping that does not close on its own line: what follows may be inside.
func unclosed(v string) bool {
	if v == "" {
		return false
	}
	switch v[0] {
	case '"':
		return !strings.Contains(strings.ReplaceAll(v[1:], `\"`, ""), `"`)
	case '\'':
		return !strings.Contains(v[1:], "'")
	case '[', '{':
		depth := 0
		for _, c := range v {
			switch c {
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			}
		}
		return depth > 0
	}
	return false
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
