// Package cli is marina's command line: cobra commands that turn flags into
// calls to the feature packages (machine, kindcluster, fleet, status,
// doctor, migrate…) and print the result, and the production wiring of the
// session's ports. No command does work itself.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bcollard/marina/internal/cli/show"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/migrate"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/version"
)

// Main runs marina with args and returns the exit status. SIGINT, SIGTERM
// and SIGHUP all cancel the command, which then undoes what it started (a
// half-made cluster is removed, within a deadline); a second signal stops
// marina at once and says what is left and the command that removes it.
func Main(args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	r := newRoot(os.Stdout, os.Stderr)
	var first atomic.Value
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		first.Store(s)
		if env := r.env.Load(); env != nil && env.Leftover() != "" {
			fmt.Fprintf(os.Stderr, "\nmarina: %s: stopping, and undoing what it can (a second signal stops at once)\n", s)
		}
		cancel()
		s = <-sigs
		fmt.Fprintf(os.Stderr, "\nmarina: %s again: stopped without waiting for the rollback.\n", s)
		if env := r.env.Load(); env != nil && env.Leftover() != "" {
			fmt.Fprintf(os.Stderr, "Left behind: %s\n", env.Leftover())
		}
		session.Abandon()
		os.Exit(exitCode(s))
	}()
	code := r.run(ctx, args)
	if s, ok := first.Load().(os.Signal); ok && code != 0 {
		return exitCode(s)
	}
	return code
}

// exitCode is the shell's status for a process a signal ended: 128+N.
func exitCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}

// Run runs marina with args and the given output streams.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return newRoot(stdout, stderr).run(ctx, args)
}

func newRoot(stdout, stderr io.Writer) *root { return &root{stdout: stdout, stderr: stderr} }

func (r *root) run(ctx context.Context, args []string) int {
	cmd := r.command()
	cmd.SetArgs(args)
	cmd.SetOut(r.stdout)
	cmd.SetErr(r.stderr)
	err := cmd.ExecuteContext(ctx)
	if env := r.env.Load(); env != nil {
		env.UI.End(err == nil)
		env.UI.Debugf("guest round trips: %d", env.GuestCalls())
	}
	return r.exit(err)
}

// exit prints err and turns it into marina's exit status: the session's Exit*
// constants are the only codes (plus 128+N for a signal), so that scripts
// can tell a usage error from a VM that is not running from a failure.
func (r *root) exit(err error) int {
	if err == nil {
		return session.ExitOK
	}
	if errors.Is(err, session.ErrCancelled) {
		fmt.Fprintln(r.stderr, "Cancelled.")
		return session.ExitOK
	}
	if exit, ok := errors.AsType[*session.ExitError](err); ok {
		// An ExitError without a message of its own follows output that
		// said what went wrong (the shell's command, doctor's report).
		if exit.Err != nil || error(exit) != err { //nolint:errorlint // identity: is err the ExitError itself
			fmt.Fprintf(r.stderr, "ERROR: %s\n", ui.CleanLines(err.Error()))
		}
		return exit.Code
	}
	if errors.Is(err, context.Canceled) {
		if err == context.Canceled { //nolint:errorlint // identity: the bare interrupt
			fmt.Fprintln(r.stderr, "ERROR: interrupted")
		} else {
			fmt.Fprintf(r.stderr, "ERROR: interrupted: %s\n", ui.CleanLines(err.Error()))
		}
		return 130
	}
	// An error may quote what the VM, Docker or a cluster said.
	fmt.Fprintf(r.stderr, "ERROR: %s\n", ui.CleanLines(err.Error()))
	return session.ExitFailed
}

type root struct {
	stdout, stderr io.Writer
	colour         bool // stdout is a smart terminal: ✓, ✗ and doctor's tags in colour
	configFlag     string
	debug          bool
	// env is set once the command starts; the signal handler reads it.
	env atomic.Pointer[session.Env]
}

func (r *root) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "marina",
		Short: "A multi-cluster Kubernetes lab on your Mac",
		Long: `marina runs one Lima VM with Docker, many kind clusters inside it, and routes
the kind network to your Mac at layer 3: LoadBalancer IPs answer directly and
pods see your Mac's real address.

` + envHelp,
		Example: `  # Create the VM (the first run asks for your sudo password: see marina up --help)
  marina up
  marina cluster create dev
  kubectl --context dev get nodes
  marina status`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          unknown,
		Version:       version.String(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.HasParent() {
				return nil // bare marina prints its help: no config read
			}
			if completing(cmd) {
				return nil // a completion sets up its own, silent Env
			}
			if cmd.Name() == "help" && cmd.Parent() == cmd.Root() {
				return nil // help reads no config: `marina help up` is `marina up --help`
			}
			if err := r.setup(); err != nil {
				return err
			}
			if cmd.Name() != "migrate" {
				migrate.KlimaxNotice(r.env.Load())
			}
			return nil
		},
	}
	c.SetVersionTemplate("marina {{.Version}}\n")
	c.PersistentFlags().StringVarP(&r.configFlag, "config", "c", "", "config file (default $MARINA_HOME/config.yaml, MARINA_HOME defaults to ~/.marina)")
	c.PersistentFlags().BoolVar(&r.debug, "debug", false, "log every command marina runs, Lima's output and the guest round trips")
	c.AddCommand(
		r.upCmd(), r.downCmd(), r.destroyCmd(), r.statusCmd(), r.shellCmd(),
		r.clusterCmd(), r.fleetCmd(), r.imageCmd(), r.kubeconfigCmd(), r.registryCmd(), r.dnsCmd(), r.configCmd(),
		r.doctorCmd(), r.dashboardCmd(), r.logsCmd(), r.sudoersCmd(), r.dockerEnvCmd(), r.dockerContextCmd(), r.skillCmd(), r.migrateCmd(), versionCmd(r),
	)
	c.Long += "\n\n" + outputHelp
	// Before cobra's completion command is made (completionHelp,
	// usageErrors): it takes its output stream when it is made.
	c.SetOut(r.stdout)
	c.SetErr(r.stderr)
	completionHelp(c)
	usageErrors(group(c))
	r.registerCompletions(c)
	return c
}

func (r *root) setup() error {
	paths, err := config.ResolvePaths(os.Getenv, r.configFlag)
	if err != nil {
		return err
	}
	// Before any command reads or writes anything: a mistyped --config is
	// not a new config of defaults.
	if err := paths.CheckNamed(); err != nil {
		return err
	}
	smart := ui.IsSmartTerminal(os.Stderr, os.Getenv) && r.stderr == io.Writer(os.Stderr)
	// The views on stdout have colour of their own: a pipe there gets none.
	r.colour = ui.IsSmartTerminal(os.Stdout, os.Getenv) && r.stdout == io.Writer(os.Stdout)
	u := ui.New(r.stderr, smart, r.debug)
	if smart {
		u.SetSize(ui.TermSize(os.Stderr))
	}
	env := session.NewEnv(paths, u, term.IsTerminal(int(os.Stdin.Fd())), production)
	env.Stdout, env.Stderr = r.stdout, r.stderr
	env.Marina = version.String()
	r.env.Store(env)
	return nil
}

// group makes c a command that only holds subcommands: bare, it prints its
// help; with a word that is none of them, it fails with cobra's
// suggestions, so that a script with a typo stops.
func group(c *cobra.Command) *cobra.Command {
	c.SuggestionsMinimumDistance = 2
	c.Args = unknown
	c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return c
}

// peerWords are the words other tools use for marina's commands (kind's
// and k3d's "create cluster", minikube's "start" and "stop", kubectl's
// "get"), with marina's.
var peerWords = map[string]string{
	"start":  "marina up",
	"stop":   "marina down",
	"create": "marina cluster create NAME",
	"get":    "marina cluster list",
	"list":   "marina cluster list",
	"ls":     "marina cluster list",
	"delete": "marina cluster delete NAME",
	"rm":     "marina cluster delete NAME",
}

// unknown refuses a word that is no command of c, with cobra's
// suggestions, or marina's command when the word is another tool's.
func unknown(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	s := c.SuggestionsFor(args[0])
	if say, ok := peerWords[args[0]]; ok && !c.HasParent() {
		s = []string{say}
	}
	if len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return errors.New(msg) // usageErrors adds where the help is
}

func dryRunFlag(c *cobra.Command, v *bool) {
	c.Flags().BoolVar(v, "dry-run", false, "print what would change and change nothing")
}

func (r *root) upCmd() *cobra.Command {
	var o machine.UpOptions
	c := &cobra.Command{
		Use:   "up",
		Short: "Create or start the VM and bring everything in it to the config",
		Long: `Create the VM on first use (writing a commented default config), start it when
it is stopped, and check that the guest and its Docker answer; then bring the
kind network, the VM's routing rules, the registry mirrors and the local DNS
to the config. Every run is safe to repeat: what already matches the config is
left alone.

The first run asks for your sudo password: it changes two things on your Mac,
as root. First a route that sends the kind network (network.cidr) to the VM,
then, once the local DNS runs, the resolver file /etc/resolver/demo.internal
(named after dns.domain) that sends those names to it. marina prints each
command before sudo runs it, and runs sudo only when something must change;
without a terminal sudo cannot ask, and marina prints the command to run
yourself.

When network.disablePortMirroring differs from the VM's, up offers to restart
the VM to apply it (-y accepts; without a terminal it only warns). Every
cluster keeps the API address it was created with; a switch that would leave
one unreachable is refused, with how to recreate it.

After marina itself was upgraded, up provisions the VM again in place with
this marina's script (Docker, kind, daemon.json), keeping every cluster. A
change that restarts the VM's Docker is listed and asked for the same way
(-y accepts); the clusters that ran run again after it.`,
		Example: `  # First run: write ~/.marina/config.yaml and create the VM
  marina up

  # What up would change, changing nothing
  marina up --dry-run

  # Apply a network.disablePortMirroring change or a Docker upgrade without asking
  marina up -y

  # Another config file
  marina up -c ~/labs/mesh.yaml`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ready, err := machine.Up(c.Context(), r.env.Load(), o)
			if ready != nil {
				printReady(r.stdout, ready)
			}
			return err
		},
	}
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "restart the VM or its Docker without asking when a setting (network.disablePortMirroring) or an upgrade needs it")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) downCmd() *cobra.Command {
	var o machine.DownOptions
	c := &cobra.Command{
		Use:     "down",
		Aliases: []string{"d"},
		Short:   "Stop the VM, keeping everything in it",
		Long: `Stop the VM. Clusters, images and caches are kept; marina up starts it again.
The host route to the kind network stays unless --remove-route is given (on a
Mac it goes anyway with the VM's network; marina up puts it back).`,
		Example: `  marina down

  # Also remove the host's route to the kind network (asks for sudo)
  marina down --remove-route

  # Stop, then start again with new vm.cpus or vm.memory
  marina down && marina up`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return r.done(machine.Down(c.Context(), r.env.Load(), o)) },
	}
	c.Flags().BoolVar(&o.RemoveRoute, "remove-route", false, "also remove the host's route to the kind network (needs sudo)")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) destroyCmd() *cobra.Command {
	var o machine.DestroyOptions
	c := &cobra.Command{
		Use:   "destroy",
		Short: "Delete the VM with every cluster and image in it",
		Long: `Delete the VM and its disk, and remove the host's route to the kind network
and the resolver file marina wrote. When the VM runs, the kubeconfig files of
the clusters its Docker lists go too, with (kind.autoRemoveKubeconfig) their
entries in your kubeconfig, only what marina wrote; with the VM stopped or
gone marina cannot tell which kubeconfigs were its clusters', so it keeps
them and names them. The config and the registry cache on the Mac are kept,
so the next marina up starts from a warm cache. Asks first; -y does not.`,
		Example: `  # What destroy would remove, removing nothing
  marina destroy --dry-run

  marina destroy

  # In a script, with no terminal to answer on
  marina destroy -y`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return r.done(machine.Destroy(c.Context(), r.env.Load(), o)) },
	}
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) statusCmd() *cobra.Command {
	var verbose bool
	c := withVerdict(r, &cobra.Command{
		Use:     "status",
		Aliases: []string{"st", "s"},
		Short:   "Show the VM and what runs in it",
		Args:    cobra.NoArgs,
		Long: `Show the lab at a glance: one line per part (the VM, the host's route to the
kind network, the guest's networking, the local DNS, the registry mirrors),
each ✓ or ✗ with its first problem, then the clusters Docker runs. A mirror
that does not run is a warning (!): the nodes pull from its upstream.

-v shows everything: the VM (state, machine, lima0 address, Docker version),
the route, the kind Docker network and each rule marina installs, checked one
by one, and the local DNS (the resolver file, its two containers and one real
lookup). -o json and -o yaml give all of it, and the mirrors.

status changes nothing, and a problem does not stop it: each is shown beside
what was found. When the config does not load, the VM is still shown (vm.name
is read alone). Exits 1 when something it shows is ✗.`,
		Example: `  marina status
  marina status -v
  marina st
  marina status -o json`,
	}, status.Get, func(w io.Writer, s status.Status) {
		show.Style{Colour: r.colour, Verbose: verbose}.Status(w, s)
	}, statusVerdict)
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "show every section, and each rule checked one by one (text output)")
	return c
}

func (r *root) shellCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "shell [-- COMMAND [ARG…]]",
		Aliases: []string{"ssh"},
		Short:   "Open a shell in the VM, or run a command there",
		Long: `Open a login shell in the VM (limactl shell, with marina's LIMA_HOME), or run
the command given after -- there; marina then exits with that command's exit
status. The VM must be running.`,
		Example: `  marina shell
  marina shell -- docker ps
  marina shell -- sudo iptables -S DOCKER-USER`,
		RunE: func(c *cobra.Command, args []string) error { return machine.Shell(c.Context(), r.env.Load(), args) },
	}
}

func (r *root) registryCmd() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "registry",
		Short: "The pull-through registry mirrors every cluster shares",
		Long: `Each entry of registries.mirrors is a pull-through cache (distribution) on the
kind network in the VM, started by marina up. Every cluster's nodes pull
through them first, with the upstream registry as the fallback, so an image
is downloaded once for all clusters. Its cache is kept on the Mac
(~/.marina/registry-cache) unless registries.cacheStorage is guest.`,
		Example: `  marina registry list
  marina registry clean-cache registry-dockerio`,
	})
	list := withList(r, &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the mirrors: upstream, port, state, cache size, hits and misses",
		Args:    cobra.NoArgs,
		Long: `List each mirror of the config, and any mirror container no longer in it: its
upstream, its port on the kind network, its container's state, the size of
its cache (with the Docker Hub mirror's share of kind node images, which the
VM's Docker pulls through it), and the blob and manifest hits and misses it
has counted since its container started.`,
		Example: `  marina registry list
  marina registry ls -o json`,
	}, status.ListMirrors, show.Mirrors, func() string {
		return "No mirrors: registries.mirrors in the config is empty (`marina config edit` adds one)."
	})
	var o machine.CleanCacheOptions
	clean := &cobra.Command{
		Use:   "clean-cache [NAME…]",
		Short: "Empty the cache of the named mirrors (every mirror when none is named)",
		Long: `Empty mirror caches. A running mirror is removed first and started again,
empty; the next pulls go to the upstream again. Emptying more than one cache
asks first; -y does not. The push registry is no cache: only named
(marina-registry) are its images deleted, after asking (docs/images.md).`,
		Example: `  marina registry clean-cache registry-quayio

  # Every mirror's cache, without asking
  marina registry clean-cache -y
  marina registry clean-cache --dry-run`,
		RunE: func(c *cobra.Command, args []string) error {
			return r.done(machine.CleanCache(c.Context(), r.env.Load(), args, o))
		},
	}
	clean.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	dryRunFlag(clean, &o.DryRun)
	c.AddCommand(list, clean, r.prefetchCmd())
	return c
}

func (r *root) dnsCmd() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "dns",
		Short: "The local DNS: a name under dns.domain for every LoadBalancer Service",
		Long: `marina up runs a DNS server on the kind network (CoreDNS, reading an etcd that
each cluster's ExternalDNS writes into) and writes the resolver file
/etc/resolver/demo.internal (named after dns.domain) on the Mac. Every
LoadBalancer Service with an address then answers as
SERVICE.NAMESPACE.CLUSTER.demo.internal, from the Mac and from every pod.
dig and nslookup do not read /etc/resolver: test a name with dscacheutil, or
ask the server itself.`,
		Example: `  marina dns list
  dscacheutil -q host -a name web.shop.dev.demo.internal
  dig @172.30.255.53 web.shop.dev.demo.internal`,
	})
	var selector string
	list := withList(r, &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the names the local DNS answers, with their address, cluster and owner",
		Long: `List every name the local DNS answers, read from its etcd: the name, the
address it answers with, its cluster, and its owner (the cluster whose
ExternalDNS wrote it, as its ownership record says; - when there is none).
-l keeps the names whose cluster or owner match.`,
		Example: `  marina dns list
  marina dns list -l cluster=dev -o json`,
		Args: cobra.NoArgs,
	}, func(ctx context.Context, e *session.Env) ([]dns.Record, error) {
		return status.ListDNS(ctx, e, selector)
	}, show.DNS, func() string {
		if selector != "" {
			return fmt.Sprintf("No name matches -l %s (`marina dns list` shows them all).", selector)
		}
		return "No names: a LoadBalancer Service with an address gets one within seconds (the Mac may keep a name it asked for too early missing for a minute: marina dns flush)."
	})
	list.Flags().StringVarP(&selector, "selector", "l", "", "only names matching this selector on cluster and owner (cluster=dev)")
	var fo status.FlushDNSOptions
	flush := &cobra.Command{
		Use:   "flush",
		Short: "Empty the Mac's DNS cache, for a name asked for before it existed",
		Long: `Empty the Mac's DNS cache: sudo dscacheutil -flushcache, then sudo killall
-HUP mDNSResponder (Apple's own way), each command printed before sudo asks
for a password.

marina's DNS answers with a TTL of 10 s, and says a missing name may be
asked again after 10 s. macOS's mDNSResponder keeps a found name at least
15 s and a missing one at least a minute, longer while something keeps
asking: a name looked up before ExternalDNS published it may stay missing
on the Mac for a minute or more. Pods ask marina's DNS through their
cluster's CoreDNS and are not affected. No VM is needed.`,
		Example: `  marina dns flush
  marina dns flush --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return r.done(status.FlushDNS(c.Context(), r.env.Load(), fo))
		},
	}
	dryRunFlag(flush, &fo.DryRun)
	c.AddCommand(list, flush)
	return c
}

func (r *root) configCmd() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "config",
		Short: "Show, locate or edit the config file",
		Long: `marina reads one config file: the one --config names, else
$MARINA_HOME/config.yaml (MARINA_HOME defaults to ~/.marina). marina up writes
a commented default one when there is none. Every key is optional, and
loading is strict: an unknown or duplicate key is an error that names its
line.`,
		Example: `  marina config path
  marina config show
  marina config edit`,
	})
	c.AddCommand(
		&cobra.Command{
			Use:   "path",
			Short: "Print the config file's path",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return configPath(r.env.Load()) },
			Long: `Print the path of the config file marina reads: --config's, else
$MARINA_HOME/config.yaml (MARINA_HOME defaults to ~/.marina). When there is no
file there yet, stderr says which commands create it.`,
			Example: `  marina config path
  MARINA_HOME=~/labs/mesh marina config path`,
		},
		&cobra.Command{
			Use:   "show",
			Short: "Print the effective config, defaults included (passwords masked)",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return showConfig(r.env.Load()) },
			Long: `Print, as YAML, the config marina runs with: the file's values with every
default filled in, registry passwords masked. Without a file, the defaults
(stderr says so).`,
			Example: `  marina config show
  marina config show -c ~/labs/mesh.yaml`,
		},
		&cobra.Command{
			Use:   "edit",
			Short: "Edit the config in $VISUAL or $EDITOR, then check it",
			Args:  cobra.NoArgs,
			RunE:  func(c *cobra.Command, _ []string) error { return editConfig(c.Context(), r.env.Load()) },
			Long: `Open the config file in $VISUAL, else $EDITOR, else vi (through the shell, so
that "code -w" works), writing the commented default file first when
$MARINA_HOME/config.yaml is not there yet (a file --config names must exist);
then load it and report what is wrong. The file stays saved either way;
marina up applies it.`,
			Example: `  marina config edit
  EDITOR="code -w" marina config edit`,
		},
	)
	return c
}
