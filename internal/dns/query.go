package dns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	mdns "github.com/miekg/dns"
)

// Answer is what a server said to one query.
type Answer struct {
	Rcode string       // NOERROR, NXDOMAIN, REFUSED, SERVFAIL…
	Addrs []netip.Addr // the A records
}

// Query asks server for name's A records over UDP, or TCP when tcp.
func Query(ctx context.Context, server netip.Addr, name string, tcp bool) (Answer, error) {
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), mdns.TypeA)
	c := &mdns.Client{Net: "udp", Timeout: 2 * time.Second}
	if tcp {
		c.Net = "tcp"
	}
	if d, ok := ctx.Deadline(); ok {
		c.Timeout = time.Until(d)
	}
	r, _, err := c.ExchangeContext(ctx, m, net.JoinHostPort(server.String(), strconv.Itoa(53)))
	if err != nil {
		return Answer{}, fmt.Errorf("ask %s for %s: %w", server, name, err)
	}
	a := Answer{Rcode: mdns.RcodeToString[r.Rcode]}
	for _, rr := range r.Answer {
		if x, ok := rr.(*mdns.A); ok {
			if ip, ok := netip.AddrFromSlice(x.A); ok {
				a.Addrs = append(a.Addrs, ip.Unmap())
			}
		}
	}
	return a, nil
}

// ProbeName is the name status asks about: one that never exists, so
// that NXDOMAIN proves the server answers for the zone and read etcd.
func ProbeName(domain string) string { return "marina-probe." + domain }
