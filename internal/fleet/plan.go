package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/slot"
)

// Action is what applying a fleet does to one of its clusters.
type Action string

const (
	Create Action = "create"
	Skip   Action = "skip"  // exists as the manifest says
	Adopt  Action = "adopt" // exists without this fleet's label (--adopt)
	Label  Action = "label" // exists in the fleet, its labels differ
)

// Live is a cluster that exists, as the plan sees it.
type Live struct {
	Name string
	Slot int
	// Labels are its control-plane node's labels; nil when they could
	// not be read (the cluster is stopped).
	Labels map[string]string
}

// Held is a slot another marina holds for a cluster it is creating.
type Held struct {
	Slot int
	Name string
	PID  int
}

// Row is one cluster of the plan.
type Row struct {
	Member
	Slot   int
	Action Action
	// Set are the labels an adopt or label action sets.
	Set cluster.Labels
	// Notes say what the plan found but does not change.
	Notes []string
}

// Plan gives every member a slot and an action. Existing clusters keep
// their slots; the others take their pinned num, or the lowest slot no
// cluster, no other marina and no pinned member holds, in manifest order.
// It fails when a pinned num is another cluster's.
func Plan(f Fleet, live []Live, held []Held, adopt bool) ([]Row, error) {
	byName := map[string]Live{}
	used := map[int]string{}
	for _, l := range live {
		byName[l.Name] = l
		if l.Slot > 0 {
			used[l.Slot] = "cluster " + l.Name
		}
	}
	for _, h := range held {
		used[h.Slot] = fmt.Sprintf("cluster %s, which another marina (process %d) is creating", h.Name, h.PID)
	}
	var errs []string
	for _, m := range f.Members {
		if _, exists := byName[m.Name]; exists || m.Num == 0 {
			continue
		}
		if who, ok := used[m.Num]; ok {
			errs = append(errs, fmt.Sprintf("cluster %s: num %d is taken by %s: choose another num, or leave num out", m.Name, m.Num, who))
			continue
		}
		for _, h := range held {
			if h.Name == m.Name {
				errs = append(errs, fmt.Sprintf("cluster %s is being created by another marina (process %d): wait for it to finish, or stop it", m.Name, h.PID))
			}
		}
		used[m.Num] = "cluster " + m.Name
	}
	rows := make([]Row, 0, len(f.Members))
	for _, m := range f.Members {
		r := Row{Member: m}
		l, exists := byName[m.Name]
		switch {
		case exists:
			r.Slot = l.Slot
			r.Action, r.Set, r.Notes = existing(f, m, l, adopt)
		case m.Num > 0:
			r.Slot, r.Action = m.Num, Create
		default:
			if held := heldBy(held, m.Name); held != nil {
				errs = append(errs, fmt.Sprintf("cluster %s is being created by another marina (process %d): wait for it to finish, or stop it", m.Name, held.PID))
				continue
			}
			n := 0
			for s := slot.Min; s <= slot.Max; s++ {
				if _, ok := used[s]; !ok {
					n = s
					break
				}
			}
			if n == 0 {
				errs = append(errs, fmt.Sprintf("cluster %s: all %d slots are taken: delete a cluster first", m.Name, slot.Max))
				continue
			}
			used[n] = "cluster " + m.Name
			r.Slot, r.Action = n, Create
		}
		rows = append(rows, r)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("the fleet cannot be placed, and nothing was changed:\n  %s", strings.Join(errs, "\n  "))
	}
	return rows, nil
}

func heldBy(held []Held, name string) *Held {
	for i := range held {
		if held[i].Name == name {
			return &held[i]
		}
	}
	return nil
}

// existing decides what applying m does to l, the cluster of its name.
func existing(f Fleet, m Member, l Live, adopt bool) (Action, cluster.Labels, []string) {
	var notes []string
	if m.Num > 0 && m.Num != l.Slot {
		notes = append(notes, fmt.Sprintf("num %d is not applied: the cluster exists in slot %d (delete it and apply again to move it)", m.Num, l.Slot))
	}
	if l.Labels == nil {
		return Skip, nil, append(notes, "its labels could not be read (is it running?): not compared")
	}
	if other := l.Labels[cluster.FleetLabel]; f.Name == "" && other != "" {
		// An unnamed fleet has no label of its own to claim it by.
		return Skip, nil, append(notes, "it is in fleet "+other+": left as it is (name this fleet "+other+" to manage it)")
	}
	for _, tz := range []struct{ key, want string }{{cluster.RegionLabel, m.Region}, {cluster.ZoneLabel, m.Zone}} {
		if tz.want != "" && l.Labels[tz.key] != tz.want {
			notes = append(notes, fmt.Sprintf("%s is %q, not %q: the topology of a cluster is set at creation", tz.key, l.Labels[tz.key], tz.want))
		}
	}
	want := cluster.Labels{}
	maps.Copy(want, m.Labels)
	if f.Name != "" {
		want[cluster.FleetLabel] = f.Name
	}
	set := cluster.Labels{}
	for k, v := range want {
		if have, ok := l.Labels[k]; !ok || have != v {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return Skip, nil, notes
	}
	if f.Name != "" && l.Labels[cluster.FleetLabel] != f.Name {
		if !adopt {
			what := "without a fleet label"
			if other := l.Labels[cluster.FleetLabel]; other != "" {
				what = "in fleet " + other
			}
			return Skip, nil, append(notes, fmt.Sprintf("exists %s: it is left as it is (--adopt makes it this fleet's)", what))
		}
		if other := l.Labels[cluster.FleetLabel]; other != "" {
			notes = append(notes, "it leaves fleet "+other)
		}
		return Adopt, set, notes
	}
	return Label, set, notes
}

// Options is the OPTIONS column of a row: what differs from a plain
// cluster create.
func (r Row) Options() string {
	var o []string
	if r.NodeVersion != "" {
		o = append(o, "node="+r.NodeVersion)
	}
	switch {
	case r.Mirrors == nil:
		o = append(o, "mirrors=all")
	case len(r.Mirrors) == 0:
		o = append(o, "mirrors=none")
	default:
		o = append(o, "mirrors="+strings.Join(r.Mirrors, "+"))
	}
	if r.Workers > 0 {
		o = append(o, fmt.Sprintf("workers=%d", r.Workers))
	}
	if r.CNI == cluster.CNINone {
		o = append(o, "cni=none")
	}
	if r.Region != "" {
		o = append(o, "region="+r.Region)
	}
	if r.Zone != "" {
		o = append(o, "zone="+r.Zone)
	}
	if len(r.Set) > 0 {
		o = append(o, "set "+labelString(r.Set))
	} else if len(r.Labels) > 0 && r.Action == Create {
		o = append(o, "labels "+labelString(r.Labels))
	}
	if r.MetricsServer != nil {
		ms := "metrics-server " + r.MetricsServer.Version
		if r.MetricsServer.InsecureTLS {
			ms += " (--kubelet-insecure-tls)"
		}
		o = append(o, ms)
	}
	return strings.Join(o, ", ")
}

func labelString(l cluster.Labels) string {
	keys := slices.Sorted(maps.Keys(l))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

// DeletionOrder lists names in the order they can be deleted: every
// cluster before the ones it depends on. Names the fleet does not list
// keep their place at the end.
func DeletionOrder(f Fleet, names []string) []string {
	deps := map[string][]string{}
	for _, m := range f.Members {
		deps[m.Name] = m.DependsOn
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var post []string
	seen := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, d := range deps[n] {
			visit(d)
		}
		if want[n] {
			post = append(post, n)
		}
	}
	for _, m := range f.Members {
		visit(m.Name)
	}
	slices.Reverse(post)
	var rest []string
	for _, n := range names {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	return append(post, rest...)
}
