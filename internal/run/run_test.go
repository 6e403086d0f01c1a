package run

import (
	"os/exec"
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
