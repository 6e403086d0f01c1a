// Package config is marina's configuration: the schema, its defaults, strict
// loading with line numbers, validation and the commented default file.
package config

import "net/netip"

// Config is the whole of ~/.marina/config.yaml after defaults are applied.
type Config struct {
	VM         VM         `yaml:"vm" json:"vm"`
	Network    Network    `yaml:"network" json:"network"`
	Kind       Kind       `yaml:"kind" json:"kind"`
	Registries Registries `yaml:"registries" json:"registries"`
	DNS        DNS        `yaml:"dns" json:"dns"`
}

// VM describes the one Lima VM marina runs.
type VM struct {
	Name    string `yaml:"name" json:"name"`
	CPUs    int    `yaml:"cpus" json:"cpus"`
	Memory  string `yaml:"memory" json:"memory"`
	Disk    string `yaml:"disk" json:"disk"`
	Rosetta bool   `yaml:"rosetta" json:"rosetta"`
}

// Network is the shared kind bridge and how API servers are reached.
type Network struct {
	// CIDR is the kind Docker network, routed from the Mac into the VM.
	CIDR string `yaml:"cidr" json:"cidr"`
	// DisablePortMirroring turns off Lima's automatic port mirroring;
	// kubeconfigs then use the VM's lima0 address (direct mode).
	DisablePortMirroring bool `yaml:"disablePortMirroring" json:"disablePortMirroring"`
	// PodRouting routes every cluster's pod and service ranges too: from
	// the Mac (a few more routes of 10.0.0.0/8 to the VM) and between
	// clusters, with no address translation (internal/podnet).
	PodRouting bool `yaml:"podRouting" json:"podRouting"`
}

// Prefix is CIDR as a prefix: the one place it is parsed. In a config
// that failed validation it may be the zero Prefix (IsValid false).
func (n Network) Prefix() netip.Prefix {
	p, _ := netip.ParsePrefix(n.CIDR)
	return p
}

// Kind holds the per-cluster defaults.
type Kind struct {
	NodeVersion string `yaml:"nodeVersion" json:"nodeVersion"`
	// NodeImages adds or replaces node images by version; each must be
	// pinned by digest (name:tag@sha256:…).
	NodeImages     map[string]string `yaml:"nodeImages,omitempty" json:"nodeImages,omitempty"`
	MetalLBVersion string            `yaml:"metalLBVersion" json:"metalLBVersion"`
	// AddonImages replaces an image an add-on manifest runs (as the
	// manifest names it, quay.io/metallb/controller:v0.16.2) with another,
	// pinned by digest: a copy in your own registry, or a digest marina
	// does not pin.
	AddonImages          map[string]string `yaml:"addonImages,omitempty" json:"addonImages,omitempty"`
	CustomDNSResolvers   []DNSResolver     `yaml:"customDnsResolvers" json:"customDnsResolvers"`
	AutoMergeKubeconfig  bool              `yaml:"autoMergeKubeconfig" json:"autoMergeKubeconfig"`
	AutoRemoveKubeconfig bool              `yaml:"autoRemoveKubeconfig" json:"autoRemoveKubeconfig"`
	// SwitchContext makes a new cluster the current context of the
	// kubeconfig it is merged into, as kind does.
	SwitchContext bool `yaml:"switchContext" json:"switchContext"`
	// MetricsServer makes cluster create install metrics-server, as
	// --metrics-server does (a Fleet's members follow their manifest).
	MetricsServer bool `yaml:"metricsServer" json:"metricsServer"`
}

// DNSResolver sends one domain to chosen upstream resolvers from every
// cluster's CoreDNS.
type DNSResolver struct {
	Domain    string   `yaml:"domain" json:"domain"`
	Resolvers []string `yaml:"resolvers" json:"resolvers"`
}

// Registries are the pull-through mirrors shared by every cluster.
type Registries struct {
	// CacheStorage is "host" (a virtiofs folder on the Mac, survives
	// destroy) or "guest" (the VM's own disk).
	CacheStorage string `yaml:"cacheStorage" json:"cacheStorage"`
	// Image is the distribution image every mirror runs, pinned by digest.
	Image   string   `yaml:"image" json:"image"`
	Mirrors []Mirror `yaml:"mirrors" json:"mirrors"`
	// Local is the push registry for the user's own images.
	Local Local `yaml:"local" json:"local"`
}

// Local is the push registry: one name, localhost:PORT, from the Mac (Lima
// forwards the port), the VM's Docker and every node's containerd (a
// hosts.toml sends it to the registry on the kind network).
type Local struct {
	Enabled bool `yaml:"enabled" json:"enabled"`
	Port    int  `yaml:"port" json:"port"`
}

// DefaultLocalPort is the push registry's port: kind's documented one.
const DefaultLocalPort = 5001

// Mirror is one distribution pull-through proxy for one upstream registry.
type Mirror struct {
	Name      string `yaml:"name" json:"name"`
	Port      int    `yaml:"port" json:"port"`
	RemoteURL string `yaml:"remoteURL" json:"remoteURL"`
	Username  string `yaml:"username,omitempty" json:"username,omitempty"`
	Password  string `yaml:"password,omitempty" json:"password,omitempty"`
}

// DNS is the local zone served for LoadBalancer services.
type DNS struct {
	Domain string `yaml:"domain" json:"domain"`
	// Images overrides the pinned images of the local DNS (tests and
	// air-gapped setups use it, as kind.nodeImages).
	Images DNSImages `yaml:"images,omitempty" json:"images,omitzero"`
}

// DNSImages are the digest-pinned images of the local DNS; an empty one
// is marina's pin.
type DNSImages struct {
	Etcd        string `yaml:"etcd,omitempty" json:"etcd,omitempty"`
	CoreDNS     string `yaml:"coredns,omitempty" json:"coredns,omitempty"`
	ExternalDNS string `yaml:"externalDNS,omitempty" json:"externalDNS,omitempty"`
}

// The images of the local DNS marina runs unless dns.images says otherwise.
const (
	// DefaultEtcdImage is etcd v3.6.14's official image, the multi-platform
	// index whose digest etcd's maintainers recorded when they promoted it
	// to registry.k8s.io (kubernetes/k8s.io pull request 9771, `crane
	// digest gcr.io/etcd-development/etcd:v3.6.14`).
	DefaultEtcdImage = "gcr.io/etcd-development/etcd:v3.6.14@sha256:a491baeaa0cb0c9cd89c0062ac44ece53886e3e5bddad18d2daf36678ce665b6"
	// DefaultCoreDNSImage is CoreDNS 1.15.0's official image, with the
	// digest CoreDNS's maintainers record for it in their Corefile
	// migration table (github.com/coredns/corefile-migration v1.0.36,
	// migration/versions.go, which kubeadm reads; its 1.14.7 entry is the
	// digest marina pinned before).
	DefaultCoreDNSImage = "coredns/coredns:1.15.0@sha256:0a9d8c8ddf34347eb59aad9a8784f0710de88d6d112726d11d271f9bc6daca26"
	// DefaultExternalDNSImage is ExternalDNS v0.23.0. Its promotion
	// (kubernetes/k8s.io pull request 9961) records no digest where it
	// could be read here, and no registry is reachable from where this was
	// written: it is pinned by tag, and dns.images.externalDNS pins a
	// digest (README, "Pinned images").
	DefaultExternalDNSImage = "registry.k8s.io/external-dns/external-dns:v0.23.0"
)

// Etcd is the etcd image to run.
func (d DNS) Etcd() string { return or(d.Images.Etcd, DefaultEtcdImage) }

// CoreDNS is the CoreDNS image to run.
func (d DNS) CoreDNS() string { return or(d.Images.CoreDNS, DefaultCoreDNSImage) }

// ExternalDNS is the ExternalDNS image every cluster runs.
func (d DNS) ExternalDNS() string { return or(d.Images.ExternalDNS, DefaultExternalDNSImage) }

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Cache storage modes.
const (
	CacheHost  = "host"
	CacheGuest = "guest"
)

// Defaults of the schema. The node image and MetalLB versions are the ones
// marina is tested with.
const (
	DefaultVMName         = "marina"
	DefaultCPUs           = 4
	DefaultMemory         = "10GiB"
	DefaultDisk           = "40GiB"
	DefaultCIDR           = "172.30.0.0/16"
	DefaultNodeVersion    = "v1.36.4"
	DefaultMetalLBVersion = "v0.16.2"
	DefaultDNSDomain      = "demo.internal"
	// DefaultRegistryImage is distribution v3.1.2's official image (the
	// multi-platform index), the version the lab's stand-in is built from.
	// 3.1.0 stopped a pull-through proxy sending its upstream credentials
	// to a token realm outside the upstream's domain (CVE-2026-33540),
	// 3.1.1 fixed CVE-2026-35172 and CVE-2026-41888, and 3.1.2 checks what
	// an upstream serves against the digest asked for (CVE-2026-85747):
	// all in exactly marina's use. The digest is the one Renovate recorded
	// for the tag on 2026-09-29 in the public repositories that pin it
	// (docker-library/repo-info had no 3.1.2 record yet where it could be
	// read).
	DefaultRegistryImage = "registry:3.1.2@sha256:ddf754342cfc8acc51a56d5d0ab6af06826461864460636d8bd5c546dab2a7b8"
)

// MetalLBVersions are the MetalLB versions marina pins a manifest's sha256
// for (package addons holds the digests, and its tests keep the two lists
// the same): kind.metalLBVersion must be one of them, so that a version
// without a pin fails at config load, not in the middle of a create.
var MetalLBVersions = []string{"v0.16.2"}

// DefaultMirrors are the five upstreams every cluster pulls through.
func DefaultMirrors() []Mirror {
	return []Mirror{
		{Name: "registry-dockerio", Port: 5030, RemoteURL: "https://registry-1.docker.io"},
		{Name: "registry-quayio", Port: 5010, RemoteURL: "https://quay.io"},
		{Name: "registry-gcrio", Port: 5020, RemoteURL: "https://gcr.io"},
		{Name: "registry-us-docker-pkgdev", Port: 5040, RemoteURL: "https://us-docker.pkg.dev"},
		{Name: "registry-us-central1-docker-pkgdev", Port: 5050, RemoteURL: "https://us-central1-docker.pkg.dev"},
	}
}

// Default returns the configuration used when the file sets nothing.
func Default() Config {
	return Config{
		VM: VM{Name: DefaultVMName, CPUs: DefaultCPUs, Memory: DefaultMemory, Disk: DefaultDisk},
		Network: Network{
			CIDR:                 DefaultCIDR,
			DisablePortMirroring: true,
		},
		Kind: Kind{
			NodeVersion:          DefaultNodeVersion,
			MetalLBVersion:       DefaultMetalLBVersion,
			CustomDNSResolvers:   []DNSResolver{},
			AutoMergeKubeconfig:  true,
			SwitchContext:        true,
			AutoRemoveKubeconfig: true,
		},
		Registries: Registries{CacheStorage: CacheHost, Image: DefaultRegistryImage, Mirrors: DefaultMirrors(),
			Local: Local{Enabled: true, Port: DefaultLocalPort}},
		DNS: DNS{Domain: DefaultDNSDomain},
	}
}

// Redacted returns a copy safe to print: registry passwords are masked.
func (c Config) Redacted() Config {
	out := c
	out.Registries.Mirrors = make([]Mirror, len(c.Registries.Mirrors))
	for i, m := range c.Registries.Mirrors {
		if m.Password != "" {
			m.Password = "<redacted>"
		}
		out.Registries.Mirrors[i] = m
	}
	return out
}
