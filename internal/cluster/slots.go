package cluster

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/slot"
)

// Info is one cluster as Docker shows it.
type Info struct {
	Name  string
	Slot  int // 0 when no node publishes a marina API port
	Nodes []docker.Node
	// Listen is the VM address its API port is published on, as kind was
	// told at creation: "0.0.0.0" (every address: reached on lima0) or
	// "127.0.0.1" (reached on the Mac's loopback through Lima's port
	// mirroring). The node container keeps it for the cluster's life, so
	// it is the cluster's own record of its API address mode.
	Listen string
}

// Loopback reports whether the API server is published on the VM's
// loopback only: the Mac then reaches it on 127.0.0.1 as long as Lima
// mirrors the port, and never on lima0.
func (i Info) Loopback() bool {
	a, err := netip.ParseAddr(i.Listen)
	return err == nil && a.IsLoopback()
}

// APIRunning reports whether the control plane that publishes the
// cluster's API port runs: its API server can answer, and kind can export
// its kubeconfig, even with a worker stopped.
func (i Info) APIRunning() bool {
	if i.Slot == 0 {
		return false
	}
	for _, n := range i.Nodes {
		if n.State == "running" && slices.Contains(n.APIPorts, slot.APIPort(i.Slot)) {
			return true
		}
	}
	return false
}

// Running reports whether every node container runs.
func (i Info) Running() bool {
	for _, n := range i.Nodes {
		if n.State != "running" {
			return false
		}
	}
	return len(i.Nodes) > 0
}

// Group gathers node containers into clusters, sorted by name. A cluster's
// slot is the one its control plane's API port belongs to. A container
// whose cluster label is not a name marina could have given (anyone with
// the Docker socket can write labels) is left out: its name would reach
// paths and scripts.
func Group(nodes []docker.Node) []Info {
	by := map[string]*Info{}
	for _, n := range nodes {
		if CheckName(n.Cluster) != nil {
			continue
		}
		in := by[n.Cluster]
		if in == nil {
			in = &Info{Name: n.Cluster}
			by[n.Cluster] = in
		}
		in.Nodes = append(in.Nodes, n)
		for _, p := range n.APIPorts {
			if s := p - slot.APIPort(0); slot.Check(s) == nil && in.Slot == 0 {
				in.Slot = s
				in.Listen = n.APIHosts[p]
				if in.Listen == "" {
					in.Listen = "0.0.0.0"
				}
			}
		}
	}
	out := make([]Info, 0, len(by))
	for _, in := range by {
		sort.Slice(in.Nodes, func(i, j int) bool { return in.Nodes[i].Name < in.Nodes[j].Name })
		out = append(out, *in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Find returns the cluster named name.
func Find(cs []Info, name string) (Info, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return Info{}, false
}

// Names lists the clusters' names.
func Names(cs []Info) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// Reservations hold slots between choosing one and kind creating the node
// container that shows it, so that concurrent creates never pick the same
// slot. Each is a file <dir>/<slot> holding "<pid> <name>", written while
// the caller holds the slot lock; a reservation whose process is gone is
// ignored.
type Reservations struct{ Dir string }

// Reservation is one held slot.
type Reservation struct {
	Slot int
	Name string
	PID  int
	path string
}

// List returns the live reservations.
func (r Reservations) List() ([]Reservation, error) {
	ents, err := os.ReadDir(r.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read slot reservations: %w", err)
	}
	var out []Reservation
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p := filepath.Join(r.Dir, e.Name())
		b, err := fileutil.ReadRegular(p, 1<<10)
		if err != nil {
			continue
		}
		pidS, name, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		pid, err := strconv.Atoi(pidS)
		if err != nil || !alive(pid) {
			_ = os.Remove(p) // its process is gone
			continue
		}
		out = append(out, Reservation{Slot: n, Name: name, PID: pid, path: p})
	}
	return out, nil
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Take records slot n as held by this process for name.
func (r Reservations) Take(n int, name string) (Reservation, error) {
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return Reservation{}, fmt.Errorf("slot reservations: %w", err)
	}
	res := Reservation{Slot: n, Name: name, PID: os.Getpid(), path: filepath.Join(r.Dir, strconv.Itoa(n))}
	if err := fileutil.WriteAtomic(res.path, fmt.Appendf(nil, "%d %s\n", res.PID, name), 0o600); err != nil {
		return Reservation{}, fmt.Errorf("reserve slot %d: %w", n, err)
	}
	return res, nil
}

// Release gives the slot back.
func (res Reservation) Release() {
	if res.path != "" {
		_ = os.Remove(res.path)
	}
}

// Free is the lowest slot that no cluster and no reservation holds.
func Free(cs []Info, held []Reservation) (int, error) {
	used := map[int]bool{}
	for _, c := range cs {
		used[c.Slot] = true
	}
	for _, r := range held {
		used[r.Slot] = true
	}
	for n := slot.Min; n <= slot.Max; n++ {
		if !used[n] {
			return n, nil
		}
	}
	return 0, fmt.Errorf("all %d cluster slots are in use: delete a cluster first (marina cluster list shows them)", slot.Max)
}
