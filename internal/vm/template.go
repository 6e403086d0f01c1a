package vm

import (
	"bytes"
	"fmt"
	"strings"

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
	// DockerKeyFingerprint identifies Docker's apt signing key: the
	// provisioning script (guest.Provision) refuses a keyring holding any
	// other key.
	DockerKeyFingerprint = "9DC858229FC7DD38854AE2D88D81803C0EBFCD88"

	// KindVersion is the kind CLI the provisioning script installs in the
	// VM, checked against these published sha256 sums.
	KindVersion     = "v0.33.0"
	KindSHA256AMD64 = "aee6151561422756b764a4ae28e7f44cda5af5a9eead3cc9985112b1de8d8e0d" // kind-linux-amd64
	KindSHA256ARM64 = "20022bee6cfcd5086cb7234d218e3454e6090022f2a8f55d1fa7fcf42c3867a2" // kind-linux-arm64

	// KubectlVersion is the kubectl the provisioning script installs in
	// the VM, of the default node version's minor (config.DefaultNodeVersion;
	// a test keeps them together), checked against dl.k8s.io's published
	// sha256 sums. A kubectl of the same minor already there is kept.
	KubectlVersion     = "v1.36.4"
	KubectlSHA256AMD64 = "8b8f088da2dab964f853b38464033b1be15ede2839eca751482357c45abdd05a" // bin/linux/amd64/kubectl
	KubectlSHA256ARM64 = "0ecf44450ee6063bf19dd166a103ee6df4a9034455c2abce626e6eea657d73fb" // bin/linux/arm64/kubectl

	// GuestCacheDir is where the registry caches live in the guest: a
	// virtiofs mount of the Mac's folder, or the VM's own disk.
	GuestCacheDir = "/var/lib/marina/registry-cache"
	// HostDockerInternal is the name the VM, its containers and pods
	// reach the Mac by.
	HostDockerInternal = "host.docker.internal"
	// GuestDockerSocket is the socket Lima forwards to the Mac.
	GuestDockerSocket = "/var/run/docker.sock"
)

// TemplateInput is everything the Lima template depends on.
type TemplateInput struct {
	Config config.Config
	Paths  config.Paths
	// HostArch is the Mac's GOARCH; Rosetta is only offered on arm64.
	HostArch string
	// Provision is the root script Lima runs on every boot
	// (guest.Provision()): vm renders the template, guest owns every byte
	// of shell that runs in the VM.
	Provision string
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
	HostResolver       limaResolver  `yaml:"hostResolver"`
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
	GuestPort         int    `yaml:"guestPort,omitempty"`
	HostIP            string `yaml:"hostIP,omitempty"`
	HostPort          int    `yaml:"hostPort,omitempty"`
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

type limaResolver struct {
	Hosts map[string]string `yaml:"hosts"`
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
	// Without it the VM would boot without Docker or kind, and limactl
	// start would wait for the readiness probe for ten minutes.
	if strings.TrimSpace(in.Provision) == "" {
		return nil, fmt.Errorf("the Lima template has no provisioning script: TemplateInput.Provision is empty (a marina bug: pass guest.Provision())")
	}
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
		// Lima's host resolver (on by default) answers host.lima.internal
		// with the Mac as the VM reaches it; host.docker.internal is the
		// name containers use for it, as with Docker Desktop. Docker's DNS
		// forwards the nodes' (and so the pods') queries to it.
		HostResolver: limaResolver{Hosts: map[string]string{HostDockerInternal: "host.lima.internal"}},
	}
	if c.Registries.CacheStorage == config.CacheHost {
		y.Mounts = append(y.Mounts, limaMount{Location: in.Paths.RegistryCache(), MountPoint: GuestCacheDir, Writable: true})
	}
	if l := c.Registries.Local; l.Enabled {
		// The push registry's one name, localhost:PORT, on the Mac too:
		// the first rule that matches decides, so it goes before the
		// ignore rule.
		y.PortForwards = append(y.PortForwards, limaPortFwd{GuestIP: "127.0.0.1", GuestPort: l.Port, HostIP: "127.0.0.1", HostPort: l.Port, Proto: "tcp"})
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
	if c.VM.RosettaOn(in.HostArch) {
		y.VMOpts = &limaVMOpts{}
		y.VMOpts.VZ.Rosetta.Enabled = true
		y.VMOpts.VZ.Rosetta.BinFmt = true
	}
	y.Provision = []limaScript{{Mode: "system", Script: in.Provision}}
	y.Probes = []limaProbe{{
		Description: "Docker and kind are ready",
		Script:      readinessProbe,
		Hint:        "Provisioning did not finish: see `marina shell -- sudo tail -n 50 /var/log/cloud-init-output.log`",
	}}
	return encode(y)
}

// encode writes the template: two-space YAML under a line saying where it
// comes from.
func encode(y limaYAML) ([]byte, error) {
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
