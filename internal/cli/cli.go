// Package cli is marina's command line: cobra commands that turn flags into
// calls to package app and print the result. No command does work itself.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bcollard/marina/internal/app"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/version"
)

// Main runs marina with args and returns the exit status.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, os.Stdout, os.Stderr)
}

// Run runs marina with args and the given output streams.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	r := &root{stdout: stdout, stderr: stderr}
	cmd := r.command()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if r.env != nil {
		r.env.UI.End(err == nil)
		r.env.UI.Debugf("guest round trips: %d", r.env.GuestCalls())
	}
	if err == nil {
		return 0
	}
	var exit *app.ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "ERROR: interrupted")
		return 130
	}
	fmt.Fprintf(stderr, "ERROR: %v\n", err)
	return 1
}

type root struct {
	stdout, stderr io.Writer
	configFlag     string
	debug          bool
	env            *app.Env
}

func (r *root) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "marina",
		Short: "A multi-cluster Kubernetes lab on your Mac",
		Long: `marina runs one Lima VM with Docker, many kind clusters inside it, and routes
the kind network to your Mac at layer 3: LoadBalancer IPs answer directly and
pods see your Mac's real address.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return r.setup()
		},
	}
	c.SetVersionTemplate("marina {{.Version}}\n")
	c.PersistentFlags().StringVar(&r.configFlag, "config", "", "config file (default $MARINA_HOME/config.yaml, MARINA_HOME defaults to ~/.marina)")
	c.PersistentFlags().BoolVar(&r.debug, "debug", false, "log every command marina runs, Lima's output and the guest round trips")
	c.AddCommand(
		r.upCmd(), r.downCmd(), r.destroyCmd(), r.statusCmd(), r.shellCmd(),
		r.clusterCmd(), r.kubeconfigCmd(), r.registryCmd(), r.configCmd(), versionCmd(r),
	)
	return c
}

func (r *root) setup() error {
	paths, err := config.ResolvePaths(os.Getenv, r.configFlag)
	if err != nil {
		return err
	}
	u := ui.New(r.stderr, ui.IsSmartTerminal(os.Stderr, os.Getenv) && r.stderr == io.Writer(os.Stderr), r.debug)
	r.env = app.NewEnv(paths, u, term.IsTerminal(int(os.Stdin.Fd())))
	r.env.Stdout, r.env.Stderr = r.stdout, r.stderr
	return nil
}

func dryRunFlag(c *cobra.Command, v *bool) {
	c.Flags().BoolVar(v, "dry-run", false, "print what would change and change nothing")
}

func (r *root) upCmd() *cobra.Command {
	var o app.UpOptions
	c := &cobra.Command{
		Use:   "up",
		Short: "Create or start the VM and bring everything in it to the config",
		Long: `Create the VM on first use (writing a commented default config), start it when
it is stopped, and check that the guest and its Docker answer. Every run is
safe to repeat: what already matches the config is left alone.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return app.Up(c.Context(), r.env, o) },
	}
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) downCmd() *cobra.Command {
	var o app.DownOptions
	c := &cobra.Command{
		Use:   "down",
		Short: "Stop the VM, keeping everything in it",
		Long: `Stop the VM. Clusters, images and caches are kept; marina up starts it again.
The host route to the kind network stays unless --remove-route is given (on a
Mac it goes anyway with the VM's network; marina up puts it back).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return app.Down(c.Context(), r.env, o) },
	}
	c.Flags().BoolVar(&o.RemoveRoute, "remove-route", false, "also remove the host's route to the kind network (needs sudo)")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) destroyCmd() *cobra.Command {
	var o app.DestroyOptions
	c := &cobra.Command{
		Use:   "destroy",
		Short: "Delete the VM with every cluster and image in it",
		Long: `Delete the VM and its disk, and remove the host's route to the kind network.
The config and the registry cache on the Mac are kept, so the next marina up
starts from a warm cache. Asks first; -y does not.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return app.Destroy(c.Context(), r.env, o) },
	}
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) statusCmd() *cobra.Command {
	return withOutput(r, &cobra.Command{
		Use:   "status",
		Short: "Show the VM and what runs in it",
		Args:  cobra.NoArgs,
	}, app.GetStatus, app.PrintStatus)
}

// withOutput gives c an -o text|json|yaml flag and a RunE that gets the
// result and prints it in that format.
func withOutput[T any](r *root, c *cobra.Command, get func(context.Context, *app.Env) (T, error), text func(io.Writer, T)) *cobra.Command {
	var output string
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if output != "text" && output != "json" && output != "yaml" {
			return fmt.Errorf("unknown output format %q: use text, json or yaml", output)
		}
		v, err := get(c.Context(), r.env)
		if err != nil {
			return err
		}
		if output == "text" {
			text(r.stdout, v)
			return nil
		}
		return ui.Render(r.stdout, output, v)
	}
	return c
}

func (r *root) shellCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "shell [-- COMMAND [ARG…]]",
		Short: "Open a shell in the VM, or run a command there",
		Example: `  marina shell
  marina shell -- docker ps
  marina shell -- sudo iptables -S DOCKER-USER`,
		RunE: func(c *cobra.Command, args []string) error { return app.Shell(c.Context(), r.env, args) },
	}
}

func (r *root) registryCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "registry",
		Short: "The pull-through registry mirrors every cluster shares",
		Args:  cobra.NoArgs,
	}
	list := withOutput(r, &cobra.Command{
		Use:   "list",
		Short: "List the mirrors: upstream, port, state, cache size, hits and misses",
		Args:  cobra.NoArgs,
	}, app.ListMirrors, app.PrintMirrors)
	var o app.CleanCacheOptions
	clean := &cobra.Command{
		Use:   "clean-cache [NAME…]",
		Short: "Empty the cache of the named mirrors (every mirror when none is named)",
		Long: `Empty mirror caches. A running mirror is removed first and started again,
empty; the next pulls go to the upstream again.`,
		RunE: func(c *cobra.Command, args []string) error { return app.CleanCache(c.Context(), r.env, args, o) },
	}
	dryRunFlag(clean, &o.DryRun)
	c.AddCommand(list, clean)
	return c
}

func (r *root) configCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Show, locate or edit the config file",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(
		&cobra.Command{
			Use:   "path",
			Short: "Print the config file's path",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return app.ConfigPath(r.env) },
		},
		&cobra.Command{
			Use:   "show",
			Short: "Print the effective config, defaults included (passwords masked)",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return app.ShowConfig(r.env) },
		},
		&cobra.Command{
			Use:   "edit",
			Short: "Edit the config in $VISUAL or $EDITOR, then check it",
			Args:  cobra.NoArgs,
			RunE:  func(c *cobra.Command, _ []string) error { return app.EditConfig(c.Context(), r.env) },
		},
	)
	return c
}

func versionCmd(r *root) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print marina's version",
		Args:  cobra.NoArgs,
		// Needs no config, no VM.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		Run: func(*cobra.Command, []string) {
			fmt.Fprintf(r.stdout, "marina %s\n", version.String())
		},
	}
}
