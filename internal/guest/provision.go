package guest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"text/template"

	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/vm"
)

// Provision is the root script Lima runs on every boot, for
// vm.TemplateInput.Provision. Each step looks before it changes anything,
// so a second boot changes nothing. Lima fills in {{.User}} (the script
// uses [[ ]] for marina's own values to leave it alone).
//
// It ends by writing the VM's provisioning record (RecordPath): marina,
// the marina version given, that wrote it, the digest of the script above
// the record (ProvisionDigest), and the Docker, kind and kubectl it left. A VM
// whose record holds another digest was provisioned by another marina,
// and marina up runs this one in it (Reprovision).
//
// The script is rendered from constants only; a failure is a marina bug
// that TestGolden catches, so it panics like template.Must.
func Provision(marina string) string {
	return provisionBody() + recordBlock(marina, ProvisionDigest())
}

// ProvisionDigest is the sha256 of the provisioning script above its
// record, as Lima holds it (with {{.User}}): what a VM's record names.
func ProvisionDigest() string {
	sum := sha256.Sum256([]byte(provisionBody()))
	return hex.EncodeToString(sum[:])
}

// KubectlMinor is version's major and minor ("v1.36" of "v1.36.4"): a
// kubectl of that minor is kept in the VM.
func KubectlMinor(version string) string {
	major, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	return major + "." + minor
}

// RecordPath is the VM's provisioning record.
const RecordPath = "/var/lib/marina/provisioned"

var provisionBody = sync.OnceValue(func() string {
	s, err := renderProvision()
	if err != nil {
		panic("marina: rendering the provisioning script: " + err.Error())
	}
	return s
})

// recordBlock is the end of the provisioning script: it writes the
// record, replacing it whole, so a boot that stops half way leaves the
// last one.
func recordBlock(marina, digest string) string {
	return `
# What provisioned this VM, for marina status, doctor and up.
{
	printf '%s\n' ` + run.ShellQuote("marina="+marina) + ` ` + run.ShellQuote("script="+digest) + `
	echo "docker=$(dockerd --version 2>/dev/null | sed -n 's/^Docker version \([^ ,]*\).*/\1/p')"
	echo "kind=$(kind version 2>/dev/null | awk '{print $2}')"
	echo "kubectl=$(kubectl version --client 2>/dev/null | sed -n 's/^Client Version: //p')"
} >` + RecordPath + `.new
mv -f ` + RecordPath + `.new ` + RecordPath + `
`
}

// DaemonJSON is the VM's /etc/docker/daemon.json.
const DaemonJSON = "{\n  \"firewall-backend\": \"iptables\",\n  \"registry-mirrors\": [\"" + registry.HubURL + "\"]\n}\n"

// socketDropIn is marina's drop-in for docker.socket, as Lima fills it in.
const socketDropIn = "[Socket]\nSocketUser=" + userMark + "\n"

// The files the provisioning script writes, with the shell variable put
// sets when one of them changed.
var provisionFiles = []struct {
	File
	flag string
}{
	// kind needs many inotify watches; the routed kind network needs
	// forwarding.
	{File{"/etc/sysctl.d/99-marina.conf", "0644", "fs.inotify.max_user_watches = 524288\nfs.inotify.max_user_instances = 512\nnet.ipv4.ip_forward = 1\n"}, ""},
	// Docker's socket belongs to the Lima user so Lima can forward it to
	// the Mac.
	{File{socketPath, "0644", socketDropIn}, "restart_docker"},
	// The daemon stays on the iptables firewall backend, whose DOCKER-USER
	// chain marina's routing rules live in, and pulls Docker Hub images
	// (the kind node images) through the Docker Hub mirror
	// (registry.HubAddr), falling back to Docker Hub itself.
	{File{daemonPath, "0644", DaemonJSON}, "restart_docker"},
}

func renderProvision() (string, error) {
	puts := map[string]string{}
	for _, f := range provisionFiles {
		s, err := putCall(f.File, f.flag)
		if err != nil {
			return "", err
		}
		puts[f.Path] = s
	}
	var b bytes.Buffer
	err := provisionTmpl().Execute(&b, map[string]any{
		"Put":            puts,
		"PutFunc":        putFunc,
		"DockerMajor":    vm.DockerMajor,
		"KeyFingerprint": vm.DockerKeyFingerprint,
		"KindVersion":    vm.KindVersion,
		"KindAMD64":      vm.KindSHA256AMD64,
		"KindARM64":      vm.KindSHA256ARM64,
		"Kubectl":        vm.KubectlVersion,
		"KubectlMinor":   KubectlMinor(vm.KubectlVersion),
		"KubectlAMD64":   vm.KubectlSHA256AMD64,
		"KubectlARM64":   vm.KubectlSHA256ARM64,
		"CacheDir":       vm.GuestCacheDir,
	})
	if err != nil {
		return "", fmt.Errorf("render the provisioning script: %w", err)
	}
	return b.String(), nil
}

// Parsed when first used: not at start, which every command pays.
var provisionTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("provision").Delims("[[", "]]").Parse(`#!/bin/bash
# marina VM provisioning. Lima runs this as root on every boot: every step
# looks before it changes anything.
set -eu -o pipefail
export DEBIAN_FRONTEND=noninteractive

[[.PutFunc]]
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
[[index .Put "/etc/sysctl.d/99-marina.conf"]]sysctl -q -p /etc/sysctl.d/99-marina.conf

mkdir -p [[.CacheDir]]

# kind [[.KindVersion]], its download checked against its published sha256;
# first (with kubectl), so that a failed download stops the script before
# Docker restarts.
case "$(uname -m)" in
x86_64) arch=amd64 kind_sum=[[.KindAMD64]] kubectl_sum=[[.KubectlAMD64]] ;;
aarch64) arch=arm64 kind_sum=[[.KindARM64]] kubectl_sum=[[.KubectlARM64]] ;;
*) echo "marina: no kind or kubectl build for $(uname -m)" >&2; exit 1 ;;
esac
if [ "$(kind version 2>/dev/null | awk '{print $2}')" != [[.KindVersion]] ]; then
	curl -fsSL --retry 5 "https://github.com/kubernetes-sigs/kind/releases/download/[[.KindVersion]]/kind-linux-$arch" -o /usr/local/bin/kind.new
	echo "$kind_sum  /usr/local/bin/kind.new" | sha256sum -c --status || { rm -f /usr/local/bin/kind.new; echo "marina: the kind download does not match its sha256" >&2; exit 1; }
	chmod 0755 /usr/local/bin/kind.new
	mv /usr/local/bin/kind.new /usr/local/bin/kind
fi

# kubectl [[.Kubectl]], so that the VM can drive its clusters on its own,
# checked against its published sha256; one of the same minor already
# there is kept.
case "$(kubectl version --client 2>/dev/null | sed -n 's/^Client Version: //p')" in
[[.KubectlMinor]].*) ;;
*)
	curl -fsSL --retry 5 "https://dl.k8s.io/release/[[.Kubectl]]/bin/linux/$arch/kubectl" -o /usr/local/bin/kubectl.new
	echo "$kubectl_sum  /usr/local/bin/kubectl.new" | sha256sum -c --status || { rm -f /usr/local/bin/kubectl.new; echo "marina: the kubectl download does not match its sha256" >&2; exit 1; }
	chmod 0755 /usr/local/bin/kubectl.new
	mv /usr/local/bin/kubectl.new /usr/local/bin/kubectl
	;;
esac

# Docker [[.DockerMajor]]: its socket belongs to the Lima user so Lima can forward it
# to the Mac, the daemon stays on the iptables firewall backend, whose
# DOCKER-USER chain marina's routing rules live in, and it pulls Docker Hub
# images through marina's Docker Hub mirror when there is one.
restart_docker=0
[[index .Put "/etc/systemd/system/docker.socket.d/marina.conf"]][[index .Put "/etc/docker/daemon.json"]]if ! dockerd --version 2>/dev/null | grep -q '^Docker version [[.DockerMajor]]\.'; then
	install -m 0755 -d /etc/apt/keyrings
	curl -fsSL --retry 5 https://download.docker.com/linux/ubuntu/gpg -o /etc/apt/keyrings/docker.asc.new
	if ! only_key /etc/apt/keyrings/docker.asc.new [[.KeyFingerprint]]; then
		rm -f /etc/apt/keyrings/docker.asc.new
		echo "marina: Docker's apt keyring is not exactly the key [[.KeyFingerprint]]" >&2
		exit 1
	fi
	mv /etc/apt/keyrings/docker.asc.new /etc/apt/keyrings/docker.asc
	# shellcheck source=/dev/null # the guest's own file, not in this repository
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
`))
})
