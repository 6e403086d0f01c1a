package machine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// MirrorStatus is one row of marina registry list; its JSON is a contract.
type MirrorStatus struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	Port     int    `json:"port"`
	// State is the container's (running, exited, …), "missing" when there
	// is none, or "stray" for a mirror container no longer in the config.
	State string `json:"state"`
	IP    string `json:"ip,omitempty"`
	// CacheBytes is the cache's size on disk; -1 when it could not be read.
	CacheBytes int64  `json:"cacheBytes"`
	CacheDir   string `json:"cacheDir"`
	// Blobs and Manifests are the proxy's counters, when it answered.
	Blobs     *registry.Counters `json:"blobs,omitempty"`
	Manifests *registry.Counters `json:"manifests,omitempty"`
	// NodeImageBytes is how much of the cache is kind node images, on the
	// Docker Hub mirror the VM's Docker pulls them through (0 elsewhere,
	// and when it could not be read).
	NodeImageBytes int64 `json:"nodeImageBytes,omitempty"`
	// Push marks the push registry (registries.local): Host is its name,
	// Port the port it is published on; it has no upstream.
	Push bool   `json:"push,omitempty"`
	Host string `json:"host,omitempty"`
}

// Source is where a row's images come from, as list shows it: the
// upstream, or the push registry's name.
func (m MirrorStatus) Source() string {
	if m.Push {
		return "(push registry " + m.Host + ")"
	}
	return m.Upstream
}

// Cells are m's row of the text table: name, source, port, state, cache
// size, blob and manifest hits/misses.
func (m MirrorStatus) Cells() []string {
	cells := []string{m.Name, cmp.Or(m.Source(), "-"), "-", m.State, "-", m.Blobs.String(), m.Manifests.String()}
	if m.Port > 0 {
		cells[2] = strconv.Itoa(m.Port)
	}
	if m.CacheBytes >= 0 {
		cells[4] = units.BytesSize(float64(m.CacheBytes))
		if m.NodeImageBytes > 0 {
			cells[4] += " (node images " + units.BytesSize(float64(m.NodeImageBytes)) + ")"
		}
	}
	return cells
}

// ListMirrors reports every configured mirror and any stray mirror
// container.
func ListMirrors(ctx context.Context, e *session.Env) ([]MirrorStatus, error) {
	s, err := session.Open(ctx, e, session.Needs{Config: session.StrictOrDefault})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cfg, running := s.Config, s.Running()
	var have []docker.Container
	if running {
		if have, err = s.Docker.ListLabeled(ctx, registry.LabelMirror); err != nil {
			return nil, err
		}
	}
	byName := map[string]docker.Container{}
	for _, c := range have {
		byName[c.Labels[registry.LabelMirror]] = c
	}
	var out []MirrorStatus
	for _, m := range cfg.Registries.Mirrors {
		s := MirrorStatus{Name: m.Name, Upstream: m.RemoteURL, Port: m.Port, State: "missing", CacheBytes: -1}
		if !running {
			s.State = "VM not running"
		}
		if c, ok := byName[m.Name]; ok {
			s.State, s.IP = c.State, c.IP
			delete(byName, m.Name)
		}
		out = append(out, s)
	}
	if l := cfg.Registries.Local; l.Enabled {
		s := MirrorStatus{Name: registry.LocalName, Port: l.Port, State: "missing", CacheBytes: -1, Push: true, Host: registry.LocalHost(l.Port)}
		if !running {
			s.State = "VM not running"
		}
		if c, ok := byName[registry.LocalName]; ok {
			s.State, s.IP = c.State, c.IP
			delete(byName, registry.LocalName)
		}
		out = append(out, s)
	}
	for name, c := range byName {
		// A label anyone with the Docker socket could have written: shown,
		// never used to build a path.
		if config.CheckMirrorName(name) != nil {
			name = fmt.Sprintf("%q (container %s)", name, c.Name)
		}
		out = append(out, MirrorStatus{Name: name, State: "stray", IP: c.IP, CacheBytes: -1})
	}
	if err := cacheSizes(ctx, s, out); err != nil {
		return nil, err
	}
	proxyCounters(ctx, out)
	return out, nil
}

// cacheSizes fills each row's cache folder and its size, and the Docker
// Hub mirror's share of node images: read on the Mac for host storage; in
// one guest round trip for guest storage and for the push registry, whose
// images are always on the VM's disk.
func cacheSizes(ctx context.Context, s *session.Session, rows []MirrorStatus) error {
	host := s.Config.Registries.CacheStorage == config.CacheHost
	cache := registry.HostCache{Root: s.Paths.RegistryCache()}
	hub, nodes := registry.HubMirror(s.Config.Registries.Mirrors), registry.NodeRepos(s.Config.Kind)
	dirs := map[string]int{}
	var list []string // measured in the VM
	var repos string  // the node images' measure, in the same round trip
	for i := range rows {
		if rows[i].Push {
			// The user's images, on the VM's disk whatever the caches do.
			rows[i].CacheDir = registry.LocalData + " (in the VM)"
			dirs[registry.LocalData] = i
			list = append(list, registry.LocalData)
			continue
		}
		if host {
			dir, err := s.Paths.MirrorCache(rows[i].Name)
			if err != nil {
				continue
			}
			rows[i].CacheDir = dir
			if rows[i].CacheBytes, err = cache.Size(rows[i].Name); err != nil {
				// Shown unmeasured; the row stays, and the reason is said.
				rows[i].CacheBytes = -1
				s.UI.Warnf("%v", err)
			} else if rows[i].Name == hub && rows[i].State != "stray" {
				if rows[i].NodeImageBytes, err = cache.RepoBytes(hub, nodes); err != nil {
					s.UI.Warnf("the node images in %s's cache: %v", hub, err)
				}
			}
			continue
		}
		dir, err := registry.CacheDir(vm.GuestCacheDir, rows[i].Name)
		if err != nil {
			continue
		}
		rows[i].CacheDir = dir + " (in the VM)"
		dirs[dir] = i
		list = append(list, dir)
		if rows[i].Name == hub && rows[i].State != "stray" {
			dirs["repos:"+dir] = i
			if repos, err = guest.MeasureRepos(dir, nodes); err != nil {
				return err
			}
		}
	}
	if !s.Running() || len(list) == 0 {
		return nil
	}
	script, err := guest.MeasureDirs(list)
	if err != nil {
		return err
	}
	script += repos
	res, err := s.Guest.Run(ctx, vm.Script{Name: "measure the mirror caches", Body: script, Root: true})
	if err != nil {
		return err
	}
	for dir, n := range guest.ParseSizes(string(res.Stdout)) {
		i, ok := dirs[dir]
		switch {
		case !ok:
		case strings.HasPrefix(dir, "repos:"):
			rows[i].NodeImageBytes = n
		default:
			rows[i].CacheBytes = n
		}
	}
	return nil
}

// proxyCounters asks each running mirror for its counters, at the same
// time.
func proxyCounters(ctx context.Context, rows []MirrorStatus) {
	var wg sync.WaitGroup
	for i := range rows {
		if r := &rows[i]; r.State == "running" && r.IP != "" && !r.Push {
			wg.Go(func() { r.Blobs, r.Manifests = registry.ProxyCounters(ctx, r.IP) })
		}
	}
	wg.Wait()
}

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
