package cli

import (
	"github.com/spf13/cobra"

	"github.com/bcollard/marina/internal/image"
)

func (r *root) imageCmd() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "image",
		Short: "Bring your own images into the clusters",
		Long: `An image built with the VM's Docker (eval "$(marina docker-env)") is in no
node until marina image load copies it into every node of the clusters you
choose. Or push it to the push registry, localhost:5001 (docs/images.md).`,
		Example: `  marina image load app:dev --cluster dev`,
	})
	var o image.LoadOptions
	load := &cobra.Command{
		Use:   "load IMAGE…",
		Short: "Load images from the VM's Docker (or an archive) into every node of clusters",
		Long: `Load images into every node of the clusters named with --cluster, selected with
-l, or --all (with none of these, the only cluster there is), from the VM's
Docker, where docker build lands after eval "$(marina docker-env)", or from a
docker save archive on the Mac (--archive: loaded into the VM's Docker first;
with no IMAGE, every image it holds). A node holding the same digest is skipped.`,
		Example: `  eval "$(marina docker-env)"; docker build -t app:dev .
  marina image load app:dev --cluster dev
  marina image load app:dev worker:dev -l env=test
  marina image load --all --archive ./images.tar`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Images = args
			return r.done(image.Load(c.Context(), r.env.Load(), o))
		},
	}
	load.Flags().StringSliceVar(&o.Clusters, "cluster", nil, "load into these clusters (repeat, or separate with commas)")
	load.Flags().StringVarP(&o.Selector, "selector", "l", "", "load into the clusters whose nodes match this label selector")
	load.Flags().BoolVar(&o.All, "all", false, "load into every cluster")
	load.Flags().StringVar(&o.Archive, "archive", "", "load the images of this archive on the Mac (docker save's tar)")
	dryRunFlag(load, &o.DryRun)
	c.AddCommand(load)
	return c
}

func (r *root) prefetchCmd() *cobra.Command {
	var o image.PrefetchOptions
	c := &cobra.Command{
		Use:   "prefetch [IMAGE…] [-f FLEET.yaml] [--addons]",
		Short: "Fetch images into the mirrors' caches before a cluster needs them",
		Long: `Fetch images into the caches of the mirrors that serve their registries, for
the VM's platform: the images named, the node and add-on images of a Fleet's
clusters (-f), or the add-on images every new cluster runs (--addons). What a
cache holds already is not fetched again. Clusters then pull them from the
cache (docs/mirrors.md).`,
		Example: `  marina registry prefetch --addons
  marina registry prefetch -f fleet.yaml
  marina registry prefetch nginx:1.27 quay.io/prometheus/prometheus:v3.5.0`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Images = args
			return r.done(image.Prefetch(c.Context(), r.env.Load(), o))
		},
	}
	c.Flags().StringVarP(&o.Fleet, "filename", "f", "", "the images a Fleet manifest's clusters need (- reads stdin)")
	c.Flags().BoolVar(&o.Addons, "addons", false, "the images of the add-ons every new cluster runs (metrics-server's too when kind.metricsServer is on)")
	dryRunFlag(c, &o.DryRun)
	return c
}
