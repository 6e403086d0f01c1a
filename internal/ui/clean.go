package ui

import (
	"reflect"
	"strings"
	"unicode/utf8"
)

// Clean is s made safe to print on a terminal: every control character
// goes (C0 and C1, DEL; tabs and line breaks become spaces, so a value
// cannot break a table's rows or columns either), with the whole escape
// sequence it starts (CSI, OSC up to its BEL or ST, DCS, SOS, PM and APC
// up to ST, and two-byte escapes), and so do the bidirectional overrides
// and isolates that reorder what follows them. Invalid UTF-8 becomes
// U+FFFD. Every text view prints what came from the VM, Docker, etcd or a
// cluster through it (CleanStrings); JSON and YAML keep exact values,
// which their encoders escape.
func Clean(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
			i++
		case r == 0x1b: // ESC
			i = skipEscape(s, i+1)
		case r == 0x9b: // CSI
			i = skipCSI(s, i+size)
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // OSC, DCS, SOS, PM, APC
			i = skipString(s, i+size)
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
			b.WriteByte(' ')
			i += size
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || bidi(r):
			i += size
		default:
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII, by far the common case.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// bidi reports the bidirectional embeddings, overrides and isolates.
func bidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// skipEscape is the index after the escape sequence whose ESC ended
// before i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// ESC followed by intermediates (0x20–0x2f) and one final byte.
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) {
		i++
	}
	return i
}

// skipCSI is the index after a control sequence's final byte (0x40–0x7e),
// from its parameters at i.
func skipCSI(s string, i int) int {
	for i < len(s) {
		c := s[i]
		i++
		if c >= 0x40 && c <= 0x7e {
			break
		}
	}
	return i
}

// skipString is the index after a control string's terminator: BEL, ST
// (ESC \), or C1 ST.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

// CleanStrings applies Clean to every string v points at: fields of
// structs (exported or not settable ones are left), elements of slices
// and arrays, map keys and values, through pointers and interfaces. A text
// view calls it on its value before printing.
func CleanStrings(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return
	}
	clean(rv.Elem())
}

func clean(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(Clean(v.String()))
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Interface {
			// An interface holds a copy: clean a settable one and put it back.
			e := reflect.New(v.Elem().Type()).Elem()
			e.Set(v.Elem())
			clean(e)
			if v.CanSet() {
				v.Set(e)
			}
			return
		}
		clean(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				clean(f)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			clean(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(v.MapIndex(k))
			clean(val)
			nk := k
			if k.Kind() == reflect.String {
				nk = reflect.ValueOf(Clean(k.String())).Convert(k.Type())
				if nk.String() != k.String() {
					v.SetMapIndex(k, reflect.Value{})
				}
			}
			v.SetMapIndex(nk, val)
		}
	}
}

// CleanLines is Clean on each line of s, keeping the line breaks and tabs
// between them: for messages of several lines (warnings, errors) whose words may
// hold what came from the VM.
func CleanLines(s string) string {
	if isPlain(s) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		// Tabs stay too: harmless, and how cobra indents a suggestion.
		cells := strings.Split(l, "\t")
		for j, c := range cells {
			cells[j] = Clean(c)
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}
