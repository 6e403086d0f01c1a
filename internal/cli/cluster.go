package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cli/show"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
)

func (r *root) clusterCmd() *cobra.Command {
	c := group(&cobra.Command{
		Use:     "cluster",
		Aliases: []string{"clusters", "cl", "c"},
		Short:   "Create, list, label, stop, start, verify and delete kind clusters",
		Long: `Every cluster is a kind cluster in the VM, on the shared kind Docker network,
in a slot N from 1 to 99 that gives it its API port (700N), its subnets and
its slice of LoadBalancer addresses. Its nodes pull through the registry
mirrors, MetalLB serves its LoadBalancer Services, and its kubeconfig is
merged into yours as the context NAME.`,
		Example: `  marina cluster create dev
  kubectl --context dev get nodes
  marina cluster list
  marina cluster delete dev`,
	})
	apply := r.fleetApplyCmd("apply")
	apply.Short = "Apply a Fleet manifest (the same as marina fleet apply)"
	apply.Example = `  marina cluster apply -f fleet.yaml --dry-run
  marina cluster apply -f fleet.yaml`
	c.AddCommand(r.clusterCreateCmd(), apply, r.clusterDeleteCmd(), r.clusterListCmd(), r.clusterLabelCmd(), r.clusterStopCmd(false), r.clusterStopCmd(true), r.clusterVerifyCmd(), r.e2eTestNginxCmd())
	return c
}

func (r *root) clusterCreateCmd() *cobra.Command {
	var o kindcluster.CreateOptions
	var output string
	var metrics bool
	c := &cobra.Command{
		Use:     "create NAME",
		Aliases: []string{"cr", "c"},
		Short:   "Create a cluster with MetalLB, the registry mirrors and a merged kubeconfig",
		Long: `Create a kind cluster in the lowest free slot N (1-99): API server on port
700N, services in 10.N.0.0/16, pods in 10.1N.0.0/16 (slots from 10 on use
10.(100+N).0.0/16), LoadBalancer addresses <kind network>.N.1-7 and .16-254.
Its nodes pull through the registry mirrors; MetalLB serves its pool; its
CoreDNS forwards kind.customDnsResolvers; its kubeconfig is written to
~/.kube/marina/NAME.kubeconfig and merged into ~/.kube/config (or the first
file of $KUBECONFIG).

If a step fails after kind created the cluster, the cluster and its kubeconfig
entries are removed again, unless --retain is given. --dry-run prints the plan
and the kind config; it needs no VM: without one it plans what the config
decides, in the next free slot, with slot 1's kind config.

The add-ons that need only the API server (MetalLB, ExternalDNS) install while
kind still installs the network and joins the workers; --debug and -o json
give how long each step of kind and of each add-on took.

With --cni none kind installs no CNI (networking.disableDefaultCNI): the
create writes the kubeconfig, waits up to --wait for your CNI to make every
node Ready, then installs the add-ons. Install it meanwhile, from another
terminal or a script. docs/multi-cluster.md has the settings Cilium and
Calico need on marina's address plan.`,
		Example: `  marina cluster create dev
  marina cluster create east --region us-east1 --zone us-east1-c -l team=net --workers 2
  marina cluster create mesh1 --cni none   # then: cilium install --context mesh1`,
		Args: one("cluster", "marina cluster create NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			o.Name = args[0]
			if c.Flags().Changed("metrics-server") {
				o.Metrics = &metrics
			}
			created, err := kindcluster.Create(c.Context(), r.env.Load(), o)
			switch {
			case created == nil:
			case output == "text":
				printCreated(r.stdout, created)
			default:
				if rerr := ui.Render(r.stdout, output, newCreatedView(created)); rerr != nil {
					return rerr
				}
			}
			return err
		},
	}
	outputFlag(c, &output)
	f := c.Flags()
	f.StringVar(&o.Region, "region", "", "topology.kubernetes.io/region of the nodes (default europe-westN)")
	f.StringVar(&o.Zone, "zone", "", "topology.kubernetes.io/zone of the nodes (default europe-westN-b)")
	f.StringArrayVarP(&o.Labels, "label", "l", nil, "node label key=value (repeatable)")
	f.StringVar(&o.NodeVersion, "node-version", "", "Kubernetes version of the nodes (default kind.nodeVersion)")
	f.IntVar(&o.Workers, "workers", 0, "number of worker nodes besides the control plane")
	say(c, "workers", "a whole number from 0 to 9")
	f.BoolVar(&o.Retain, "retain", false, "keep the cluster when a step fails, for a look")
	f.BoolVar(&o.NoSwitch, "no-switch-context", false, "leave kubectl's current context as it is (kind.switchContext)")
	f.DurationVar(&o.Wait, "wait", addons.DefaultWait, "how long to wait for MetalLB to be ready (and, with --cni none, for your CNI)")
	f.StringVar(&o.CNI, "cni", cluster.CNIKindnet, "kindnet (kind's default) or none: kind installs no CNI; marina writes the kubeconfig and waits for yours (Cilium, Calico) before the add-ons")
	_ = c.RegisterFlagCompletionFunc("cni", cobra.FixedCompletions([]string{cluster.CNIKindnet, cluster.CNINone}, cobra.ShellCompDirectiveNoFileComp))
	f.BoolVar(&metrics, "metrics-server", false, "install metrics-server, for kubectl top (default kind.metricsServer)")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) clusterDeleteCmd() *cobra.Command {
	var o kindcluster.DeleteOptions
	var file string
	c := &cobra.Command{
		Use:     "delete [NAME…]",
		Aliases: []string{"rm", "de", "d"},
		Short:   "Delete clusters and their kubeconfig entries",
		Long: `Delete the named clusters, or those whose nodes match -l (after a
confirmation, unless -y), or the clusters of a Fleet manifest given with -f,
dependents first (after a confirmation, unless -y; -f - needs -y). With none
of these, in a terminal, pick them from a list: ↑/↓ move, space selects,
ctrl+a selects all, enter deletes the selected, esc cancels.`,
		Example: `  marina cluster delete dev
  marina cluster delete -l env=test -y
  marina cluster delete -f fleet.yaml`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Names = args
			// -f is a fleet's delete: the cluster commands know nothing
			// of fleets.
			if file != "" {
				if len(o.Names) > 0 || o.Selector != "" {
					return errors.New("-f deletes a fleet manifest's clusters: do not name clusters or give -l with it")
				}
				return r.done(fleet.Delete(c.Context(), r.env.Load(), "", file, o.Yes, o.DryRun))
			}
			return r.done(kindcluster.Delete(c.Context(), r.env.Load(), o))
		},
	}
	c.Flags().StringVarP(&o.Selector, "selector", "l", "", "delete the clusters whose nodes match this label selector")
	c.Flags().StringVarP(&file, "filename", "f", "", "delete the clusters of this Fleet manifest (- for stdin)")
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) clusterListCmd() *cobra.Command {
	var selector string
	c := withList(r, &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "l"},
		Short:   "List the clusters: slot, API port, nodes, state and kubeconfig",
		Args:    cobra.NoArgs,
		Long: `List the kind clusters the VM's Docker runs: name, slot, API port, number of
nodes, state (running or stopped), the region and zone labels of the running
ones, and the kubeconfig file marina wrote for each. -l keeps the clusters
whose control-plane node matches the label selector.`,
		Example: `  marina cluster list
  marina cluster ls -l env=test
  marina cluster list -o json`,
	}, func(ctx context.Context, e *session.Env) ([]kindcluster.Row, error) {
		return kindcluster.List(ctx, e, selector)
	}, show.Clusters, func() string {
		if selector != "" {
			return fmt.Sprintf("No cluster's nodes match -l %s (`marina cluster list -o yaml` shows every cluster's labels).", selector)
		}
		return "No clusters: `marina cluster create NAME` makes one."
	})
	c.Flags().StringVarP(&selector, "selector", "l", "", "only the clusters whose nodes match this label selector")
	return c
}

func (r *root) clusterLabelCmd() *cobra.Command {
	var labels []string
	var dryRun bool
	c := &cobra.Command{
		Use:   "label NAME KEY=VALUE… KEY-…",
		Short: "Set or remove labels on every node of a cluster",
		Example: `  marina cluster label dev team=net env-
  marina cluster label dev -l team=net -l env-`,
		Args: atLeast(1, "name the cluster and the labels: marina cluster label NAME KEY=VALUE… KEY-…"),
		RunE: func(c *cobra.Command, args []string) error {
			return r.done(kindcluster.Label(c.Context(), r.env.Load(), args[0], append(args[1:], labels...), dryRun))
		},
		Long: `Set (KEY=VALUE) or remove (KEY-) labels on every node of the cluster,
through its API server, as kubectl label takes them; -l KEY=VALUE says the
same. A cluster's labels are its nodes': cluster list -l and cluster delete
-l select on them.`,
	}
	c.Flags().StringArrayVarP(&labels, "label", "l", nil, "key=value to set, key- to remove (repeatable)")
	dryRunFlag(c, &dryRun)
	return c
}

// clusterStopCmd is cluster stop, or with start cluster start.
func (r *root) clusterStopCmd(start bool) *cobra.Command {
	var o kindcluster.StopOptions
	c := &cobra.Command{
		Use:   "stop NAME… | -l SELECTOR | --all",
		Short: "Stop clusters to free the VM's memory; they keep everything",
		Long: `Stop the clusters' node containers, and with them everything in the
clusters, freeing the memory they use (shown, as docker stats reads it). A
stopped cluster keeps its nodes, volumes, kubeconfig, slot, the local DNS's
names of its Services and their LoadBalancer addresses; cluster list, status
and dns list show it as stopped. It stays stopped across marina down and up;
marina cluster start starts it again.`,
		Example: `  marina cluster stop dev
  marina cluster stop -l env=test
  marina cluster stop --all`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Names = args
			if start {
				return r.done(kindcluster.Start(c.Context(), r.env.Load(), o))
			}
			return r.done(kindcluster.Stop(c.Context(), r.env.Load(), o))
		},
	}
	if start {
		c.Use = "start NAME… | -l SELECTOR | --all"
		c.Short = "Start stopped clusters and wait until they are back"
		c.Long = `Start the clusters' node containers (the control plane first) and wait
until each is back: its API server ready, every node Ready and the pods of
MetalLB and ExternalDNS running again, all since the start. It then checks
MetalLB's pool against the cluster's slot and, if the VM's address moved
while it was stopped, exports its kubeconfig again. Its Services keep their
LoadBalancer addresses and DNS names. Clusters start one after the other.`
		c.Example = `  marina cluster start dev
  marina cluster start --all --wait 10m`
		c.Flags().DurationVar(&o.Wait, "wait", kindcluster.StartWait, "how long to wait for each cluster to be back")
	}
	c.Flags().StringVarP(&o.Selector, "selector", "l", "", "the clusters whose nodes match this label selector")
	c.Flags().BoolVar(&o.All, "all", false, "every cluster")
	dryRunFlag(c, &o.DryRun)
	return c
}

func (r *root) clusterVerifyCmd() *cobra.Command {
	var o kindcluster.VerifyOptions
	c := &cobra.Command{
		Use:   "verify [NAME]",
		Short: "Check that a LoadBalancer answers from this Mac and sees its address",
		Long: `Deploy a small echo server behind a LoadBalancer Service with
externalTrafficPolicy: Local, wait for its address, connect to it from this
machine and report whether the server saw this machine's own address (the
layer-3 route at work), then clean up. Without NAME, the current context's
cluster.`,
		Example: `  marina cluster verify dev
  marina cluster verify --wait 5m`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Name = args[0]
			}
			return r.done(kindcluster.Verify(c.Context(), r.env.Load(), o))
		},
	}
	c.Flags().StringVar(&o.Image, "image", kindcluster.DefaultVerifyImage, "the echo server image (it must answer GET /clientip with the caller's ip:port)")
	c.Flags().DurationVar(&o.Wait, "wait", kindcluster.DefaultVerifyWait, "how long to wait for the workload and its address")
	return c
}

// e2eTestNginxCmd is klimax's test of a LoadBalancer, which marina
// cluster verify does (and proves more): hidden, it says so and verifies.
func (r *root) e2eTestNginxCmd() *cobra.Command {
	c := r.clusterVerifyCmd()
	c.Use, c.Hidden = "e2e-test-nginx [NAME]", true
	c.Short = "klimax's LoadBalancer test: now marina cluster verify"
	c.Example = "  marina cluster e2e-test-nginx dev    # marina cluster verify dev"
	c.Flags().Bool("cleanup", false, "klimax's: verify always cleans up")
	run := c.RunE
	c.RunE = func(c *cobra.Command, args []string) error {
		r.env.Load().UI.Warnf("cluster e2e-test-nginx is klimax's: marina cluster verify does it (a LoadBalancer answering this Mac, with its address), and cleans up")
		if cleanup, _ := c.Flags().GetBool("cleanup"); cleanup {
			return nil // what it left is what verify never leaves
		}
		return run(c, args)
	}
	return c
}

func (r *root) kubeconfigCmd() *cobra.Command {
	c := group(&cobra.Command{
		Use:     "kubeconfig",
		Aliases: []string{"kc"},
		Short:   "The clusters' kubeconfigs: path, env, merge, remove, use",
		Long: `Each cluster's own kubeconfig is ~/.kube/marina/NAME.kubeconfig (0600);
cluster create merges it (kind.autoMergeKubeconfig, on by default) into
~/.kube/config (or the first file of $KUBECONFIG) as the context, cluster and
user NAME. marina only ever changes the entries it wrote.`,
		Example: `  marina kubeconfig use dev
  kubectl --context dev get pods -A
  eval "$(marina kubeconfig env dev)"`,
	})
	c.AddCommand(
		&cobra.Command{
			Use:   "path NAME",
			Short: "Print the path of a cluster's own kubeconfig",
			Args:  one("cluster", "marina kubeconfig path NAME"),
			RunE: func(c *cobra.Command, args []string) error {
				return r.line(kindcluster.KubeconfigPath(r.env.Load(), args[0], false))
			},
			Long: `Print the path of the cluster's own kubeconfig, ~/.kube/marina/NAME.kubeconfig;
an error when marina has not written it (marina kubeconfig merge NAME does).`,
			Example: `  marina kubeconfig path dev
  kubectl --kubeconfig "$(marina kubeconfig path dev)" get nodes`,
		},
		&cobra.Command{
			Use:     "env NAME",
			Short:   "Print an export KUBECONFIG=… line for a cluster",
			Example: `  eval "$(marina kubeconfig env dev)"`,
			Args:    one("cluster", "marina kubeconfig env NAME"),
			RunE: func(c *cobra.Command, args []string) error {
				return r.line(kindcluster.KubeconfigPath(r.env.Load(), args[0], true))
			},
			Long: `Print the shell line that points KUBECONFIG at the cluster's own kubeconfig
alone, for eval: kubectl in that shell then reaches that cluster and no other.`,
		},
		r.kubeconfigMergeCmd(),
		&cobra.Command{
			Use:     "remove NAME…",
			Aliases: []string{"rm"},
			Short:   "Remove clusters' entries from ~/.kube/config (their own files stay)",
			Args:    atLeast(1, "name the clusters whose entries to remove: marina kubeconfig remove NAME…"),
			RunE: func(c *cobra.Command, args []string) error {
				return r.done(kindcluster.RemoveKubeconfigs(r.env.Load(), args))
			},
			Long: `Remove the context, cluster and user entries named NAME that marina wrote from
~/.kube/config (or the first file of $KUBECONFIG). The cluster and its own
kubeconfig file stay; entries of that name that marina did not write are left
as they are, and reported.`,
			Example: `  marina kubeconfig remove dev
  marina kc rm dev staging`,
		},
		&cobra.Command{
			Use:   "use NAME",
			Short: "Make a cluster the current context of ~/.kube/config",
			Args:  one("cluster", "marina kubeconfig use NAME"),
			RunE: func(c *cobra.Command, args []string) error {
				return r.done(kindcluster.UseKubeconfig(r.env.Load(), args[0]))
			},
			Long: `Make NAME the current context of ~/.kube/config (or the first file of
$KUBECONFIG), as kubectl config use-context does, for a context marina
wrote.`,
			Example: `  marina kubeconfig use dev
  kubectl get nodes`,
		},
	)
	return c
}

func (r *root) kubeconfigMergeCmd() *cobra.Command {
	var dryRun bool
	c := &cobra.Command{
		Use:   "merge [NAME…]",
		Short: "Export kubeconfigs again from the live clusters and merge them (every cluster when none is named)",
		Long: `Export each cluster's kubeconfig again from kind, with the API server address
the VM has now (after a lima0 address change, too), write
~/.kube/marina/NAME.kubeconfig and merge it into ~/.kube/config (or the first
file of $KUBECONFIG), keeping every other entry and field as it is.`,
		Example: `  marina kubeconfig merge
  marina kubeconfig merge dev staging --dry-run`,
		RunE: func(c *cobra.Command, args []string) error {
			return r.done(kindcluster.MergeKubeconfigs(c.Context(), r.env.Load(), args, dryRun))
		},
	}
	dryRunFlag(c, &dryRun)
	return c
}
