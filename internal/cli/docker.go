package cli

import (
	"github.com/bcollard/marina/internal/dockerctx"
	"github.com/spf13/cobra"
)

func (r *root) dockerEnvCmd() *cobra.Command {
	var o dockerctx.EnvOptions
	c := &cobra.Command{
		Use:   "docker-env",
		Short: "Print the DOCKER_HOST export that points docker at the VM's Docker (for eval)",
		Long: `Print the shell command that sets DOCKER_HOST to the VM's Docker socket
(~/.<vm.name>.docker.sock), with comment lines saying how to use it; --unset
prints the one that removes it. Only shell code goes to stdout: warnings (the
VM is not running, the socket is missing) go to stderr. The shell is --shell's,
else the one $SHELL names, else bash.`,
		Example: `  eval "$(marina docker-env)"
  marina docker-env --shell fish | source
  & marina docker-env --shell powershell | Invoke-Expression
  eval "$(marina docker-env --unset)"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return r.done(dockerctx.Env(c.Context(), r.env.Load(), o)) },
	}
	c.Flags().BoolVar(&o.Unset, "unset", false, "print the command that unsets DOCKER_HOST instead")
	c.Flags().StringVar(&o.Shell, "shell", "", "the shell to print for: bash, zsh, fish or powershell (default: $SHELL's, else bash)")
	_ = c.RegisterFlagCompletionFunc("shell", cobra.FixedCompletions([]string{"bash", "zsh", "fish", "powershell"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func (r *root) dockerContextCmd() *cobra.Command {
	var o dockerctx.ContextOptions
	c := &cobra.Command{
		Use:   "docker-context",
		Short: "Make a Docker context for the VM's Docker and make it current",
		Long: `Create or update the Docker context named after the VM (vm.name), with the
VM's Docker socket as its docker endpoint, and make it Docker's current context
(config.json in $DOCKER_CONFIG, else ~/.docker), so that docker in every shell
talks to the VM. A context of that name that marina did not make is never
changed. DOCKER_HOST, when set, overrides any context: marina warns about it.
--unset makes default current again, only when the current context is marina's;
the context itself stays.`,
		Example: `  marina docker-context
  docker --context marina ps
  marina docker-context --unset`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return r.done(dockerctx.UseContext(c.Context(), r.env.Load(), o))
		},
	}
	c.Flags().BoolVar(&o.Unset, "unset", false, "make default Docker's current context again, if the current one is marina's")
	dryRunFlag(c, &o.DryRun)
	return c
}
