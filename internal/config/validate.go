package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/slot"
)

// macOS limits unix socket paths to 104 bytes, the terminating NUL included.
const unixPathMax = 104

// limaLongestSock is the longest socket name Lima creates in an instance
// folder: ssh appends 16 characters to ssh.sock while it sets up a master.
const limaLongestSock = "ssh.sock.1234567890123456"

// Fixed address ranges a kind network must stay clear of.
var reserved = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("192.168.64.0/24"), "the macOS vzNAT range the VM's lima0 address comes from"},
	{netip.MustParsePrefix("192.168.5.0/24"), "Lima's user-mode network inside the VM"},
	{netip.MustParsePrefix("172.17.0.0/16"), "Docker's default bridge (docker0) inside the VM"},
}

var (
	dnsLabel    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	versionRe   = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
	mirrorNames = "a short lowercase name such as registry-quayio"
)

// Validate checks every value of c and returns every problem found, not
// only the first. paths is needed for the socket path limits.
func Validate(c Config, paths Paths) []Problem {
	var v validator
	v.vm(c.VM, paths)
	v.network(c.Network)
	v.kind(c.Kind, c.DNS.Domain)
	v.registries(c.Registries)
	v.dns(c.DNS)
	return v.probs
}

type validator struct{ probs []Problem }

func (v *validator) add(path, format string, args ...any) {
	v.probs = append(v.probs, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// vmName checks a VM name: a DNS label whose sockets fit macOS's limit.
func (v *validator) vmName(name string, paths Paths) {
	if !dnsLabel.MatchString(name) {
		v.add("vm.name", "%q is not a valid VM name: use lowercase letters, digits and '-', starting and ending with a letter or digit (at most 63 characters)", name)
		return
	}
	files, err := paths.VM(name)
	if err != nil {
		v.add("vm.name", "%v", err)
		return
	}
	if sock := files.DockerSocket; len(sock) >= unixPathMax {
		v.add("vm.name", "the Docker socket path %s is %d bytes, over macOS's limit of %d for unix sockets: choose a shorter vm.name", sock, len(sock), unixPathMax-1)
	}
	if sock := filepath.Join(files.InstanceDir, limaLongestSock); len(sock) >= unixPathMax {
		v.add("vm.name", "Lima's socket path %s would be %d bytes, over macOS's limit of %d for unix sockets: choose a shorter vm.name or a shorter MARINA_HOME", sock, len(sock), unixPathMax-1)
	}
}

func (v *validator) vm(vm VM, paths Paths) {
	v.vmName(vm.Name, paths)
	if vm.CPUs < 1 {
		v.add("vm.cpus", "must be at least 1, got %d", vm.CPUs)
	}
	v.size("vm.memory", vm.Memory, 2<<30, "2GiB")
	v.size("vm.disk", vm.Disk, 20<<30, "20GiB")
}

func (v *validator) size(path, val string, least int64, leastText string) {
	n, err := units.RAMInBytes(val)
	if err != nil || n <= 0 {
		v.add(path, "%q is not a size: write a number with a unit, such as 8GiB or 512MiB", val)
		return
	}
	if n < least {
		v.add(path, "%s is too small: at least %s is needed", val, leastText)
	}
}

func (v *validator) network(n Network) {
	p, err := netip.ParsePrefix(n.CIDR)
	switch {
	case err != nil:
		v.add("network.cidr", "%q is not a CIDR: write it like %s", n.CIDR, DefaultCIDR)
		return
	case !p.Addr().Is4():
		v.add("network.cidr", "%s is not IPv4: the kind network is IPv4 only", p)
		return
	case p != p.Masked():
		v.add("network.cidr", "%s has host bits set: did you mean %s?", p, p.Masked())
		return
	case p.Bits() != 16:
		v.add("network.cidr", "%s must be a /16: each cluster slot N takes the <a.b>.N.0/24 of it for its LoadBalancer pool, and <a.b>.255.0/24 holds marina's own services", p)
		return
	}
	// A /16 (checked above) with a private address is inside RFC 1918.
	if !p.Addr().IsPrivate() {
		v.add("network.cidr", "%s is not a private (RFC 1918) range: routing it to the VM would hide real internet addresses", p)
	}
	for _, r := range reserved {
		if r.prefix.Overlaps(p) {
			v.add("network.cidr", "%s overlaps %s (%s)", p, r.prefix, r.what)
		}
	}
	for _, r := range slot.Ranges() {
		if r.Prefix.Overlaps(p) {
			v.add("network.cidr", "%s overlaps %s, the service or pod range of cluster slot %d: choose a range outside 10.0.0.0/8, such as %s", p, r.Prefix, r.Slot, DefaultCIDR)
			return
		}
	}
}

func (v *validator) kind(k Kind, zone string) {
	versions := make([]string, 0, len(k.NodeImages))
	for ver := range k.NodeImages {
		versions = append(versions, ver)
	}
	sort.Strings(versions)
	for _, ver := range versions {
		if !versionRe.MatchString(ver) {
			v.add("kind.nodeImages", "%q is not a Kubernetes version: write it like %s", ver, DefaultNodeVersion)
		}
		if err := checkPinned(k.NodeImages[ver]); err != nil {
			v.add("kind.nodeImages."+ver, "%v", err)
		}
	}
	if _, err := k.NodeImage(k.NodeVersion); err != nil {
		v.add("kind.nodeVersion", "%v", err)
	}
	images := make([]string, 0, len(k.AddonImages))
	for from := range k.AddonImages {
		images = append(images, from)
	}
	sort.Strings(images)
	for _, from := range images {
		// Which images a manifest runs is the add-on package's to say
		// (cluster create checks it); the replacement is checked here.
		if err := checkPinned(k.AddonImages[from]); err != nil {
			v.add("kind.addonImages."+from, "%v", err)
		}
	}
	switch {
	case !versionRe.MatchString(k.MetalLBVersion):
		v.add("kind.metalLBVersion", "%q is not a MetalLB version: write it like %s", k.MetalLBVersion, DefaultMetalLBVersion)
	case !slices.Contains(MetalLBVersions, k.MetalLBVersion):
		v.add("kind.metalLBVersion", "MetalLB %s has no manifest digest pinned in this marina, which installs only what it can check: use one of %s (marina version lists them)", k.MetalLBVersion, strings.Join(MetalLBVersions, ", "))
	}
	seen := map[string]bool{}
	for i, r := range k.CustomDNSResolvers {
		path := fmt.Sprintf("kind.customDnsResolvers[%d]", i)
		d := strings.TrimSuffix(strings.ToLower(r.Domain), ".")
		switch {
		case !IsDomain(d):
			v.add(path+".domain", "%q is not a domain name: write it like corp.example.com", r.Domain)
		case seen[d]:
			v.add(path+".domain", "%s is listed twice: merge the entries' resolvers", d)
		case d == zone || strings.HasSuffix(d, "."+zone):
			v.add(path+".domain", "%s is inside marina's own zone %s, which the local DNS server answers", d, zone)
		default:
			if why := ClusterZone(d); why != "" {
				v.add(path+".domain", "%s %s", d, why)
			}
		}
		seen[d] = true
		switch n := len(r.Resolvers); {
		case n == 0:
			v.add(path+".resolvers", "list at least one resolver address for %s, such as 10.0.0.53 or 10.0.0.53:5353", r.Domain)
		case n > MaxResolvers:
			v.add(path+".resolvers", "%d resolvers for %s, but CoreDNS forwards to at most %d: shorten the list", n, r.Domain, MaxResolvers)
		}
		for j, a := range r.Resolvers {
			if _, err := ResolverAddr(a); err != nil {
				v.add(fmt.Sprintf("%s.resolvers[%d]", path, j), "%q %v: write an IP address or IP:port, such as 10.0.0.53 or [fd00::53]:5353", a, err)
			}
		}
	}
}

// MaxResolvers is the most upstreams CoreDNS's forward plugin takes in one
// forward line; it refuses to start with more.
const MaxResolvers = 15

// ClusterZone says why d, a domain in lower case, cannot be forwarded out
// of a cluster ("" when it can): the cluster's own DNS answers it.
func ClusterZone(d string) string {
	switch {
	case d == "cluster.local" || strings.HasSuffix(d, ".cluster.local"), d == "in-addr.arpa", d == "ip6.arpa":
		return "is answered by the cluster's own DNS (the kubernetes plugin); forwarding it elsewhere would break Service names"
	}
	return ""
}

// ResolverAddr checks one resolver address and spells it as CoreDNS does
// (IP, or IP:port with [v6]:port).
func ResolverAddr(a string) (string, error) {
	if ip, err := netip.ParseAddr(a); err == nil {
		if ip.Zone() != "" {
			return "", errors.New("has an IPv6 zone, which CoreDNS in a pod cannot use")
		}
		return ip.String(), nil
	}
	ap, err := netip.ParseAddrPort(a)
	switch {
	case err != nil:
		return "", errors.New("is not an IP address or IP:port")
	case ap.Addr().Zone() != "":
		return "", errors.New("has an IPv6 zone, which CoreDNS in a pod cannot use")
	case ap.Port() == 0:
		return "", errors.New("has port 0")
	}
	return ap.String(), nil
}

func (v *validator) registries(r Registries) {
	if r.CacheStorage != CacheHost && r.CacheStorage != CacheGuest {
		v.add("registries.cacheStorage", "%q is not a cache storage: use %q (on the Mac, survives destroy) or %q (on the VM's disk)", r.CacheStorage, CacheHost, CacheGuest)
	}
	if err := checkPinned(r.Image); err != nil {
		v.add("registries.image", "%v", err)
	}
	names := map[string]int{}
	ports := map[int]int{}
	for i, m := range r.Mirrors {
		path := fmt.Sprintf("registries.mirrors[%d]", i)
		if err := CheckMirrorName(m.Name); err != nil {
			v.add(path+".name", "%v", err)
		}
		if j, dup := names[m.Name]; dup && m.Name != "" {
			v.add(path+".name", "%q is also the name of registries.mirrors[%d]", m.Name, j)
		} else {
			names[m.Name] = i
		}
		switch {
		case m.Port < 1 || m.Port > 65535:
			v.add(path+".port", "%d is not a port (1–65535)", m.Port)
		case m.Port >= slot.APIPort(slot.Min) && m.Port <= slot.APIPort(slot.Max):
			v.add(path+".port", "%d is in %d–%d, the cluster API server ports", m.Port, slot.APIPort(slot.Min), slot.APIPort(slot.Max))
		case m.Port == 22 || m.Port == 53:
			v.add(path+".port", "%d is used by the VM itself (ssh or DNS)", m.Port)
		}
		if j, dup := ports[m.Port]; dup {
			v.add(path+".port", "%d is also the port of registries.mirrors[%d]", m.Port, j)
		} else {
			ports[m.Port] = i
		}
		v.remoteURL(path+".remoteURL", m.RemoteURL)
		if (m.Username == "") != (m.Password == "") {
			v.add(path, "set both username and password, or neither")
		}
	}
	// The push registry's port is published on the VM's loopback and
	// forwarded to the Mac's: it must be free on both.
	if p := r.Local.Port; r.Local.Enabled {
		switch {
		case p < 1024 || p > 65535:
			v.add("registries.local.port", "%d is not a port marina can publish (1024–65535)", p)
		case p >= slot.APIPort(slot.Min) && p <= slot.APIPort(slot.Max):
			v.add("registries.local.port", "%d is in %d–%d, the cluster API server ports", p, slot.APIPort(slot.Min), slot.APIPort(slot.Max))
		}
	}
}

// hostname is a host name of DNS labels (either case) or an IPv4 address.
var hostname = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// CheckMirrorName reports why name cannot name a mirror: its container,
// its config file and its cache folder are all named after it.
func CheckMirrorName(name string) error {
	switch {
	case strings.ContainsAny(name, ".:"):
		return fmt.Errorf("%q looks like a hostname: a container of that name on the kind network answers for that host itself through Docker's DNS, so the mirror would shadow its own upstream; use %s", name, mirrorNames)
	case !dnsLabel.MatchString(name):
		return fmt.Errorf("%q is not a valid mirror name: use %s", name, mirrorNames)
	case strings.HasPrefix(name, "marina-"):
		return fmt.Errorf("%q starts with marina-, which is kept for marina's own containers", name)
	}
	return nil
}

func (v *validator) remoteURL(path, raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		v.add(path, "%q is not a URL: write it like https://quay.io", RedactURL(raw))
		return
	}
	if u.User != nil {
		v.add(path, "%q carries credentials: put them in username and password instead", RedactURL(raw))
		return
	}
	if u.Scheme != "https" {
		v.add(path, "%q must use https", raw)
	}
	if err := CheckHostPort(u.Host); err != nil {
		v.add(path, "%q: %v", raw, err)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		v.add(path, "%q must be the registry's root with no path: one mirror serves one whole registry", raw)
	}
}

// CheckHostPort reports why hp is not host or host:port with a DNS host
// name or an IP address and a port from 1 to 65535. Registry hosts reach
// files and scripts in the VM; nothing else may.
func CheckHostPort(hp string) error {
	host, port := hp, ""
	if h, p, err := net.SplitHostPort(hp); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(hp, "[") || strings.Count(hp, ":") > 0 {
		return fmt.Errorf("%q is not a host name or host:port", hp)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("%q has an IPv6 zone", host)
		}
	} else if !hostname.MatchString(host) || len(host) > 253 {
		return fmt.Errorf("%q is not a host name: use letters, digits, '-' and '.'", host)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return fmt.Errorf("%q is not a port (1–65535)", port)
		}
	}
	return nil
}

// RedactURL is raw with any credentials masked, for messages: whatever
// comes before the last @ of the part that would name the host, found
// without parsing (a URL that does not parse, or has no scheme, as in
// "bot:hunter2@quay.io", may still carry a password).
func RedactURL(raw string) string {
	prefix, rest := "", raw
	if i := strings.Index(raw, "//"); i >= 0 {
		prefix, rest = raw[:i+2], raw[i+2:]
	}
	host := rest
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		host = rest[:j]
	}
	k := strings.LastIndex(host, "@")
	if k < 0 {
		return raw
	}
	if prefix == "" {
		return "…@" + rest[k+1:]
	}
	return prefix + "…@" + rest[k+1:]
}

func (v *validator) dns(d DNS) {
	name := d.Domain
	switch {
	case !IsDomain(name):
		v.add("dns.domain", "%q is not a domain name: write it like %s", name, DefaultDNSDomain)
	case ClusterZone(name) != "":
		v.add("dns.domain", "%s belongs to the clusters' own DNS: choose a name like %s", name, DefaultDNSDomain)
	case name == "local" || strings.HasSuffix(name, ".local"):
		v.add("dns.domain", "%s is under .local, which macOS resolves with multicast DNS: choose a name like %s", name, DefaultDNSDomain)
	}
	for _, img := range [][2]string{{"etcd", d.Images.Etcd}, {"coredns", d.Images.CoreDNS}, {"externalDNS", d.Images.ExternalDNS}} {
		if img[1] == "" {
			continue
		}
		if err := checkPinned(img[1]); err != nil {
			v.add("dns.images."+img[0], "%v", err)
		}
	}
}

// IsDomain reports whether s is a lowercase DNS name of one or more labels.
func IsDomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !dnsLabel.MatchString(l) {
			return false
		}
	}
	return true
}
