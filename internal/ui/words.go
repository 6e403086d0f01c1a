package ui

import (
	"fmt"
	"strconv"
)

// Dedupe is in without its repeats, in the order each first came.
func Dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// OrNone is names, or the one word "none" when there are none.
func OrNone(names []string) []string {
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

// Plural is "1 what", or "n whats".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// AndMore is the first of a list, and how many follow; "unknown" for
// none.
func AndMore(list []string) string {
	switch len(list) {
	case 0:
		return "unknown"
	case 1:
		return list[0]
	}
	return fmt.Sprintf("%s (and %d more)", list[0], len(list)-1)
}
