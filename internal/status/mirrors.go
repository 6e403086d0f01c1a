package status

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
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
	var have []docker.Container
	if s.Running() {
		if have, err = s.Docker.ListLabeled(ctx, registry.LabelMirror); err != nil {
			return nil, err
		}
	}
	out := MirrorRows(s, have)
	plan, err := PlanSizes(s, out)
	if err != nil {
		return nil, err
	}
	var measured map[string]int64
	if s.Running() && plan.Script != "" {
		res, err := s.Guest.Run(ctx, vm.Script{Name: "measure the mirror caches", Body: plan.Script, Root: true})
		if err != nil {
			return nil, err
		}
		measured = guest.ParseSizes(string(res.Stdout))
	}
	plan.Fill(s, out, measured)
	ProxyCounters(ctx, out)
	return out, nil
}

// MirrorRows are registry list's rows before their caches are measured:
// every configured mirror, the push registry when it is on, and any stray
// mirror container, with the states of have (the VM's containers labelled
// as mirrors). The configured rows come first, in the config's order.
func MirrorRows(s *session.Session, have []docker.Container) []MirrorStatus {
	cfg, running := s.Config, s.Running()
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
	return out
}

// Sizes is how registry list's rows' caches are measured, and the Docker
// Hub mirror's share of node images: on the Mac for host storage; in the
// VM, by Script, for guest storage and for the push registry, whose
// images are always on the VM's disk. Planned from MirrorRows without
// containers, as the dashboard plans it before its observation, Script
// measures every configured folder and no stray's.
type Sizes struct {
	Script string
	dirs   map[string]int // a folder Script measures → its row
	host   []int          // the rows measured on the Mac
	folder map[int]string // each row's cache folder, as shown
}

// PlanSizes plans the measures of rows' caches.
func PlanSizes(s *session.Session, rows []MirrorStatus) (Sizes, error) {
	host := s.Config.Registries.CacheStorage == config.CacheHost
	hub, nodes := registry.HubMirror(s.Config.Registries.Mirrors), registry.NodeRepos(s.Config.Kind)
	z := Sizes{dirs: map[string]int{}, folder: map[int]string{}}
	dirs := z.dirs
	var list []string // measured in the VM
	var repos string  // the node images' measure, in the same round trip
	for i := range rows {
		if rows[i].Push {
			// The user's images, on the VM's disk whatever the caches do.
			z.folder[i] = registry.LocalData + " (in the VM)"
			dirs[registry.LocalData] = i
			list = append(list, registry.LocalData)
			continue
		}
		if host {
			dir, err := s.Paths.MirrorCache(rows[i].Name)
			if err != nil {
				continue
			}
			z.folder[i] = dir
			z.host = append(z.host, i)
			continue
		}
		dir, err := registry.CacheDir(vm.GuestCacheDir, rows[i].Name)
		if err != nil {
			continue
		}
		z.folder[i] = dir + " (in the VM)"
		dirs[dir] = i
		list = append(list, dir)
		if rows[i].Name == hub && rows[i].State != "stray" {
			dirs["repos:"+dir] = i
			if repos, err = guest.MeasureRepos(dir, nodes); err != nil {
				return z, err
			}
		}
	}
	if len(list) == 0 {
		return z, nil
	}
	script, err := guest.MeasureDirs(list)
	if err != nil {
		return z, err
	}
	z.Script = script + repos
	return z, nil
}

// Fill gives the rows their cache folders, measures those kept on the
// Mac, and takes measured (Script's output, read with guest.ParseSizes;
// nil when it did not run) for the others. rows are the planned ones, or
// MirrorRows of the same config (strays, which come last, aside).
func (z Sizes) Fill(s *session.Session, rows []MirrorStatus, measured map[string]int64) {
	cache := registry.HostCache{Root: s.Paths.RegistryCache()}
	hub, nodes := registry.HubMirror(s.Config.Registries.Mirrors), registry.NodeRepos(s.Config.Kind)
	for i, dir := range z.folder {
		if i < len(rows) {
			rows[i].CacheDir = dir
		}
	}
	for _, i := range z.host {
		if i >= len(rows) {
			continue
		}
		var err error
		if rows[i].CacheBytes, err = cache.Size(rows[i].Name); err != nil {
			// Shown unmeasured; the row stays, and the reason is said.
			rows[i].CacheBytes = -1
			s.UI.Warnf("%v", err)
		} else if rows[i].Name == hub && rows[i].State != "stray" {
			if rows[i].NodeImageBytes, err = cache.RepoBytes(hub, nodes); err != nil {
				s.UI.Warnf("the node images in %s's cache: %v", hub, err)
			}
		}
	}
	for dir, n := range measured {
		i, ok := z.dirs[dir]
		switch {
		case !ok || i >= len(rows):
		case strings.HasPrefix(dir, "repos:"):
			rows[i].NodeImageBytes = n
		default:
			rows[i].CacheBytes = n
		}
	}
}

// ProxyCounters asks each running mirror for its counters, at the same
// time.
func ProxyCounters(ctx context.Context, rows []MirrorStatus) {
	var wg sync.WaitGroup
	for i := range rows {
		if r := &rows[i]; r.State == "running" && r.IP != "" && !r.Push {
			wg.Go(func() { r.Blobs, r.Manifests = registry.ProxyCounters(ctx, r.IP) })
		}
	}
	wg.Wait()
}
