package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/sudoers"
)

func (r *root) sudoersCmd() *cobra.Command {
	var o sudoers.Options
	c := &cobra.Command{
		Use:   "sudoers",
		Short: "Print, install or remove a sudoers rule so that up asks for no password for the route",
		Long: `Print the sudoers drop-in that lets you run, without a password, exactly the
route commands that up, down and destroy run as root: the route to the kind
network (network.cidr) added, changed or deleted through any address of the
VM's lima0 /24 (the VM's address moves when it starts again), the removal
of the resolver file of dns.domain, and the drop-in's own removal. On a Mac
the route goes away with the VM's bridge at every stop, so without it every
marina up after a marina down asks for your password. Writing the resolver
file (the first up) still asks: its content comes from a file you own.

--install checks it with visudo -c and installs it as
/etc/sudoers.d/marina-USER, root-owned and read-only, with one sudo. Every
privileged command then runs with sudo -n; when the drop-in is missing, or
stale after a change of network.cidr, dns.domain or lima0's network (marina
sudoers says so; --install updates it), sudo asks as before. --remove
removes it, and marina destroy removes the drop-in this command installed.
Printing and installing need the VM running (the rule names lima0's /24).`,
		Example: `  # What it would install
  marina sudoers

  # Install it (one sudo), or see the plan first
  marina sudoers --install --dry-run
  marina sudoers --install

  # Remove it
  marina sudoers --remove`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			rep, res, err := sudoers.Run(c.Context(), r.env.Load(), o)
			if err != nil || o.Install || o.Remove {
				return r.done(res, err)
			}
			fmt.Fprint(r.stdout, rep.Content)
			switch {
			case rep.Stale:
				fmt.Fprintf(r.stderr, "%s is installed but is not this drop-in (network.cidr or dns.domain changed): `marina sudoers --install` updates it\n", rep.Path)
			case rep.Installed:
				fmt.Fprintf(r.stderr, "%s is installed and current\n", rep.Path)
			default:
				fmt.Fprintf(r.stderr, "not installed: `marina sudoers --install` installs it as %s\n", rep.Path)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&o.Install, "install", false, "check the drop-in with visudo and install it (one sudo)")
	c.Flags().BoolVar(&o.Remove, "remove", false, "remove the drop-in --install installed")
	dryRunFlag(c, &o.DryRun)
	c.MarkFlagsMutuallyExclusive("install", "remove")
	return c
}
