package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bcollard/marina/internal/session"
)

// outputHelp is the root help's section on what scripts may rely on; the
// README's "Output and exit codes" says the same. The codes are the
// session's (internal/session/exit.go).
var outputHelp = fmt.Sprintf(`Output and exit codes:
  -o json and -o yaml print the same fields under the same camelCase names
  (the yaml is the json, converted), and leave out the same empty fields.
  Those names are a stable interface: fields are added, never renamed or
  reused. A list that finds nothing prints [] (text: a line on stderr) and
  exits 0; a command that could not look prints nothing on stdout.
  %d  done
  %d  failed or could not look; status and doctor: something is broken
  %d  usage error: unknown command or flag, a wrong number of arguments, a
     flag value that does not parse or is not one of its listed choices;
     nothing was done (a value marina refuses, such as a cluster name, is 1)
  %d  the command needs the VM running, and it is not (no config yet: no
     VM yet); nothing was done
  marina shell exits with its command's own status.`,
	session.ExitOK, session.ExitFailed, session.ExitUsage, session.ExitNotRunning)

// usageErrors makes every mistake cobra finds in a command line, in c and
// all its subcommands, an session.Usage error (exit status 2) that says where
// the help is: a wrong number of arguments, an unknown command, a flag that
// does not exist or whose value does not parse.
func usageErrors(c *cobra.Command) {
	// cobra adds help and completion only when it runs: add them now, so
	// that they are wrapped too.
	c.InitDefaultHelpCmd()
	c.InitDefaultCompletionCmd()
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError(c, err) })
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error { return usageError(c, args(c, a)) }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(c)
}

func usageError(c *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	if iv, ok := errors.AsType[*pflag.InvalidValueError](err); ok {
		err = fmt.Errorf("--%s %q: --%s takes %s", iv.GetFlag().Name, iv.GetValue(), iv.GetFlag().Name, takes(iv.GetFlag()))
	}
	return session.Usagef("%w\nRun '%s --help' for usage.", err, c.CommandPath())
}

// takesAnnotation, on a flag, says what values it takes, for a value
// that does not parse: "a whole number from 0 to 9".
const takesAnnotation = "marina-takes"

// takes is what values flag f takes, in words.
func takes(f *pflag.Flag) string {
	if say := f.Annotations[takesAnnotation]; len(say) > 0 {
		return say[0]
	}
	switch f.Value.Type() {
	case "int", "int32", "int64", "uint", "uint16":
		return "a whole number"
	case "duration":
		return "a duration such as 90s, 5m or 1h30m"
	case "bool":
		return "true or false (or no value: --" + f.Name + " alone is true)"
	}
	return "a " + f.Value.Type()
}

// say sets what values flag name of c takes, for its parse errors.
func say(c *cobra.Command, name, what string) {
	_ = c.Flags().SetAnnotation(name, takesAnnotation, []string{what})
}

// one is the argument check of a command that takes one NAME: a missing
// or a second one is said in marina's words, with usage.
func one(what, usage string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return fmt.Errorf("name the %s: %s", what, usage)
		case len(args) > 1:
			return fmt.Errorf("give one %s (%d given: %s): %s", what, len(args), strings.Join(args, " "), usage)
		}
		return nil
	}
}

// atLeast is the argument check of a command that takes n or more.
func atLeast(n int, say string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return errors.New(say)
		}
		return nil
	}
}
