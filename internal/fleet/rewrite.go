package fleet

import (
	"bytes"
	"fmt"
	"reflect"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Rewrite gives a Fleet manifest of klimax's apiVersion marina's: the
// bytes of that one value are replaced, quotes kept, and every other byte
// of the file (comments, layout, line endings) stays. changed is false,
// and out is data, for a manifest that is marina's already. A file that
// is not a Fleet is the parser's error (an *Error, whose File is left for
// the caller to name).
//
// The manifest is checked as Load checks it, but for what depends on
// marina's config (mirror names, metrics-server versions, node images):
// fleet apply checks those. The result is read back, and must be the
// same Fleet.
func Rewrite(data []byte) (out []byte, changed bool, err error) {
	known := lax(data)
	before, err := Load("", data, known)
	if err != nil {
		return nil, false, err
	}
	if !before.Converted {
		return data, false, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil, false, fmt.Errorf("read the manifest again: %v", err) //nolint:errorlint // err may be nil here
	}
	var v *yaml.Node
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "apiVersion" {
			v = root.Content[i+1]
		}
	}
	if v == nil {
		return nil, false, fmt.Errorf("the manifest's apiVersion was not found")
	}
	cantRewrite := fmt.Errorf("line %d: apiVersion %s is written in a form marina does not rewrite in place: change it to %s by hand", v.Line, KlimaxAPIVersion, APIVersion)
	at, ok := scalarBytes(data, v)
	if !ok {
		return nil, false, cantRewrite
	}
	out = make([]byte, 0, len(data)-len(KlimaxAPIVersion)+len(APIVersion))
	out = append(out, data[:at]...)
	out = append(out, APIVersion...)
	out = append(out, data[at+len(KlimaxAPIVersion):]...)
	after, err := Load("", out, known)
	if err != nil || after.Converted {
		return nil, false, cantRewrite
	}
	after.Converted = true
	if !reflect.DeepEqual(after, before) {
		return nil, false, cantRewrite
	}
	return out, true, nil
}

// scalarBytes is where in data the text of v (a one-line scalar whose
// value is KlimaxAPIVersion, plain or quoted, after a tag or an anchor)
// starts; false when it is not written that way (a block scalar, an
// escape).
func scalarBytes(data []byte, v *yaml.Node) (int, bool) {
	// The line: YAML breaks lines at \r\n, \r and \n (the parser refuses
	// the other breaks it knows).
	start := 0
	for line := 1; line < v.Line; line++ {
		i := bytes.IndexAny(data[start:], "\r\n")
		if i < 0 {
			return 0, false
		}
		start += i + 1
		if data[start-1] == '\r' && start < len(data) && data[start] == '\n' {
			start++
		}
	}
	// The column counts characters, and not a byte-order mark.
	if bom := "\ufeff"; v.Line == 1 && bytes.HasPrefix(data, []byte(bom)) {
		start = len(bom)
	}
	at := start
	for col := 1; col < v.Column; col++ {
		if at >= len(data) {
			return 0, false
		}
		_, n := utf8.DecodeRune(data[at:])
		at += n
	}
	// A tag (!!str) or an anchor (&a) before the value, and the space
	// after each.
	for at < len(data) && (data[at] == '!' || data[at] == '&') {
		for at < len(data) && data[at] != ' ' && data[at] != '\t' {
			at++
		}
		for at < len(data) && (data[at] == ' ' || data[at] == '\t') {
			at++
		}
	}
	quote := byte(0)
	if at < len(data) && (data[at] == '"' || data[at] == '\'') {
		quote = data[at]
		at++
	}
	if !bytes.HasPrefix(data[at:], []byte(KlimaxAPIVersion)) {
		return 0, false
	}
	if end := at + len(KlimaxAPIVersion); quote != 0 && (end >= len(data) || data[end] != quote) {
		return 0, false
	}
	return at, true
}

// lax is what a manifest is checked against when marina's config is not
// at hand: every text in the manifest passes for a mirror's name and a
// pinned metrics-server version; node images are not checked.
func lax(data []byte) Known {
	var doc yaml.Node
	_ = yaml.Unmarshal(data, &doc)
	var all []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			all = append(all, n.Value)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	return Known{Mirrors: all, MetricsServer: all}
}
