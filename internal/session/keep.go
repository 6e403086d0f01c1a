package session

// What marina keeps on the Mac that several commands read: the label key
// (mirror labels, the local DNS's passwords) and what marina's records
// may count as its own on the host.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/podnet"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/vm"
)

// LabelKey is the key of the mirrors' container label digests (an HMAC,
// so that a label cannot be forged to look current without it).
type LabelKey struct {
	Key   []byte
	Fresh bool // made now: save it before a container carries it
}

// LoadLabelKey reads the key, or makes a fresh one (kept only by Save):
// planning never writes.
func LoadLabelKey(p config.Paths) (LabelKey, error) {
	b, err := fileutil.ReadRegular(p.LabelKey(), 1<<10)
	if err == nil {
		if k, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil && len(k) == 32 {
			return LabelKey{Key: k}, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return LabelKey{}, fmt.Errorf("read %s: %w", p.LabelKey(), err)
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return LabelKey{}, err
	}
	return LabelKey{Key: k, Fresh: true}, nil
}

// Save writes a fresh key (0600).
func (k LabelKey) Save(p config.Paths) error {
	if !k.Fresh {
		return nil
	}
	return fileutil.WriteAtomic(p.LabelKey(), []byte(hex.EncodeToString(k.Key)+"\n"), 0o600)
}

// ReadResolver is the host's resolver file for cfg's zone.
func ReadResolver(cfg config.Config, made *host.Made) (host.Resolver, error) {
	cidr := cfg.Network.Prefix()
	if !cidr.IsValid() {
		return host.Resolver{}, fmt.Errorf("network.cidr %q is not a CIDR", cfg.Network.CIDR)
	}
	_, server := dns.Addrs(cidr)
	return host.ReadResolver(host.ResolverDir(), cfg.DNS.Domain, dns.ResolverFile(server), made)
}

// DNSEtcd is the local DNS's etcd as the VM's scripts reach it, with the
// passwords marina derives from its label key. ok is false when the key
// was never saved: marina up never ran the local DNS on this Mac, so its
// etcd, if any, is not one marina set up.
func DNSEtcd(cfg config.Config, p config.Paths) (e guest.Etcd, pw dns.Passwords, ok bool, err error) {
	key, err := LoadLabelKey(p)
	if err != nil || key.Fresh {
		return e, pw, false, err
	}
	if pw, err = dns.NewPasswords(key.Key); err != nil {
		return e, pw, false, err
	}
	addr, _ := dns.Addrs(cfg.Network.Prefix())
	return guest.Etcd{Addr: addr, Root: pw.Root()}, pw, true, nil
}

// HostOwn is what on the host marina's records may make marina's to
// change or delete, for cfg: its network.cidr's route and its resolver
// file (host.Own). With no valid config, nothing.
func HostOwn(cfg config.Config, valid bool) host.Own {
	cidr := cfg.Network.Prefix()
	if !valid || !cidr.IsValid() || !config.IsDomain(cfg.DNS.Domain) {
		return host.Own{}
	}
	_, server := dns.Addrs(cidr)
	return host.Own{
		// The pod routes are marina's whether podRouting is on or not:
		// up removes them when it goes off.
		Networks:        append([]netip.Prefix{cidr.Masked()}, podnet.HostRoutes()...),
		Resolver:        filepath.Join(host.ResolverDir(), cfg.DNS.Domain),
		ResolverContent: dns.ResolverFile(server),
	}
}

// MirrorSpecs renders the configured mirrors, with the label key saved
// (the containers made from them carry it).
func MirrorSpecs(p config.Paths, r config.Registries) ([]registry.Spec, error) {
	key, err := LoadLabelKey(p)
	if err != nil {
		return nil, err
	}
	if err := key.Save(p); err != nil {
		return nil, err
	}
	return registry.All(r, vm.GuestCacheDir, key.Key)
}
