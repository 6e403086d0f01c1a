// Package golden compares what marina renders (scripts, templates,
// configs) with files checked in under a package's testdata, so that any
// change to a rendered byte shows up in review as a diff of that file.
// Only tests import it.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update makes Check write what was rendered instead of comparing: run
// `go test ./internal/X -run TestGolden -update`, then review the diff of
// testdata/ before committing it.
var update = flag.Bool("update", false, "rewrite the golden files")

// Check compares got with testdata/<name> of the package under test, byte
// for byte, or rewrites that file under -update.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("golden file %s: %v\nwrite it with `go test ./%s -run TestGolden -update` and review it", file, err, pkgDir())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what is rendered now:\n%s\nif the change is meant, run `go test ./%s -run TestGolden -update` and review the diff of %s",
			file, Diff(string(want), string(got)), pkgDir(), file)
	}
}

// Diff shows where two texts part: the first differing line with a few
// lines of context around it, and the line counts. Enough to see what
// changed without a diff library.
func Diff(want, got string) string {
	w, g := lines(want), lines(got)
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	from := max(0, i-3)
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d (golden has %d lines, rendered %d):\n", i+1, len(w), len(g))
	show := func(sign string, lines []string) {
		for j := from; j < len(lines) && j < i+4; j++ {
			mark := " "
			if j >= i {
				mark = sign
			}
			fmt.Fprintf(&b, "%s%4d| %q\n", mark, j+1, lines[j])
		}
	}
	b.WriteString("golden:\n")
	show("-", w)
	b.WriteString("rendered:\n")
	show("+", g)
	return b.String()
}

// lines splits s after each newline, with no empty last element.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// pkgDir is the package under test relative to the module root (tests run
// in their package's folder), for the hint's command line.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "<package>"
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil {
				return "<package>"
			}
			return filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "<package>"
		}
		dir = parent
	}
}
