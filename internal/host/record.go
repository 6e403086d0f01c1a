package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/bcollard/marina/internal/fileutil"
)

// Made is what marina remembers of the host routes it added or changed:
// each network with the gateway it routed it through. A route is marina's
// to change or delete only when its gateway is recorded here (see
// Classify).
type Made struct {
	path   string
	Routes []MadeRoute `json:"routes"`
	// Resolvers are the resolver files marina wrote, with what it wrote:
	// a file is marina's to rewrite or remove only while it still holds
	// exactly that.
	Resolvers []MadeResolver `json:"resolvers,omitempty"`
	// Ignored are the records of what is not marina's own now (Own), as
	// read: kept in the file, never acted on, and reported.
	Ignored []string `json:"-"`
	// kept are those records, written back as they were.
	keptRoutes    []MadeRoute
	keptResolvers []MadeResolver
}

// Own is what on the host a record can make marina's to change or
// delete: the networks marina routes (network.cidr; ranges marina routes
// itself would join it), its resolver file for dns.domain, and, for files
// of an earlier dns.domain, what marina writes in a resolver file (their
// recorded content must be that). A record of anything else — a VPN's
// 10.0.0.0/8, its resolver file — is never acted on, whatever the file
// says.
type Own struct {
	Networks []netip.Prefix
	Resolver string
	// ResolverContent is the file marina writes for dns.domain now; an
	// earlier domain's counts when its recorded content is the same.
	ResolverContent string
}

// MadeResolver is one resolver file marina wrote.
type MadeResolver struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// MadeRoute is one route marina added.
type MadeRoute struct {
	CIDR    netip.Prefix `json:"cidr"`
	Gateway netip.Addr   `json:"gateway"`
}

// LoadMade reads the record at path; a missing file is an empty record.
// Only entries for what own says is marina's count: the file is only a
// hint, never a reason to touch another route or file. The others are
// kept in the file as they were and listed in Ignored.
func LoadMade(path string, own Own) (*Made, error) {
	m := &Made{path: path}
	b, err := fileutil.ReadRegular(path, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	var in Made
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("read %s: %w (remove it: marina then leaves every existing route alone, and records the next one it adds)", path, err)
	}
	for _, r := range in.Routes {
		if CheckPrefix(r.CIDR) == nil && r.Gateway.Is4() && slices.Contains(own.Networks, r.CIDR) {
			m.Routes = append(m.Routes, r)
			continue
		}
		m.keptRoutes = append(m.keptRoutes, r)
		m.Ignored = append(m.Ignored, fmt.Sprintf("a route to %s via %s", r.CIDR, r.Gateway))
	}
	for _, r := range in.Resolvers {
		if resolverPath(r.Path) && (r.Path == own.Resolver || (own.ResolverContent != "" && r.Content == own.ResolverContent)) {
			m.Resolvers = append(m.Resolvers, r)
			continue
		}
		m.keptResolvers = append(m.keptResolvers, r)
		m.Ignored = append(m.Ignored, fmt.Sprintf("the resolver file %q", r.Path))
	}
	return m, nil
}

// Gateways are the gateways marina routed p through.
func (m *Made) Gateways(p netip.Prefix) []netip.Addr {
	var out []netip.Addr
	for _, r := range m.Routes {
		if r.CIDR == p {
			out = append(out, r.Gateway)
		}
	}
	return out
}

// Networks are the networks marina routed.
func (m *Made) Networks() []netip.Prefix {
	var out []netip.Prefix
	for _, r := range m.Routes {
		if !slices.Contains(out, r.CIDR) {
			out = append(out, r.CIDR)
		}
	}
	return out
}

// Add records p through gw (replacing what was recorded for p) and saves.
func (m *Made) Add(p netip.Prefix, gw netip.Addr) error {
	if slices.Equal(m.Gateways(p), []netip.Addr{gw}) {
		return nil
	}
	m.drop(p)
	m.Routes = append(m.Routes, MadeRoute{CIDR: p, Gateway: gw})
	return m.save()
}

// Forget drops p from the record and saves.
func (m *Made) Forget(p netip.Prefix) error {
	if len(m.Gateways(p)) == 0 {
		return nil
	}
	m.drop(p)
	return m.save()
}

func (m *Made) drop(p netip.Prefix) {
	m.Routes = slices.DeleteFunc(m.Routes, func(r MadeRoute) bool { return r.CIDR == p })
}

// Wrote records the resolver file path with content, and saves.
func (m *Made) Wrote(path, content string) error {
	m.Resolvers = slices.DeleteFunc(m.Resolvers, func(r MadeResolver) bool { return r.Path == path })
	m.Resolvers = append(m.Resolvers, MadeResolver{Path: path, Content: content})
	return m.save()
}

// Removed forgets the resolver file path, and saves.
func (m *Made) Removed(path string) error {
	n := len(m.Resolvers)
	m.Resolvers = slices.DeleteFunc(m.Resolvers, func(r MadeResolver) bool { return r.Path == path })
	if len(m.Resolvers) == n {
		return nil
	}
	return m.save()
}

// wrote is what marina wrote to path, and whether it did.
func (m *Made) wrote(path string) (string, bool) {
	for _, r := range m.Resolvers {
		if r.Path == path {
			return r.Content, true
		}
	}
	return "", false
}

func (m *Made) save() error {
	out := Made{Routes: append(slices.Clone(m.Routes), m.keptRoutes...), Resolvers: append(slices.Clone(m.Resolvers), m.keptResolvers...)}
	if len(out.Routes) == 0 && len(out.Resolvers) == 0 {
		if err := os.Remove(m.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return fileutil.WriteAtomic(m.path, append(b, '\n'), 0o600)
}
