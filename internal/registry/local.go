package registry

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"path"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/config"
)

// The push registry: a plain distribution registry (no proxy) on the kind
// network, its storage on the VM's disk.
//
// Its one name is localhost:PORT, kind's documented pattern, because
// localhost is the one registry host every client speaks plain HTTP to
// without being told: Docker (docker push through docker-env lands on the
// VM's loopback, where the port is published), go-containerregistry's
// tools (ko, crane), buildx, and Tilt and Skaffold's defaults. A name under
// dns.domain would reach it over the route too, but would need every tool
// set to "insecure" for it, and Docker's daemon restarted with that. The
// Mac reaches localhost:PORT through Lima's forward of the VM's loopback
// port; each node's containerd through a hosts.toml that sends
// localhost:PORT to the container by name on the kind network.
const (
	// LocalName is its container's name on the kind network.
	LocalName = "marina-registry"
	// LocalPort is the port it listens on inside the kind network.
	LocalPort = 5000
	// LocalData is its storage folder in the VM: on the VM's disk (it is
	// the user's images, not a cache of the Internet's).
	LocalData = "/var/lib/marina/registry/local"
)

// LocalHost is the name the push registry goes by everywhere.
func LocalHost(port int) string { return fmt.Sprintf("localhost:%d", port) }

// LocalSpec is the push registry's container, nil when it is off. It runs
// the mirrors' image, and up makes and checks it as it does a mirror.
func LocalSpec(r config.Registries, key []byte) (*Spec, error) {
	if !r.Local.Enabled {
		return nil, nil
	}
	cfg, err := render(baseConfig(LocalPort), "# Written by marina from registries.local in ~/.marina/config.yaml.\n")
	if err != nil {
		return nil, err
	}
	s := &Spec{
		Name: LocalName, Port: LocalPort, Image: r.Image, Config: cfg,
		ConfigFile: path.Join(ConfigDir, LocalName+".yml"),
		CacheDir:   LocalData,
		Publish:    netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(r.Local.Port)),
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "image=%s\ncache=%s\nconfig=%s\npublish=%d\n", s.Image, s.CacheDir, cfg, s.Publish.Port())
	s.Digest = hex.EncodeToString(mac.Sum(nil))
	return s, nil
}

// LocalCertsD is the hosts.toml that sends a node's pulls of
// localhost:PORT to the push registry on the kind network, keyed by its
// path under certs.d (nil when the registry is off).
func LocalCertsD(l config.Local) map[string]string {
	if !l.Enabled {
		return nil
	}
	h := LocalHost(l.Port)
	return map[string]string{path.Join(h, "hosts.toml"): fmt.Sprintf("# Written by marina: %s is the push registry (registries.local).\nserver = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n",
		h, "http://"+h, fmt.Sprintf("http://%s:%d", LocalName, LocalPort))}
}

// HostingNamespace and HostingName are where KEP-1755 says a cluster
// advertises its local registry, for Tilt, Skaffold and ctlptl.
const (
	HostingNamespace = "kube-public"
	HostingName      = "local-registry-hosting"
	HostingKey       = "localRegistryHosting.v1"
	// HostingHelp is where a tool that reads the ConfigMap sends people.
	HostingHelp = "https://github.com/bcollard/marina/blob/main/docs/images.md"
)

// Hosting is the value of the ConfigMap's localRegistryHosting.v1 key:
// one name from the Mac, the VM and the container runtime, and the
// container's own address for a pod that calls the registry's API.
func Hosting(l config.Local) (string, error) {
	h := LocalHost(l.Port)
	b, err := yaml.Marshal(struct {
		Host                     string `yaml:"host"`
		HostFromContainerRuntime string `yaml:"hostFromContainerRuntime"`
		HostFromClusterNetwork   string `yaml:"hostFromClusterNetwork"`
		Help                     string `yaml:"help"`
	}{h, h, fmt.Sprintf("%s:%d", LocalName, LocalPort), HostingHelp})
	return string(b), err
}

// All are the specs of every registry container up runs: the mirrors,
// then the push registry when it is on.
func All(r config.Registries, guestCacheRoot string, key []byte) ([]Spec, error) {
	specs, err := Specs(r, guestCacheRoot, key)
	if err != nil {
		return nil, err
	}
	local, err := LocalSpec(r, key)
	if err != nil || local == nil {
		return specs, err
	}
	return append(specs, *local), nil
}
