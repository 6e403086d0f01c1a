package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandTree is marina's real command tree with what cobra adds when it runs:
// help and completion commands, -h and --version.
func commandTree(t *testing.T) *cobra.Command {
	t.Helper()
	root := newRoot(io.Discard, io.Discard).command()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		noPanic(t, c, c.InitDefaultHelpFlag)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// noPanic runs fn, turning cobra's panic at a flag letter defined twice
// into the test's failure.
func noPanic(t *testing.T, c *cobra.Command, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", c.CommandPath(), r)
		}
	}()
	fn()
}

// No word names two commands of the same parent, and no flag letter or
// name means two flags of one command (its own and those it inherits):
// cobra would pick one silently, or panic when the command runs.
func TestNoAliasOrFlagCollides(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		words := map[string]string{}
		for _, sub := range c.Commands() {
			for _, w := range append([]string{sub.Name()}, sub.Aliases...) {
				if other, ok := words[w]; ok && other != sub.Name() {
					t.Errorf("%q under %q names both %s and %s", w, c.CommandPath(), other, sub.Name())
				} else if ok {
					t.Errorf("%q is given twice to %s", w, sub.CommandPath())
				}
				words[w] = sub.Name()
			}
			walk(sub)
		}
		short, long := map[string]string{}, map[string]string{}
		check := func(f *pflag.Flag, from string) {
			who := "--" + f.Name + " (" + from + ")"
			if f.Shorthand != "" {
				if other, ok := short[f.Shorthand]; ok && other != who {
					t.Errorf("%s: -%s is both %s and %s", c.CommandPath(), f.Shorthand, other, who)
				}
				short[f.Shorthand] = who
			}
			if other, ok := long[f.Name]; ok && other != who {
				t.Errorf("%s: --%s is both %s and %s", c.CommandPath(), f.Name, other, who)
			}
			long[f.Name] = who
		}
		noPanic(t, c, func() {
			c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { check(f, c.CommandPath()) })
		})
		for p := c; p != nil; p = p.Parent() {
			p.PersistentFlags().VisitAll(func(f *pflag.Flag) { check(f, p.CommandPath()) })
		}
	}
	walk(commandTree(t))
}

// Every alias reaches its command through the real root, as the shell
// would type it.
func TestAliases(t *testing.T) {
	root := commandTree(t)
	for _, c := range []struct{ typed, want string }{
		{"st", "marina status"},
		{"ssh", "marina shell"},
		{"cl", "marina cluster"},
		{"clusters", "marina cluster"},
		{"cl cr", "marina cluster create"},
		{"cluster cr", "marina cluster create"},
		{"cl rm", "marina cluster delete"},
		{"cl ls", "marina cluster list"},
		{"kc", "marina kubeconfig"},
		{"kc rm", "marina kubeconfig remove"},
		{"kubeconfig rm", "marina kubeconfig remove"},
		{"fleet rm", "marina fleet delete"},
		{"fleet ls", "marina fleet list"},
		{"fleet desc", "marina fleet describe"},
		{"registry ls", "marina registry list"},
		{"dns ls", "marina dns list"},
	} {
		got, _, err := root.Find(strings.Fields(c.typed))
		if err != nil || got.CommandPath() != c.want {
			t.Errorf("marina %s finds %v (%v), want %s", c.typed, got.CommandPath(), err, c.want)
		}
	}
	// -c is --config, on the root and on every command under it.
	for _, cmd := range []string{"", "status", "cluster create"} {
		c, _, err := root.Find(strings.Fields(cmd))
		if err != nil {
			t.Fatal(err)
		}
		if f := c.Flags().ShorthandLookup("c"); f == nil && c.InheritedFlags().ShorthandLookup("c") == nil {
			t.Errorf("marina %s has no -c", cmd)
		} else if f != nil && f.Name != "config" {
			t.Errorf("marina %s: -c is --%s", cmd, f.Name)
		}
	}
}

// -c FILE reads FILE, as --config FILE does.
func TestShortConfigFlag(t *testing.T) {
	home := isolate(t)
	cfg := filepath.Join(home, "other.yaml")
	if err := os.WriteFile(cfg, []byte("vm:\n  cpus: 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-c", cfg, "config", "show"}, {"config", "show", "-c", cfg}, {"config", "path", "-c=" + cfg}} {
		out, errs, code := runCLI(t, args...)
		if code != 0 || !(strings.Contains(out, "cpus: 7") || strings.TrimSpace(out) == cfg) {
			t.Errorf("marina %v: exit %d\n%s%s", args, code, out, errs)
		}
	}
}

// klimax's words that still mean something in marina work: its one-letter
// aliases, fleet create, cluster e2e-test-nginx (which says it is now
// cluster verify), skill install --claude and -f (which says to use
// --force).
func TestKlimaxWords(t *testing.T) {
	root := commandTree(t)
	for words, want := range map[string]string{
		"d": "marina down", "s": "marina status", "st": "marina status",
		"c l": "marina cluster list", "c c": "marina cluster create", "c de": "marina cluster delete", "c d": "marina cluster delete",
		"fleet create": "marina fleet apply", "cluster e2e-test-nginx": "marina cluster e2e-test-nginx",
	} {
		c, _, err := root.Find(strings.Fields(words))
		if err != nil || c.CommandPath() != want {
			t.Errorf("marina %s is %v (%v), want %s", words, c.CommandPath(), err, want)
		}
	}
	isolate(t)
	_, errs, code := runCLI(t, "cluster", "e2e-test-nginx", "--cleanup")
	if code != 0 || !strings.Contains(errs, "WARNING: cluster e2e-test-nginx is klimax's: marina cluster verify does it") {
		t.Errorf("e2e-test-nginx --cleanup: exit %d\n%s", code, errs)
	}
	out, errs, code := runCLI(t, "skill", "install", "--claude", "-f", "--dry-run")
	if code != 0 || errs != "WARNING: skill install -f is --force now: -f names a file everywhere else in marina, and will here too\n" || !strings.Contains(out, "Would write the marina skill") {
		t.Errorf("skill install --claude -f: exit %d\n%s%s", code, out, errs)
	}
}
