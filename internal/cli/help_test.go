package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/skill"
)

// helpCommands is every command with a help page of its own: the tree
// marina runs, with what cobra adds when it runs (help, completion), less
// cobra's help command and its hidden __complete entry points.
func helpCommands(root *cobra.Command) []*cobra.Command {
	skill.CompleteTree(root)
	out := []*cobra.Command{root}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Name() == "help" || strings.HasPrefix(s.Name(), "__") || s.Hidden { // hidden: klimax's words, kept for its users
				continue
			}
			out = append(out, s)
			walk(s)
		}
	}
	walk(root)
	return out
}

// Every help page has a Long text and examples, indented as cobra and
// kubectl indent them, that run the command itself with flags and
// subcommands it has (the skill's checker reads them), and --help prints
// both.
func TestEveryCommandHasLongAndExample(t *testing.T) {
	isolate(t)
	root := freshRoot()
	cmds := helpCommands(root)
	if len(cmds) < 40 {
		t.Fatalf("the walk found %d commands: it missed some", len(cmds))
	}
	for _, want := range []string{"marina", "marina up", "marina cluster apply", "marina kubeconfig use", "marina completion zsh", "marina skill path"} {
		if !slices.ContainsFunc(cmds, func(c *cobra.Command) bool { return c.CommandPath() == want }) {
			t.Errorf("the walk missed %s", want)
		}
	}
	checker := newSkillChecker(freshRoot())
	for _, c := range cmds {
		path := c.CommandPath()
		if strings.TrimSpace(c.Long) == "" {
			t.Errorf("%s has no Long text", path)
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", path)
			continue
		}
		// Its own path, or one of its aliases'.
		names := []string{path}
		for _, a := range c.Aliases {
			names = append(names, c.Parent().CommandPath()+" "+a)
		}
		runsItself := false
		var code []string
		for _, l := range strings.Split(c.Example, "\n") {
			if l == "" {
				continue
			}
			if !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ") {
				t.Errorf("%s: example line %q is not indented two spaces", path, l)
			}
			l = strings.TrimSpace(l)
			code = append(code, l)
			if strings.HasPrefix(l, "#") {
				continue
			}
			for _, n := range names {
				if regexp.MustCompile(`(^|[\s(|&])` + regexp.QuoteMeta(n) + `(\s|$|\))`).MatchString(l) {
					runsItself = true
				}
			}
		}
		if !runsItself {
			t.Errorf("%s: no example runs it:\n%s", path, c.Example)
		}
		for _, p := range checker.check("```sh\n" + strings.Join(code, "\n") + "\n```\n") {
			t.Errorf("%s: an example names what marina does not have: %s", path, p)
		}

		args := append(strings.Fields(path)[1:], "--help")
		out, errOut, code2 := runCLI(t, args...)
		if code2 != 0 {
			t.Errorf("marina %s: exit status %d: %s", strings.Join(args, " "), code2, errOut)
			continue
		}
		if !strings.Contains(out, strings.TrimRight(c.Long, " \n")) {
			t.Errorf("marina %s does not print its Long text:\n%s", strings.Join(args, " "), out)
		}
		if !strings.Contains(out, "\nExamples:\n"+c.Example+"\n") {
			t.Errorf("marina %s does not print its examples:\n%s", strings.Join(args, " "), out)
		}
	}
}

// The names of the variables the sources read by a literal name, and those
// they read through a constant (named here: the scan cannot see them).
var (
	getenvCall = regexp.MustCompile(`(?i)getenv\("([A-Z][A-Z0-9_]*)"\)`)
	envByConst = []string{"DOCKER_CONFIG", "DOCKER_HOST", "DOCKER_CONTEXT", "MARINA_RESOLVER_DIR", "MARINA_ROUTE_STYLE"}
)

// The root help lists every environment variable marina reads: each name
// a Getenv call in the sources spells out, and those read through a
// constant, each at the start of a line of its own.
func TestRootHelpListsEnvironment(t *testing.T) {
	isolate(t)
	vars := map[string]bool{}
	for _, v := range envByConst {
		vars[v] = true
	}
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		// The test-support packages (sessiontest, testpki, …) are not in
		// marina's binary.
		if err == nil && d.IsDir() && (strings.HasPrefix(d.Name(), "test") || strings.HasSuffix(d.Name(), "test")) {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range getenvCall.FindAllSubmatch(b, -1) {
			vars[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"MARINA_HOME", "LIMACTL", "KUBECONFIG", "NO_COLOR", "TERM", "HOME", "SHELL", "VISUAL", "EDITOR"} {
		if !vars[must] {
			t.Errorf("the scan of ../ did not find Getenv(%q): it reads the wrong files", must)
		}
	}
	out, _, code := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("marina --help: exit status %d", code)
	}
	_, env, ok := strings.Cut(out, "\nEnvironment variables:\n")
	if !ok {
		t.Fatalf("marina --help has no Environment variables section:\n%s", out)
	}
	env, _, _ = strings.Cut(env, "\nUsage:")
	listed := map[string]bool{}
	for _, l := range strings.Split(env, "\n") {
		// "    NAME   what it does" or "    NAME, OTHER   what they do"
		head, _, _ := strings.Cut(strings.TrimSpace(l), "  ")
		if !strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "     ") {
			continue
		}
		for _, n := range strings.Split(head, ", ") {
			listed[n] = true
		}
	}
	for v := range vars {
		if !listed[v] {
			t.Errorf("marina reads %s, and marina --help does not say what for", v)
		}
	}
	for v := range listed {
		if !vars[v] {
			t.Errorf("marina --help lists %s, which marina does not read", v)
		}
	}
}

// The docs folder holds what the generator writes from this tree.
func TestDocsAreCurrent(t *testing.T) {
	got := t.TempDir()
	if err := WriteDocs(got); err != nil {
		t.Fatal(err)
	}
	if d := docDiff(filepath.Join("..", "..", "docs"), got); len(d) > 0 {
		t.Errorf("docs/ is not current: run `%s` from the repository's root and commit docs/:\n  %s", DocsCommand, strings.Join(d, "\n  "))
	}

	t.Run("the comparison finds a changed, a missing and a stale page", func(t *testing.T) {
		stale := t.TempDir()
		if err := os.CopyFS(stale, os.DirFS(got)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stale, "marina_up.md"), []byte("## marina up\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(stale, "marina_status.md")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stale, "marina_gone.md"), []byte("## marina gone\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"marina_gone.md is there, and marina has no such page",
			"marina_status.md is missing",
			"marina_up.md differs from what marina writes",
		}
		if d := docDiff(stale, got); !slices.Equal(d, want) {
			t.Errorf("got %q, want %q", d, want)
		}
	})

	t.Run("pages carry no date, and a stale page goes", func(t *testing.T) {
		dir := t.TempDir()
		for n, s := range map[string]string{"marina_gone.md": "old", "README.md": "mine"} {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := WriteDocs(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "marina_gone.md")); !os.IsNotExist(err) {
			t.Errorf("the stale page stayed: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "README.md")); err != nil || string(b) != "mine" {
			t.Errorf("a file that is no page was touched: %q, %v", b, err)
		}
		if d := docDiff(dir, got); len(d) > 0 {
			t.Errorf("a second run wrote other bytes: %q", d)
		}
		b, err := os.ReadFile(filepath.Join(dir, "marina.md"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("Auto generated")) {
			t.Error("marina.md carries cobra's dated footer")
		}
	})
}

// docDiff compares the reference's pages in have with those in want, one
// line per page that differs, by name.
func docDiff(have, want string) []string {
	read := func(dir string) map[string][]byte {
		names, err := docPages(dir)
		if err != nil {
			return nil
		}
		out := map[string][]byte{}
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err == nil {
				out[n] = b
			}
		}
		return out
	}
	h, w := read(have), read(want)
	var out []string
	for n, b := range h {
		if wb, ok := w[n]; !ok {
			out = append(out, n+" is there, and marina has no such page")
		} else if !bytes.Equal(b, wb) {
			out = append(out, n+" differs from what marina writes")
		}
	}
	for n := range w {
		if _, ok := h[n]; !ok {
			out = append(out, n+" is missing")
		}
	}
	slices.Sort(out)
	return out
}
