package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/skill"
)

// The skill is rendered by internal/skill from this command tree, so it
// cannot describe a command or a flag marina does not have (skill_test.go
// checks the hand-written mentions against the tree too).

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
	c.AddCommand(r.skillInstallCmd(), r.skillPathCmd())
	return c
}

func (r *root) skillInstallCmd() *cobra.Command {
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
	return install
}

func (r *root) skillPathCmd() *cobra.Command {
	return &cobra.Command{
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
func skillFile() (string, error) { return skill.Render(newRoot(io.Discard, io.Discard).command()) }
