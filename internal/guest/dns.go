package guest

import (
	"fmt"
	"path"
	"regexp"
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

// dnsObserve prints the sha256 of marina-dns's Corefile, the etcd
// container whose authentication marina set up (EtcdAuth), and every
// cluster's addons record as "<cluster> <record>".
const dnsObserve = `echo "@@ dns"
if [ -n "${sum[` + dns.CorefilePath + `]:-}" ]; then echo "${sum[` + dns.CorefilePath + `]}  ` + dns.CorefilePath + `"; fi
echo "@@ etcd-auth"
if [ -f ` + etcdAuthFile + ` ]; then l=; IFS= read -r -n 100 l < ` + etcdAuthFile + `; printf '%s\n' "$l"; fi
echo "@@ addons"
for f in ` + ClustersDir + `/*/` + addonsFile + `; do
	[ -f "$f" ] || continue
	d=${f%/*}; l=
	IFS= read -r -n 200 l < "$f"
	printf '%s %s\n' "${d##*/}" "$l"
done
`

// Addons is what one cluster's record says it carries.
type Addons struct {
	// DNS is the zone its ExternalDNS and CoreDNS block were set up for,
	// "" when it has neither (made before marina had local DNS).
	DNS string
	// Auth is whether its ExternalDNS logs in to etcd as its own user
	// (made before the local DNS's etcd had users when false).
	Auth bool
	// Registry is the push registry's name its nodes and its
	// local-registry-hosting ConfigMap know ("" for none).
	Registry string
}

// Record is the addons record that says a.
func (a Addons) Record() string {
	var f []string
	if a.DNS != "" {
		f = append(f, "dns="+a.DNS)
	}
	if a.Auth {
		f = append(f, "dnsauth=1")
	}
	if a.Registry != "" {
		f = append(f, "registry="+a.Registry)
	}
	return strings.Join(f, " ")
}

// DNSRecord is the addons record of a cluster with local DNS for domain,
// its ExternalDNS logging in as its own etcd user, and the push registry
// reg ("" for none).
func DNSRecord(domain, reg string) string {
	return Addons{DNS: domain, Auth: true, Registry: reg}.Record()
}

// registryHost is the form of a push registry's name: localhost:PORT.
var registryHost = regexp.MustCompile(`^localhost:[0-9]{1,5}$`)

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
			if f == "dnsauth=1" {
				a.Auth = true
			}
			if v, ok := strings.CutPrefix(f, "registry="); ok && registryHost.MatchString(v) {
				a.Registry = v
			}
		}
		out[name] = a
	}
	return out
}

// DNSApply adds to b what writes marina-dns's Corefile into the VM,
// readable by the user the container runs as alone: it holds marina-dns's
// etcd password.
func DNSApply(b *Batch, specs []dns.Spec) error {
	for _, s := range specs {
		if s.FilePath == "" {
			continue
		}
		if !userRe.MatchString(s.User) {
			return fmt.Errorf("refusing to give %s to %q: not a numeric user:group (a marina bug)", s.FilePath, s.User)
		}
		b.Sh("install -d -m 0755 " + run.ShellQuote(path.Dir(s.FilePath)))
		if err := b.Put(File{Path: s.FilePath, Mode: "0600", Content: s.File}, ""); err != nil {
			return err
		}
		b.Sh("chown " + run.ShellQuote(s.User) + " " + run.ShellQuote(s.FilePath))
	}
	return nil
}

var userRe = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)

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
