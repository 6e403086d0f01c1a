package status

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/session"
)

// DNSStatus is the local DNS section (running VM, valid config).
type DNSStatus struct {
	Domain string `json:"domain"`
	// Resolver is the host's resolver file: present, missing, stale or
	// foreign.
	Resolver     string `json:"resolver"`
	ResolverPath string `json:"resolverPath"`
	// Note says what is wrong with the resolver file, and what to do.
	Note       string          `json:"note,omitempty"`
	Containers []DNSContainer  `json:"containers"`
	Lookup     DNSLookupStatus `json:"lookup"`
	OK         bool            `json:"ok"`
}

// DNSContainer is one of the two DNS containers.
type DNSContainer struct {
	Name  string `json:"name"`
	IP    string `json:"ip"`
	State string `json:"state"` // running, exited… or missing
}

// DNSLookupStatus is one real query from this host to the DNS server, for
// a name that never exists: NXDOMAIN means it answers for the zone and
// read etcd.
type DNSLookupStatus struct {
	Server string `json:"server"`
	Name   string `json:"name"`
	Rcode  string `json:"rcode,omitempty"`
	Error  string `json:"error,omitempty"`
}

// DNSSection fills s.DNS from the observation and one lookup.
func (s *Status) DNSSection(ctx context.Context, ses *session.Session, o *session.Observed, cidr netip.Prefix, made MadeRecord) {
	cfg := ses.File.Config
	etcd, server := dns.Addrs(cidr)
	d := &DNSStatus{Domain: cfg.DNS.Domain}
	r, err := session.ReadResolver(cfg, made.Made)
	if made.Err != nil {
		err = made.Err
	}
	if err != nil {
		d.Resolver, d.Note = "unknown", err.Error()
	} else {
		d.Resolver, d.ResolverPath = string(r.State), r.Path
		if r.State != host.ResolverOK {
			d.Note = r.String()
		}
	}
	byName := map[string]string{}
	for _, c := range o.DNS {
		byName[c.Name] = c.State
	}
	for _, c := range []DNSContainer{{Name: dns.EtcdName, IP: etcd.String()}, {Name: dns.ServerName, IP: server.String()}} {
		c.State = byName[c.Name]
		if c.State == "" {
			c.State = "missing"
		}
		d.Containers = append(d.Containers, c)
	}
	d.Lookup = DNSLookupStatus{Server: server.String(), Name: dns.ProbeName(cfg.DNS.Domain)}
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if a, err := ses.Host.Query(qctx, server, d.Lookup.Name); err != nil {
		d.Lookup.Error = err.Error()
	} else {
		d.Lookup.Rcode = a.Rcode
	}
	d.OK = d.Resolver == string(host.ResolverOK) && d.Lookup.Rcode == "NXDOMAIN"
	for _, c := range d.Containers {
		d.OK = d.OK && c.State == "running"
	}
	s.DNS = d
}

// Line is the lookup as status prints it.
func (l DNSLookupStatus) Line() string {
	if l.Error != "" {
		return fmt.Sprintf("lookup of %s at %s failed: %s", l.Name, l.Server, l.Error)
	}
	return fmt.Sprintf("lookup of %s at %s: %s", l.Name, l.Server, l.Rcode)
}
