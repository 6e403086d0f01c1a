package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/bcollard/marina/internal/skill"
)

// DocsCommand is the command that writes the command reference in docs/;
// the test that keeps docs/ current names it.
const DocsCommand = "go run ./internal/cli/gendocs docs"

// WriteDocs writes the command reference, one Markdown page per command
// (marina.md, marina_up.md, …), into dir from the command tree marina runs,
// after removing the pages an earlier run wrote there, so that a removed
// command loses its page. The pages carry no date: the same tree writes
// the same bytes.
func WriteDocs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot make the docs folder: %w", err)
	}
	old, err := docPages(dir)
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("cannot remove the old page: %w", err)
		}
	}
	root := newRoot(io.Discard, io.Discard).command()
	skill.CompleteTree(root)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("cannot write the command reference in %s: %w", dir, err)
	}
	return nil
}

// docPages are the names of the reference's pages in dir: marina.md and
// marina_*.md, and nothing else of what the folder may hold.
func docPages(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read the docs folder: %w", err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && (n == "marina.md" || strings.HasPrefix(n, "marina_") && strings.HasSuffix(n, ".md")) {
			out = append(out, n)
		}
	}
	return out, nil
}
