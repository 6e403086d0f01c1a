// Package fleet is marina's Fleet: a manifest that declares clusters and
// the order they need, the plan that gives each its slot before anything
// is made, the scheduler that creates them in parallel along the
// dependencies, and the fleet commands over a session (apply, list,
// describe, label, adopt, delete).
package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/slot"
)

// The manifest's type.
const (
	APIVersion       = "marina.dev/v1alpha1"
	KlimaxAPIVersion = "klimax.dev/v1alpha1" // klimax's, read as marina's
	Kind             = "Fleet"
)

// Strategy says what a failure does to the rest of the fleet.
type Strategy string

const (
	// FailFast starts nothing after the first failure.
	FailFast Strategy = "FailFast"
	// ContinueOnError skips only the dependents of a failure.
	ContinueOnError Strategy = "ContinueOnError"
)

// MaxFileSize bounds what is read as a manifest.
const MaxFileSize = 1 << 20

// Fleet is a loaded, checked manifest.
type Fleet struct {
	// Name is metadata.name: the marina.dev/fleet label of its clusters;
	// "" for an unnamed fleet, whose clusters carry no fleet label.
	Name        string
	MaxParallel int // at least 1
	Strategy    Strategy
	Members     []Member
	// Converted is set when the manifest was klimax's apiVersion.
	Converted bool
}

// Member is one cluster of the fleet, with the defaults applied.
type Member struct {
	Name        string
	Num         int // 0: the lowest free slot
	DependsOn   []string
	NodeVersion string // "": kind.nodeVersion of the config
	Region      string // "": europe-west<N>
	Zone        string // "": europe-west<N>-b
	Workers     int
	CNI         string         // "": kindnet; cluster.CNINone: the user's
	Labels      cluster.Labels // the user's, defaults merged in
	Mirrors     []string       // nil: every mirror; empty: none
	// MetricsServer is nil when metrics-server is not wanted.
	MetricsServer *addons.MetricsServer
	Line          int // where the entry starts
}

// Known is what the manifest's values are checked against: marina's
// config and what this marina pins.
type Known struct {
	Mirrors []string
	// NodeImage fails for a node version the config has no image for.
	NodeImage func(version string) error
	// MetricsServer lists the pinned metrics-server versions, the default
	// last.
	MetricsServer []string
}

// Error is everything wrong with one manifest, each problem with its line.
type Error struct {
	File     string
	Problems []Problem
}

// Problem is one finding at a line of the manifest.
type Problem struct {
	Line int
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if len(e.Problems) == 1 {
		fmt.Fprintf(&b, "invalid fleet manifest %s:", e.File)
	} else {
		fmt.Fprintf(&b, "invalid fleet manifest %s (%d problems):", e.File, len(e.Problems))
	}
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  %s:%d: ", e.File, p.Line)
		if p.Path != "" {
			b.WriteString(p.Path + ": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
}

// value is one scalar of the manifest and the line that set it.
type value[T any] struct {
	v    T
	line int
	set  bool
}

func (v value[T]) or(d value[T]) value[T] {
	if v.set {
		return v
	}
	return d
}

// entry is one cluster's or the defaults' settings as written.
type entry struct {
	path        string
	line        int
	name        value[string]
	nameSeen    bool // a name was written, even one found wrong
	num         value[int]
	dependsOn   value[[]string]
	nodeVersion value[string]
	region      value[string]
	zone        value[string]
	workers     value[int]
	cni         value[string]
	labels      map[string]value[string]
	mirrors     value[[]string]
	metrics     value[metrics]
}

type metrics struct {
	enabled     value[bool]
	enabledSeen bool // enabled: was written, even wrong
	version     value[string]
	insecure    value[bool]
}

type parser struct {
	probs []Problem
}

func (p *parser) add(line int, path, format string, args ...any) {
	p.probs = append(p.probs, Problem{Line: max(line, 1), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Load reads a manifest strictly: unknown or duplicate keys, wrong types,
// unknown dependencies, cycles, clashing nums, bad names, labels, mirrors
// and versions are all reported at once, each at its line.
func Load(file string, data []byte, known Known) (Fleet, error) {
	p := &parser{}
	f := p.load(data, known)
	if len(p.probs) > 0 {
		sort.SliceStable(p.probs, func(i, j int) bool { return p.probs[i].Line < p.probs[j].Line })
		// A value of spec.defaults is checked for every cluster that
		// inherits it: the same problem, reported once.
		seen := map[Problem]bool{}
		probs := p.probs[:0]
		for _, pr := range p.probs {
			if !seen[pr] {
				seen[pr] = true
				probs = append(probs, pr)
			}
		}
		return Fleet{}, &Error{File: file, Problems: probs}
	}
	return f, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError is the line a YAML error names (1 when it names none) and
// its message without the line.
func yamlError(err error) (int, string) {
	line := 1
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	return line, strings.TrimPrefix(yamlLine.ReplaceAllString(err.Error(), ""), "yaml: : ")
}

func (p *parser) load(data []byte, known Known) Fleet {
	root := p.decode(data)
	if root == nil {
		return Fleet{}
	}
	var (
		f                   Fleet
		apiVersion, kind    value[string]
		maxParallel         value[int]
		strategy            value[string]
		defaults            entry
		members             []entry
		specLine, clustersL int
	)
	p.mapping(root, "", map[string]func(*yaml.Node, string){
		"apiVersion": func(n *yaml.Node, path string) { apiVersion = p.str(n, path) },
		"kind":       func(n *yaml.Node, path string) { kind = p.str(n, path) },
		"metadata": func(n *yaml.Node, path string) {
			p.mapping(n, path, map[string]func(*yaml.Node, string){
				"name": func(n *yaml.Node, path string) {
					v := p.str(n, path)
					if !v.set {
						return
					}
					if errs := validation.IsValidLabelValue(v.v); len(errs) > 0 || v.v == "" {
						p.add(v.line, path, "%q cannot be the value of the %s label of the fleet's nodes: %s", v.v, cluster.FleetLabel, orEmpty(errs))
					}
					f.Name = v.v
				},
			})
		},
		"spec": func(n *yaml.Node, path string) {
			specLine = n.Line
			p.mapping(n, path, map[string]func(*yaml.Node, string){
				"maxParallel": func(n *yaml.Node, path string) { maxParallel = p.integer(n, path) },
				"strategy":    func(n *yaml.Node, path string) { strategy = p.str(n, path) },
				"defaults": func(n *yaml.Node, path string) {
					defaults = p.entry(n, path, false)
				},
				"clusters": func(n *yaml.Node, path string) {
					clustersL = n.Line
					if !p.seq(n, path) {
						return
					}
					for i, item := range n.Content {
						members = append(members, p.entry(item, fmt.Sprintf("%s[%d]", path, i), true))
					}
				},
			})
		},
	})
	p.header(&f, root, apiVersion, kind, maxParallel, strategy)
	if len(members) == 0 {
		line := clustersL
		if line == 0 {
			line = max(specLine, root.Line)
		}
		p.add(line, "spec.clusters", "a Fleet needs at least one cluster: list them under spec.clusters (a name, or name: with settings)")
	}
	f.Members = p.resolve(members, defaults, known)
	return f
}

// decode reads data as one YAML document: its root, or nil when it is not
// one (the problems say why).
func (p *parser) decode(data []byte) *yaml.Node {
	// The lines a problem names must be the lines the user's editor
	// shows: YAML also reads UTF-16 and counts U+0085, U+2028 and U+2029
	// as line breaks, which editors do not.
	if !utf8.Valid(data) {
		p.add(1, "", "not UTF-8 text (UTF-16, or another encoding): save the file as UTF-8")
		return nil
	}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if bytes.ContainsAny(line, "\u0085\u2028\u2029") {
			p.add(i+1, "", "a Unicode line separator (U+0085, U+2028 or U+2029), which YAML counts as a line break: remove it")
		}
	}
	if len(p.probs) > 0 {
		return nil
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(1, "", "the file is empty: a Fleet needs apiVersion: %s, kind: %s and spec.clusters", APIVersion, Kind)
			return nil
		}
		line, msg := yamlError(err)
		p.add(line, "", "not YAML: %s", msg)
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		p.add(next.Line, "", "a second YAML document starts here: give one Fleet per file")
	} else if !errors.Is(err, io.EOF) {
		line, msg := yamlError(err)
		p.add(line, "", "not YAML after the first document: %s", msg)
	}
	if len(doc.Content) == 0 {
		p.add(1, "", "the file has no Fleet: it needs apiVersion: %s, kind: %s and spec.clusters", APIVersion, Kind)
		return nil
	}
	return doc.Content[0]
}

// header checks apiVersion and kind, and sets f's scheduling from
// spec.maxParallel and spec.strategy.
func (p *parser) header(f *Fleet, root *yaml.Node, apiVersion, kind value[string], maxParallel value[int], strategy value[string]) {
	switch {
	case !apiVersion.set:
		p.add(root.Line, "apiVersion", "missing: write apiVersion: %s", APIVersion)
	case apiVersion.v == KlimaxAPIVersion:
		f.Converted = true
	case apiVersion.v != APIVersion:
		p.add(apiVersion.line, "apiVersion", "%q is not a Fleet's: write apiVersion: %s", apiVersion.v, APIVersion)
	}
	if !kind.set {
		p.add(root.Line, "kind", "missing: write kind: %s", Kind)
	} else if kind.v != Kind {
		p.add(kind.line, "kind", "%q: this file must be a %s", kind.v, Kind)
	}
	f.MaxParallel = 1
	if maxParallel.set {
		switch {
		case maxParallel.v < 0:
			p.add(maxParallel.line, "spec.maxParallel", "%d: give the number of clusters created at once (0 or 1: one at a time)", maxParallel.v)
		case maxParallel.v > 1:
			f.MaxParallel = maxParallel.v
		}
	}
	f.Strategy = FailFast
	if strategy.set {
		switch Strategy(strategy.v) {
		case FailFast, ContinueOnError:
			f.Strategy = Strategy(strategy.v)
		default:
			p.add(strategy.line, "spec.strategy", "%q: choose %s (the default: nothing new starts after a failure) or %s (only a failure's dependents are skipped)", strategy.v, FailFast, ContinueOnError)
		}
	}
}

// resolve applies the defaults to every entry and checks the results.
func (p *parser) resolve(es []entry, d entry, known Known) []Member {
	var out []Member
	names := map[string]int{}
	nums := map[int]string{}
	for _, e := range es {
		if !e.name.set {
			if !e.nameSeen {
				p.add(e.line, e.path, "an entry without name: give the cluster's name")
			}
			continue
		}
		if err := cluster.CheckName(e.name.v); err != nil {
			p.add(e.name.line, e.path+".name", "%v", err)
		}
		if first, ok := names[e.name.v]; ok {
			p.add(e.name.line, e.path+".name", "cluster %s is listed twice (first at line %d)", e.name.v, first)
			continue
		}
		names[e.name.v] = e.name.line
		m := Member{Name: e.name.v, Line: e.line}
		if e.num.set {
			switch {
			case e.num.v == 0:
			case slot.Check(e.num.v) != nil:
				p.add(e.num.line, e.path+".num", "%d: a slot is %d to %d (or leave num out for the lowest free one)", e.num.v, slot.Min, slot.Max)
			case nums[e.num.v] != "":
				p.add(e.num.line, e.path+".num", "slot %d is %s's too: give each cluster its own num, or leave it out", e.num.v, nums[e.num.v])
			default:
				nums[e.num.v] = m.Name
				m.Num = e.num.v
			}
		}
		m.DependsOn = e.dependsOn.v
		p.settings(&m, e, d, known)
		out = append(out, m)
	}
	byName := p.dependencies(es, out)
	for _, c := range cycles(out) {
		p.add(byName[c[0]].Line, "dependsOn", "the clusters depend on each other in a circle: %s; remove one of these dependencies", strings.Join(c, " → "))
	}
	return out
}

// settings resolves entry e's settings over the defaults d into m, and
// checks them.
func (p *parser) settings(m *Member, e, d entry, known Known) {
	// at is where a value comes from: the entry, or spec.defaults
	// when the entry leaves it out.
	at := func(own bool) string {
		if own {
			return e.path
		}
		return d.path
	}
	nv := e.nodeVersion.or(d.nodeVersion)
	if nv.set && known.NodeImage != nil {
		if err := known.NodeImage(nv.v); err != nil {
			p.add(nv.line, at(e.nodeVersion.set)+".nodeVersion", "%v", err)
		}
	}
	m.NodeVersion = nv.v
	for _, tz := range []struct {
		key string
		own bool
		v   value[string]
		to  *string
	}{{"region", e.region.set, e.region.or(d.region), &m.Region}, {"zone", e.zone.set, e.zone.or(d.zone), &m.Zone}} {
		if !tz.v.set {
			continue
		}
		if errs := validation.IsValidLabelValue(tz.v.v); len(errs) > 0 || tz.v.v == "" {
			p.add(tz.v.line, at(tz.own)+"."+tz.key, "%q is not a label value: %s", tz.v.v, orEmpty(errs))
		}
		*tz.to = tz.v.v
	}
	if w := e.workers.or(d.workers); w.set {
		if w.v < 0 || w.v > cluster.MaxWorkers {
			p.add(w.line, at(e.workers.set)+".workers", "%d: choose 0 to %d worker nodes", w.v, cluster.MaxWorkers)
		}
		m.Workers = w.v
	}
	if c := e.cni.or(d.cni); c.set {
		if err := cluster.CheckCNI(c.v); err != nil {
			p.add(c.line, at(e.cni.set)+".cni", "%v", err)
		}
		m.CNI = c.v
	}
	m.Labels = p.labels(e, d)
	mirrors := e.mirrors
	if !mirrors.set {
		mirrors = d.mirrors
	}
	if mirrors.set {
		m.Mirrors = p.mirrors(mirrors, at(e.mirrors.set), known)
	}
	ms := e.metrics.or(d.metrics)
	msPath := at(e.metrics.set) + ".addons.metricsServer"
	if ms.set && (!ms.v.enabled.set || ms.v.enabled.v) {
		if !ms.v.enabledSeen {
			p.add(ms.line, msPath, "say enabled: true (or false): an entry's addons.metricsServer replaces the whole one of spec.defaults, enabled included")
		}
		m.MetricsServer = &addons.MetricsServer{InsecureTLS: !ms.v.insecure.set || ms.v.insecure.v}
		switch {
		case ms.v.version.set && !slices.Contains(known.MetricsServer, ms.v.version.v):
			p.add(ms.v.version.line, msPath+".version", "metrics-server %q has no pinned manifest in this marina: use one of %s, or leave version out for %s",
				ms.v.version.v, strings.Join(known.MetricsServer, ", "), last(known.MetricsServer))
		case ms.v.version.set:
			m.MetricsServer.Version = ms.v.version.v
		default:
			m.MetricsServer.Version = last(known.MetricsServer)
		}
	}
}

// dependencies checks every entry's dependsOn against the members.
func (p *parser) dependencies(es []entry, out []Member) map[string]*Member {
	byName := map[string]*Member{}
	for i := range out {
		byName[out[i].Name] = &out[i]
	}
	for _, e := range es {
		m, ok := byName[e.name.v]
		if !ok || m.Line != e.line {
			continue
		}
		seen := map[string]bool{}
		for _, dep := range m.DependsOn {
			switch {
			case dep == m.Name:
				p.add(e.dependsOn.line, e.path+".dependsOn", "cluster %s depends on itself", m.Name)
			case byName[dep] == nil:
				p.add(e.dependsOn.line, e.path+".dependsOn", "%q is not a cluster of this fleet (it lists %s)", dep, strings.Join(memberNames(out), ", "))
			case seen[dep]:
				p.add(e.dependsOn.line, e.path+".dependsOn", "%s is listed twice", dep)
			}
			seen[dep] = true
		}
	}
	return byName
}

// labels merges the defaults' labels into the entry's (the entry wins) and
// checks every one: marina sets managed-by, the fleet label and the
// topology labels itself.
func (p *parser) labels(e, d entry) cluster.Labels {
	all := map[string]value[string]{}
	for k, v := range d.labels {
		all[k] = v
	}
	for k, v := range e.labels {
		all[k] = v
	}
	if len(all) == 0 {
		return nil
	}
	out := cluster.Labels{}
	// In key order, so that findings on one line always read the same;
	// each at the label's own line (a default's is in spec.defaults).
	for _, k := range slices.Sorted(maps.Keys(all)) {
		v := all[k]
		path := e.path + ".labels." + k
		if _, ok := e.labels[k]; !ok {
			path = d.path + ".labels." + k
		}
		if err := cluster.CheckUserLabel(k, v.v); err != nil {
			p.add(v.line, path, "%v", err)
			continue
		}
		if err := cluster.CheckKubeletLabels(cluster.Labels{k: v.v}); err != nil {
			p.add(v.line, path, "%v", err)
			continue
		}
		out[k] = v.v
	}
	return out
}

func (p *parser) mirrors(v value[[]string], path string, known Known) []string {
	out := []string{}
	for _, n := range v.v {
		switch {
		case n == "*" && len(v.v) > 1:
			p.add(v.line, path+".registries.mirrors", `"*" selects every mirror and cannot be combined with names`)
		case n == "*":
			return nil
		case !slices.Contains(known.Mirrors, n):
			p.add(v.line, path+".registries.mirrors", "no mirror is named %q in the marina config (registries.mirrors has %s)", n, strings.Join(orNone(known.Mirrors), ", "))
		case !slices.Contains(out, n):
			out = append(out, n)
		}
	}
	return out
}

// entry reads a cluster entry (a bare name, or a mapping) or, when
// !isCluster, spec.defaults.
func (p *parser) entry(n *yaml.Node, path string, isCluster bool) entry {
	e := entry{path: path, line: n.Line}
	if isCluster && n.Kind == yaml.ScalarNode {
		e.name, e.nameSeen = p.str(n, path), true
		return e
	}
	fields := map[string]func(*yaml.Node, string){
		"nodeVersion": func(n *yaml.Node, path string) { e.nodeVersion = p.str(n, path) },
		"region":      func(n *yaml.Node, path string) { e.region = p.str(n, path) },
		"zone":        func(n *yaml.Node, path string) { e.zone = p.str(n, path) },
		"workers":     func(n *yaml.Node, path string) { e.workers = p.integer(n, path) },
		"cni":         func(n *yaml.Node, path string) { e.cni = p.str(n, path) },
		"labels":      func(n *yaml.Node, path string) { e.labels = p.stringMap(n, path) },
		"registries": func(n *yaml.Node, path string) {
			p.mapping(n, path, map[string]func(*yaml.Node, string){
				"mirrors": func(n *yaml.Node, path string) {
					if isNull(n) {
						return // inherit, as when left out
					}
					e.mirrors = p.strList(n, path)
				},
			})
		},
		"addons": func(n *yaml.Node, path string) {
			p.mapping(n, path, map[string]func(*yaml.Node, string){
				"metricsServer": func(n *yaml.Node, path string) {
					var m metrics
					p.mapping(n, path, map[string]func(*yaml.Node, string){
						"enabled":            func(n *yaml.Node, path string) { m.enabled, m.enabledSeen = p.boolean(n, path), true },
						"version":            func(n *yaml.Node, path string) { m.version = p.str(n, path) },
						"kubeletInsecureTLS": func(n *yaml.Node, path string) { m.insecure = p.boolean(n, path) },
					})
					e.metrics = value[metrics]{v: m, line: n.Line, set: true}
				},
			})
		},
	}
	if isCluster {
		fields["name"] = func(n *yaml.Node, path string) { e.name, e.nameSeen = p.str(n, path), true }
		fields["num"] = func(n *yaml.Node, path string) { e.num = p.integer(n, path) }
		fields["dependsOn"] = func(n *yaml.Node, path string) { e.dependsOn = p.strList(n, path) }
	}
	if isCluster && n.Kind != yaml.MappingNode {
		if !p.alias(n, path) {
			p.add(n.Line, path, "expected a cluster's name or a mapping with name: and its settings, got %s", describe(n))
		}
		e.nameSeen = true // what is wrong with the entry is said
		return e
	}
	p.mapping(n, path, fields)
	return e
}

// mapping walks the keys of n, calling the field of each; unknown and
// duplicate keys, aliases and merge keys are problems.
func (p *parser) mapping(n *yaml.Node, path string, fields map[string]func(*yaml.Node, string)) {
	if p.alias(n, path) || isNull(n) {
		return
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if n.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping with keys (%s), got %s", strings.Join(keys, ", "), describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		child := join(path, k.Value)
		switch {
		case k.Kind != yaml.ScalarNode:
			p.add(k.Line, path, "a key must be plain text")
			continue
		case k.Value == "<<":
			p.add(k.Line, path, "merge keys (<<) are not supported: write the keys out")
			continue
		case seen[k.Value] > 0:
			p.add(k.Line, child, "duplicate key (first at line %d)", seen[k.Value])
			continue
		}
		seen[k.Value] = k.Line
		fn, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("unknown key %q", k.Value)
			if s := config.Suggest(k.Value, keys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += fmt.Sprintf(" (known keys: %s)", strings.Join(keys, ", "))
			}
			p.add(k.Line, child, "%s", msg)
			continue
		}
		fn(v, child)
	}
}

func (p *parser) alias(n *yaml.Node, path string) bool {
	if n.Kind == yaml.AliasNode {
		p.add(n.Line, path, "YAML aliases (*%s) are not supported: write the value out", n.Value)
		return true
	}
	return false
}

func (p *parser) seq(n *yaml.Node, path string) bool {
	if p.alias(n, path) || isNull(n) {
		return false
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n.Line, path, "expected a list, got %s", describe(n))
		return false
	}
	return true
}

func (p *parser) str(n *yaml.Node, path string) value[string] {
	if p.alias(n, path) {
		return value[string]{}
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		hint := ""
		if n.Kind == yaml.ScalarNode && !isNull(n) {
			hint = fmt.Sprintf(` (quote it: "%s")`, n.Value)
		}
		p.add(n.Line, path, "expected text, got %s%s", describe(n), hint)
		return value[string]{}
	}
	return value[string]{v: n.Value, line: n.Line, set: true}
}

func (p *parser) integer(n *yaml.Node, path string) value[int] {
	if p.alias(n, path) {
		return value[int]{}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.ParseInt(n.Value, 0, 32); err == nil {
			return value[int]{v: int(v), line: n.Line, set: true}
		}
		p.add(n.Line, path, "%s is out of range", n.Value)
		return value[int]{}
	}
	p.add(n.Line, path, "expected a whole number, got %s", describe(n))
	return value[int]{}
}

func (p *parser) boolean(n *yaml.Node, path string) value[bool] {
	if p.alias(n, path) {
		return value[bool]{}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return value[bool]{v: b, line: n.Line, set: true}
		}
	}
	p.add(n.Line, path, "expected true or false, got %s", describe(n))
	return value[bool]{}
}

func (p *parser) strList(n *yaml.Node, path string) value[[]string] {
	if !p.seq(n, path) {
		return value[[]string]{}
	}
	out := []string{}
	for i, item := range n.Content {
		if v := p.str(item, fmt.Sprintf("%s[%d]", path, i)); v.set {
			out = append(out, v.v)
		}
	}
	return value[[]string]{v: out, line: n.Line, set: true}
}

func (p *parser) stringMap(n *yaml.Node, path string) map[string]value[string] {
	if p.alias(n, path) || isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping of label keys to values, got %s", describe(n))
		return nil
	}
	out := map[string]value[string]{}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "<<" {
			p.add(k.Line, path, "a label key must be plain text")
			continue
		}
		if first := seen[k.Value]; first > 0 {
			p.add(k.Line, join(path, k.Value), "duplicate key (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		if s := p.str(v, join(path, k.Value)); s.set {
			out[k.Value] = s
		}
	}
	return out
}

// cycles are the dependency circles among ms, each as the path that
// closes it (a → b → a), found by a depth-first walk in manifest order.
func cycles(ms []Member) [][]string {
	deps := map[string][]string{}
	for _, m := range ms {
		deps[m.Name] = m.DependsOn
	}
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	var stack []string
	var out [][]string
	var visit func(string)
	visit = func(n string) {
		colour[n] = grey
		stack = append(stack, n)
		for _, d := range deps[n] {
			if _, ok := deps[d]; !ok || d == n {
				continue // reported as unknown, or as depending on itself
			}
			switch colour[d] {
			case white:
				visit(d)
			case grey:
				i := slices.Index(stack, d)
				out = append(out, append(slices.Clone(stack[i:]), d))
			}
		}
		stack = stack[:len(stack)-1]
		colour[n] = black
	}
	for _, m := range ms {
		if colour[m.Name] == white {
			visit(m.Name)
		}
	}
	return out
}

func memberNames(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func describe(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case isNull(n):
		return "nothing"
	case n.Tag == "!!int" || n.Tag == "!!float":
		return "the number " + n.Value
	case n.Tag == "!!bool":
		return n.Value
	}
	return strconv.Quote(n.Value)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orEmpty(errs []string) string {
	if len(errs) == 0 {
		return "it is empty"
	}
	return strings.Join(errs, "; ")
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}
