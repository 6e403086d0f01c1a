package image

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// PrefetchOptions are the flags of marina registry prefetch.
type PrefetchOptions struct {
	Images []string
	Fleet  string // a Fleet manifest: its clusters' node and add-on images
	Addons bool   // the add-ons' images of a new cluster
	DryRun bool
}

// want is an image to prefetch and what asked for it.
type want struct {
	image string
	why   string // "" for an image named on the command line
}

// Prefetch brings images into the mirrors' caches before any cluster
// needs them: each image's manifests through its registry's mirror, then
// the blobs the cache lacks. An image the cache holds whole costs its
// manifests only; nothing of it is fetched again.
func Prefetch(ctx context.Context, e *session.Env, o PrefetchOptions) (session.Result, error) {
	if len(o.Images) == 0 && o.Fleet == "" && !o.Addons {
		return session.Result{}, session.Usagef("say what to prefetch: image names, -f FLEET.yaml (its clusters' node and add-on images) or --addons (a new cluster's add-on images)")
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.StrictOrDefault, Running: true})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	wants := make([]want, 0, len(o.Images))
	for _, im := range o.Images {
		wants = append(wants, want{image: im})
	}
	if o.Fleet != "" {
		more, err := fleetImages(ctx, s, o.Fleet)
		if err != nil {
			return session.Result{}, err
		}
		wants = append(wants, more...)
	}
	if o.Addons {
		// Every create installs metrics-server when kind.metricsServer
		// says so: its image too.
		var metrics *addons.MetricsServer
		if s.Config.Kind.MetricsServer {
			metrics = kindcluster.DefaultMetricsServer()
		}
		imgs, err := kindcluster.AddonImages(ctx, s, metrics)
		if err != nil {
			return session.Result{}, err
		}
		for _, im := range imgs {
			wants = append(wants, want{image: im, why: "add-on"})
		}
	}
	pulls, unserved, err := route(s.Config.Registries.Mirrors, wants)
	if err != nil {
		return session.Result{}, err
	}
	for _, u := range unserved {
		e.UI.Warnf("%s", u)
	}
	if o.DryRun {
		var steps []session.Step
		for _, p := range pulls {
			steps = append(steps, session.Step{Do: fmt.Sprintf("fetch %s into the cache of %s", familiar(p.Image), p.Mirror), Reason: "what the cache holds already is not fetched again"})
		}
		return session.Planned(steps, "no image to prefetch goes through a mirror"), nil
	}
	if len(pulls) == 0 {
		return session.Result{}, errors.New("no image to prefetch goes through a mirror (the warnings above say why); nothing was fetched")
	}
	addrs, err := mirrorAddrs(ctx, s, pulls)
	if err != nil {
		return session.Result{}, err
	}
	c, err := registry.NewClient(e.HostArch, nil)
	if err != nil {
		return session.Result{}, err
	}
	return fetchAll(ctx, s, c, addrs, pulls)
}

// fleetImages are the images a Fleet's clusters need: each node image,
// and the add-ons' images for each metrics-server choice among them.
func fleetImages(ctx context.Context, s *session.Session, file string) ([]want, error) {
	f, err := fleet.Read(s.Env, s.Config, file)
	if err != nil {
		return nil, err
	}
	var out []want
	metrics := map[string]*addons.MetricsServer{"": nil}
	for _, m := range f.Members {
		v := cmp.Or(m.NodeVersion, s.Config.Kind.NodeVersion)
		img, err := s.Config.Kind.NodeImage(v)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", m.Name, err)
		}
		out = append(out, want{image: img, why: "node image " + v})
		if m.MetricsServer != nil {
			metrics[fmt.Sprint(*m.MetricsServer)] = m.MetricsServer
		}
	}
	for _, k := range slices.Sorted(maps.Keys(metrics)) {
		imgs, err := kindcluster.AddonImages(ctx, s, metrics[k])
		if err != nil {
			return nil, err
		}
		for _, im := range imgs {
			out = append(out, want{image: im, why: "add-on"})
		}
	}
	return out, nil
}

// route finds each image's mirror, each image once. A named image no
// mirror serves is an error, before anything is fetched; one a Fleet or
// the add-ons need is a warning (unserved), since their clusters pull it
// from the Internet as they would without prefetch.
func route(mirrors []config.Mirror, wants []want) (pulls []registry.Pull, unserved []string, err error) {
	seen := map[string]bool{}
	for _, w := range wants {
		p, err := registry.Route(mirrors, w.image)
		if err != nil {
			return nil, nil, session.Usagef("%v", err)
		}
		if seen[p.Image] {
			continue
		}
		seen[p.Image] = true
		if p.Mirror == "" {
			fix := fmt.Sprintf("add a mirror of %s to registries.mirrors (docs/mirrors.md)", p.Registry)
			if w.why == "" {
				return nil, nil, session.Usagef("no mirror serves %s, so %s cannot be prefetched: %s; nothing was fetched", p.Registry, familiar(p.Image), fix)
			}
			unserved = append(unserved, fmt.Sprintf("%s (%s) is not prefetched: no mirror serves %s, so clusters pull it from the Internet; %s", familiar(p.Image), w.why, p.Registry, fix))
			continue
		}
		pulls = append(pulls, p)
	}
	return pulls, unserved, nil
}

// mirrorAddrs is where the Mac reaches each mirror pulls go through: its
// container's address on the kind network, over the route.
func mirrorAddrs(ctx context.Context, s *session.Session, pulls []registry.Pull) (map[string]string, error) {
	have, err := s.Docker.ListLabeled(ctx, registry.LabelMirror)
	if err != nil {
		return nil, err
	}
	addrs := map[string]string{}
	for _, p := range pulls {
		if _, ok := addrs[p.Mirror]; ok {
			continue
		}
		for _, c := range have {
			if c.Labels[registry.LabelMirror] == p.Mirror && c.State == "running" && c.IP != "" {
				addrs[p.Mirror] = net.JoinHostPort(c.IP, strconv.Itoa(p.Port))
			}
		}
		if addrs[p.Mirror] == "" {
			return nil, fmt.Errorf("the mirror %s is not running (`marina registry list` shows it): `marina up` starts it; nothing was fetched", p.Mirror)
		}
	}
	return addrs, nil
}

// fetched is one image's manifests and which of its blobs the cache
// lacks.
type fetched struct {
	blobs   []registry.Blob
	missing []registry.Blob
	err     error
}

// fetchAll reads every image's manifests through its mirror, asks the
// caches (one look) which blobs they hold, and fetches the rest.
func fetchAll(ctx context.Context, s *session.Session, c *registry.Client, addrs map[string]string, pulls []registry.Pull) (session.Result, error) {
	e := s.Env
	got := make([]fetched, len(pulls))
	err := e.Step(fmt.Sprintf("Reading the manifests of %s through the mirrors", ui.Plural(len(pulls), "image")), "", func() error {
		var wg sync.WaitGroup
		for i, p := range pulls {
			wg.Go(func() { got[i].blobs, got[i].err = c.Blobs(ctx, addrs[p.Mirror], p) })
		}
		wg.Wait()
		return ctx.Err()
	})
	if err != nil {
		return session.Result{}, err
	}
	have, err := cached(ctx, s, pulls, got)
	if err != nil {
		return session.Result{}, err
	}
	var done, already int
	var bytes int64
	var failed []string
	for i, p := range pulls {
		g := &got[i]
		name := familiar(p.Image)
		if g.err == nil {
			for _, b := range g.blobs {
				if !have[p.Mirror][blobKey(p.Repo, b.Digest)] {
					g.missing = append(g.missing, b)
				}
			}
		}
		if g.err == nil && len(g.missing) > 0 {
			var size int64
			for _, b := range g.missing {
				size += b.Size
			}
			g.err = e.Step(fmt.Sprintf("Fetching %s through %s (%s of %d, %s)", name, p.Mirror, ui.Plural(len(g.missing), "blob"), len(g.blobs), units.BytesSize(float64(size))), "", func() error {
				for _, b := range g.missing {
					if err := c.Fetch(ctx, addrs[p.Mirror], p, b); err != nil {
						return err
					}
				}
				return nil
			})
			if g.err == nil {
				bytes += size
			}
		}
		switch {
		case g.err != nil:
			failed = append(failed, name)
			e.UI.Printf("  %s: could not fetch it through %s: %v", name, p.Mirror, g.err)
		case len(g.missing) == 0:
			already++
			e.UI.Printf("  %s: already cached by %s (%s)", name, p.Mirror, ui.Plural(len(g.blobs), "blob"))
		default:
			done++
			e.UI.Printf("  %s: fetched %d of %s into %s", name, len(g.missing), ui.Plural(len(g.blobs), "blob"), p.Mirror)
		}
	}
	sum := fmt.Sprintf("%s: %d fetched (%s), %d already cached", ui.Plural(len(pulls), "image"), done, units.BytesSize(float64(bytes)), already)
	if len(failed) > 0 {
		return session.Result{}, fmt.Errorf("%s, %d failed: %s; the lines above say why (a mirror's upstream that cannot be reached, a name or tag it does not have); `marina registry prefetch` again fetches only what is missing", sum, len(failed), strings.Join(failed, ", "))
	}
	return session.Said("%s.", sum), nil
}

func blobKey(repo, digest string) string { return repo + "@" + digest }

// cached is, per mirror, the blobs (blobKey) its cache holds whole: on
// the Mac, read there; in the VM, in one guest round trip for all.
func cached(ctx context.Context, s *session.Session, pulls []registry.Pull, got []fetched) (map[string]map[string]bool, error) {
	files := map[string][]string{} // mirror → files to look for
	keys := map[string]map[string][2]string{}
	for i, p := range pulls {
		if got[i].err != nil {
			continue
		}
		if keys[p.Mirror] == nil {
			keys[p.Mirror] = map[string][2]string{}
		}
		for _, b := range got[i].blobs {
			link, data, err := registry.BlobFiles(p.Repo, b.Digest)
			if err != nil {
				got[i].err = err
				break
			}
			keys[p.Mirror][blobKey(p.Repo, b.Digest)] = [2]string{link, data}
			files[p.Mirror] = append(files[p.Mirror], link, data)
		}
	}
	there := map[string]map[string]bool{} // mirror → file → there
	if s.Config.Registries.CacheStorage == config.CacheHost {
		cache := registry.HostCache{Root: s.Paths.RegistryCache()}
		for m, fs := range files {
			h, err := cache.Has(m, fs)
			if err != nil {
				return nil, err
			}
			there[m] = h
		}
	} else if len(files) > 0 {
		byDir := map[string][]string{}
		dirOf := map[string]string{}
		for m, fs := range files {
			d, err := registry.CacheDir(vm.GuestCacheDir, m)
			if err != nil {
				return nil, err
			}
			byDir[d], dirOf[m] = fs, d
		}
		script, err := guest.CachedFiles(byDir)
		if err != nil {
			return nil, err
		}
		res, err := s.Guest.Run(ctx, vm.Script{Name: "look for blobs in the mirror caches", Body: script, Root: true})
		if err != nil {
			return nil, err
		}
		found := guest.ParseCached(string(res.Stdout))
		for m, fs := range files {
			there[m] = map[string]bool{}
			for _, f := range fs {
				if found[dirOf[m]+"/"+f] {
					there[m][f] = true
				}
			}
		}
	}
	out := map[string]map[string]bool{}
	for m, ks := range keys {
		out[m] = map[string]bool{}
		for k, f := range ks {
			out[m][k] = there[m][f[0]] && there[m][f[1]]
		}
	}
	return out, nil
}
