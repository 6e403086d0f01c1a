package addons

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/ui"
)

// Where kubeadm (and so kind) keeps the cluster's CoreDNS configuration.
const (
	coreDNSNamespace  = "kube-system"
	coreDNSConfigMap  = "coredns"
	coreDNSDeployment = "coredns"
	corefileKey       = "Corefile"
)

// CorefileAnnotation, on CoreDNS's pod template, is the sha256 of the
// Corefile marina last wrote: a new Corefile changes it, and so rolls the
// pods, which then start with it.
const CorefileAnnotation = "marina.dev/corefile-sha256"

// The lines around the server blocks marina owns in a Corefile. Everything
// between them is rewritten on every run; everything outside is left as it
// is, byte for byte.
const (
	beginMarker = "# BEGIN marina: forwarding from kind.customDnsResolvers; edit the marina config, not this part"
	endMarker   = "# END marina"
)

// CoreDNS makes the cluster's CoreDNS forward each resolver entry's domain
// to its resolvers, in server blocks of their own in the Corefile of
// ConfigMap kube-system/coredns, next to kubeadm's ".:53" block, which is
// kept byte for byte. Running it again with the same list writes nothing; a
// different list replaces marina's blocks; an empty list removes them. The
// caller adds marina's own zone (demo.internal → the local DNS server) to
// the list like any other entry.
//
// Then it stamps CoreDNS's Deployment with the Corefile's digest
// (CorefileAnnotation), which rolls its pods when the Corefile changed; the
// caller waits for the rollout (CoreDNSWait). Left alone, CoreDNS would see
// the change only after the kubelet refreshed the mounted ConfigMap (up to
// a minute) and its reload plugin looked again (30 s): on the lab's real
// nodes, pods still could not resolve a forwarded name seconds after
// create had said the cluster was ready.
//
// The Corefile is changed with a plain update that carries the
// resourceVersion it was read at (retried on conflict), not with a
// server-side apply. The new text is computed from the old, so the write
// must fail if someone changed the Corefile in between, which is exactly
// what resourceVersion checks and what an apply with force would override.
// An update also leaves the field ownership as kubeadm expects it: kubeadm
// upgrade itself reads the ConfigMap and writes it back with an update
// (keeping or migrating a Corefile that is not its default), so marina holds
// no applied claim on data.Corefile that could later conflict with another
// tool's apply.
func CoreDNS(ctx context.Context, k *kube.Cluster, resolvers []config.DNSResolver) error {
	// Bad input fails here, before the cluster is touched.
	if _, err := serverBlocks(resolvers); err != nil {
		return err
	}
	var written string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := kube.Read[corev1.ConfigMap](ctx, k, kube.ConfigMaps, coreDNSNamespace, coreDNSConfigMap)
		if apierrors.IsNotFound(err) {
			return corefileErrorf("ConfigMap %s/%s does not exist: this cluster's DNS was not set up by kubeadm, so marina cannot add its forwarding; recreate the cluster with marina", coreDNSNamespace, coreDNSConfigMap)
		}
		if err != nil {
			return err
		}
		cur, ok := cm.Data[corefileKey]
		if !ok {
			return corefileErrorf("ConfigMap %s/%s has no %s key: this cluster's CoreDNS is not set up the way kubeadm sets it up, so marina cannot add its forwarding; recreate the cluster with marina", coreDNSNamespace, coreDNSConfigMap, corefileKey)
		}
		next, err := Corefile(cur, resolvers)
		if err != nil {
			return err
		}
		written = next
		if next == cur {
			return nil
		}
		cm.Data[corefileKey] = next
		return kube.Update(ctx, k, kube.ConfigMaps, coreDNSNamespace, cm, metav1.UpdateOptions{FieldManager: FieldManager})
	})
	if err != nil {
		var cerr *corefileError
		if errors.As(err, &cerr) {
			return err
		}
		return wrap(err, "update ConfigMap %s/%s", coreDNSNamespace, coreDNSConfigMap)
	}
	return rollCoreDNS(ctx, k, written)
}

// rollCoreDNS sets CorefileAnnotation on CoreDNS's pod template to the
// digest of corefile. The same digest patches nothing (no new generation,
// no restart), so a run that changed nothing restarts nothing, and a run
// that wrote the ConfigMap but stopped before this is finished by the next.
func rollCoreDNS(ctx context.Context, k *kube.Cluster, corefile string) error {
	sum := sha256.Sum256([]byte(corefile))
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, CorefileAnnotation, hex.EncodeToString(sum[:]))
	// A merge patch: the path is all maps, so it means what a strategic
	// one would.
	err := kube.Patch(ctx, k, kube.Deployments, coreDNSNamespace, coreDNSDeployment, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return corefileErrorf("Deployment %s/%s does not exist: this cluster's DNS was not set up by kubeadm, so its CoreDNS cannot be restarted with marina's forwarding; recreate the cluster with marina", coreDNSNamespace, coreDNSDeployment)
	}
	if err != nil {
		return wrap(err, "restart CoreDNS (patch Deployment %s/%s)", coreDNSNamespace, coreDNSDeployment)
	}
	return nil
}

// CoreDNSWait waits for CoreDNS's Deployment to run its current pod
// template everywhere: after CoreDNS, that is the Corefile marina wrote.
func CoreDNSWait() Wait { return DeploymentWait(coreDNSNamespace, coreDNSDeployment) }

// corefileError is a problem with the Corefile's text or marina's input,
// which no retry or permission fixes.
type corefileError struct{ msg string }

func (e *corefileError) Error() string { return e.msg }

func corefileErrorf(format string, args ...any) error {
	return &corefileError{fmt.Sprintf(format, args...)}
}

// Corefile returns existing with marina's server blocks set to resolvers:
// any earlier marina section is removed and, if resolvers is not empty, a
// new one is appended. The text outside marina's section is not changed,
// so Corefile(Corefile(x, r), nil) == x for a Corefile x marina never
// touched. It fails, and changes nothing, on an invalid domain or resolver
// address, on a damaged marina section, or when a domain already has a
// server block that marina did not write (CoreDNS would refuse to start
// with two).
func Corefile(existing string, resolvers []config.DNSResolver) (string, error) {
	blocks, err := serverBlocks(resolvers)
	if err != nil {
		return "", err
	}
	rest, err := removeSection(existing)
	if err != nil {
		return "", err
	}
	if len(blocks) == 0 {
		return rest, nil
	}
	taken := serverKeys(rest)
	var b strings.Builder
	b.WriteString(rest)
	// The section starts with its own newline, so that it starts on a
	// line of its own whatever rest ends with, and removing it (newline
	// included) gives rest back exactly.
	b.WriteString("\n" + beginMarker + "\n")
	for _, blk := range blocks {
		if taken[blk.domain] {
			return "", corefileErrorf("the Corefile in ConfigMap %s/%s already has a server block for %s:53 that marina did not write: remove that block (kubectl -n %s edit configmap %s) or drop %s from kind.customDnsResolvers",
				coreDNSNamespace, coreDNSConfigMap, blk.domain, coreDNSNamespace, coreDNSConfigMap, blk.domain)
		}
		fmt.Fprintf(&b, "%s:53 {\n    errors\n    cache 30\n    forward . %s\n}\n", blk.domain, strings.Join(blk.upstreams, " "))
	}
	b.WriteString(endMarker + "\n")
	return b.String(), nil
}

// removeSection cuts every marina section, with the newline before it,
// out of s.
func removeSection(s string) (string, error) {
	for {
		i := markerLine(s, beginMarker, 0)
		if i < 0 {
			if markerLine(s, endMarker, 0) >= 0 {
				return "", corefileErrorf("the Corefile in ConfigMap %s/%s has marina's end line %q without its begin line: someone edited marina's section; restore or delete it (kubectl -n %s edit configmap %s) and run marina again",
					coreDNSNamespace, coreDNSConfigMap, endMarker, coreDNSNamespace, coreDNSConfigMap)
			}
			return s, nil
		}
		j := markerLine(s, endMarker, i+len(beginMarker))
		if j < 0 {
			return "", corefileErrorf("the Corefile in ConfigMap %s/%s has marina's begin line without its end line %q: someone edited marina's section; restore or delete it (kubectl -n %s edit configmap %s) and run marina again",
				coreDNSNamespace, coreDNSConfigMap, endMarker, coreDNSNamespace, coreDNSConfigMap)
		}
		end := j + len(endMarker)
		if end < len(s) && s[end] == '\n' {
			end++
		}
		start := i
		if start > 0 && s[start-1] == '\n' {
			start--
		}
		s = s[:start] + s[end:]
	}
}

// markerLine returns the index of the first line from 'from' on that is
// exactly marker, or -1.
func markerLine(s, marker string, from int) int {
	for from <= len(s) {
		k := strings.Index(s[from:], marker)
		if k < 0 {
			return -1
		}
		k += from
		end := k + len(marker)
		if (k == 0 || s[k-1] == '\n') && (end == len(s) || s[end] == '\n') {
			return k
		}
		from = k + 1
	}
	return -1
}

// serverKeys returns the zones that plain-DNS server blocks on port 53 of
// a Corefile serve, lower case without the final dot. It reads the
// Corefile's top level the way CoreDNS does: whitespace-separated tokens,
// comments from a # that starts a token, quoted strings, and braces that
// open and close blocks.
func serverKeys(corefile string) map[string]bool {
	keys := map[string]bool{}
	depth := 0
	var pending []string
	for _, tok := range tokens(corefile) {
		switch {
		case tok == "{":
			if depth == 0 {
				for _, k := range pending {
					if zone, ok := dnsZoneOn53(k); ok {
						keys[zone] = true
					}
				}
				pending = nil
			}
			depth++
		case tok == "}":
			if depth > 0 {
				depth--
			}
		case depth == 0:
			pending = append(pending, tok)
		}
	}
	return keys
}

// tokens splits a Corefile into tokens, dropping comments.
func tokens(s string) []string {
	var out []string
	var cur strings.Builder
	inTok, quoted, comment := false, false, false
	flush := func() {
		if inTok {
			out = append(out, cur.String())
		}
		cur.Reset()
		inTok = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
			}
		case quoted:
			if c == '\\' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else if c == '"' {
				quoted = false
			} else {
				cur.WriteByte(c)
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			flush()
		case c == '#' && !inTok:
			comment = true
		case c == '"' && !inTok:
			quoted, inTok = true, true
		default:
			cur.WriteByte(c)
			inTok = true
		}
	}
	flush()
	return out
}

// dnsZoneOn53 reads a server block key ("example.org", "example.org:53",
// "dns://example.org.:53") and returns its zone if it is served over plain
// DNS on port 53.
func dnsZoneOn53(key string) (string, bool) {
	k := strings.ToLower(key)
	if scheme, rest, ok := strings.Cut(k, "://"); ok {
		if scheme != "dns" {
			return "", false
		}
		k = rest
	}
	if i := strings.LastIndex(k, ":"); i >= 0 {
		if k[i+1:] != "53" {
			return "", false
		}
		k = k[:i]
	}
	return strings.TrimSuffix(k, "."), true
}

// serverBlock is one marina server block: a zone and where it forwards.
type serverBlock struct {
	domain    string
	upstreams []string
}

// serverBlocks validates resolver entries and turns them into server
// blocks: domains lower case without the final dot, upstreams as IP or
// IP:port in CoreDNS's spelling ([v6]:port).
func serverBlocks(resolvers []config.DNSResolver) ([]serverBlock, error) {
	seen := map[string]bool{}
	var out []serverBlock
	for i, r := range resolvers {
		where := fmt.Sprintf("kind.customDnsResolvers[%d]", i)
		d := strings.TrimSuffix(strings.ToLower(r.Domain), ".")
		if !config.IsDomain(d) {
			return nil, corefileErrorf("%s: %q is not a domain name: write it like corp.example.com in the marina config", where, r.Domain)
		}
		switch {
		case seen[d]:
			return nil, corefileErrorf("%s: %s is listed twice: merge the entries' resolvers in the marina config", where, d)
		case config.ClusterZone(d) != "":
			return nil, corefileErrorf("%s: %s %s: remove it from the marina config", where, d, config.ClusterZone(d))
		}
		seen[d] = true
		if len(r.Resolvers) == 0 {
			return nil, corefileErrorf("%s: no resolvers for %s: list at least one address, such as 10.0.0.53 or 10.0.0.53:5353", where, d)
		}
		if len(r.Resolvers) > config.MaxResolvers {
			return nil, corefileErrorf("%s: %d resolvers for %s, but CoreDNS forwards to at most %d: shorten the list", where, len(r.Resolvers), d, config.MaxResolvers)
		}
		ups := make([]string, 0, len(r.Resolvers))
		for j, a := range r.Resolvers {
			u, err := config.ResolverAddr(a)
			if err != nil {
				return nil, corefileErrorf("%s.resolvers[%d]: %q %v: write an IP address or IP:port, such as 10.0.0.53 or [fd00::53]:5353", where, j, a, err)
			}
			ups = append(ups, u)
		}
		out = append(out, serverBlock{domain: d, upstreams: ups})
	}
	return out, nil
}

// coreDNS is the CoreDNS edit: marina's zone and customDnsResolvers
// forwarded, so that pods resolve the names too.
type coreDNS struct {
	forwards []config.DNSResolver
	wait     time.Duration
}

// NewCoreDNS is the CoreDNS edit that forwards forwards' domains.
func NewCoreDNS(forwards []config.DNSResolver, wait time.Duration) Addon {
	return coreDNS{forwards: forwards, wait: wait}
}

func (d coreDNS) Name() string { return "CoreDNS" }

func (d coreDNS) What() string { return "configuring CoreDNS" }

func (d coreDNS) Plan() string {
	var ds []string
	for _, r := range d.forwards {
		ds = append(ds, r.Domain+" → "+strings.Join(r.Resolvers, " "))
	}
	return "forward from CoreDNS: " + strings.Join(ds, ", ")
}

func (d coreDNS) Steps() ([]Step, error) {
	return []Step{
		// kubeadm makes CoreDNS's ConfigMap at the end of its init, and
		// its pods run once the nodes are Ready: nothing is gained by
		// starting before every node has joined.
		{Label: fmt.Sprintf("Forwarding %s from CoreDNS", ui.Plural(len(d.forwards), "domain")), What: d.What(), Nodes: true, Run: func(ctx context.Context, c Cluster) error {
			return within(ctx, time.Minute, func(ctx context.Context) error {
				return c.Do(ctx, Op{Name: "coredns", Run: func(ctx context.Context, k *kube.Cluster) error {
					return CoreDNS(ctx, k, d.forwards)
				}})
			})
		}},
		// Until its pods have rolled, CoreDNS answers with the old Corefile.
		{Label: "Waiting for CoreDNS to serve it", What: d.What(), Run: func(ctx context.Context, c Cluster) error {
			return within(ctx, d.wait, func(ctx context.Context) error { return c.Wait(ctx, CoreDNSWait()) })
		}},
	}, nil
}
