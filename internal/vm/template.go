package vm

import (
	"bytes"
	"fmt"
	"text/template"

	"gopkg.in/yaml.v3"

	"github.com/bcollard/marina/internal/config"
)

// What the VM is built from. Each is pinned so two Macs get the same guest.
const (
	// Ubuntu 24.04 LTS cloud images, release 20260705, as Lima 2.2.0 pins
	// them (templates/_images/ubuntu-24.04.yaml). Ubuntu deletes dated
	// releases after some months; then Lima falls back, as its own
	// template does, to the current release, which cannot be pinned (it
	// changes with every release).
	imageRelease = "https://cloud-images.ubuntu.com/releases/noble/release-20260705/"
	imageCurrent = "https://cloud-images.ubuntu.com/releases/noble/release/"
	imageARM64   = "ubuntu-24.04-server-cloudimg-arm64.img"
	digestARM64  = "sha256:7df0201546f75b8bcc1044594c806c35749421ad3c9bc1be2a3ab806cfae39cc"
	imageAMD64   = "ubuntu-24.04-server-cloudimg-amd64.img"
	digestAMD64  = "sha256:ffe6203da54deeb6db5d2a98a83f9ec8e55f149d3f7ba622e1abe5fa966ee3d6"

	// DockerMajor is the Docker Engine major version the VM runs; marina's
	// firewall rules are proven against it.
	DockerMajor = 29
	// dockerKeyFingerprint identifies Docker's apt signing key.
	dockerKeyFingerprint = "9DC858229FC7DD38854AE2D88D81803C0EBFCD88"

	// KindVersion is the kind CLI installed in the VM, checked by sha256.
	KindVersion = "v0.33.0"
	kindSHA256  = "aee6151561422756b764a4ae28e7f44cda5af5a9eead3cc9985112b1de8d8e0d" // kind-linux-amd64
	kindSHA256A = "20022bee6cfcd5086cb7234d218e3454e6090022f2a8f55d1fa7fcf42c3867a2" // kind-linux-arm64

	// GuestCacheDir is where the registry caches live in the guest: a
	// virtiofs mount of the Mac's folder, or the VM's own disk.
	GuestCacheDir = "/var/lib/marina/registry-cache"
	// GuestDockerSocket is the socket Lima forwards to the Mac.
	GuestDockerSocket = "/var/run/docker.sock"
)

// TemplateInput is everything the Lima template depends on.
type TemplateInput struct {
	Config config.Config
	Paths  config.Paths
	// HostArch is the Mac's GOARCH; Rosetta is only offered on arm64.
	HostArch string
}

// The subset of Lima's schema marina writes. Field names follow
// lima-vm/lima's templates/default.yaml.
type limaYAML struct {
	MinimumLimaVersion string        `yaml:"minimumLimaVersion"`
	VMType             string        `yaml:"vmType"`
	CPUs               int           `yaml:"cpus"`
	Memory             string        `yaml:"memory"`
	Disk               string        `yaml:"disk"`
	Images             []limaImage   `yaml:"images"`
	Containerd         limaCtrd      `yaml:"containerd"`
	Networks           []limaNetwork `yaml:"networks"`
	MountType          string        `yaml:"mountType"`
	Mounts             []limaMount   `yaml:"mounts"`
	PortForwards       []limaPortFwd `yaml:"portForwards"`
	VMOpts             *limaVMOpts   `yaml:"vmOpts,omitempty"`
	SSH                limaSSH       `yaml:"ssh"`
	Provision          []limaScript  `yaml:"provision"`
	Probes             []limaProbe   `yaml:"probes"`
}

type limaImage struct {
	Location string `yaml:"location"`
	Arch     string `yaml:"arch"`
	Digest   string `yaml:"digest,omitempty"`
}

type limaCtrd struct {
	System bool `yaml:"system"`
	User   bool `yaml:"user"`
}

type limaNetwork struct {
	VZNAT bool `yaml:"vzNAT"`
}

type limaMount struct {
	Location   string `yaml:"location"`
	MountPoint string `yaml:"mountPoint"`
	Writable   bool   `yaml:"writable"`
}

type limaPortFwd struct {
	GuestIP           string `yaml:"guestIP,omitempty"`
	GuestIPMustBeZero *bool  `yaml:"guestIPMustBeZero,omitempty"`
	Proto             string `yaml:"proto,omitempty"`
	Ignore            bool   `yaml:"ignore,omitempty"`
	GuestSocket       string `yaml:"guestSocket,omitempty"`
	HostSocket        string `yaml:"hostSocket,omitempty"`
}

type limaVMOpts struct {
	VZ struct {
		Rosetta struct {
			Enabled bool `yaml:"enabled"`
			BinFmt  bool `yaml:"binfmt"`
		} `yaml:"rosetta"`
	} `yaml:"vz"`
}

type limaSSH struct {
	LoadDotSSHPubKeys bool `yaml:"loadDotSSHPubKeys"`
}

type limaScript struct {
	Mode   string `yaml:"mode"`
	Script string `yaml:"script"`
}

type limaProbe struct {
	Description string `yaml:"description"`
	Script      string `yaml:"script"`
	Hint        string `yaml:"hint"`
}

// Template renders the Lima instance template for the config.
func Template(in TemplateInput) ([]byte, error) {
	c := in.Config
	y := limaYAML{
		MinimumLimaVersion: fmt.Sprintf("%d.%d.%d", MinLima[0], MinLima[1], MinLima[2]),
		VMType:             "vz",
		CPUs:               c.VM.CPUs,
		Memory:             c.VM.Memory,
		Disk:               c.VM.Disk,
		Images: []limaImage{
			{Location: imageRelease + imageARM64, Arch: "aarch64", Digest: digestARM64},
			{Location: imageRelease + imageAMD64, Arch: "x86_64", Digest: digestAMD64},
			{Location: imageCurrent + imageARM64, Arch: "aarch64"},
			{Location: imageCurrent + imageAMD64, Arch: "x86_64"},
		},
		// Docker brings its own containerd.
		Containerd: limaCtrd{System: false, User: false},
		// vzNAT gives the guest lima0, the address the Mac routes the kind
		// network to. Lima's own eth0 cannot be reached from the Mac.
		Networks:  []limaNetwork{{VZNAT: true}},
		MountType: "virtiofs",
		Mounts:    []limaMount{},
		SSH:       limaSSH{LoadDotSSHPubKeys: false},
	}
	if c.Registries.CacheStorage == config.CacheHost {
		y.Mounts = append(y.Mounts, limaMount{Location: in.Paths.RegistryCache(), MountPoint: GuestCacheDir, Writable: true})
	}
	if c.Network.DisablePortMirroring {
		// Lima's ignore rule only matches wildcard listeners unless
		// guestIPMustBeZero is false; without it kind's 127.0.0.1 API
		// servers would still be mirrored to the Mac.
		f := false
		y.PortForwards = append(y.PortForwards, limaPortFwd{GuestIP: "0.0.0.0", GuestIPMustBeZero: &f, Proto: "any", Ignore: true})
	}
	files, err := in.Paths.VM(c.VM.Name)
	if err != nil {
		return nil, err
	}
	y.PortForwards = append(y.PortForwards, limaPortFwd{GuestSocket: GuestDockerSocket, HostSocket: files.DockerSocket})
	if c.VM.Rosetta && in.HostArch == "arm64" {
		y.VMOpts = &limaVMOpts{}
		y.VMOpts.VZ.Rosetta.Enabled = true
		y.VMOpts.VZ.Rosetta.BinFmt = true
	}
	script, err := ProvisionScript()
	if err != nil {
		return nil, err
	}
	y.Provision = []limaScript{{Mode: "system", Script: script}}
	y.Probes = []limaProbe{{
		Description: "Docker and kind are ready",
		Script:      readinessProbe,
		Hint:        "Provisioning did not finish: see `marina shell -- sudo tail -n 50 /var/log/cloud-init-output.log`",
	}}
	var b bytes.Buffer
	b.WriteString("# Written by marina from ~/.marina/config.yaml; marina up re-renders it.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(y); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// The readiness probe runs as the Lima user; limactl start waits for it.
const readinessProbe = `#!/bin/bash
set -eu
timeout 600 bash -c 'until sudo -n docker info >/dev/null 2>&1; do sleep 2; done'
command -v kind >/dev/null
`

// ProvisionScript is the root script Lima runs on every boot. Each step
// checks before it changes anything, so a second boot changes nothing.
// It uses [[ ]] delimiters so that {{.User}} is left for Lima to fill in.
func ProvisionScript() (string, error) {
	var b bytes.Buffer
	err := provisionTmpl.Execute(&b, map[string]any{
		"DockerMajor":    DockerMajor,
		"KeyFingerprint": dockerKeyFingerprint,
		"KindVersion":    KindVersion,
		"KindAMD64":      kindSHA256,
		"KindARM64":      kindSHA256A,
		"CacheDir":       GuestCacheDir,
	})
	return b.String(), err
}

var provisionTmpl = template.Must(template.New("provision").Delims("[[", "]]").Parse(`#!/bin/bash
# marina VM provisioning. Lima runs this as root on every boot: every step
# looks before it changes anything.
set -eu -o pipefail
export DEBIAN_FRONTEND=noninteractive

# put PATH MODE: install stdin as PATH only when the content differs.
# Succeeds (0) when it changed the file.
put() {
	local tmp
	tmp=$(mktemp)
	cat >"$tmp"
	if [ -f "$1" ] && cmp -s "$tmp" "$1"; then rm -f "$tmp"; return 1; fi
	install -D -m "$2" "$tmp" "$1"
	rm -f "$tmp"
}

# only_key FILE FINGERPRINT: FILE holds exactly one public key (with its
# subkeys), and it is FINGERPRINT. A keyring with one more key would let
# that key sign Docker's packages too.
only_key() {
	gpg --show-keys --with-colons "$1" 2>/dev/null | awk -F: -v want="$2" '
		$1 == "pub" { keys++; primary = 1; next }
		$1 == "fpr" && primary { fpr = $10; primary = 0 }
		END { exit !(keys == 1 && fpr == want) }'
}

# kind needs many inotify watches; the routed kind network needs forwarding.
put /etc/sysctl.d/99-marina.conf 0644 <<'EOF' || true
fs.inotify.max_user_watches = 524288
fs.inotify.max_user_instances = 512
net.ipv4.ip_forward = 1
EOF
sysctl -q -p /etc/sysctl.d/99-marina.conf

mkdir -p [[.CacheDir]]

# Docker [[.DockerMajor]]: its socket belongs to the Lima user so Lima can forward it
# to the Mac, and the daemon stays on the iptables firewall backend, whose
# DOCKER-USER chain marina's routing rules live in.
restart_docker=0
put /etc/systemd/system/docker.socket.d/marina.conf 0644 <<'EOF' && restart_docker=1
[Socket]
SocketUser={{.User}}
EOF
put /etc/docker/daemon.json 0644 <<'EOF' && restart_docker=1
{
  "firewall-backend": "iptables"
}
EOF
if ! dockerd --version 2>/dev/null | grep -q '^Docker version [[.DockerMajor]]\.'; then
	install -m 0755 -d /etc/apt/keyrings
	curl -fsSL --retry 5 https://download.docker.com/linux/ubuntu/gpg -o /etc/apt/keyrings/docker.asc.new
	if ! only_key /etc/apt/keyrings/docker.asc.new [[.KeyFingerprint]]; then
		rm -f /etc/apt/keyrings/docker.asc.new
		echo "marina: Docker's apt keyring is not exactly the key [[.KeyFingerprint]]" >&2
		exit 1
	fi
	mv /etc/apt/keyrings/docker.asc.new /etc/apt/keyrings/docker.asc
	. /etc/os-release
	echo "deb [arch=$(dpkg --print-architecture) signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/ubuntu ${VERSION_CODENAME} stable" >/etc/apt/sources.list.d/docker.list
	printf 'Package: docker-ce docker-ce-cli docker-ce-rootless-extras\nPin: version 5:[[.DockerMajor]].*\nPin-Priority: 1001\n' >/etc/apt/preferences.d/marina-docker
	apt-get update -qq
	apt-get install -y -qq docker-ce docker-ce-cli containerd.io
	restart_docker=1
fi
if [ "$restart_docker" = 1 ]; then
	systemctl daemon-reload
	systemctl enable docker.socket docker.service
	systemctl restart docker.socket docker.service
fi

# kind [[.KindVersion]], checked against its published sha256.
case "$(uname -m)" in
x86_64) kind_arch=amd64 kind_sum=[[.KindAMD64]] ;;
aarch64) kind_arch=arm64 kind_sum=[[.KindARM64]] ;;
*) echo "marina: no kind build for $(uname -m)" >&2; exit 1 ;;
esac
if ! echo "$kind_sum  /usr/local/bin/kind" | sha256sum -c --status 2>/dev/null; then
	curl -fsSL --retry 5 "https://github.com/kubernetes-sigs/kind/releases/download/[[.KindVersion]]/kind-linux-$kind_arch" -o /usr/local/bin/kind.new
	echo "$kind_sum  /usr/local/bin/kind.new" | sha256sum -c --status || { rm -f /usr/local/bin/kind.new; echo "marina: the kind download does not match its sha256" >&2; exit 1; }
	chmod 0755 /usr/local/bin/kind.new
	mv /usr/local/bin/kind.new /usr/local/bin/kind
fi
`))
