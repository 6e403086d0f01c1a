package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/run"
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
	Blobs     *ProxyCounters `json:"blobs,omitempty"`
	Manifests *ProxyCounters `json:"manifests,omitempty"`
}

// ProxyCounters are distribution's proxy metrics (its /debug/vars).
type ProxyCounters struct {
	Requests uint64 `json:"requests"`
	Hits     uint64 `json:"hits"`
	Misses   uint64 `json:"misses"`
}

// ListMirrors reports every configured mirror and any stray mirror
// container.
func ListMirrors(ctx context.Context, e *Env) ([]MirrorStatus, error) {
	cfg, l, in, err := e.strictVM(ctx)
	if err != nil {
		return nil, err
	}
	running := in != nil && in.Status == vm.StatusRunning
	var have []docker.Container
	if running {
		dc, err := docker.Dial(e.socket(cfg.VM.Name))
		if err != nil {
			return nil, err
		}
		defer dc.Close()
		if have, err = dc.ListLabeled(ctx, registry.LabelMirror); err != nil {
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
	for name, c := range byName {
		// A label anyone with the Docker socket could have written: shown,
		// never used to build a path.
		if config.CheckMirrorName(name) != nil {
			name = fmt.Sprintf("%q (container %s)", name, c.Name)
		}
		out = append(out, MirrorStatus{Name: name, State: "stray", IP: c.IP, CacheBytes: -1})
	}
	if err := cacheSizes(ctx, e, l, cfg, running, out); err != nil {
		return nil, err
	}
	proxyCounters(ctx, out)
	return out, nil
}

// cacheSizes fills each row's cache folder and its size: read on the Mac
// for host storage, with one guest round trip for guest storage.
func cacheSizes(ctx context.Context, e *Env, l *vm.Limactl, cfg config.Config, running bool, rows []MirrorStatus) error {
	if cfg.Registries.CacheStorage == config.CacheHost {
		for i := range rows {
			if dir, err := e.Paths.MirrorCache(rows[i].Name); err == nil {
				rows[i].CacheDir, rows[i].CacheBytes = dir, dirSize(dir)
			}
		}
		return nil
	}
	dirs := map[string]int{}
	var b strings.Builder
	for i := range rows {
		dir, err := registry.CacheDir(vm.GuestCacheDir, rows[i].Name)
		if err != nil {
			continue
		}
		rows[i].CacheDir = dir + " (in the VM)"
		dirs[dir] = i
		fmt.Fprintf(&b, "du -sb %s 2>/dev/null || true\n", run.ShellQuote(dir))
	}
	if !running || len(dirs) == 0 {
		return nil
	}
	res, err := e.Guest(l, cfg.VM.Name).Run(ctx, vm.Script{Name: "measure the mirror caches", Body: b.String(), Root: true})
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		size, dir, ok := strings.Cut(line, "\t")
		i, known := dirs[dir]
		if n, err := strconv.ParseInt(size, 10, 64); ok && known && err == nil {
			rows[i].CacheBytes = n
		}
	}
	return nil
}

// dirSize is the bytes of regular files under dir; -1 when dir is missing.
func dirSize(dir string) int64 {
	if _, err := os.Stat(dir); err != nil {
		return -1
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// proxyCounters asks each running mirror for its counters, at its address
// on the kind network: the same route that carries the Mac's traffic to
// LoadBalancer addresses.
func proxyCounters(ctx context.Context, rows []MirrorStatus) {
	client := &http.Client{Timeout: 2 * time.Second}
	var wg sync.WaitGroup
	for i := range rows {
		if rows[i].State != "running" || rows[i].IP == "" {
			continue
		}
		wg.Add(1)
		go func(r *MirrorStatus) {
			defer wg.Done()
			u := "http://" + net.JoinHostPort(r.IP, strconv.Itoa(registry.DebugPort)) + "/debug/vars"
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var v struct {
				Registry struct {
					Proxy struct {
						Blobs, Manifests *ProxyCounters
					} `json:"proxy"`
				} `json:"registry"`
			}
			if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v) == nil {
				r.Blobs, r.Manifests = v.Registry.Proxy.Blobs, v.Registry.Proxy.Manifests
			}
		}(&rows[i])
	}
	wg.Wait()
}

// PrintMirrors writes the text table.
func PrintMirrors(w io.Writer, rows []MirrorStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tUPSTREAM\tPORT\tSTATE\tCACHE\tBLOB HITS/MISSES\tMANIFEST HITS/MISSES")
	for _, r := range rows {
		size := "-"
		if r.CacheBytes >= 0 {
			size = units.BytesSize(float64(r.CacheBytes))
		}
		port := "-"
		if r.Port > 0 {
			port = strconv.Itoa(r.Port)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, orDash(r.Upstream), port, r.State, size, counters(r.Blobs), counters(r.Manifests))
	}
	tw.Flush()
}

func counters(c *ProxyCounters) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", c.Hits, c.Misses)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// CleanCacheOptions are the flags of marina registry clean-cache.
type CleanCacheOptions struct {
	DryRun bool
	Yes    bool // empty more than one cache without asking
}

// CleanCache empties the caches of the named mirrors (all when none is
// named). A running mirror is removed first and started again afterwards,
// empty.
func CleanCache(ctx context.Context, e *Env, names []string, opts CleanCacheOptions) error {
	cfg, l, in, err := e.strictVM(ctx)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		for _, m := range cfg.Registries.Mirrors {
			names = append(names, m.Name)
		}
	}
	selected, err := registry.Select(cfg.Registries.Mirrors, names)
	if err != nil {
		return err
	}
	if len(selected) == 0 {
		fmt.Fprintln(e.Stdout, "No changes: no mirrors are configured.")
		return nil
	}
	running := in != nil && in.Status == vm.StatusRunning
	host := cfg.Registries.CacheStorage == config.CacheHost
	if !running && !host {
		return notRunning(cfg.VM.Name, in)
	}
	// Every folder to empty, each a plain child of the cache root.
	dirs := make([]string, len(selected))
	var steps []Step
	for i, m := range selected {
		where := ""
		if host {
			dirs[i], err = e.Paths.MirrorCache(m.Name)
			where = dirs[i]
		} else {
			dirs[i], err = registry.CacheDir(vm.GuestCacheDir, m.Name)
			where = dirs[i] + " in the VM"
		}
		if err != nil {
			return err
		}
		s := Step{Do: "empty the cache of " + m.Name + " (" + where + ")"}
		if running {
			s.Reason = "its container is removed first and started again"
		}
		steps = append(steps, s)
	}
	if opts.DryRun {
		printPlan(e, steps, "")
		return nil
	}
	if len(selected) > 1 && !opts.Yes {
		what := fmt.Sprintf("Empty the caches of %d mirrors (%s)? Every image pulled through them is downloaded again.", len(selected), strings.Join(registryNames(selected), ", "))
		if !e.TTY {
			return fmt.Errorf("marina registry clean-cache empties %d caches and needs a confirmation: run it in a terminal, pass -y, or name one mirror", len(selected))
		}
		if !ui.Confirm(e.Stdin, e.Stderr, what) {
			return errors.New("nothing was emptied")
		}
	}
	// A running mirror holds its files: it goes first and comes back after.
	var dc *docker.Client
	var stop, start mirrorPlan
	if running {
		if dc, err = docker.Dial(e.socket(cfg.VM.Name)); err != nil {
			return err
		}
		defer dc.Close()
		have, err := dc.ListLabeled(ctx, registry.LabelMirror)
		if err != nil {
			return err
		}
		sub := cfg
		sub.Registries.Mirrors = selected
		if start.create, err = mirrorSpecs(e, sub, false); err != nil {
			return err
		}
		want := map[string]bool{}
		for _, m := range selected {
			want[m.Name] = true
		}
		for _, c := range have {
			if want[c.Labels[registry.LabelMirror]] {
				stop.remove = append(stop.remove, c)
			}
		}
		if err := applyMirrors(ctx, dc, stop); err != nil {
			return err
		}
		e.SetLeftover(fmt.Sprintf("the mirrors %s may be stopped: `marina up` starts them again", strings.Join(registryNames(selected), ", ")))
	}
	err = e.step(fmt.Sprintf("Emptying %s", plural(len(selected), "mirror cache")), "", func() error {
		if host {
			for _, d := range dirs {
				if err := emptyDir(d); err != nil {
					return err
				}
			}
			return nil
		}
		b := guest.NewBatch()
		for _, d := range dirs {
			q := run.ShellQuote(d)
			b.Sh("rm -rf " + q + " && mkdir -p " + q)
		}
		_, err := e.Guest(l, cfg.VM.Name).Run(ctx, vm.Script{Name: "empty the mirror caches", Body: b.Script(), Root: true})
		return err
	})
	if err != nil || !running {
		return err
	}
	err = e.step("Starting the mirrors again", "", func() error { return applyMirrors(ctx, dc, start) })
	if err == nil {
		e.SetLeftover("")
	}
	return err
}

func registryNames(ms []config.Mirror) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// emptyDir removes what dir holds and keeps dir.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("empty %s: %w", dir, err)
	}
	for _, ent := range ents {
		if err := os.RemoveAll(filepath.Join(dir, ent.Name())); err != nil {
			return fmt.Errorf("empty %s: %w (files written by the VM may need `sudo rm -rf`)", dir, err)
		}
	}
	return nil
}
