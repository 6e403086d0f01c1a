package ui

import (
	"strings"
	"testing"
)

// Every class of escape sequence goes whole, with no residue that a
// terminal would act on; the text around it stays.
func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":                "plain name",
		"a\x1b[2Jb":                 "ab",   // CSI: clear the screen
		"a\x1b[38;5;196mred\x1b[0m": "ared", // CSI: colours
		"a\x1b]0;pwned\x07b":        "ab",   // OSC: window title, BEL-terminated
		"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b": "alinkb", // OSC 8 hyperlink, ST-terminated
		"a\x1bPq#0;2;0;0;0\x1b\\b":                   "ab",     // DCS (sixel)
		"a\x1b_apc\x1b\\b":                           "ab",     // APC
		"a\x1bcb":                                    "ab",     // RIS: reset the terminal
		"a\x1b(0b":                                   "ab",     // charset designation
		"a\u009b2Jb":                                 "ab",     // C1 CSI
		"a\u009d0;t\u009cb":                          "ab",     // C1 OSC, C1 ST
		"a\x07b\x08c\x7fd\x00e":                      "abcde",  // BEL, BS, DEL, NUL
		"a\rb":                                       "a b",    // CR: overwrite the line
		"row\nforged\trow":                           "row forged row",
		"abc\u202edcba":                              "abcdcba",  // right-to-left override
		"a\u2066b\u2069c":                            "abc",      // isolates
		"x\xffy":                                     "x\ufffdy", // invalid UTF-8
		"trailing \x1b":                              "trailing ",
		"unterminated \x1b]0;title":                  "unterminated ",
		"ünïcödé ✓ 名前":                               "ünïcödé ✓ 名前",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

type view struct {
	Name   string
	Rows   []row
	ByName map[string]string
	Ptr    *row
	Any    any
	hidden string
}

type row struct{ A, B string }

// CleanStrings reaches every string of a value: fields, slices, map keys
// and values, pointers, interfaces; and leaves unexported fields.
func TestCleanStrings(t *testing.T) {
	bad := "x\x1b]0;t\x07y"
	v := view{Name: bad, Rows: []row{{A: bad, B: "ok"}}, ByName: map[string]string{bad: bad}, Ptr: &row{A: bad}, Any: row{A: bad}, hidden: bad}
	CleanStrings(&v)
	if v.Name != "xy" || v.Rows[0].A != "xy" || v.ByName["xy"] != "xy" || len(v.ByName) != 1 || v.Ptr.A != "xy" || v.Any.(row).A != "xy" {
		t.Errorf("not every string was cleaned: %+v", v)
	}
	if v.hidden != bad {
		t.Error("an unexported field was changed")
	}
	if strings.Contains(v.Name, "\x1b") {
		t.Error("ESC left")
	}
}

// CleanLines keeps the line breaks between a message's lines and cleans
// each line.
func TestCleanLines(t *testing.T) {
	in := "cannot start:\n  docker said \x1b]0;owned\x07\x1b[2Jno\r\n  fix: marina up"
	want := "cannot start:\n  docker said no \n  fix: marina up" // the CR is a space
	if got := CleanLines(in); got != want {
		t.Errorf("CleanLines = %q, want %q", got, want)
	}
	if got := CleanLines("plain\n\tlines"); got != "plain\n\tlines" {
		t.Errorf("plain text changed: %q", got)
	}
}
