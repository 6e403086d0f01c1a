// Package dns is marina's local DNS: the zone servers in the VM (an etcd
// and a CoreDNS reading it), the ExternalDNS every cluster runs to publish
// its LoadBalancer Services there, the Mac's resolver file, and reading
// the records back.
//
// A Service web in namespace shop of cluster dev answers as
// web.shop.dev.<domain>. ExternalDNS's coredns provider writes it to etcd
// under /skydns/<domain labels reversed>/dev/shop/web/<8 hex digits>, and
// CoreDNS's etcd plugin serves it from there.
package dns

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/bcollard/marina/internal/config"
)

// The containers of the local DNS and the labels they carry.
const (
	EtcdName   = "marina-dns-etcd"
	ServerName = "marina-dns"
	// LabelRole marks marina's DNS containers: etcd or server.
	LabelRole = "dev.marina.dns"
	// LabelConfig is the keyed digest of a container's settings.
	LabelConfig = "dev.marina.config"

	// Prefix is where ExternalDNS and CoreDNS keep records in etcd.
	Prefix = "/skydns/"
	// EtcdPort is etcd's client port; its peer port is never published.
	EtcdPort = 2379

	// ConfigDir holds marina-dns's Corefile in the VM.
	ConfigDir = "/etc/marina/dns"
	// CorefilePath is the Corefile in the VM.
	CorefilePath = ConfigDir + "/Corefile"
	// corefileIn is where the container reads it.
	corefileIn = "/etc/coredns/Corefile"
	// ServerUser is the user marina-dns runs as: the official image's
	// nonroot user, named here so that the lab's image (which has no USER)
	// runs as it too, and the Corefile, which holds marina-dns's etcd
	// password, can be readable by it alone (Docker lets a container's
	// unprivileged user bind port 53).
	ServerUser = "65532:65532"

	// TTL is the TTL of every answer: short, so that a Service deleted or
	// given another address is not answered from the Mac's cache for
	// long (the etcd plugin's own default is 300 s).
	TTL = 10
)

// Roles of the two containers.
const (
	RoleEtcd   = "etcd"
	RoleServer = "server"
)

// Addrs are the fixed addresses of etcd (<a.b>.255.52) and the DNS server
// (<a.b>.255.53) in the kind network cidr: outside Docker's dynamic range
// and every cluster's slot.
func Addrs(cidr netip.Prefix) (etcd, server netip.Addr) {
	a := cidr.Masked().Addr().As4()
	return netip.AddrFrom4([4]byte{a[0], a[1], 255, 52}), netip.AddrFrom4([4]byte{a[0], a[1], 255, 53})
}

// EtcdURL is the URL ExternalDNS and CoreDNS reach etcd at.
func EtcdURL(etcd netip.Addr) string { return fmt.Sprintf("http://%s:%d", etcd, EtcdPort) }

// Spec is one DNS container.
type Spec struct {
	Role  string
	Name  string
	Image string
	IP    netip.Addr
	Cmd   []string
	Binds []string
	// User is the user:group it runs as, "" for the image's.
	User string
	// File is the config file the container reads (the Corefile), "" for
	// none; FilePath is where it lives in the VM, owned by User, mode 0600.
	File, FilePath string
	// Digest is keyed by the label key: the container's label.
	Digest string
}

// FileSum is the sha256 of the spec's file, as sha256sum prints it.
func (s Spec) FileSum() string {
	sum := sha256.Sum256([]byte(s.File))
	return hex.EncodeToString(sum[:])
}

// Specs are the two containers for the config.
func Specs(cfg config.Config, key []byte) ([]Spec, error) {
	cidr, err := parseCIDR(cfg.Network.CIDR)
	if err != nil {
		return nil, err
	}
	if !config.IsDomain(cfg.DNS.Domain) {
		return nil, fmt.Errorf("dns.domain %q is not a domain name", cfg.DNS.Domain)
	}
	pw, err := NewPasswords(key)
	if err != nil {
		return nil, err
	}
	etcd, server := Addrs(cidr)
	specs := []Spec{
		{
			Role: RoleEtcd, Name: EtcdName, Image: cfg.DNS.Etcd(), IP: etcd,
			// One member, data in the container (ExternalDNS writes every
			// record again within a minute of losing them). It listens on
			// the kind network only; the VM's rules keep the Mac out.
			Cmd: []string{"/usr/local/bin/etcd", "--name", EtcdName, "--data-dir", "/var/lib/etcd/data",
				"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", EtcdURL(etcd),
				"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
				"--initial-cluster", EtcdName + "=http://127.0.0.1:2380", "--log-level", "warn"},
		},
		{
			Role: RoleServer, Name: ServerName, Image: cfg.DNS.CoreDNS(), IP: server,
			Cmd:   []string{"-conf", corefileIn},
			Binds: []string{CorefilePath + ":" + corefileIn + ":ro"},
			User:  ServerUser,
			File:  Corefile(cfg.DNS.Domain, etcd, pw.Reader()), FilePath: CorefilePath,
		},
	}
	for i := range specs {
		s := &specs[i]
		mac := hmac.New(sha256.New, key)
		fmt.Fprintf(mac, "image=%s\nip=%s\ncmd=%q\nbinds=%q\nuser=%s\nfile=%s\n", s.Image, s.IP, s.Cmd, s.Binds, s.User, s.File)
		s.Digest = hex.EncodeToString(mac.Sum(nil))
	}
	return specs, nil
}

// Corefile is marina-dns's configuration: domain from etcd, read as
// reader, and nothing else. A query for any other name matches no server
// block, and CoreDNS answers it REFUSED: no recursion, not an open
// resolver.
func Corefile(domain string, etcd netip.Addr, reader Creds) string {
	return fmt.Sprintf(`%s:53 {
    errors
    etcd {
        path %s
        endpoint %s
        credentials %s %s
    }
    rewrite stop ttl suffix %s. 0-%d
}
`, domain, strings.TrimSuffix(Prefix, "/"), EtcdURL(etcd), reader.User, reader.Password, domain, TTL)
}

// ResolverFile is the content of the Mac's /etc/resolver/<domain>.
func ResolverFile(server netip.Addr) string {
	return "# Written by marina: names under this domain are answered by marina's local DNS in its VM.\nnameserver " + server.String() + "\n"
}

// ClusterZone is the zone a cluster's ExternalDNS writes to.
func ClusterZone(cluster, domain string) string { return cluster + "." + domain }

// KeyPrefix is the etcd key prefix of every record of name and below it,
// slash-terminated: /skydns/internal/demo/dev/ for dev.demo.internal.
func KeyPrefix(name string) string {
	labels := strings.Split(name, ".")
	slices.Reverse(labels)
	return Prefix + strings.Join(labels, "/") + "/"
}

// RangeEnd is etcd's range end for every key that starts with prefix.
func RangeEnd(prefix string) string {
	b := []byte(prefix)
	b[len(b)-1]++ // prefixes end in "/"; "/"+1 is "0", no carry
	return string(b)
}

func parseCIDR(s string) (netip.Prefix, error) {
	cidr, err := netip.ParsePrefix(s)
	if err != nil || !cidr.Addr().Is4() || cidr.Bits() > 16 {
		return netip.Prefix{}, fmt.Errorf("network.cidr %q is not an IPv4 /16 network", s)
	}
	return cidr, nil
}
