// Package registry is marina's pull-through mirrors: the distribution
// (registry:3) configuration of each, the container that runs it, and the
// containerd hosts.toml files that send a cluster's pulls through them.
package registry

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/run"
)

// Where things live, in the VM and in a mirror container.
const (
	// ConfigDir holds one root-only config file per mirror in the VM.
	ConfigDir = "/etc/marina/registry"
	// containerConfig is where registry:3 reads its configuration.
	containerConfig = "/etc/distribution/config.yml"
	// containerAuth is where a mirror finds its credential helper.
	containerAuth = "/etc/distribution/auth"
	// containerData is the image's storage folder.
	containerData = "/var/lib/registry"
	// DebugPort serves /debug/vars (hits and misses) in each container.
	DebugPort = 5001

	// Labels marina puts on each mirror container.
	LabelMirror = "dev.marina.mirror"
	LabelConfig = "dev.marina.config"
)

// ConfigFile is a mirror's config path in the VM.
func ConfigFile(name string) (string, error) {
	f, err := fileutil.Child(ConfigDir, name+".yml")
	if err != nil || config.CheckMirrorName(name) != nil {
		return "", fmt.Errorf("mirror %q: not a mirror name, so it has no config file", name)
	}
	return f, nil
}

// AuthFile is a mirror's credential helper in the VM (see Auth).
func AuthFile(name string) (string, error) {
	f, err := fileutil.Child(ConfigDir, name+".auth")
	if err != nil || config.CheckMirrorName(name) != nil {
		return "", fmt.Errorf("mirror %q: not a mirror name, so it has no credential helper", name)
	}
	return f, nil
}

// CacheDir is a mirror's cache folder in the VM (a virtiofs mount of the
// Mac's folder, or the VM's disk).
func CacheDir(guestCacheRoot, name string) (string, error) {
	d, err := fileutil.Child(guestCacheRoot, name)
	if err != nil || config.CheckMirrorName(name) != nil {
		return "", fmt.Errorf("mirror %q: not a mirror name, so it has no cache folder", name)
	}
	return d, nil
}

// the subset of distribution's configuration marina writes.
type distConfig struct {
	Version string `yaml:"version"`
	Log     struct {
		Level     string `yaml:"level"`
		AccessLog struct {
			Disabled bool `yaml:"disabled"`
		} `yaml:"accesslog"`
	} `yaml:"log"`
	Storage struct {
		Filesystem struct {
			RootDirectory string `yaml:"rootdirectory"`
		} `yaml:"filesystem"`
		// The proxy's expiry scheduler can only remove what it may delete.
		Delete struct {
			Enabled bool `yaml:"enabled"`
		} `yaml:"delete"`
		Cache struct {
			BlobDescriptor string `yaml:"blobdescriptor"`
		} `yaml:"cache"`
	} `yaml:"storage"`
	HTTP struct {
		Addr  string `yaml:"addr"`
		Debug struct {
			Addr string `yaml:"addr"`
		} `yaml:"debug"`
		Headers map[string][]string `yaml:"headers"`
	} `yaml:"http"`
	Proxy  *proxyConfig `yaml:"proxy,omitempty"` // nil: a registry of its own
	Health struct {
		StorageDriver struct {
			Enabled   bool   `yaml:"enabled"`
			Interval  string `yaml:"interval"`
			Threshold int    `yaml:"threshold"`
		} `yaml:"storagedriver"`
	} `yaml:"health"`
}

type proxyConfig struct {
	RemoteURL string `yaml:"remoteurl"`
	Exec      struct {
		Command string `yaml:"command"`
	} `yaml:"exec"`
	TTL string `yaml:"ttl"`
}

// Config renders m's distribution configuration. The upstream's
// credentials come from its credential helper (Auth), never from here:
// with username and password (or none) in its config, distribution asks
// the upstream for its token service as it starts and exits when it
// cannot be reached, so a VM that boots offline would have no mirrors.
// With a helper, it asks at the first pull that needs the upstream, and
// serves what it has cached when that fails.
func Config(m config.Mirror) ([]byte, error) {
	c := baseConfig(m.Port)
	c.Proxy = &proxyConfig{RemoteURL: m.RemoteURL, TTL: "168h"}
	c.Proxy.Exec.Command = containerAuth
	return render(c, "# Written by marina from registries.mirrors in ~/.marina/config.yaml.\n")
}

// Auth is m's credential helper, as distribution's proxy.exec runs it (a
// Docker credential helper's "get"): a script that prints the upstream's
// username and password, empty for an anonymous mirror. It holds them, so
// it only ever lives in a root-only file in the VM. distribution offers
// them only to the upstream and a token service on its host.
func Auth(m config.Mirror) ([]byte, error) {
	creds, err := json.Marshal(struct{ Username, Secret string }{m.Username, m.Password})
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "#!/bin/sh\n# Written by marina from registries.mirrors in ~/.marina/config.yaml: %s's credentials.\nprintf '%%s\\n' %s\n", m.Name, run.ShellQuote(string(creds))), nil
}

// baseConfig is what every registry marina runs shares: a mirror's, and
// the push registry's.
func baseConfig(port int) distConfig {
	var c distConfig
	c.Version = "0.1"
	c.Log.Level = "info"
	c.Storage.Filesystem.RootDirectory = containerData
	c.Storage.Delete.Enabled = true
	c.Storage.Cache.BlobDescriptor = "inmemory"
	c.HTTP.Addr = ":" + strconv.Itoa(port)
	c.HTTP.Debug.Addr = ":" + strconv.Itoa(DebugPort)
	c.HTTP.Headers = map[string][]string{"X-Content-Type-Options": {"nosniff"}}
	c.Health.StorageDriver.Enabled = true
	c.Health.StorageDriver.Interval = "10s"
	c.Health.StorageDriver.Threshold = 3
	return c
}

func render(c distConfig, head string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(head)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// Spec is everything a mirror container is made from.
type Spec struct {
	Name       string
	Port       int
	Upstream   string
	Image      string // pinned by digest
	Config     []byte // the file's content
	ConfigFile string // in the VM
	Auth       []byte // the credential helper (secret); none for the push registry
	AuthFile   string // in the VM
	CacheDir   string // in the VM
	// Digest identifies Config and the container settings; it is what the
	// container's label records.
	Digest string
	// Publish is the address on the VM's loopback the container's Port
	// is published at (the push registry's localhost:PORT, the Docker Hub
	// mirror's HubAddr for the VM's Docker); zero publishes nothing.
	Publish netip.AddrPort
}

// Specs renders the spec of every mirror. key keys the digest, so the
// label on a container (which anyone with the Docker socket can read)
// cannot be used to check a guessed password.
func Specs(r config.Registries, guestCacheRoot string, key []byte) ([]Spec, error) {
	out := make([]Spec, 0, len(r.Mirrors))
	hub := HubMirror(r.Mirrors)
	for _, m := range r.Mirrors {
		cfg, err := Config(m)
		if err != nil {
			return nil, err
		}
		s := Spec{Name: m.Name, Port: m.Port, Upstream: m.RemoteURL, Image: r.Image, Config: cfg}
		if s.ConfigFile, err = ConfigFile(m.Name); err != nil {
			return nil, err
		}
		if s.AuthFile, err = AuthFile(m.Name); err != nil {
			return nil, err
		}
		if s.Auth, err = Auth(m); err != nil {
			return nil, err
		}
		if s.CacheDir, err = CacheDir(guestCacheRoot, m.Name); err != nil {
			return nil, err
		}
		mac := hmac.New(sha256.New, key)
		fmt.Fprintf(mac, "image=%s\ncache=%s\nconfig=%s\nauth=%s\n", s.Image, s.CacheDir, cfg, s.Auth)
		if m.Name == hub {
			s.Publish = HubAddr
			fmt.Fprintf(mac, "publish=%s\n", s.Publish)
		}
		s.Digest = hex.EncodeToString(mac.Sum(nil))
		out = append(out, s)
	}
	return out, nil
}

// Files are the sha256 of each file the spec keeps in the VM (its config,
// and its credential helper when it has one), by path, as sha256sum
// prints them.
func (s Spec) Files() map[string]string {
	out := map[string]string{s.ConfigFile: fileSum(s.Config)}
	if s.AuthFile != "" {
		out[s.AuthFile] = fileSum(s.Auth)
	}
	return out
}

func fileSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Binds are the container's mounts: its config and credential helper
// read-only, its cache.
func (s Spec) Binds() []string {
	b := []string{s.ConfigFile + ":" + containerConfig + ":ro"}
	if s.AuthFile != "" {
		b = append(b, s.AuthFile+":"+containerAuth+":ro")
	}
	return append(b, s.CacheDir+":"+containerData)
}

// Hosts are the registry names containerd looks mirrors up by for m's
// upstream: Docker Hub is pulled as docker.io and also reached as
// registry-1.docker.io.
func Hosts(m config.Mirror) ([]string, error) {
	u, err := url.Parse(m.RemoteURL)
	if err != nil || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("mirror %s: %q is not a registry URL", m.Name, config.RedactURL(m.RemoteURL))
	}
	// The host names a folder in the VM: it must be a host and nothing else.
	if err := config.CheckHostPort(u.Host); err != nil {
		return nil, fmt.Errorf("mirror %s: %w", m.Name, err)
	}
	switch u.Host {
	case "registry-1.docker.io", "docker.io", "index.docker.io":
		return []string{"docker.io", "registry-1.docker.io"}, nil
	}
	return []string{u.Host}, nil
}

// Select applies a cluster's mirror selection: nil or ["*"] is every
// mirror, [] is none, names pick those. An unknown name is an error.
func Select(mirrors []config.Mirror, sel []string) ([]config.Mirror, error) {
	if sel == nil || (len(sel) == 1 && sel[0] == "*") {
		return mirrors, nil
	}
	byName := map[string]config.Mirror{}
	var names []string
	for _, m := range mirrors {
		byName[m.Name] = m
		names = append(names, m.Name)
	}
	var out []config.Mirror
	seen := map[string]bool{}
	for _, n := range sel {
		if n == "*" {
			return nil, fmt.Errorf(`"*" selects every mirror and cannot be combined with names`)
		}
		m, ok := byName[n]
		if !ok {
			sort.Strings(names)
			return nil, fmt.Errorf("no mirror is named %q (registries.mirrors has %v)", n, names)
		}
		if !seen[n] {
			out = append(out, m)
			seen[n] = true
		}
	}
	return out, nil
}

// CertsD is the containerd host configuration for selected mirrors: a
// hosts.toml per upstream registry name, keyed by its path under
// /etc/containerd/certs.d. Each sends pulls to the mirror first, over
// plain HTTP on the kind network, and keeps the upstream as the fallback
// containerd uses when the mirror fails.
func CertsD(selected []config.Mirror) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range selected {
		hosts, err := Hosts(m)
		if err != nil {
			return nil, err
		}
		for _, h := range hosts {
			p := path.Join(h, "hosts.toml")
			if _, dup := out[p]; dup {
				return nil, fmt.Errorf("two mirrors serve %s; keep one", h)
			}
			// No skip_verify or other TLS setting on the http host: any of
			// them makes containerd try HTTPS first.
			out[p] = fmt.Sprintf("# Written by marina: pulls of %s go through the mirror %s.\nserver = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n",
				h, m.Name, m.RemoteURL, fmt.Sprintf("http://%s:%d", m.Name, m.Port))
		}
	}
	return out, nil
}

// ContainerdPatch makes a kind node's containerd read /etc/containerd/certs.d.
// kind's base config (version 2) sets no config_path; containerd 2.x then
// defaults to "/etc/containerd/certs.d:/etc/docker/certs.d" on Linux, so
// kind v0.33 nodes would read the folder anyway. marina sets it explicitly
// so that no node depends on that default (containerd 1.x has none).
const ContainerdPatch = `[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
`
