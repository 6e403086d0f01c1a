package run

import (
	"os/exec"
	"strings"
	"testing"
	"testing/quick"
)

// Every script marina renders relies on ShellQuote: whatever the string,
// a POSIX shell must read back exactly that string, as one word.
func TestShellQuoteRoundTrips(t *testing.T) {
	words := []string{
		"", "plain", "a b", "it's", "'", "''", `"`, `\`, "$HOME", "$(touch x)", "`id`", "a;b", "a&b|c",
		"*", "?", "[a]", "~", "#x", "a\nb", "\t", "-n", "--", "x=y", "é", "a\\'b", "!event",
	}
	for _, w := range words {
		roundTrip(t, w)
	}
	// And anything else (NUL cannot be in an argument).
	f := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 {
				return true
			}
		}
		return roundTrip(t, s)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 200}); err != nil {
		t.Error(err)
	}
}

func roundTrip(t *testing.T, w string) bool {
	t.Helper()
	for _, sh := range []string{"sh", "bash"} {
		out, err := exec.Command(sh, "-c", "printf '%s|' "+ShellQuote(w)).Output()
		if err != nil || string(out) != w+"|" {
			t.Errorf("%s: ShellQuote(%q) = %s reads back as %q (%v)", sh, w, ShellQuote(w), out, err)
			return false
		}
	}
	return true
}

func TestQuote(t *testing.T) {
	if got := Quote([]string{"route", "-n", "add", "a b", "it's"}); got != `route -n add 'a b' 'it'\''s'` {
		t.Errorf("Quote = %s", got)
	}
}

// What ShellQuote writes: safe words as they are (scripts and error
// messages stay readable), anything else in single quotes, each single
// quote in it closing the quotes, escaped, and opening them again.
func TestShellQuoteTable(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"/etc/marina/clusters/dev", "/etc/marina/clusters/dev"},
		{"0644", "0644"},
		{"kindest/node:v1.36.4@sha256:0a", "kindest/node:v1.36.4@sha256:0a"},
		{"a=b,c+d%e-f_g.h", "a=b,c+d%e-f_g.h"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$(id)", "'$(id)'"},
		{"`id`", "'`id`'"},
		{"$HOME", "'$HOME'"},
		{"a;b", "'a;b'"},
		{"*", "'*'"},
		{"~", "'~'"},
		{"#", "'#'"},
		{"!", "'!'"},
		{"a\nb", "'a\nb'"},
		{"tab\t", "'tab\t'"},
		{`back\slash`, `'back\slash'`},
		{"é", "'é'"},
	}
	for _, c := range cases {
		if got := ShellQuote(c.in); got != c.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// FuzzShellQuote: any string but one holding NUL (argv cannot carry it)
// comes back byte for byte from a real bash, as one word.
func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "plain", "it's", "'\\''", "$(touch x)", "`id`", "a\nb", "\xff\xfe", "!!", "${x:?}", "\\", "-n", "é\r\n"} {
		f.Add(s)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		f.Skip("no bash")
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			t.Skip("NUL cannot be in an argument")
		}
		// Two words: a quote that leaked would split or merge them.
		out, err := exec.Command(bash, "-c", "printf '%s|' "+ShellQuote(s)+" end").Output()
		if err != nil || string(out) != s+"|end|" {
			t.Errorf("ShellQuote(%q) = %s reads back as %q (%v)", s, ShellQuote(s), out, err)
		}
	})
}
