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
// Entries that are not a network marina may route are dropped: the file
// is only a hint, never a reason to touch another route.
func LoadMade(path string) (*Made, error) {
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
		if CheckPrefix(r.CIDR) == nil && r.Gateway.Is4() {
			m.Routes = append(m.Routes, r)
		}
	}
	for _, r := range in.Resolvers {
		if resolverPath(r.Path) {
			m.Resolvers = append(m.Resolvers, r)
		}
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
	if len(m.Routes) == 0 && len(m.Resolvers) == 0 {
		if err := os.Remove(m.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return fileutil.WriteAtomic(m.path, append(b, '\n'), 0o600)
}
