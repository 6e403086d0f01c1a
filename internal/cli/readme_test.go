package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README and the guides in docs/ name only commands and flags marina
// has: the skill's checker reads every marina command line in their code
// blocks and code spans, so a renamed command or flag fails here until the
// text follows.
func TestDocsNameOnlyRealCommands(t *testing.T) {
	files := []string{filepath.Join("..", "..", "README.md")}
	guides, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guides {
		if n := filepath.Base(g); n != "marina.md" && !strings.HasPrefix(n, "marina_") {
			files = append(files, g) // the generated pages are checked against the tree already
		}
	}
	if len(files) < 8 {
		t.Fatalf("found %d files to check: %q", len(files), files)
	}
	k := newSkillChecker(freshRoot())
	k.code = true
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range k.check(string(b)) {
			t.Errorf("%s names what marina does not have: %s", filepath.Base(f), p)
		}
	}
}

// The README is a front door: short, and a cluster is made early on.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 201 {
		t.Errorf("the README has %d lines; keep it to 200 and move reference material into docs/", len(lines)-1)
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "marina cluster create ") {
			if i > 80 {
				t.Errorf("the first cluster create is on line %d; the Quick start should reach it sooner", i+1)
			}
			return
		}
	}
	t.Error("the README never runs marina cluster create")
}

// Every relative link and picture in the README and the guides names a
// file that is there (an anchor after # is not checked), and every
// picture in docs/ is an SVG that parses.
func TestDocsLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md")}
	guides, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, guides...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which is not there", filepath.Base(f), m[1])
			}
		}
	}
	pictures, _ := filepath.Glob(filepath.Join(root, "docs", "*.svg"))
	if len(pictures) < 2 {
		t.Errorf("docs/ has %d pictures, want the architecture and the request path", len(pictures))
	}
	for _, p := range pictures {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var svg struct {
			XMLName xml.Name
			Title   string `xml:"title"`
		}
		if err := xml.Unmarshal(b, &svg); err != nil || svg.XMLName.Local != "svg" || svg.Title == "" {
			t.Errorf("%s: not an SVG with a title: %v (%s)", filepath.Base(p), err, svg.XMLName.Local)
		}
	}
}
