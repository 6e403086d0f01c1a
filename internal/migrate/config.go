package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/vm"
)

// ConfigOptions says how the conversion treats the VM.
type ConfigOptions struct {
	// KeepVM: klimax's VM is adopted, so vm.name is written explicitly
	// (klimax's default was "klimax", marina's is "marina").
	KeepVM bool
	// Paths are marina's, for the checks that depend on where it keeps its
	// files (the VM's socket paths must fit macOS's limit). The zero value
	// checks against a short stand-in home, /Users/me.
	Paths config.Paths
}

// Converted is a klimax config turned into marina's.
type Converted struct {
	Data []byte // the marina config file
	// Notes has one plain line per change that is not a pure rename,
	// saying what and why (never a password).
	Notes        []string
	VMName       string       // klimax's VM name in effect (its default "klimax" when unset)
	CIDR         netip.Prefix // the kind network
	CacheStorage string       // host or guest
	// Mirrors maps the name of every mirror klimax's config has in effect
	// (its five defaults when it sets none) to marina's name for it, which
	// differs only when it had to be renamed: for moving cache folders.
	Mirrors map[string]string
	Config  config.Config // the result as marina's strict loader and validator read it
}

// Header is the comment a converted file starts with, in place of
// klimax's generated header.
const Header = "# marina config, converted from klimax's by marina migrate."

// klimax's defaults where they differ from marina's or where a value it
// left empty has to be written out.
const (
	klimaxVMName         = "klimax"
	klimaxNodeVersion    = "v1.35.0"
	klimaxMetalLBVersion = "v0.16.1"
	klimaxCPUs           = 4
)

// klimaxEmpty is what klimax put in place of an empty string (its defaults
// filled in every zero value).
var klimaxEmpty = map[string]string{
	"vm.memory":               "10GiB",
	"vm.disk":                 "40GiB",
	"network.kindBridgeCIDR":  "172.30.0.0/16",
	"registries.cacheStorage": config.CacheHost,
}

// googleDNS is klimax's resolvers for a domain that named none, and where
// its coreDNSDomains forwarded.
var googleDNS = []string{"8.8.8.8", "8.8.4.4"}

// marinaOnly are marina's keys klimax never read: a klimax file that has
// them had them ignored, marina reads them.
var marinaOnly = map[string]bool{
	"network.cidr":     true,
	"kind.nodeImages":  true,
	"registries.image": true,
	"dns":              true,
}

// Config converts klimax's config file data (empty when klimax had none)
// into marina's. It keeps the user's comments and key order wherever a
// key survives, and checks the result with marina's strict loader and
// validator: a value marina refuses is an error naming the klimax key and
// line that need a choice.
func Config(data []byte, o ConfigOptions) (Converted, error) {
	// YAML reads a CR, alone or before an LF, as a line break; the comments
	// marina carries over would keep a lone one, which the next read
	// splits: every break becomes an LF first.
	data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	doc, err := readKlimax(data)
	if err != nil {
		return Converted{}, err
	}
	c := &conv{o: o, origin: map[string]place{}, seen: map[string]bool{}, vmName: klimaxVMName}
	root := doc.Content[0]
	c.header(doc, root)
	if foot := c.mapping(root, reflect.TypeOf(config.Config{}), ""); foot != "" {
		c.docFoot = joinComments(c.docFoot, foot)
	}
	c.unset(root)
	if c.err != nil {
		return Converted{}, c.err
	}
	out, err := render(doc, c.docFoot)
	if err != nil {
		return Converted{}, err
	}
	cfg, err := c.check(out)
	if err != nil {
		return Converted{}, err
	}
	cidr, err := netip.ParsePrefix(cfg.Network.CIDR)
	if err != nil { // validated above
		return Converted{}, err
	}
	mirrors := c.mirrors
	if mirrors == nil {
		mirrors = map[string]string{}
		for _, m := range config.DefaultMirrors() {
			mirrors[m.Name] = m.Name
		}
	}
	return Converted{
		Data:         out,
		Notes:        c.notes,
		VMName:       c.vmName,
		CIDR:         cidr,
		CacheStorage: cfg.Registries.CacheStorage,
		Mirrors:      mirrors,
		Config:       cfg,
	}, nil
}

// place is where a value of marina's config came from in klimax's file.
type place struct {
	path string // klimax's key path
	line int
}

type conv struct {
	o      ConfigOptions
	notes  []string
	origin map[string]place // marina's key path → klimax's
	vmName string
	// seen are the keys klimax's file sets that matter when it does not
	seen       map[string]bool
	bridgeLine int               // where network.kindBridgeCIDR is
	mirrors    map[string]string // nil: klimax's defaults
	docFoot    string            // comments left over at the end of the file
	err        error
}

func (c *conv) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

func (c *conv) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// readKlimax parses data as klimax read it (one YAML document), refusing
// what a plain conversion cannot carry over: aliases, anchors and merge
// keys, several documents, keys that are not names, keys set twice, a
// root that is not a mapping. An empty file, or one of comments only, is
// an empty mapping with the comments above it.
func readKlimax(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("klimax's config is not YAML that klimax could read either: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, fmt.Errorf("klimax's config is not YAML that klimax could read either: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	default:
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, fmt.Errorf("klimax's config holds more than one YAML document (the second, after ---, starts on line %d): klimax read only the first; keep the one you use and run marina migrate again", line)
	}
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
		if len(doc.Content) == 1 && doc.Content[0].Anchor != "" {
			return nil, fmt.Errorf("line %d: klimax's config uses a YAML anchor (&%s): write the values out and run marina migrate again", doc.Content[0].Line, doc.Content[0].Anchor)
		}
		return &yaml.Node{
			Kind:        yaml.DocumentNode,
			HeadComment: commentLines(data),
			Content:     []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}},
		}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: klimax's config is %s, not a mapping of keys (vm, network, kind, registries): klimax could not read it either", root.Line, kindOf(root))
	}
	if err := plain(root, ""); err != nil {
		return nil, err
	}
	return &doc, nil
}

// plain refuses, anywhere under n, what the conversion cannot keep as it
// is: aliases, anchors, merge keys, keys that are not names, keys set
// twice (klimax refused those too).
func plain(n *yaml.Node, path string) error {
	switch {
	case n.Kind == yaml.AliasNode:
		return fmt.Errorf("line %d: %s: klimax's config uses a YAML alias (*%s): write the value out and run marina migrate again", n.Line, orRoot(path), n.Value)
	case n.Anchor != "":
		return fmt.Errorf("line %d: %s: klimax's config uses a YAML anchor (&%s): write the values out and run marina migrate again", n.Line, orRoot(path), n.Anchor)
	}
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode || k.Anchor != "" {
				return plain(k, path)
			}
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: %s: a key that is %s, not a name: klimax could not read it either", k.Line, orRoot(path), kindOf(k))
			}
			if k.Tag == "!!merge" || k.Value == "<<" {
				return fmt.Errorf("line %d: %s: klimax's config uses a YAML merge key (<<): write the keys out and run marina migrate again", k.Line, orRoot(path))
			}
			if l, dup := seen[k.Value]; dup {
				return fmt.Errorf("line %d: %s is set twice (first on line %d): klimax refused such a file too; keep one and run marina migrate again", k.Line, join(path, k.Value), l)
			}
			seen[k.Value] = k.Line
			if err := plain(n.Content[i+1], join(path, k.Value)); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if err := plain(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return "a single value"
	}
	return "something else"
}

// commentLines are the comment lines of a file that has nothing else,
// blank lines between them kept (once).
func commentLines(data []byte) string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "#"):
			out = append(out, l)
		case l == "" && len(out) > 0 && out[len(out)-1] != "":
			out = append(out, "")
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// paragraphs splits a comment at its blank lines.
func paragraphs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n\n")
}

func joinComments(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// header puts marina's header at the top of the file: in place of the
// file's first comment paragraph when that one mentions klimax (klimax's
// generated header said to edit the file and run klimax up, and linked
// klimax's repository), above it otherwise.
func (c *conv) header(doc, root *yaml.Node) {
	top := &doc.HeadComment
	switch {
	case doc.HeadComment != "":
	case root.HeadComment != "":
		top = &root.HeadComment
	case len(root.Content) > 0 && root.Content[0].HeadComment != "":
		top = &root.Content[0].HeadComment
	}
	p := paragraphs(*top)
	if len(p) > 0 && strings.Contains(strings.ToLower(p[0]), "klimax") {
		if p[0] != Header {
			c.note("klimax's file header replaced by marina's")
		}
		*top = strings.Join(p[1:], "\n\n")
	}
	doc.HeadComment = joinComments(Header, doc.HeadComment)
}

// fields are the yaml keys of a struct type of marina's config.
func fields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name := strings.Split(f.Tag.Get("yaml"), ",")[0]; name != "" && name != "-" {
			m[name] = f.Type
		}
	}
	return m
}

func fieldNames(m map[string]reflect.Type) []string {
	var names []string
	for k := range m {
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

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// isEmpty is a value written as an empty string: klimax put its default
// in place of it.
func isEmpty(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == ""
}

func setStr(n *yaml.Node, v string) {
	n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!str", v
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		n.Style = 0
	}
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func flowList(vs []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	for _, v := range vs {
		n.Content = append(n.Content, scalar(v))
	}
	return n
}

// lookup is the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mapping converts the mapping m found at path, whose keys are those of
// marina's struct type t (klimax's, for the keys it had). It returns the
// foot comments of the keys it dropped that it found no key to move to.
func (c *conv) mapping(m *yaml.Node, t reflect.Type, path string) string {
	known := fields(t)
	var out []*yaml.Node
	pending := ""
	after := []func(){}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		keep := c.key(m, k, v, join(path, k.Value), known, &after)
		if keep {
			// k.Value is marina's key now (kindBridgeCIDR became cidr).
			foot, emptied := c.value(v, known[k.Value], join(path, k.Value))
			k.FootComment = joinComments(k.FootComment, foot)
			// A section the conversion emptied goes as well ("vm: {}"
			// as the user wrote it stays).
			keep = !emptied
		}
		if !keep {
			foot := k.FootComment
			if v.Kind == yaml.ScalarNode {
				foot = joinComments(foot, v.FootComment)
			}
			if foot != "" {
				if len(out) > 0 {
					prev := out[len(out)-2]
					prev.FootComment = joinComments(prev.FootComment, foot)
				} else {
					pending = joinComments(pending, foot)
				}
			}
			continue
		}
		if pending != "" {
			k.HeadComment = joinComments(pending, k.HeadComment)
			pending = ""
		}
		out = append(out, k, m.Content[i+1])
	}
	m.Content = out
	for _, f := range after {
		f()
	}
	return pending
}

// value converts the value v of a key marina knows, of type t. It returns
// the comments left over from keys it dropped, and whether it emptied a
// mapping that had keys.
func (c *conv) value(v *yaml.Node, t reflect.Type, path string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && v.Kind == yaml.MappingNode:
		full := len(v.Content) > 0
		foot := c.mapping(v, t, path)
		return foot, full && len(v.Content) == 0
	case t.Kind() == reflect.Slice && v.Kind == yaml.SequenceNode:
		for i, item := range v.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if _, ok := c.origin[p]; !ok { // an entry made from coreDNSDomains has its own
				c.origin[p] = place{path: c.klimaxPath(p), line: item.Line}
			}
			if et := t.Elem(); et.Kind() == reflect.Struct && item.Kind == yaml.MappingNode {
				c.item(item, et, p)
			}
		}
	case t.Kind() == reflect.Map && v.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			p := join(path, v.Content[i].Value)
			c.origin[p] = place{path: p, line: v.Content[i].Line}
		}
	}
	return "", false
}

// klimaxPath is the klimax key path a marina path under a list came from
// (the same, but for network.cidr, which is a leaf).
func (c *conv) klimaxPath(p string) string {
	if p == "network.cidr" {
		return "network.kindBridgeCIDR"
	}
	return p
}

// item converts one entry of a list of mappings.
func (c *conv) item(item *yaml.Node, t reflect.Type, path string) {
	foot := c.mapping(item, t, path)
	if foot != "" {
		item.FootComment = joinComments(item.FootComment, foot)
	}
	if t == reflect.TypeOf(config.DNSResolver{}) {
		c.resolvers(item, path)
	}
}

// resolvers gives an entry of kind.customDnsResolvers that lists none
// klimax's default, Google DNS.
func (c *conv) resolvers(item *yaml.Node, path string) {
	r := lookup(item, "resolvers")
	if r != nil && !isNull(r) && !(r.Kind == yaml.SequenceNode && len(r.Content) == 0) {
		return
	}
	domain := "an entry"
	if d := lookup(item, "domain"); d != nil && d.Kind == yaml.ScalarNode && d.Value != "" {
		domain = d.Value
	}
	if r == nil {
		item.Content = append(item.Content, scalar("resolvers"), flowList(googleDNS))
	} else {
		l := flowList(googleDNS)
		r.Kind, r.Tag, r.Value, r.Style, r.Content = l.Kind, l.Tag, "", l.Style, l.Content
	}
	c.origin[path+".resolvers"] = c.origin[path]
	c.note("%s (%s, line %d) lists no resolvers, which meant klimax's default %s: written out", path, domain, item.Line, strings.Join(googleDNS, ", "))
}

// key decides on one key of a mapping marina's config has at path (the
// klimax path child): false drops it. It may change the key and its
// value, and queue work for after the mapping's loop.
func (c *conv) key(m, k, v *yaml.Node, child string, known map[string]reflect.Type, after *[]func()) bool {
	c.seen[child] = true
	switch child {
	case "vm.name":
		return c.vmNameKey(k, v)
	case "vm.cpus":
		var n int
		if v.Kind == yaml.ScalarNode && v.Tag == "!!int" && v.Decode(&n) == nil && n == 0 {
			v.Value, v.Tag = strconv.Itoa(klimaxCPUs), "!!int"
			c.note("vm.cpus 0 (line %d) meant %d in klimax: %d written", k.Line, klimaxCPUs, klimaxCPUs)
		}
	case "network.kindBridgeCIDR":
		k.Value = "cidr"
		c.bridgeLine = k.Line
		c.origin["network.cidr"] = place{path: child, line: k.Line}
		if isEmpty(v) {
			c.empty(k, v, child)
		}
		return true
	case "network.cidr":
		bridge := c.bridgeLine // kindBridgeCIDR came first and is cidr now
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "kindBridgeCIDR" {
				bridge = m.Content[i].Line
			}
		}
		if bridge > 0 {
			c.note("network.cidr (line %d) dropped: klimax ignored it and used network.kindBridgeCIDR (line %d), which becomes network.cidr", k.Line, bridge)
			return false
		}
	case "kind.nodeVersion":
		c.nodeVersion(m, k, v)
	case "kind.metalLBVersion":
		c.metalLB(k, v)
	case "kind.customDnsResolvers":
		if isNull(v) {
			return false // the same as none, in both
		}
	case "kind.coreDNSDomains":
		return c.coreDNSDomains(m, k, v, after)
	case "registries.localRegistry":
		c.note("registries.localRegistry (line %d) dropped: klimax removed its push registry in v0.1.48; marina's is registries.local, on by default at localhost:5001", k.Line)
		return false
	case "registries.mirrors":
		c.mirrorNames(v)
	}
	if _, ok := known[k.Value]; !ok {
		msg := fmt.Sprintf("%s (line %d) dropped: marina has no such key, and klimax ignored it as well (it did not read its config strictly)", child, k.Line)
		if s := config.Suggest(k.Value, fieldNames(known)); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		c.notes = append(c.notes, msg)
		return false
	}
	if k.Line > 0 { // not a key the conversion made
		c.origin[child] = place{path: child, line: k.Line}
	}
	if _, ok := klimaxEmpty[child]; ok && isEmpty(v) {
		c.empty(k, v, child)
	}
	if marinaOnly[child] {
		c.note("%s (line %d) kept: it is marina's key, which klimax did not read", child, k.Line)
	}
	return true
}

// empty writes out klimax's default for a value left empty.
func (c *conv) empty(k, v *yaml.Node, path string) {
	setStr(v, klimaxEmpty[path])
	c.note("%s (line %d) is empty, which meant klimax's default %s: written out", path, k.Line, v.Value)
}

// vmNameKey: with KeepVM the name klimax used is written; without, klimax's
// default name goes, so that a new VM's socket does not clash with klimax's.
func (c *conv) vmNameKey(k, v *yaml.Node) bool {
	if v.Kind != yaml.ScalarNode {
		return true // marina's loader says what is wrong
	}
	unset := isNull(v) || v.Value == ""
	if !unset {
		c.vmName = v.Value
	}
	c.origin["vm.name"] = place{path: "vm.name", line: k.Line}
	switch {
	case c.o.KeepVM && unset:
		setStr(v, klimaxVMName)
		c.note("vm.name (line %d) has no value, which meant klimax's default %s: written out, since klimax's VM is kept (%s)", k.Line, klimaxVMName, marinaDefaultName)
	case c.o.KeepVM:
	case unset:
		c.note("vm.name (line %d) has no value, which meant klimax's default %s: dropped, %s", k.Line, klimaxVMName, newVMWhy)
		return false
	case v.Value == klimaxVMName:
		c.note("vm.name %s (line %d) dropped: %s", klimaxVMName, k.Line, newVMWhy)
		return false
	}
	return true
}

var (
	newVMWhy = fmt.Sprintf("so that marina's new VM takes marina's default name %s and its Docker socket ~/.%s.docker.sock does not clash with klimax's ~/.%s.docker.sock",
		config.DefaultVMName, config.DefaultVMName, klimaxVMName)
	marinaDefaultName = fmt.Sprintf("marina's default name would be %s", config.DefaultVMName)
)

// unset notes what klimax's file leaves out that takes another value in
// marina, and writes vm.name out when klimax's VM is kept.
func (c *conv) unset(root *yaml.Node) {
	if !c.seen["kind.nodeVersion"] {
		c.note("kind.nodeVersion is not set (klimax's default was %s): marina's default %s applies", klimaxNodeVersion, config.DefaultNodeVersion)
	}
	if !c.seen["kind.metalLBVersion"] {
		c.note("kind.metalLBVersion is not set (klimax's default was %s): marina's default %s applies", klimaxMetalLBVersion, config.DefaultMetalLBVersion)
	}
	if c.seen["vm.name"] {
		return
	}
	if !c.o.KeepVM {
		c.note("vm.name is not set (klimax's default was %s): it stays unset, %s", klimaxVMName, newVMWhy)
		return
	}
	vmv := lookup(root, "vm")
	if vmv != nil && !isNull(vmv) && vmv.Kind != yaml.MappingNode {
		return // marina's loader says what is wrong
	}
	name := []*yaml.Node{scalar("name"), scalar(klimaxVMName)}
	c.note("vm.name %s written out: klimax's VM is kept (klimax's default name; %s)", klimaxVMName, marinaDefaultName)
	switch {
	case vmv == nil:
		root.Content = append([]*yaml.Node{scalar("vm"), {Kind: yaml.MappingNode, Tag: "!!map", Content: name}}, root.Content...)
	case isNull(vmv):
		vmv.Kind, vmv.Tag, vmv.Value, vmv.Style, vmv.Content = yaml.MappingNode, "!!map", "", 0, name
	case vmv.Kind == yaml.MappingNode:
		vmv.Content = append(name, vmv.Content...)
	}
}

// nodeVersion keeps a version marina pins and otherwise takes the nearest
// it pins; it drops klimax's generated warning above the key.
func (c *conv) nodeVersion(m, k, v *yaml.Node) {
	var kept []string
	for _, p := range paragraphs(k.HeadComment) {
		if l := strings.ToLower(p); strings.Contains(p, "UNSUPPORTED") || strings.Contains(l, "bundled") && strings.Contains(l, "kind") {
			c.note("klimax's comment above kind.nodeVersion (line %d) dropped: it was about klimax's bundled kind CLI", k.Line)
			continue
		}
		kept = append(kept, p)
	}
	k.HeadComment = strings.Join(kept, "\n\n")
	if v.Kind != yaml.ScalarNode {
		return
	}
	if isNull(v) {
		c.note("kind.nodeVersion (line %d) has no value, which meant klimax's default %s: marina's default %s applies", k.Line, klimaxNodeVersion, config.DefaultNodeVersion)
		return
	}
	have := v.Value
	if have == "" {
		have = klimaxNodeVersion
	}
	var images map[string]string
	if ni := lookup(m, "nodeImages"); ni != nil {
		_ = ni.Decode(&images) // a bad one is the loader's to report
	}
	kind := config.Kind{NodeImages: images}
	if _, err := kind.NodeImage(have); err == nil {
		if v.Value == "" {
			setStr(v, have)
			c.note("kind.nodeVersion (line %d) is empty, which meant klimax's default %s: written out", k.Line, have)
		}
		return
	}
	to, how := nearest(have, kind.NodeVersions())
	if to == "" {
		setStr(v, config.DefaultNodeVersion)
		c.note("kind.nodeVersion %q (line %d) is not a Kubernetes version marina can match to a node image: marina's default %s written", have, k.Line, config.DefaultNodeVersion)
		return
	}
	setStr(v, to)
	c.note("kind.nodeVersion %s (line %d) has no node image for marina's kind %s: %s, the nearest marina pins%s", have, k.Line, vm.KindVersion, to, how)
}

var semver = regexp.MustCompile(`^v(\d{1,4})\.(\d{1,4})\.(\d{1,4})$`)

// nearest is the version of pins closest to v, and how it relates when
// it is another minor: the same minor when there is one (its closest
// patch), else the closest minor. A tie between a newer and an older
// minor (or patch) goes to the newer one: an older Kubernetes drops out
// of support first, and moving forward is the way klimax's users are
// already going.
func nearest(v string, pins []string) (string, string) {
	want := semver.FindStringSubmatch(v)
	if want == nil {
		return "", ""
	}
	num := func(m []string) [3]int {
		var n [3]int
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+1])
		}
		return n
	}
	w := num(want)
	abs := func(x int) int { return max(x, -x) }
	best, bestD, bestNewer := "", [2]int{}, false
	var bestN [3]int
	for _, p := range pins {
		m := semver.FindStringSubmatch(p)
		if m == nil {
			continue
		}
		n := num(m)
		// distance: how far apart the minors are in the order of
		// releases (another major is further than any minor), then patches
		d := [2]int{abs(n[0]*10000 + n[1] - w[0]*10000 - w[1]), abs(n[2] - w[2])}
		if n[0] != w[0] || n[1] != w[1] {
			d[1] = 0 // another minor: its patch does not matter
		}
		newer := n[0] > w[0] || (n[0] == w[0] && (n[1] > w[1] || (n[1] == w[1] && n[2] > w[2])))
		better := best == "" || d[0] < bestD[0] || (d[0] == bestD[0] && d[1] < bestD[1]) ||
			(d == bestD && (newer && !bestNewer || newer == bestNewer && later(n, bestN)))
		if better {
			best, bestD, bestNewer, bestN = p, d, newer, n
		}
	}
	if best == "" || (bestN[0] == w[0] && bestN[1] == w[1]) {
		return best, ""
	}
	dir := "older"
	if bestNewer {
		dir = "newer"
	}
	if bestN[0] != w[0] {
		return best, fmt.Sprintf(" (it pins no v%d.%d, nor any v%d; this is the closest %s one)", w[0], w[1], w[0], dir)
	}
	n := abs(bestN[1] - w[1])
	minors := "minor"
	if n > 1 {
		minors = "minors"
	}
	return best, fmt.Sprintf(" (it pins no v%d.%d; this is %d %s %s)", w[0], w[1], n, minors, dir)
}

func later(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// metalLB keeps a MetalLB version marina has a pinned manifest for and
// otherwise writes marina's default.
func (c *conv) metalLB(k, v *yaml.Node) {
	if v.Kind != yaml.ScalarNode {
		return
	}
	if isNull(v) {
		c.note("kind.metalLBVersion (line %d) has no value, which meant klimax's default %s: marina's default %s applies", k.Line, klimaxMetalLBVersion, config.DefaultMetalLBVersion)
		return
	}
	have := v.Value
	if have == "" {
		have = klimaxMetalLBVersion
	}
	for _, p := range addons.MetalLBVersions() {
		if p == have {
			setStr(v, have)
			return
		}
	}
	setStr(v, config.DefaultMetalLBVersion)
	c.note("kind.metalLBVersion %s (line %d) has no pinned manifest in marina (it has %s): marina's default %s written", have, k.Line, strings.Join(addons.MetalLBVersions(), ", "), config.DefaultMetalLBVersion)
}

// coreDNSDomains turns klimax's old list of domains forwarded to Google
// DNS into kind.customDnsResolvers entries.
func (c *conv) coreDNSDomains(m, k, v *yaml.Node, after *[]func()) bool {
	var items []*yaml.Node
	switch {
	case isNull(v):
	case v.Kind == yaml.ScalarNode:
		items = []*yaml.Node{v}
	case v.Kind == yaml.SequenceNode:
		items = v.Content
	default:
		c.fail(fmt.Errorf("line %d: kind.coreDNSDomains is %s, not a list of domains: write it as one (or remove it) and run marina migrate again", v.Line, kindOf(v)))
		return false
	}
	existing := lookup(m, "customDnsResolvers")
	add, already, repeated, ok := c.newDomains(items, existing)
	if !ok {
		return false
	}
	klPath := func(e domainAt) string {
		if v.Kind == yaml.SequenceNode {
			return fmt.Sprintf("kind.coreDNSDomains[%d]", e.index)
		}
		return "kind.coreDNSDomains"
	}
	var names []string
	for _, e := range add {
		names = append(names, e.domain)
	}
	c.notes = append(c.notes, coreDNSNote(k.Line, names, already, repeated))
	if len(add) == 0 {
		return false
	}
	entries := func(from int) []*yaml.Node {
		var out []*yaml.Node
		for j, e := range add {
			c.origin[fmt.Sprintf("kind.customDnsResolvers[%d]", from+j)] = place{path: klPath(e), line: e.line}
			out = append(out, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
				scalar("domain"), scalar(e.domain), scalar("resolvers"), flowList(googleDNS),
			}})
		}
		return out
	}
	if existing != nil && existing.Kind == yaml.SequenceNode {
		*after = append(*after, func() {
			if len(existing.Content) == 0 {
				existing.Style = 0 // "[]" becomes a block list
			}
			existing.Content = append(existing.Content, entries(len(existing.Content))...)
		})
		return false
	}
	if existing != nil && !isNull(existing) {
		return false // not a list: marina's loader says so
	}
	// No list yet: the key itself becomes it, its comments kept.
	k.Value = "customDnsResolvers"
	c.origin["kind.customDnsResolvers"] = place{path: "kind.coreDNSDomains", line: k.Line}
	k.LineComment = joinComments(k.LineComment, v.LineComment)
	*v = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: entries(0), FootComment: v.FootComment}
	return true
}

// domainAt is a domain of kind.coreDNSDomains: where it was, and its index
// in the list.
type domainAt struct {
	domain string
	line   int
	index  int
}

// newDomains sorts coreDNSDomains' items: the domains to add to
// customDnsResolvers, those it already has, and those listed twice; ok is
// false when an item is not a domain (c.fail says so).
func (c *conv) newDomains(items []*yaml.Node, existing *yaml.Node) (add []domainAt, already, repeated []string, ok bool) {
	have, listed := map[string]bool{}, map[string]bool{}
	if existing != nil && existing.Kind == yaml.SequenceNode {
		for _, e := range existing.Content {
			if d := lookup(e, "domain"); d != nil && d.Kind == yaml.ScalarNode {
				have[normDomain(d.Value)] = true
			}
		}
	}
	for i, it := range items {
		if it.Kind != yaml.ScalarNode {
			c.fail(fmt.Errorf("line %d: kind.coreDNSDomains[%d] is %s, not a domain: fix it (or remove it) and run marina migrate again", it.Line, i, kindOf(it)))
			return nil, nil, nil, false
		}
		d := strings.TrimSpace(it.Value)
		if d == "" || isNull(it) {
			continue
		}
		switch {
		case have[normDomain(d)]:
			already = append(already, d)
			continue
		case listed[normDomain(d)]:
			repeated = append(repeated, d)
			continue
		}
		listed[normDomain(d)] = true
		add = append(add, domainAt{d, it.Line, i})
	}
	return add, already, repeated, true
}

// coreDNSNote says what became of klimax's kind.coreDNSDomains (at line):
// the domains now forwarded (names), those that already had an entry, and
// those listed twice.
func coreDNSNote(line int, names, already, repeated []string) string {
	msg := fmt.Sprintf("kind.coreDNSDomains (line %d) is gone from klimax and unknown to marina", line)
	switch {
	case len(names) > 0:
		msg += fmt.Sprintf(": %s now forwarded to Google DNS (%s) by kind.customDnsResolvers, as coreDNSDomains did", strings.Join(names, ", "), strings.Join(googleDNS, ", "))
	default:
		msg += ": dropped"
	}
	if len(already) > 0 {
		msg += fmt.Sprintf("; %s already had a kind.customDnsResolvers entry, kept as it was", strings.Join(already, ", "))
	}
	if len(repeated) > 0 {
		msg += fmt.Sprintf("; %s repeated a domain listed before it", strings.Join(repeated, ", "))
	}
	return msg
}

func normDomain(d string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
}

// mirrorNames renames the mirrors whose names klimax and marina both
// refuse (a '.' or ':' would make the container answer for its own
// upstream) and records every mirror's name.
func (c *conv) mirrorNames(v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		return // null: klimax's defaults, marina's too
	}
	c.mirrors = map[string]string{}
	taken := map[string]bool{}
	for _, it := range v.Content {
		if n := lookup(it, "name"); n != nil && n.Kind == yaml.ScalarNode {
			taken[n.Value] = true
		}
	}
	renamed := map[string]string{}
	for i, it := range v.Content {
		n := lookup(it, "name")
		if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
			continue
		}
		old := n.Value
		if !strings.ContainsAny(old, ".:") {
			c.mirrors[old] = old
			continue
		}
		to, ok := renamed[old]
		if !ok {
			to = mirrorName(old, taken)
			taken[to] = true
			renamed[old] = to
		}
		c.mirrors[old] = to
		setStr(n, to)
		c.note("registries.mirrors[%d].name %q (line %d) renamed %s: a mirror named like a host would answer for that host itself on the kind network, so marina refuses it (klimax did too)", i, old, n.Line, to)
	}
}

// mirrorName is registry-<name> in lower case with every character outside
// [a-z0-9-] made a '-', kept a DNS label and apart from the names taken.
func mirrorName(name string, taken map[string]bool) string {
	var b strings.Builder
	b.WriteString("registry-")
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	base := b.String()
	trim := func(s string, n int) string {
		if len(s) > n {
			s = s[:n]
		}
		return strings.TrimRight(s, "-")
	}
	to := trim(base, 63)
	for i := 2; taken[to]; i++ {
		suffix := "-" + strconv.Itoa(i)
		to = trim(base, 63-len(suffix)) + suffix
	}
	return to
}

// render writes the document back with a 2-space indent; a file left with
// no keys is its comments alone.
func render(doc *yaml.Node, foot string) (out []byte, err error) {
	root := doc.Content[0]
	if len(root.Content) == 0 {
		text := joinComments(doc.HeadComment, joinComments(root.HeadComment, joinComments(root.FootComment, joinComments(doc.FootComment, foot))))
		// Each line as a file of comments alone reads back (commentLines):
		// a comment's trailing blanks would go on the next run.
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimSpace(l)
		}
		return []byte(strings.Join(lines, "\n") + "\n"), nil
	}
	if foot != "" {
		last := root.Content[len(root.Content)-2]
		last.FootComment = joinComments(last.FootComment, foot)
	}
	defer func() {
		if r := recover(); r != nil { // yaml.v3 panics on what it cannot emit
			out, err = nil, fmt.Errorf("cannot write marina's config from klimax's: %v", r)
		}
	}()
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("cannot write marina's config from klimax's: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// check reads out as marina will, strictly, and validates it; a refusal
// names klimax's key and line.
func (c *conv) check(out []byte) (config.Config, error) {
	paths := c.o.Paths
	if paths.Home == "" {
		paths = config.Paths{Home: "/Users/me", Dir: "/Users/me/.marina"}
	}
	cfg, _, err := config.Parse("config.yaml", out)
	var probs []config.Problem
	if err != nil {
		var ce *config.Error
		if !errors.As(err, &ce) {
			return config.Config{}, err
		}
		at := outputPaths(out)
		for _, p := range ce.Problems {
			if p.Path == "" {
				p.Path = at[p.Line]
			}
			probs = append(probs, p)
		}
	} else {
		probs = config.Validate(cfg, paths)
	}
	if len(probs) == 0 {
		return cfg, nil
	}
	var b strings.Builder
	b.WriteString("marina cannot take klimax's config as it is, so nothing was written; choose other values in klimax's file (or write marina's config yourself) and run marina migrate again:")
	for _, p := range probs {
		b.WriteString("\n  ")
		b.WriteString(c.locate(p))
	}
	return config.Config{}, errors.New(b.String())
}

// locate is p with the klimax key and line it comes from.
func (c *conv) locate(p config.Problem) string {
	if p.Path == "" {
		return p.Msg
	}
	if o, ok := c.origin[p.Path]; ok && o.line > 0 {
		return fmt.Sprintf("line %d: %s: %s", o.line, o.path, p.Msg)
	}
	for q := p.Path; ; {
		i := strings.LastIndexAny(q, ".[")
		if i < 0 {
			break
		}
		q = q[:i]
		if o, ok := c.origin[q]; ok && o.line > 0 {
			return fmt.Sprintf("line %d (%s): %s: %s", o.line, o.path, p.Path, p.Msg)
		}
	}
	return fmt.Sprintf("%s (not set in klimax's file: marina's default): %s", p.Path, p.Msg)
}

// outputPaths maps each line of marina's file that sets a key to its
// path, for the loader's problems that carry only a line.
func outputPaths(out []byte) map[int]string {
	at := map[int]string{}
	var doc yaml.Node
	if yaml.Unmarshal(out, &doc) != nil || len(doc.Content) == 0 {
		return at
	}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := join(path, n.Content[i].Value)
				if _, ok := at[n.Content[i].Line]; !ok {
					at[n.Content[i].Line] = p
				}
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if _, ok := at[item.Line]; !ok {
					at[item.Line] = p
				}
				walk(item, p)
			}
		}
	}
	walk(doc.Content[0], "")
	return at
}
