package machine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// CleanCacheOptions are the flags of marina registry clean-cache.
type CleanCacheOptions struct {
	DryRun bool
	Yes    bool // empty more than one cache without asking
}

// CleanCache empties the caches of the named mirrors (all when none is
// named). A running mirror is removed first and started again afterwards,
// empty — also when emptying failed, so that no mirror is left stopped.
// The push registry is no cache: only named (marina-registry) are its
// images deleted, after a confirmation.
func CleanCache(ctx context.Context, e *session.Env, names []string, opts CleanCacheOptions) (session.Result, error) {
	s, err := session.Open(ctx, e, session.Needs{Config: session.Strict})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	cfg := s.Config
	local := slices.Contains(names, registry.LocalName)
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == registry.LocalName })
	if len(names) == 0 && !local {
		for _, m := range cfg.Registries.Mirrors {
			names = append(names, m.Name)
		}
	}
	selected, err := registry.Select(cfg.Registries.Mirrors, names)
	if err != nil {
		return session.Result{}, err
	}
	if len(selected) == 0 && !local {
		return session.Planned(nil, "no mirrors are configured"), nil
	}
	onHost := cfg.Registries.CacheStorage == config.CacheHost
	if !s.Running() && (!onHost || local) {
		return session.Result{}, session.NotRunning(s.Name, s.Instance)
	}
	if local && !cfg.Registries.Local.Enabled {
		return session.Result{}, session.Usagef("the push registry is off (registries.local.enabled is false), so marina does not empty it; its images, if any, stay in %s in the VM", registry.LocalData)
	}
	dirs, steps, err := cacheDirs(s, selected)
	if err != nil {
		return session.Result{}, err
	}
	if local {
		steps = append(steps, session.Step{Do: fmt.Sprintf("delete every image of the push registry %s (%s in the VM)", registry.LocalHost(cfg.Registries.Local.Port), registry.LocalData), Reason: "its container is removed first and started again"})
	}
	if opts.DryRun {
		return session.Planned(steps, ""), nil
	}
	if (len(selected) > 1 || local) && !opts.Yes {
		what := fmt.Sprintf("Empty the caches of %d mirrors (%s)? Every image pulled through them is downloaded again.", len(selected), strings.Join(registryNames(selected), ", "))
		if local {
			what = fmt.Sprintf("Delete every image pushed to %s? No cache holds them: only pushing them again brings them back.", registry.LocalHost(cfg.Registries.Local.Port))
		}
		if !e.TTY {
			fix := "run it in a terminal, pass -y, or name one mirror"
			if local {
				fix = "run it in a terminal, or pass -y"
			}
			return session.Result{}, fmt.Errorf("marina registry clean-cache %s needs a confirmation: %s", strings.Join(stopped(selected, local), " "), fix)
		}
		if !ui.Confirm(e.Stdin, e.Stderr, what) {
			return session.Result{}, session.ErrCancelled
		}
	}
	return session.Result{}, emptyCaches(ctx, s, selected, dirs, local)
}

// cacheDirs are the folders to empty, each a plain child of the cache
// root, with the plan's steps.
func cacheDirs(s *session.Session, selected []config.Mirror) ([]string, []session.Step, error) {
	dirs := make([]string, len(selected))
	var steps []session.Step
	for i, m := range selected {
		var err error
		where := ""
		if s.Config.Registries.CacheStorage == config.CacheHost {
			dirs[i], err = s.Paths.MirrorCache(m.Name)
			where = dirs[i]
			if err == nil {
				// A folder the VM replaced is refused before any mirror stops.
				err = registry.HostCache{Root: s.Paths.RegistryCache()}.Check(m.Name)
			}
		} else {
			dirs[i], err = registry.CacheDir(vm.GuestCacheDir, m.Name)
			where = dirs[i] + " in the VM"
		}
		if err != nil {
			return nil, nil, err
		}
		st := session.Step{Do: "empty the cache of " + m.Name + " (" + where + ")"}
		if s.Running() {
			st.Reason = "its container is removed first and started again"
		}
		steps = append(steps, st)
	}
	return dirs, steps, nil
}

// emptyCaches stops the selected mirrors that run, empties dirs, and
// starts the mirrors again whatever emptying did.
func emptyCaches(ctx context.Context, s *session.Session, selected []config.Mirror, dirs []string, local bool) error {
	e := s.Env
	// A running mirror holds its files: it goes first and comes back after.
	var start mirrorPlan
	if s.Running() {
		have, err := s.Docker.ListLabeled(ctx, registry.LabelMirror)
		if err != nil {
			return err
		}
		sub := s.Config.Registries
		sub.Mirrors = selected
		sub.Local.Enabled = local // not a cache: only ever emptied when named
		if start.create, err = session.MirrorSpecs(e.Paths, sub); err != nil {
			return err
		}
		want := map[string]bool{registry.LocalName: local}
		for _, m := range selected {
			want[m.Name] = true
		}
		var stop mirrorPlan
		for _, c := range have {
			if want[c.Labels[registry.LabelMirror]] {
				stop.remove = append(stop.remove, c)
			}
		}
		e.SetLeftover(fmt.Sprintf("the mirrors %s may be stopped: `marina up` starts them again", strings.Join(stopped(selected, local), ", ")))
		if err := applyMirrors(ctx, s.Docker, stop); err != nil {
			return err
		}
	}
	what := ui.Plural(len(selected), "mirror cache")
	switch {
	case local && len(selected) == 0:
		what = "the push registry"
	case local:
		what += " and the push registry"
	}
	emptied := e.Step("Emptying "+what, "", func() error {
		if s.Config.Registries.CacheStorage == config.CacheHost {
			cache := registry.HostCache{Root: s.Paths.RegistryCache()}
			for _, m := range selected {
				if err := cache.Empty(m.Name); err != nil {
					return err
				}
			}
			dirs = nil // only the push registry's, in the VM
		}
		if local {
			dirs = append(dirs, registry.LocalData)
		}
		if len(dirs) == 0 {
			return nil
		}
		script, err := guest.EmptyDirs(dirs)
		if err != nil {
			return err
		}
		_, err = s.Guest.Run(ctx, vm.Script{Name: "empty the mirror caches", Body: script, Root: true})
		return err
	})
	if !s.Running() {
		return emptied
	}
	started := e.Step("Starting the mirrors again", "", func() error { return applyMirrors(ctx, s.Docker, start) })
	if started == nil {
		e.SetLeftover("")
	}
	return errors.Join(emptied, started)
}

// stopped are the names of the containers clean-cache stops.
func stopped(selected []config.Mirror, local bool) []string {
	names := registryNames(selected)
	if local {
		names = append(names, registry.LocalName)
	}
	return names
}

func registryNames(ms []config.Mirror) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}
