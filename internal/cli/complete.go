package cli

// Shell completion: what a tab offers for each argument and flag value,
// wired here by command path once every command is built
// (registerCompletions); an argument completion set here replaces the one
// a command's literal names. The names come from package kindcluster's Complete
// functions; with the VM down they are empty, never file names: the root's
// default directive is NoFileComp, and only what is a file (a Fleet
// manifest, the config, migrate's FLEET-FILEs) completes files, YAML ones.

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

// yamlFiles are the extensions of the files marina reads.
var yamlFiles = []string{"yaml", "yml"}

// lister is one of kindcluster's Complete functions.
type lister func(context.Context, *session.Env) []string

// argCompletions are the commands whose arguments name something, by
// path below the root.
func (r *root) argCompletions() map[string]cobra.CompletionFunc {
	clusters, cluster := r.names(kindcluster.CompleteClusters, 0), r.names(kindcluster.CompleteClusters, 1)
	fleet := r.names(kindcluster.CompleteFleets, 1)
	return map[string]cobra.CompletionFunc{
		"cluster delete":       clusters,
		"cluster label":        cluster,
		"cluster stop":         r.names(kindcluster.CompleteRunning, 0),
		"cluster start":        r.names(kindcluster.CompleteStopped, 0),
		"fleet stop":           fleet,
		"fleet start":          fleet,
		"cluster verify":       cluster,
		"kubeconfig merge":     clusters,
		"kubeconfig path":      r.names(kindcluster.CompleteKubeconfigFiles, 1),
		"kubeconfig env":       r.names(kindcluster.CompleteKubeconfigFiles, 1),
		"kubeconfig use":       r.names(kindcluster.CompleteContexts, 1),
		"kubeconfig remove":    r.names(kindcluster.CompleteContexts, 0),
		"fleet describe":       fleet,
		"fleet label":          fleet,
		"fleet delete":         fleet,
		"fleet adopt":          r.fleetThenClusters,
		"registry clean-cache": r.names(kindcluster.CompleteMirrors, 0),
		"image load":           r.names(kindcluster.CompleteImages, 0),
		"migrate": func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return yamlFiles, cobra.ShellCompDirectiveFilterFileExt
		},
	}
}

// flagCompletions are the flags whose values name something, by command
// path and flag name. Every -o/--output offers its formats and every
// -f/--filename a YAML file without being listed here.
func (r *root) flagCompletions() map[string]map[string]cobra.CompletionFunc {
	return map[string]map[string]cobra.CompletionFunc{
		"cluster create": {
			"region":       r.values(kindcluster.CompleteRegions),
			"zone":         r.values(kindcluster.CompleteZones),
			"node-version": r.values(kindcluster.CompleteNodeVersions),
		},
		"image load": {"cluster": r.values(kindcluster.CompleteClusters)},
		"logs":       {"cluster": r.values(kindcluster.CompleteRunning)},
	}
}

// registerCompletions gives every command of root its completions.
func (r *root) registerCompletions(root *cobra.Command) {
	root.CompletionOptions.SetDefaultShellCompDirective(cobra.ShellCompDirectiveNoFileComp)
	_ = root.MarkPersistentFlagFilename("config", yamlFiles...)
	args, flags := r.argCompletions(), r.flagCompletions()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
		if fn, ok := args[path]; ok {
			c.ValidArgsFunction = fn
		}
		for name, fn := range flags[path] {
			set(c, name, fn)
		}
		if c.LocalFlags().Lookup("output") != nil {
			set(c, "output", outputValues)
		}
		if c.LocalFlags().Lookup("filename") != nil {
			set(c, "filename", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return yamlFiles, cobra.ShellCompDirectiveFilterFileExt
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// set makes fn c's completion of flag name, unless the command's own code
// registered one (cobra keeps the first: outputFlag's -o, docker-env's
// --shell).
func set(c *cobra.Command, name string, fn cobra.CompletionFunc) {
	if _, ok := c.GetFlagCompletionFunc(name); !ok {
		_ = c.RegisterFlagCompletionFunc(name, fn)
	}
}

// completing reports whether c serves the shell's completion (cobra's
// __complete, or the completion command that prints the scripts): it
// needs no config and must print nothing else, not even the klimax hint.
func completing(c *cobra.Command) bool {
	for p := c; p != nil; p = p.Parent() {
		if p.Name() == cobra.ShellCompRequestCmd || (p.Name() == "completion" && p.HasParent() && !p.Parent().HasParent()) {
			return true
		}
	}
	return false
}

// completeEnv is the Env of a completion, with every output going nowhere:
// what a completion prints on stdout is the shell's list of names, and on
// stderr it would only garble the prompt. Nil when there is none.
func (r *root) completeEnv() *session.Env {
	if r.env.Load() == nil {
		if err := r.setup(); err != nil {
			return nil
		}
	}
	e := r.env.Load()
	e.UI = ui.New(io.Discard, false, false)
	e.Stdout, e.Stderr = io.Discard, io.Discard
	return e
}

// names offers what list gives for a command's arguments, leaving out the
// names already on the line; max bounds the arguments that take one (0:
// any number).
func (r *root) names(list lister, max int) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, word string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if max > 0 && len(args) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return unused(r.list(c, list), args, word), cobra.ShellCompDirectiveNoFileComp
	}
}

// values offers what list gives for a flag's value.
func (r *root) values(list lister) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, word string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return unused(r.list(c, list), nil, word), cobra.ShellCompDirectiveNoFileComp
	}
}

// fleetThenClusters completes fleet adopt FLEET CLUSTER….
func (r *root) fleetThenClusters(c *cobra.Command, args []string, word string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return r.names(kindcluster.CompleteFleets, 1)(c, args, word)
	}
	return r.names(kindcluster.CompleteClusters, 0)(c, args[1:], word)
}

func (r *root) list(c *cobra.Command, list lister) []string {
	e := r.completeEnv()
	if e == nil {
		return nil
	}
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return list(ctx, e)
}

// unused are the names starting with word that args do not name yet.
func unused(names, args []string, word string) []string {
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, word) {
			continue
		}
		taken := false
		for _, a := range args {
			taken = taken || a == n
		}
		if !taken {
			out = append(out, n)
		}
	}
	return out
}
