package skill

import (
	_ "embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bcollard/marina/internal/version"
)

// text is the hand-written part of the skill; the command reference and
// the lists of commands in it are generated from the command tree.
//
//go:embed skill.md.tmpl
var text string

var tmpl = template.Must(template.New("SKILL.md").Parse(text))

type data struct {
	Version string
	// Commands with --dry-run, with -y/--yes, with -o/--output: code
	// spans joined by commas.
	DryRun, Yes, Output string
	Reference           string
}

// Render is the skill of the command tree root: what marina does, which
// commands take --dry-run, -y and -o, and a reference of every visible
// command and flag, so it names nothing marina lacks.
func Render(root *cobra.Command) (string, error) {
	CompleteTree(root)
	cmds := VisibleCommands(root)
	d := data{
		Version:   version.String(),
		DryRun:    withFlag(cmds, "dry-run"),
		Yes:       withFlag(cmds, "yes"),
		Output:    withFlag(cmds, "output"),
		Reference: reference(root, cmds),
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// CompleteTree adds what cobra adds to the tree when it runs a command:
// the help and completion commands, and the help and version flags.
func CompleteTree(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// VisibleCommands is root and every command a user sees below it: not
// hidden, not deprecated, nor below one that is (cobra's own test, which
// also leaves out the help command), depth first in help's order.
func VisibleCommands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				out = append(out, s)
				walk(s)
			}
		}
	}
	walk(root)
	return out
}

// ownFlags are c's own visible flags, without cobra's --help.
func ownFlags(c *cobra.Command) []*pflag.Flag {
	var out []*pflag.Flag
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || f.Name == "help" {
			return
		}
		out = append(out, f)
	})
	return out
}

func withFlag(cmds []*cobra.Command, name string) string {
	var spans []string
	for _, c := range cmds {
		if f := c.LocalFlags().Lookup(name); f != nil && !f.Hidden && f.Deprecated == "" {
			spans = append(spans, "`"+c.CommandPath()+"`")
		}
	}
	return strings.Join(spans, ", ")
}

// usage is c's path with its arguments, as its Use line gives them.
func usage(c *cobra.Command) string {
	if !c.HasParent() {
		return c.Name() + " COMMAND"
	}
	u := c.Parent().CommandPath() + " " + c.Use
	if c.HasAvailableSubCommands() && c.Use == c.Name() {
		u += " COMMAND"
	}
	return u
}

func reference(root *cobra.Command, cmds []*cobra.Command) string {
	var b strings.Builder
	for _, c := range cmds {
		if c == root {
			var global, own []string
			for _, f := range ownFlags(c) {
				if c.PersistentFlags().Lookup(f.Name) != nil {
					global = append(global, "- "+flagLine(f)+"\n")
				} else {
					own = append(own, "- "+flagLine(f)+"\n")
				}
			}
			fmt.Fprintf(&b, "### Global flags\n\nEvery command takes these, and `-h, --help`:\n\n%s\n", strings.Join(global, ""))
			if len(own) > 0 {
				fmt.Fprintf(&b, "`%s` alone also takes:\n\n%s\n", c.CommandPath(), strings.Join(own, ""))
			}
			continue
		}
		fmt.Fprintf(&b, "### `%s`\n\n`%s`: %s\n", c.CommandPath(), usage(c), strings.TrimSpace(c.Short))
		if len(c.Aliases) > 0 {
			var as []string
			for _, a := range c.Aliases {
				as = append(as, "`"+c.Parent().CommandPath()+" "+a+"`")
			}
			fmt.Fprintf(&b, "Also: %s\n", strings.Join(as, ", "))
		}
		if c.HasAvailableSubCommands() {
			var subs []string
			for _, s := range c.Commands() {
				if s.IsAvailableCommand() {
					subs = append(subs, "`"+s.CommandPath()+"`")
				}
			}
			fmt.Fprintf(&b, "Commands: %s\n", strings.Join(subs, ", "))
		}
		if fs := ownFlags(c); len(fs) > 0 {
			b.WriteString("\n")
			for _, f := range fs {
				fmt.Fprintf(&b, "- %s\n", flagLine(f))
			}
		}
		if ex := strings.TrimSpace(c.Example); ex != "" {
			b.WriteString("\n```sh\n")
			for _, l := range strings.Split(ex, "\n") {
				fmt.Fprintf(&b, "%s\n", strings.TrimSpace(l))
			}
			b.WriteString("```\n")
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// flagLine is one flag as --help shows it: shorthand, name, value type,
// usage, and the default when it says something.
func flagLine(f *pflag.Flag) string {
	typ, use := pflag.UnquoteUsage(f)
	s := "--" + f.Name
	if f.Shorthand != "" && f.ShorthandDeprecated == "" {
		s = "-" + f.Shorthand + ", " + s
	}
	if typ != "" {
		s += " " + typ
	}
	line := "`" + s + "`: " + use
	switch f.DefValue {
	case "", "false", "0", "[]", "0s":
	default:
		line += " (default `" + f.DefValue + "`)"
	}
	return line
}
