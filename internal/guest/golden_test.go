package guest

import (
	"net/netip"
	"path"
	"testing"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/golden"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/vm"
)

// goldenNet is a realistic network: the default kind network, Docker's
// bridge as marina names it, the Mac as vzNAT shows it to the VM.
var goldenNet = Net{Kind: netip.MustParsePrefix("172.30.0.0/16"), Bridge: docker.KindBridge, Mac: netip.MustParseAddr("192.168.64.1")}

// Every shell script marina sends to the guest, rendered from fixed,
// realistic inputs and compared byte for byte with testdata/*.sh.golden,
// which .ci/run also runs shellcheck over. After a meant change:
// go test ./internal/guest -run TestGolden -update, and review the diff.
func TestGolden(t *testing.T) {
	must := func(s string, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return []byte(s)
	}
	files, err := goldenNet.Files()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "network.sh.golden", []byte(files[0].Content))
	golden.Check(t, "provision.sh.golden", []byte(Provision("v9.9.9")))
	golden.Check(t, "observe.sh.golden", []byte(observeScript))
	golden.Check(t, "logs.sh.golden", must(Logs([]string{"dev", "east"})))
	// migrate's clean-up of an adopted klimax VM, with a guest cache that
	// had to be renamed.
	golden.Check(t, "klimax-cleanup.sh.golden", must(KlimaxCleanup(goldenNet.Kind, map[string]string{"registry-dockerio": "registry-dockerio", "ghcr.io": "registry-ghcr-io"})))
	// doctor's observation: the same, with every default mirror's
	// upstream probed from its container in the same round trip.
	var probes Probes
	for _, m := range config.Default().Registries.Mirrors {
		u, err := UpstreamOf(m)
		if err != nil {
			t.Fatal(err)
		}
		probes.Upstreams = append(probes.Upstreams, u)
	}
	body, err := observeBody(probes)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "observe-doctor.sh.golden", []byte(body))

	// What up sends when the rules and every default mirror's config are
	// to be written: one batch.
	cfg := config.Default()
	specs, err := registry.Specs(cfg.Registries, vm.GuestCacheDir, goldenKey)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch()
	if err := goldenNet.Apply(b); err != nil {
		t.Fatal(err)
	}
	if err := RegistryApply(b, specs); err != nil {
		t.Fatal(err)
	}
	dnsSpecs, err := dns.Specs(cfg, goldenKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := DNSApply(b, dnsSpecs); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "up-apply.sh.golden", []byte(b.Script()))

	// The local DNS: what cluster delete adds, dns list, and the addons
	// records up writes for older clusters.
	etcd, pw := goldenEtcd(t)
	golden.Check(t, "dns-forget.sh.golden", append([]byte("set -eu -o pipefail\n"), must(DNSForget(etcd, []string{"dev.demo.internal", "east.demo.internal"}, []string{"dev", "east"}))...))
	golden.Check(t, "dns-records.sh.golden", must(DNSRecords(etcd, cfg.DNS.Domain)))
	// The dashboard's observation: the caches' measures (the push
	// registry's, and a guest cache with the node images' share) in the
	// same round trip. (Its records probe is dns-records' script in a
	// subshell, whose functions shellcheck then takes for unreachable.)
	hub := vm.GuestCacheDir + "/registry-dockerio"
	measure := string(must(MeasureDirs([]string{registry.LocalData, hub}))) + string(must(MeasureRepos(hub, registry.NodeRepos(cfg.Kind))))
	body, err = observeBody(Probes{Sizes: SizesProbe(measure)})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "observe-dashboard.sh.golden", []byte(body))
	dev, err := pw.Cluster("dev")
	if err != nil {
		t.Fatal(err)
	}
	devUser := EtcdUser{Creds: dev, Grant: dns.ClusterGrant("dev", cfg.DNS.Domain)}
	auth := must(EtcdAuth(etcd, pw.Reader(), []EtcdUser{devUser}))
	golden.Check(t, "etcd-auth.sh.golden", append([]byte("set -eu -o pipefail\n"), auth...))
	rb := NewBatch()
	if err := AddonsRecordApply(rb, map[string]string{"dev": DNSRecord(cfg.DNS.Domain, "localhost:5001"), "east": DNSRecord(cfg.DNS.Domain, "localhost:5001")}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "addons-record.sh.golden", []byte(rb.Script()))

	// cluster create dev, direct mode, every default mirror.
	certsDir, err := CertsDir("dev")
	if err != nil {
		t.Fatal(err)
	}
	kindConfig, err := cluster.Spec{
		Name: "dev", Slot: 1, Region: cluster.DefaultRegion(1), Zone: cluster.DefaultZone(1),
		ListenAddress: "0.0.0.0", SANs: []string{"127.0.0.1", "192.168.64.3"},
		CertsD: certsDir, ContainerdPatch: registry.ContainerdPatch,
	}.KindConfig()
	if err != nil {
		t.Fatal(err)
	}
	certsD, err := registry.CertsD(cfg.Registries.Mirrors)
	if err != nil {
		t.Fatal(err)
	}
	image, err := cfg.Kind.NodeImage(cfg.Kind.NodeVersion)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "kind-admin.sh.golden", must(KindAdmin("dev", 7001)))
	golden.Check(t, "kind-create.sh.golden", must(KindCreate(KindSpec{Name: "dev", Image: image, Config: kindConfig, CertsD: certsD, Addons: DNSRecord(cfg.DNS.Domain, "localhost:5001"), EtcdAuth: string(auth),
		Images: []string{"quay.io/metallb/controller:v0.16.2", "quay.io/metallb/speaker:v0.16.2"}})))
	golden.Check(t, "kind-export.sh.golden", must(KindExport([]string{"dev", "east"})))
	golden.Check(t, "kind-delete.sh.golden", must(KindDelete([]string{"dev", "east"})))

	var dirs []string
	for _, s := range specs {
		if path.Dir(s.CacheDir) != vm.GuestCacheDir {
			t.Fatalf("cache folder %s is not under %s", s.CacheDir, vm.GuestCacheDir)
		}
		dirs = append(dirs, s.CacheDir)
	}
	golden.Check(t, "measure-dirs.sh.golden", must(MeasureDirs(dirs)))
	golden.Check(t, "empty-dirs.sh.golden", must(EmptyDirs(dirs[:2])))
}

// goldenKey is the label key the goldens are rendered with.
var goldenKey = []byte("golden key, 32 bytes long ......")

// goldenEtcd is the default config's etcd with the golden key's users.
func goldenEtcd(t *testing.T) (Etcd, dns.Passwords) {
	t.Helper()
	pw, err := dns.NewPasswords(goldenKey)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := dns.Addrs(netip.MustParsePrefix(config.Default().Network.CIDR))
	return Etcd{Addr: addr, Root: pw.Root()}, pw
}
