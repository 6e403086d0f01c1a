package guest

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"path"
	"sort"
	"strings"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/run"
)

// addonsFile records, in a cluster's folder in the VM, which of marina's
// addons the cluster carries, so that marina up adds what a cluster made
// by an older marina lacks, once.
const addonsFile = "addons"

// dnsObserve prints the sha256 of marina-dns's Corefile, and every
// cluster's addons record as "<cluster> <record>".
const dnsObserve = `echo "@@ dns"
if [ -f ` + dns.CorefilePath + ` ]; then sha256sum ` + dns.CorefilePath + `; fi
echo "@@ addons"
for f in ` + ClustersDir + `/*/` + addonsFile + `; do
	[ -f "$f" ] || continue
	printf '%s %s\n' "$(basename "$(dirname "$f")")" "$(head -c 200 "$f" | head -n 1)"
done
`

// Addons is what one cluster's record says it carries.
type Addons struct {
	// DNS is the zone its ExternalDNS and CoreDNS block were set up for,
	// "" when it has neither (made before marina had local DNS).
	DNS string
}

// DNSRecord is the addons record of a cluster with local DNS for domain.
func DNSRecord(domain string) string { return "dns=" + domain }

// parseAddons reads the "@@ addons" section: clusters whose folder holds a
// record, with what it says. A name that is no cluster name is skipped
// (it came back from the VM).
func parseAddons(sec string) map[string]Addons {
	out := map[string]Addons{}
	for _, line := range strings.Split(sec, "\n") {
		name, rec, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || cluster.CheckName(name) != nil {
			continue
		}
		var a Addons
		for _, f := range strings.Fields(rec) {
			if v, ok := strings.CutPrefix(f, "dns="); ok && config.IsDomain(v) {
				a.DNS = v
			}
		}
		out[name] = a
	}
	return out
}

// DNSApply adds to b what writes marina-dns's Corefile into the VM (world
// readable: the container reads it; it holds no secret).
func DNSApply(b *Batch, specs []dns.Spec) error {
	for _, s := range specs {
		if s.FilePath == "" {
			continue
		}
		b.Sh("install -d -m 0755 " + run.ShellQuote(path.Dir(s.FilePath)))
		if err := b.Put(File{Path: s.FilePath, Mode: "0644", Content: s.File}, ""); err != nil {
			return err
		}
	}
	return nil
}

// AddonsRecordApply adds to b what writes each cluster's addons record.
func AddonsRecordApply(b *Batch, records map[string]string) error {
	names := make([]string, 0, len(records))
	for n := range records {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		dir, err := ClusterDir(n)
		if err != nil {
			return err
		}
		// Only a cluster whose folder is there: one deleted meanwhile
		// gets no new folder.
		b.Sh(fmt.Sprintf("if [ -d %[1]s ]; then printf '%%s\\n' %[2]s >%[1]s/%[3]s; fi", run.ShellQuote(dir), run.ShellQuote(records[n]), addonsFile))
	}
	return nil
}

// etcdRequest is the shell that sends one JSON request to etcd's gateway
// at etcd from the VM (the one place besides the kind network that reaches
// it); keys travel base64-encoded, as the gateway wants them.
func etcdRequest(etcd netip.Addr, op, prefix string) string {
	body := fmt.Sprintf(`{"key":"%s","range_end":"%s"}`,
		base64.StdEncoding.EncodeToString([]byte(prefix)), base64.StdEncoding.EncodeToString([]byte(dns.RangeEnd(prefix))))
	return fmt.Sprintf("curl -fsS --max-time 10 -X POST -H 'Content-Type: application/json' --data-binary %s %s",
		run.ShellQuote(body), run.ShellQuote(dns.EtcdURL(etcd)+"/v3/kv/"+op))
}

// DNSForget is the script part that removes every record under each zone
// from etcd, printing "@@ dns-forget <zone> ok|failed" per zone: a
// cluster's ExternalDNS dies with it and cannot clean up. It never fails
// the script (a VM whose local DNS is not running has nothing to forget).
// A zone that is no domain name is refused.
func DNSForget(etcd netip.Addr, zones []string) (string, error) {
	var b strings.Builder
	for _, z := range zones {
		if !config.IsDomain(z) {
			return "", fmt.Errorf("%q is not a DNS zone", z)
		}
		q := run.ShellQuote("@@ dns-forget " + z)
		fmt.Fprintf(&b, "if %s >/dev/null 2>&1; then echo %s ok; else echo %s failed; fi\n", etcdRequest(etcd, "deleterange", dns.KeyPrefix(z)), q, q)
	}
	return b.String(), nil
}

// ParseForget reads DNSForget's output: the zones it could not clean.
func ParseForget(out string) []string {
	var failed []string
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "@@ dns-forget ")
		if z, st, _ := strings.Cut(rest, " "); ok && st == "failed" {
			failed = append(failed, z)
		}
	}
	return failed
}

// DNSRecords is the script that prints etcd's JSON answer for every record
// under domain.
func DNSRecords(etcd netip.Addr, domain string) (string, error) {
	if !config.IsDomain(domain) {
		return "", fmt.Errorf("%q is not a DNS zone", domain)
	}
	return "set -eu -o pipefail\n" + etcdRequest(etcd, "range", dns.KeyPrefix(domain)) + "\n", nil
}
