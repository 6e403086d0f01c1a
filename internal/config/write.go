package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"text/template"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/fileutil"
)

// defaultFile is the commented config written by the first `marina up`. Its
// values come from Default(), so the file and the code cannot disagree.
// Parsed when first used: not at start, which every command pays.
var defaultFile = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("config").Parse(`# marina configuration. Edit it, then run ` + "`marina up`" + ` to apply.
# Every key is optional: what you leave out takes the default shown here.
# ` + "`marina config show`" + ` prints the configuration in effect.

vm:
  # The Lima instance. The VM's Docker socket is ~/.<name>.docker.sock.
  name: {{.VM.Name}}
  cpus: {{.VM.CPUs}}
  memory: {{.VM.Memory}}
  disk: {{.VM.Disk}}
  # Run x86_64 Linux binaries through Rosetta (Apple Silicon only: an Intel
  # Mac's VM is made without it).
  rosetta: {{.VM.Rosetta}}

network:
  # The kind Docker network, routed from the Mac into the VM: a private /16.
  # Cluster slot N gets <a.b>.N.1-7 and <a.b>.N.16-254 for LoadBalancers.
  cidr: {{.Network.CIDR}}
  # true: Lima mirrors no ports, kubeconfigs use the VM's lima0 address.
  # false: Lima mirrors API server ports to 127.0.0.1 on the Mac.
  disablePortMirroring: {{.Network.DisablePortMirroring}}

kind:
  # One of the kindest/node images published with kind v0.33.0 (pinned by
  # digest); pin another with nodeImages:
  #   nodeImages:
  #     v1.36.1: kindest/node:v1.36.1@sha256:<digest>
  nodeVersion: {{.Kind.NodeVersion}}
  metalLBVersion: {{.Kind.MetalLBVersion}}
  # Send more domains from every cluster's CoreDNS to resolvers you choose:
  #   customDnsResolvers:
  #     - domain: corp.example.com
  #       resolvers: [10.0.0.53]
  customDnsResolvers: []
  # Merge each new cluster into ~/.kube/config, and drop it there on delete
  # and on destroy (only the entries marina wrote).
  autoMergeKubeconfig: {{.Kind.AutoMergeKubeconfig}}
  autoRemoveKubeconfig: {{.Kind.AutoRemoveKubeconfig}}
  # Make a new cluster the current context there, as kind does
  # (marina cluster create --no-switch-context leaves it as it is).
  switchContext: {{.Kind.SwitchContext}}
  # Install metrics-server (kubectl top) in every new cluster, as
  # marina cluster create --metrics-server does.
  metricsServer: {{.Kind.MetricsServer}}

registries:
  # host: the caches live in ~/.marina/registry-cache and survive destroy.
  # guest: they live on the VM's disk.
  cacheStorage: {{.Registries.CacheStorage}}
  # The registry image every mirror runs, pinned by digest.
  image: {{.Registries.Image}}
  # Pull-through mirrors shared by every cluster; [] turns them all off.
  # An upstream that needs credentials takes username and password keys.
  mirrors:
{{- range .Registries.Mirrors}}
    - name: {{.Name}}
      port: {{.Port}}
      remoteURL: {{.RemoteURL}}
{{- end}}
  # The push registry for your own images: localhost:PORT from the Mac, the
  # VM's Docker and every cluster's nodes (docs/images.md).
  local:
    enabled: {{.Registries.Local.Enabled}}
    port: {{.Registries.Local.Port}}

dns:
  # LoadBalancer services resolve as <service>.<namespace>.<cluster>.<domain>.
  domain: {{.DNS.Domain}}
`))
})

// DefaultFile renders the commented default config.
func DefaultFile() []byte {
	var b bytes.Buffer
	if err := defaultFile().Execute(&b, Default()); err != nil {
		panic(err) // the template and Default() are both fixed
	}
	return b.Bytes()
}

// WriteDefault creates the default config file (mode 0600) unless one
// exists. It reports whether it wrote the file.
func WriteDefault(path string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("check config: %w", err)
	}
	if err := fileutil.WriteAtomic(path, DefaultFile(), 0o600); err != nil {
		return false, fmt.Errorf("write default config: %w", err)
	}
	return true, nil
}

// Marshal renders c as YAML.
func Marshal(c Config) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
