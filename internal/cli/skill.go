package cli

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/skill"
	"github.com/bcollard/marina/internal/version"
)

// skillText is the hand-written part of the skill; the command reference
// and the lists of commands in it are generated from the command tree, so
// the skill cannot describe a command or a flag marina does not have
// (skill_test.go checks the hand-written mentions against the tree too).
//
//go:embed skill.md.tmpl
var skillText string

var skillTemplate = template.Must(template.New("SKILL.md").Parse(skillText))

func (r *root) skillCmd() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "skill",
		Short: "Claude Code's skill for marina: its commands, flags and troubleshooting, generated from this binary",
		Long: `The skill tells an agent (Claude Code) what marina is, how to troubleshoot it
and every command and flag this marina has: it is generated from marina's own
commands, so it matches the binary that wrote it. It reads no config and needs
no VM.`,
		Example: `  marina skill install
  marina skill path`,
		// Needs no config, no VM.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
	})
	var o skill.Options
	var toStdout bool
	install := &cobra.Command{
		Use:   "install",
		Short: "Write the skill to ~/.claude/skills/marina/SKILL.md (a file that is there is kept unless --force)",
		Long: `Write the skill to ~/.claude/skills/marina/SKILL.md, where Claude Code finds
it. A file already there with other content (another marina's skill, or one
you changed) is kept and reported unless --force; --print writes the skill to
stdout instead of installing it. After an upgrade, marina skill install
--force writes this marina's. (-f, its old shorthand, still works for now
and says so: everywhere else in marina -f names a file.)`,
		Example: `  marina skill install
  marina skill install --print
  marina skill install --force`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			text, err := skillFile()
			if err != nil {
				return err
			}
			if toStdout {
				_, err := io.WriteString(r.stdout, text)
				return err
			}
			home, err := skillHome(r)
			if err != nil {
				return err
			}
			path := skill.Path(home)
			done, err := skill.Install(home, []byte(text), o)
			if err != nil {
				return err
			}
			r.reportSkill(path, done, o.DryRun)
			return nil
		},
	}
	install.Flags().BoolVar(&toStdout, "print", false, "write the skill to stdout and install nothing")
	install.Flags().BoolVar(&o.Force, "force", false, "replace the skill file that is there")
	// -f was --force's shorthand; everywhere else in marina it names a
	// file. It still works, for a release, and says so (on stderr: cobra's
	// own deprecation notes go to stdout).
	var oldF bool
	install.Flags().BoolVarP(&oldF, "force-old-shorthand", "f", false, "")
	_ = install.Flags().MarkHidden("force-old-shorthand")
	install.PreRun = func(*cobra.Command, []string) {
		if oldF {
			o.Force = true
			fmt.Fprintln(r.stderr, "WARNING: skill install -f is --force now: -f names a file everywhere else in marina, and will here too")
		}
	}
	// klimax's skill install took --claude (on by default): Claude Code is
	// the one agent marina installs for, so it changes nothing.
	install.Flags().Bool("claude", true, "install for Claude Code (the only agent; klimax's flag, kept for its users)")
	_ = install.Flags().MarkHidden("claude")
	dryRunFlag(install, &o.DryRun)
	path := &cobra.Command{
		Use:   "path",
		Short: "Print the path the skill is installed at",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			home, err := skillHome(r)
			if err != nil {
				return err
			}
			p := skill.Path(home)
			fmt.Fprintln(r.stdout, p)
			if _, err := os.Lstat(p); err != nil {
				fmt.Fprintln(r.stderr, "(not installed yet: marina skill install writes it)")
			}
			return nil
		},
		Long: `Print the path the skill is installed at, ~/.claude/skills/marina/SKILL.md;
stderr says when it is not installed yet.`,
		Example: `  marina skill path
  cat "$(marina skill path)"`,
	}
	c.AddCommand(install, path)
	return c
}

// skillHome is the home folder, found the way every command finds it
// (HOME, else the system's answer); no config file is read.
func skillHome(r *root) (string, error) {
	p, err := config.ResolvePaths(os.Getenv, r.configFlag)
	if err != nil {
		return "", err
	}
	return p.Home, nil
}

func (r *root) reportSkill(path string, done skill.Outcome, dryRun bool) {
	switch {
	case done == skill.Written && dryRun:
		fmt.Fprintf(r.stdout, "Would write the marina skill to %s\n", path)
	case done == skill.Written:
		fmt.Fprintf(r.stdout, "Wrote the marina skill to %s\n", path)
	case done == skill.Replaced && dryRun:
		fmt.Fprintf(r.stdout, "Would replace %s with this marina's skill\n", path)
	case done == skill.Replaced:
		fmt.Fprintf(r.stdout, "Replaced %s with this marina's skill\n", path)
	case done == skill.Unchanged:
		fmt.Fprintf(r.stdout, "%s is this marina's skill already: nothing to do\n", path)
	case done == skill.Kept:
		fmt.Fprintf(r.stdout, "%s is there with other content and was kept: marina skill install -f replaces it (marina skill install --print shows the new one)\n", path)
	}
}

// skillFile renders the skill from a command tree of its own, built by
// the constructor marina runs.
func skillFile() (string, error) { return renderSkill(newRoot(io.Discard, io.Discard).command()) }

type skillData struct {
	Version string
	// Commands with --dry-run, with -y/--yes, with -o/--output: code
	// spans joined by commas.
	DryRun, Yes, Output string
	Reference           string
}

func renderSkill(root *cobra.Command) (string, error) {
	completeTree(root)
	cmds := visibleCommands(root)
	d := skillData{
		Version:   version.String(),
		DryRun:    withFlag(cmds, "dry-run"),
		Yes:       withFlag(cmds, "yes"),
		Output:    withFlag(cmds, "output"),
		Reference: reference(root, cmds),
	}
	var b strings.Builder
	if err := skillTemplate.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// completeTree adds what cobra adds to the tree when it runs a command:
// the help and completion commands, and the help and version flags.
func completeTree(root *cobra.Command) {
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

// visibleCommands is root and every command a user sees below it: not
// hidden, not deprecated, nor below one that is (cobra's own test, which
// also leaves out the help command), depth first in help's order.
func visibleCommands(root *cobra.Command) []*cobra.Command {
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
