package cli

import (
	"fmt"

	"github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/logs"
	"github.com/bcollard/marina/internal/ui"
)

func (r *root) logsCmd() *cobra.Command {
	var o logs.Options
	c := &cobra.Command{
		Use:   "logs",
		Short: "Write one archive for a bug report, with no secret in it",
		Long: `Write a .tar.gz for a bug report: marina's version, the config (passwords
masked), status -o json and doctor -o json, and from the VM in one round trip
the journal of Docker and marina's units, iptables-save, the addresses and
routes, docker ps -a, docker inspect of marina's containers and kind's nodes,
the last lines of the mirrors', the local DNS's and the push registry's logs,
and kind's export logs of each running cluster (--cluster: only those).

Secrets are taken out of every file before it is written: mirror passwords,
the label key and the local DNS's etcd passwords (plain and base64), private
keys, kubeconfig keys and tokens, and any value of a key named like a
password, token or secret. The archive is made new (never replacing a file),
readable by you alone; marina says what it holds.`,
		Example: `  marina logs
  marina logs -o bug.tar.gz --cluster dev`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			w, err := logs.Collect(c.Context(), r.env.Load(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(r.stdout, "Wrote %s (%s, %s, %s taken out):\n", w.Path, ui.Plural(len(w.Files), "file"), units.BytesSize(float64(w.Bytes)), ui.Plural(w.Redacted, "secret"))
			for _, f := range w.Files {
				fmt.Fprintf(r.stdout, "  %s\n", f)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&o.Output, "archive", "o", "", "the archive to write (default marina-logs-DATE-TIME.tar.gz here)")
	c.Flags().StringArrayVar(&o.Clusters, "cluster", nil, "export only this cluster's nodes (repeatable; default every running cluster)")
	return c
}
