package guest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/bcollard/marina/internal/dns"
)

// marina-dns's answers, from the real CoreDNS and etcd the lab builds (the
// test skips without them), with the Corefile marina writes: a name's TTL,
// and the negative TTL of a name or type that does not exist, which RFC
// 2308 makes the lesser of the SOA record's TTL and its MINIMUM field.
// Both are dns.TTL (10 s): what marina can influence of how long a resolver
// keeps an answer. macOS's mDNSResponder keeps a found name at least 15 s
// and a missing one at least 60 s whatever the zone says (mDNSResponder
// 2600, mDNSCore/DNSCommon.c GetEffectiveTTL and mDNSCore/mDNS.c
// mDNSCoreReceiveNoUnicastAnswers): a zone can only make that longer, and
// marina's does not.
func TestMarinaDNSTTLsAgainstRealCoreDNS(t *testing.T) {
	l := authedEtcd(t)
	coredns := filepath.Join(labCache(), "bin", "coredns")
	if _, err := os.Stat(coredns); err != nil {
		t.Skipf("%s is not built (lab/lab up builds it): %v", coredns, err)
	}
	const domain = "demo.internal"
	c := etcdClient{t: t, url: l.url}
	key := dns.KeyPrefix("dev."+domain) + "shop/web/1a2b3c4d"
	if err := c.put(c.login(l.dev.Creds), key, `{"host":"172.30.1.1","targetstrip":1}`); err != nil {
		t.Fatal(err)
	}

	// The Corefile as marina writes it, on a free loopback port and with
	// the test's etcd: nothing else changed.
	port := freePort(t)
	file := dns.Corefile(domain, l.etcd.Addr, l.pw.Reader())
	file = strings.Replace(file, domain+":53 {", fmt.Sprintf("%s:%d {\n    bind 127.0.0.1", domain, port), 1)
	file = strings.Replace(file, dns.EtcdURL(l.etcd.Addr), l.url, 1)
	conf := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(conf, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, coredns, "-conf", conf)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	server := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	ask := func(name string, qtype uint16) *mdns.Msg {
		t.Helper()
		m := new(mdns.Msg)
		m.SetQuestion(mdns.Fqdn(name), qtype)
		for deadline := time.Now().Add(20 * time.Second); ; {
			r, _, err := (&mdns.Client{Timeout: time.Second}).Exchange(m, server)
			if err == nil {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v\n%s", name, err, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	r := ask("web.shop.dev."+domain, mdns.TypeA)
	if r.Rcode != mdns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].Header().Ttl != dns.TTL {
		t.Errorf("a name's answer: %v", r)
	}
	for _, q := range []struct {
		name  string
		qtype uint16
		rcode int
	}{
		{"nope.shop.dev." + domain, mdns.TypeA, mdns.RcodeNameError},
		{"web.shop.dev." + domain, mdns.TypeAAAA, mdns.RcodeSuccess}, // the name, not the type
	} {
		r := ask(q.name, q.qtype)
		if r.Rcode != q.rcode || len(r.Answer) != 0 || len(r.Ns) != 1 {
			t.Errorf("%s %s: %v", q.name, mdns.TypeToString[q.qtype], r)
			continue
		}
		soa, ok := r.Ns[0].(*mdns.SOA)
		if !ok {
			t.Errorf("%s: no SOA in the authority section: %v", q.name, r)
			continue
		}
		if neg := min(soa.Hdr.Ttl, soa.Minttl); neg != dns.TTL {
			t.Errorf("%s %s: negative TTL %d (SOA TTL %d, MINIMUM %d), want %d", q.name, mdns.TypeToString[q.qtype], neg, soa.Hdr.Ttl, soa.Minttl, dns.TTL)
		}
		t.Logf("MEASURE %s %s: SOA TTL %d, MINIMUM %d: negative TTL %d s", q.name, mdns.TypeToString[q.qtype], soa.Hdr.Ttl, soa.Minttl, min(soa.Hdr.Ttl, soa.Minttl))
	}
}
