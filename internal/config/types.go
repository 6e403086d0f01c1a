package config

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// The words a config error uses for a value's type: the user's, with Go's
// name after it for whoever reads the schema.

// expected names what a value of type t is written as.
func expected(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number (" + t.String() + ")"
	case reflect.Bool:
		return "true or false (bool)"
	case reflect.String:
		return "text (string)"
	case reflect.Float32, reflect.Float64:
		return "a number (" + t.String() + ")"
	case reflect.Slice:
		return "a list"
	case reflect.Map:
		return "a mapping of keys to " + expected(t.Elem())
	case reflect.Struct:
		return "a mapping of keys (" + strings.Join(fieldNames(t), ", ") + ")"
	}
	return t.String()
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// notAList is the problem of a list written as something else.
func notAList(t reflect.Type, n *yaml.Node) string {
	msg := fmt.Sprintf("expected %s, got %s", expected(t), describe(n))
	if n.Kind == yaml.ScalarNode && t.Elem().Kind() != reflect.Struct {
		msg += fmt.Sprintf(": write [%s], or each item on a line of its own starting with \"- \"", n.Value)
	}
	return msg
}

// checkScalar decodes n as the strict loader will into a value of the plain
// type t (a number, true/false, text) and says in words what is wrong with
// it, if anything: yaml.v3's own message names neither the key nor the
// type as the user wrote it.
func checkScalar(n *yaml.Node, t reflect.Type) (Problem, bool) {
	bad := func(format string, args ...any) (Problem, bool) {
		return Problem{Line: n.Line, Msg: fmt.Sprintf(format, args...)}, true
	}
	if n.Kind != yaml.ScalarNode {
		return bad("expected %s, got %s", expected(t), describe(n))
	}
	if isNull(n) {
		return Problem{}, false // an empty value keeps the default
	}
	v := reflect.New(t)
	err := n.Decode(v.Interface())
	if err == nil {
		// yaml.v3 truncates 4.5 into an int without a word.
		var f float64
		if isInt(t) && n.ShortTag() == "!!float" && n.Decode(&f) == nil && f != math.Trunc(f) {
			return bad("%s is not %s", n.Value, expected(t))
		}
		return Problem{}, false
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		// "5000" is text: the same value unquoted may be what t wants.
		plain := *n
		plain.Style, plain.Tag = 0, ""
		if plain.Decode(reflect.New(t).Interface()) == nil {
			return bad("%q is in quotes, which makes it text, not %s: remove the quotes", n.Value, expected(t))
		}
	}
	if tag := n.ShortTag(); isInt(t) && (tag == "!!int" || tag == "!!float") {
		return bad("%s is out of range for %s", n.Value, expected(t))
	}
	return bad("%q is not %s", n.Value, expected(t))
}

// syntaxProblem is a document that does not parse, in plain words where
// yaml.v3's are a parser's: a tab in the indentation is the usual cause,
// and yaml.v3 reports it at the line before or with no word of a tab.
func syntaxProblem(data []byte, err error) Problem {
	msg := err.Error()
	line := yamlErrLine(msg)
	from := -1
	switch {
	case strings.Contains(msg, "tab character"):
		from = line // the tab is at or after the line reported
	case strings.Contains(msg, "cannot start any token"):
		from = line // a tab at the start of the line reported, or another character
	}
	if from >= 0 {
		if n := tabIndented(data, from, strings.Contains(msg, "cannot start any token")); n > 0 {
			return Problem{Line: n, Msg: "indented with a tab: YAML allows spaces only; replace the tab with spaces"}
		}
	}
	return Problem{Line: line, Msg: cleanYAMLErr(msg)}
}

// tabIndented is the number of the first line from line from on (only that
// line when exact) whose indentation holds a tab, or 0.
func tabIndented(data []byte, from int, exact bool) int {
	for i, l := range strings.Split(string(data), "\n") {
		n := i + 1
		if n < from {
			continue
		}
		if exact && n > from {
			break
		}
		rest := strings.TrimLeft(l, " \t")
		if indent := l[:len(l)-len(rest)]; strings.Contains(indent, "\t") && strings.TrimSpace(rest) != "" {
			return n
		}
	}
	return 0
}
