// Package image brings a user's own images into clusters: from the VM's
// Docker (where builds through marina docker-env land), or from an
// archive on the Mac, into the containerd of every node.
package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// LoadOptions are the flags of marina image load.
type LoadOptions struct {
	Images   []string
	Clusters []string
	Selector string
	All      bool
	Archive  string
	DryRun   bool
}

// Normalize is ref as containerd names it (docker.io/library/app:latest
// for app), or why it is not an image name.
func Normalize(ref string) (string, error) {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", session.Usagef("%q is not an image name: %v (write it as Docker does, like app:dev or ghcr.io/me/app:1.2)", ref, err)
	}
	return reference.TagNameOnly(n).String(), nil
}

// familiar is ref as Docker prints it (app:dev).
func familiar(ref string) string {
	if n, err := reference.ParseNormalizedNamed(ref); err == nil {
		return reference.FamiliarString(n)
	}
	return ref
}

// Load loads images into every node of the chosen clusters: one guest
// round trip per cluster. Every name and cluster is checked, and every
// image found in Docker, before any node is touched.
func Load(ctx context.Context, e *session.Env, o LoadOptions) (session.Result, error) {
	if len(o.Images) == 0 && o.Archive == "" {
		return session.Result{}, session.Usagef("name the images to load (they are in the VM's Docker: `docker images` after `eval \"$(marina docker-env)\"` lists them), or give --archive FILE")
	}
	chosen := 0
	for _, on := range []bool{len(o.Clusters) > 0, o.Selector != "", o.All} {
		if on {
			chosen++
		}
	}
	if chosen > 1 {
		return session.Result{}, session.Usagef("choose the clusters one way: --cluster NAME, -l SELECTOR or --all")
	}
	for _, n := range o.Clusters {
		if err := cluster.CheckName(n); err != nil {
			return session.Result{}, err
		}
	}
	refs := make([]string, len(o.Images))
	for i, im := range o.Images {
		var err error
		if refs[i], err = Normalize(im); err != nil {
			return session.Result{}, err
		}
	}
	sel, err := session.ParseSelector(o.Selector)
	if err != nil {
		return session.Result{}, err
	}
	var archive *os.File
	if o.Archive != "" {
		if archive, err = openArchive(o.Archive); err != nil {
			return session.Result{}, err
		}
		defer archive.Close()
	}
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly, Running: true, Clusters: true})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	targets, err := choose(ctx, s, o, sel)
	if err != nil {
		return session.Result{}, err
	}
	if o.DryRun {
		what := strings.Join(ui.OrNone(names(o.Images)), ", ")
		var steps []session.Step
		if o.Archive != "" {
			steps = append(steps, session.Step{Do: "load " + o.Archive + " into the VM's Docker"})
			if len(o.Images) == 0 {
				what = "its images"
			}
		}
		for _, c := range targets {
			steps = append(steps, session.Step{Do: fmt.Sprintf("load %s into the %s of %s, skipping a node that holds the same digest", what, ui.Plural(len(c.Nodes), "node"), c.Name)})
		}
		return session.Planned(steps, ""), nil
	}
	if archive != nil {
		var loaded []string
		err := e.Step("Loading "+o.Archive+" into the VM's Docker", "", func() error {
			var err error
			loaded, err = s.Docker.LoadArchive(ctx, archive)
			return err
		})
		if err != nil {
			return session.Result{}, err
		}
		if refs, err = fromArchive(refs, loaded, o.Archive); err != nil {
			return session.Result{}, err
		}
	}
	imgs, err := inDocker(ctx, s, refs)
	if err != nil {
		return session.Result{}, err
	}
	return loadAll(ctx, s, targets, imgs)
}

func names(images []string) []string {
	out := make([]string, len(images))
	for i, im := range images {
		out[i] = familiar(im)
	}
	return out
}

// openArchive opens an archive on the Mac: a regular file, read as the
// user can.
func openArchive(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--archive: %w", err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("--archive %s is not a file: give the tar that `docker save -o FILE IMAGE…` writes", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fromArchive is the images a load from an archive brings: the ones named
// (each must be in it), or all it held.
func fromArchive(refs, loaded []string, archive string) ([]string, error) {
	var held []string
	for _, l := range loaded {
		if strings.HasPrefix(l, "sha256:") {
			continue // no name: nothing a pod could ask for
		}
		r, err := Normalize(l)
		if err != nil {
			return nil, fmt.Errorf("%s holds %q: %w", archive, l, err)
		}
		held = append(held, r)
	}
	if len(refs) == 0 {
		if len(held) == 0 {
			return nil, fmt.Errorf("%s holds no named image: `docker save -o FILE NAME:TAG` keeps the names", archive)
		}
		return ui.Dedupe(held), nil
	}
	for _, r := range refs {
		if !slices.Contains(held, r) {
			return nil, fmt.Errorf("%s does not hold %s (it holds %s); it was loaded into the VM's Docker, no cluster was changed", archive, familiar(r), strings.Join(ui.OrNone(names(held)), ", "))
		}
	}
	return refs, nil
}

// inDocker finds every image in the VM's Docker, or says which are not
// there and how to put them there.
func inDocker(ctx context.Context, s *session.Session, refs []string) ([]guest.Image, error) {
	imgs := make([]guest.Image, 0, len(refs))
	var missing []string
	for _, r := range ui.Dedupe(refs) {
		id, err := s.Docker.ImageID(ctx, r)
		if err != nil {
			return nil, err
		}
		if id == "" {
			missing = append(missing, familiar(r))
			continue
		}
		imgs = append(imgs, guest.Image{Ref: r, ID: id})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the VM's Docker has no image %s: build or pull it there first (`eval \"$(marina docker-env)\"` points docker at it), or give --archive FILE; no cluster was changed", strings.Join(missing, ", "))
	}
	return imgs, nil
}

// choose is the running clusters the options name, select or imply (the
// only cluster there is).
func choose(ctx context.Context, s *session.Session, o LoadOptions, sel labels.Selector) ([]cluster.Info, error) {
	var out []cluster.Info
	switch {
	case len(o.Clusters) > 0:
		for _, n := range ui.Dedupe(o.Clusters) {
			c, ok := cluster.Find(s.Clusters, n)
			if !ok {
				return nil, fmt.Errorf("there is no cluster %s (clusters: %s)", n, strings.Join(ui.OrNone(cluster.Names(s.Clusters)), ", "))
			}
			out = append(out, c)
		}
	case o.Selector != "":
		rows, err := kindcluster.Rows(ctx, s, sel, o.Selector)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			c, _ := cluster.Find(s.Clusters, r.Name)
			out = append(out, c)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no running cluster's nodes match -l %s (`marina cluster list -o yaml` shows every cluster's labels)", o.Selector)
		}
	case o.All:
		out = s.Clusters
		if len(out) == 0 {
			return nil, errors.New("there are no clusters to load into: `marina cluster create NAME` makes one")
		}
	default:
		if len(s.Clusters) != 1 {
			return nil, session.Usagef("say which clusters to load into: --cluster NAME, -l SELECTOR or --all (clusters: %s)", strings.Join(ui.OrNone(cluster.Names(s.Clusters)), ", "))
		}
		out = s.Clusters
	}
	for _, c := range out {
		if !c.Running() {
			return nil, fmt.Errorf("cluster %s is stopped: its nodes cannot take an image until it runs; nothing was loaded", c.Name)
		}
	}
	return out, nil
}

// loadAll loads imgs into each cluster in turn, one round trip each, and
// says per node what it did.
func loadAll(ctx context.Context, s *session.Session, targets []cluster.Info, imgs []guest.Image) (session.Result, error) {
	e := s.Env
	what := strings.Join(names(refsOf(imgs)), ", ")
	var loaded, skipped, nodes int
	var failed []string
	for _, c := range targets {
		var nodeNames []string
		for _, n := range c.Nodes {
			nodeNames = append(nodeNames, n.Name)
		}
		slices.Sort(nodeNames)
		script, err := guest.ImageLoad(nodeNames, imgs)
		if err != nil {
			return session.Result{}, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		var rs []guest.ImageResult
		err = e.Step(fmt.Sprintf("Loading %s into %s (%s)", what, c.Name, ui.Plural(len(nodeNames), "node")), "", func() error {
			out, err := s.Guest.Run(ctx, vm.Script{Name: "load images into " + c.Name, Body: script, Root: true})
			if err != nil {
				return err
			}
			rs, err = guest.ParseImageLoad(string(out.Stdout), len(imgs))
			return err
		})
		if err != nil {
			return session.Result{}, err
		}
		nodes += len(nodeNames)
		for _, r := range rs {
			name := familiar(imgs[r.Image].Ref)
			switch r.Did {
			case "loaded":
				loaded++
				e.UI.Printf("  %s: loaded %s", r.Node, name)
			case "skipped":
				skipped++
				e.UI.Printf("  %s: skipped %s (already there, same digest)", r.Node, name)
			default:
				failed = append(failed, r.Node+" ("+name+")")
				e.UI.Printf("  %s: could not load %s: %s", r.Node, name, r.Why)
			}
		}
	}
	sum := fmt.Sprintf("%s into %s of %s: %d loaded, %d skipped (already there)", ui.Plural(len(imgs), "image"), ui.Plural(nodes, "node"), ui.Plural(len(targets), "cluster"), loaded, skipped)
	if len(failed) > 0 {
		return session.Result{}, fmt.Errorf("%s, %d failed: %s; the lines above say why (`marina image load` again retries only what is missing)", sum, len(failed), strings.Join(failed, ", "))
	}
	return session.Said("%s.", sum), nil
}

func refsOf(imgs []guest.Image) []string {
	out := make([]string, len(imgs))
	for i, im := range imgs {
		out[i] = im.Ref
	}
	return out
}
