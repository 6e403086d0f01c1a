package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/fileutil"
)

// ErrNotFound is returned by Load when the config file does not exist.
var ErrNotFound = errors.New("config file not found")

// Error is everything wrong with one config file, each problem on its own
// line prefixed with file:line where the file says where it is.
type Error struct {
	File     string
	Problems []Problem
}

// Problem is one finding: the dotted key it concerns, the line it is on
// (0 when the value comes from the defaults) and what is wrong.
type Problem struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if len(e.Problems) == 1 {
		fmt.Fprintf(&b, "invalid config %s:\n", e.File)
	} else {
		fmt.Fprintf(&b, "invalid config %s (%d problems):\n", e.File, len(e.Problems))
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("  ")
		b.WriteString(p.format(e.File))
	}
	return b.String()
}

// format is p on one line: file:line: key: what (file and line when known).
func (p Problem) format(file string) string {
	var b strings.Builder
	if file != "" {
		b.WriteString(file)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// MaxFileSize bounds what marina reads as a config file: a real one is a
// few kilobytes; --config /dev/zero must not exhaust memory.
const MaxFileSize = 1 << 20

// read reads the config file; a missing one is ErrNotFound (wrapped),
// unless --config named it: then it is an error no caller reads as "use
// the defaults".
func read(paths Paths) ([]byte, error) {
	data, err := fileutil.ReadRegular(paths.Config, MaxFileSize)
	if errors.Is(err, os.ErrNotExist) && paths.Named {
		return nil, paths.namedMissing()
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (run `marina up` to create it, or `marina config edit`)", ErrNotFound, paths.Config)
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := notMarinas(paths.Config, data); err != nil {
		return nil, err
	}
	return data, nil
}

// notMarinas says what a file given as marina's config is when it is
// another tool's, or a marina manifest of another kind: a kind Cluster
// (kind --config's habit) or a Fleet, rather than a list of unknown keys.
func notMarinas(file string, data []byte) error {
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
	}
	if yaml.Unmarshal(data, &head) != nil {
		return nil // the strict reading says what is wrong
	}
	switch {
	case head.Kind == "Cluster" && strings.HasPrefix(head.APIVersion, "kind.x-k8s.io/"):
		return fmt.Errorf("%s is a kind Cluster config, not marina's config: marina writes each cluster's kind config itself (its slot, ports, mirrors and pool); "+
			"give a cluster's nodes with flags instead (marina cluster create NAME --workers N --node-version V -l KEY=VALUE), "+
			"or several clusters as a Fleet (marina fleet apply FILE); --config is for marina's own settings (marina config show prints them)", file)
	case head.Kind == "Fleet" && strings.HasPrefix(head.APIVersion, "marina.dev/"):
		return fmt.Errorf("%s is a Fleet manifest, not marina's config: apply it with `marina fleet apply %s`", file, file)
	}
	return nil
}

// Load reads, checks and validates the config file at paths.Config.
// A missing file is ErrNotFound (wrapped).
func Load(paths Paths) (Config, error) {
	l, err := Read(paths)
	return l.Config, err
}

// Read is Load with where the file sets each key (for the warnings that
// point at a setting, HostWarnings): an invalid file is an error, as for
// Load, never a Lenient with Err set.
func Read(paths Paths) (Lenient, error) {
	data, err := read(paths)
	if err != nil {
		return Lenient{}, err
	}
	cfg, lines, err := loadData(paths, data)
	if err != nil {
		return Lenient{}, err
	}
	return Lenient{Name: cfg.VM.Name, Config: cfg, File: paths.Config, Lines: lines}, nil
}

// loadData is Load on data read from paths.Config, with the line of each
// key the file sets.
func loadData(paths Paths, data []byte) (Config, Lines, error) {
	cfg, lines, err := Parse(paths.Config, data)
	if err != nil {
		return Config{}, nil, err
	}
	if probs := Validate(cfg, paths); len(probs) > 0 {
		for i := range probs {
			probs[i].Line = lines.find(probs[i].Path)
		}
		return Config{}, nil, &Error{File: paths.Config, Problems: probs}
	}
	return cfg, lines, nil
}

// Lenient is what LoadVMName read: the VM's name, always valid, and the
// whole config when the file is valid too.
type Lenient struct {
	Name   string
	Config Config // the strict result, when Err is nil
	Err    error  // why the whole file is not a valid config
	// File is the file read, and Lines the line of each key it sets (when
	// Err is nil): what a warning about a setting points at.
	File  string
	Lines Lines
}

// Warnings are Err's problems, one line each.
func (l Lenient) Warnings() []string {
	var ce *Error
	switch {
	case l.Err == nil:
		return nil
	case !errors.As(l.Err, &ce):
		return []string{l.Err.Error()}
	}
	var out []string
	for _, p := range ce.Problems {
		out = append(out, p.format(ce.File))
	}
	return out
}

// LoadVMName reads vm.name alone, for the commands that need nothing else
// (status, down, destroy, shell): a mistake anywhere else in the file, even
// one that stops it parsing (a tab, a duplicate key, a klimax key), must
// not lock the user out of stopping or deleting the VM. It returns a valid
// VM name or an error, never anything else; the strict reading of the same
// file comes with it, so that nothing reads it twice.
func LoadVMName(paths Paths) (Lenient, error) {
	data, err := read(paths)
	if err != nil {
		return Lenient{}, err
	}
	return vmNameOf(paths, data)
}

// vmNameOf is LoadVMName on data read from paths.Config.
func vmNameOf(paths Paths, data []byte) (Lenient, error) {
	name, err := VMName(data)
	if err != nil {
		return Lenient{}, fmt.Errorf("%s: cannot tell which VM it names: %w; fix the file (`marina config edit`)", paths.Config, err)
	}
	var v validator
	v.vmName(name, paths)
	if len(v.probs) > 0 {
		return Lenient{}, &Error{File: paths.Config, Problems: v.probs}
	}
	l := Lenient{Name: name, File: paths.Config}
	l.Config, l.Lines, l.Err = loadData(paths, data)
	return l, nil
}

// Lines maps dotted key paths ("registries.mirrors[1].port") to the line
// that sets them.
type Lines map[string]int

// find returns the line of path, or of its closest parent set in the file.
func (l Lines) find(path string) int {
	for p := path; p != ""; {
		if n, ok := l[p]; ok {
			return n
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// Parse decodes a config document strictly: unknown keys, duplicate keys and
// wrongly typed values are errors that carry their line. Keys the document
// leaves out keep their defaults. Parse does not validate values.
func Parse(file string, data []byte) (Config, Lines, error) {
	cfg := Default()
	lines := Lines{}
	doc, err := oneDocument(data)
	if err != nil {
		return Config{}, nil, &Error{File: file, Problems: []Problem{syntaxProblem(data, err)}}
	}
	if len(doc.Content) == 0 { // empty file or comments only
		return cfg, lines, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return cfg, lines, nil
	}
	var probs []Problem
	check(root, reflect.TypeOf(cfg), "", lines, &probs)
	if len(probs) > 0 {
		return Config{}, nil, &Error{File: file, Problems: probs}
	}
	// check found every mistake it knows; yaml.v3's own errors (a key set
	// twice) still come with their line.
	if err := root.Decode(&cfg); err != nil {
		return Config{}, nil, &Error{File: file, Problems: typeProblems(err)}
	}
	// An explicit "mirrors:" with no value means the defaults, like leaving
	// it out; "mirrors: []" turns every mirror off.
	if cfg.Registries.Mirrors == nil {
		cfg.Registries.Mirrors = DefaultMirrors()
	}
	if cfg.Kind.CustomDNSResolvers == nil {
		cfg.Kind.CustomDNSResolvers = []DNSResolver{}
	}
	return cfg, lines, nil
}

// oneDocument parses data as exactly one YAML document: a second one
// would otherwise be dropped without a word.
func oneDocument(data []byte) (yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return yaml.Node{}, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return doc, nil
	case err != nil:
		return yaml.Node{}, err
	}
	return yaml.Node{}, fmt.Errorf("line %d: a second YAML document starts here (after ---): keep the whole config in one", max(next.Line-1, 1))
}

// check walks node against the Go type t and reports every key the type
// does not have and every value of the wrong type, each with its dotted key
// and line, recording the line of every key it does have.
func check(node *yaml.Node, t reflect.Type, path string, lines Lines, probs *[]Problem) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if node.Kind == yaml.AliasNode {
		// Aliases could expand without bound; config files are short enough
		// to spell out.
		*probs = append(*probs, Problem{Path: path, Line: node.Line, Msg: "YAML aliases (*" + node.Value + ") are not supported here; write the value out"})
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if node.Kind != yaml.MappingNode {
			if !(node.Kind == yaml.ScalarNode && node.Tag == "!!null") {
				*probs = append(*probs, Problem{Path: path, Line: node.Line, Msg: fmt.Sprintf("expected a mapping of keys (%s), got %s", strings.Join(fieldNames(t), ", "), describe(node))})
			}
			return
		}
		fields := fieldsByKey(t)
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" {
				*probs = append(*probs, Problem{Path: path, Line: k.Line, Msg: "merge keys (<<) are not supported; write the keys out"})
				continue
			}
			child := join(path, k.Value)
			f, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("unknown key %q", k.Value)
				if kx, ok := klimaxKeys[child]; ok {
					msg += ": it is klimax's (" + kx.instead + "); run marina migrate to convert a klimax config, or " + kx.fix
				} else if s := Suggest(k.Value, fieldNames(t)); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				} else {
					msg += fmt.Sprintf(" (known keys: %s)", strings.Join(fieldNames(t), ", "))
				}
				*probs = append(*probs, Problem{Path: child, Line: k.Line, Msg: msg})
				continue
			}
			lines[child] = k.Line
			check(v, f.Type, child, lines, probs)
		}
	case reflect.Slice:
		if node.Kind != yaml.SequenceNode {
			if !isNull(node) {
				*probs = append(*probs, Problem{Path: path, Line: node.Line, Msg: notAList(t, node)})
			}
			return
		}
		for i, item := range node.Content {
			child := fmt.Sprintf("%s[%d]", path, i)
			lines[child] = item.Line
			check(item, t.Elem(), child, lines, probs)
		}
	case reflect.Map:
		if node.Kind != yaml.MappingNode {
			if !isNull(node) {
				*probs = append(*probs, Problem{Path: path, Line: node.Line, Msg: fmt.Sprintf("expected %s, got %s", expected(t), describe(node))})
			}
			return
		}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" {
				*probs = append(*probs, Problem{Path: path, Line: k.Line, Msg: "merge keys (<<) are not supported; write the keys out"})
				continue
			}
			check(k, t.Key(), path, lines, probs)
			child := join(path, k.Value)
			lines[child] = k.Line
			check(v, t.Elem(), child, lines, probs)
		}
	default:
		if p, bad := checkScalar(node, t); bad {
			p.Path = path
			*probs = append(*probs, p)
		}
	}
}

// klimaxKeys are the keys only klimax's config has, by the path klimax
// read them at: what marina has instead, and how to mend the file by hand.
var klimaxKeys = map[string]struct{ instead, fix string }{
	"network.kindBridgeCIDR":   {"marina calls it network.cidr", "rename it"},
	"kind.coreDNSDomains":      {"marina sends a domain elsewhere with kind.customDnsResolvers", "replace it"},
	"registries.localRegistry": {"marina's push registry is registries.local", "use registries.local.{enabled,port}"},
}

func fieldsByKey(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name != "" && name != "-" {
			m[name] = f
		}
	}
	return m
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for k := range fieldsByKey(t) {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// Suggest returns the known key closest to k when it is a likely typo.
func Suggest(k string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		if d := distance(strings.ToLower(k), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein edit distance.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var lineRe = regexp.MustCompile(`^line (\d+): `)

// typeProblems turns yaml.v3's decode errors into problems with lines.
func typeProblems(err error) []Problem {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []Problem{{Msg: cleanYAMLErr(err.Error())}}
	}
	var out []Problem
	for _, e := range te.Errors {
		p := Problem{Msg: e}
		if m := lineRe.FindStringSubmatch(e); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Msg = strings.TrimPrefix(e, m[0])
		}
		p.Msg = strings.NewReplacer("!!str", "text", "!!int", "number", "!!bool", "true/false", "!!map", "mapping", "!!seq", "list").Replace(p.Msg)
		out = append(out, p)
	}
	return out
}

var yamlLineRe = regexp.MustCompile(`line (\d+)`)

func yamlErrLine(s string) int {
	if m := yamlLineRe.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func cleanYAMLErr(s string) string {
	s = strings.TrimPrefix(s, "yaml: ")
	return lineRe.ReplaceAllString(s, "")
}
