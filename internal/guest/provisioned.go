package guest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/bcollard/marina/internal/vm"
)

// Provisioning is what the observation reads of how the VM was
// provisioned. Everything in it comes from the VM: each value is checked
// for its kind, and one that fails is left empty.
type Provisioning struct {
	// Record is the VM's provisioning record; nil when it has none (a VM
	// made before marina wrote one).
	Record *Record
	// User is the Lima user (the one sudo ran the observation for): the
	// docker socket belongs to it.
	User string
	// OS and OSVersion are /etc/os-release's ID and VERSION_ID.
	OS, OSVersion string
	// DaemonSum and SocketSum are the sha256 of /etc/docker/daemon.json
	// and of marina's drop-in for docker.socket ("" when absent).
	DaemonSum, SocketSum string
}

// Record is the provisioning record: which marina wrote it, the digest of
// its script, and the Docker, kind and kubectl versions the script left.
type Record struct {
	Marina, Script, Docker, Kind, Kubectl string
}

// The files of provisionFiles whose change restarts Docker.
const (
	daemonPath = "/etc/docker/daemon.json"
	socketPath = "/etc/systemd/system/docker.socket.d/marina.conf"
	osRelease  = "/etc/os-release"
)

// provisionObserve is the observation's section on provisioning; bash's
// read only, bounded to the first lines of each file.
const provisionObserve = `echo "@@ provision"
echo "user=${SUDO_USER:-}"
echo "daemon=${sum[` + daemonPath + `]:-}"
echo "socket=${sum[` + socketPath + `]:-}"
n=0
if [ -f ` + RecordPath + ` ]; then
	while [ $n -lt 16 ] && IFS= read -r l; do echo "record.$l"; n=$((n + 1)); done <` + RecordPath + `
fi
n=0
if [ -f ` + osRelease + ` ]; then
	while [ $n -lt 64 ] && IFS= read -r l; do
		case "$l" in ID=* | VERSION_ID=*) echo "os.$l" ;; esac
		n=$((n + 1))
	done <` + osRelease + `
fi
`

var (
	limaUserRe = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	versionRe  = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_~-]{0,79}$`)
	digestRe   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	osRe       = regexp.MustCompile(`^[0-9A-Za-z._-]{1,32}$`)
)

func parseProvisioning(sec string) Provisioning {
	var p Provisioning
	var rec Record
	seen := false
	check := func(re *regexp.Regexp, v string) string {
		if re.MatchString(v) {
			return v
		}
		return ""
	}
	for _, line := range strings.Split(sec, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "user":
			p.User = check(limaUserRe, v)
		case "daemon":
			p.DaemonSum = check(digestRe, v)
		case "socket":
			p.SocketSum = check(digestRe, v)
		case "os.ID":
			p.OS = check(osRe, strings.Trim(v, `"`))
		case "os.VERSION_ID":
			p.OSVersion = check(osRe, strings.Trim(v, `"`))
		case "record.marina":
			seen, rec.Marina = true, check(versionRe, v)
		case "record.script":
			seen, rec.Script = true, check(digestRe, v)
		case "record.docker":
			seen, rec.Docker = true, check(versionRe, v)
		case "record.kind":
			seen, rec.Kind = true, check(versionRe, v)
		case "record.kubectl":
			seen, rec.Kubectl = true, check(versionRe, v)
		}
	}
	if seen {
		p.Record = &rec
	}
	return p
}

// Current reports whether the VM was provisioned by this marina's script.
func (p Provisioning) Current() bool {
	return p.Record != nil && p.Record.Script == ProvisionDigest()
}

// RestartsDocker reports whether provisioning the VM again restarts
// Docker, and so every container in it: another Docker major (dockerVersion
// is the one the daemon reports), or another daemon.json or socket
// drop-in. Unknown counts as a change.
func (p Provisioning) RestartsDocker(dockerVersion string) bool {
	major, _, _ := strings.Cut(dockerVersion, ".")
	if major != fmt.Sprint(vm.DockerMajor) {
		return true
	}
	if p.DaemonChanged() {
		return true
	}
	return p.User == "" || p.SocketSum != sha(socketConf(p.User))
}

// Behind describes how the VM's provisioning differs from this marina's
// ("" when it is this marina's): for status, doctor and up. marina is this
// marina's version, docker the version the VM's Docker reports.
func (p Provisioning) Behind(marina, docker string) string {
	if p.Current() {
		return ""
	}
	return strings.Join(p.Differences(marina, docker), "; ")
}

// Differences lists what provisioning the VM again changes, as far as
// the observation tells.
func (p Provisioning) Differences(marina, docker string) []string {
	var out []string
	r := p.Record
	switch {
	case r == nil:
		out = append(out, "provisioned by an earlier marina, which kept no record")
	case r.Marina != marina:
		out = append(out, fmt.Sprintf("provisioned by marina %s (this is %s)", orUnknown(r.Marina), marina))
	default:
		out = append(out, "provisioned by another build of marina "+marina)
	}
	if major, _, _ := strings.Cut(docker, "."); major != fmt.Sprint(vm.DockerMajor) {
		out = append(out, fmt.Sprintf("Docker %s → %d", orUnknown(docker), vm.DockerMajor))
	}
	switch {
	case r == nil || r.Kind == "":
		out = append(out, "kind → "+vm.KindVersion+" where it differs")
	case r.Kind != vm.KindVersion:
		out = append(out, fmt.Sprintf("kind %s → %s", r.Kind, vm.KindVersion))
	}
	switch {
	case r == nil || r.Kubectl == "":
		// Unknown: a record before kubectl, or none there.
		out = append(out, fmt.Sprintf("kubectl → %s where no %s is there", vm.KubectlVersion, KubectlMinor(vm.KubectlVersion)))
	case KubectlMinor(r.Kubectl) != KubectlMinor(vm.KubectlVersion):
		out = append(out, fmt.Sprintf("kubectl %s → %s", r.Kubectl, vm.KubectlVersion))
	}
	if p.DaemonChanged() {
		out = append(out, "Docker's daemon.json (the Docker Hub mirror, the iptables backend)")
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// Provisioned is what a VM provisioned by this marina's script reports,
// for Lima user user, with Docker version docker.
func Provisioned(marina, user, docker string) Provisioning {
	return Provisioning{
		Record: &Record{Marina: marina, Script: ProvisionDigest(), Docker: docker, Kind: vm.KindVersion, Kubectl: vm.KubectlVersion},
		User:   user, OS: UbuntuID, OSVersion: UbuntuVersion,
		DaemonSum: sha(DaemonJSON), SocketSum: sha(socketConf(user)),
	}
}

// DaemonChanged reports whether daemon.json is not this marina's.
func (p Provisioning) DaemonChanged() bool { return p.DaemonSum != sha(DaemonJSON) }

// Ubuntu is the guest OS marina provisions; another needs a new VM.
const (
	UbuntuID      = "ubuntu"
	UbuntuVersion = "24.04"
)

// Upgradable reports whether the provisioning script can run in this VM:
// it is the Ubuntu release marina's VMs run. An unread os-release counts
// as one (the script itself stops on what it cannot do).
func (p Provisioning) Upgradable() bool {
	return p.OS == "" || (p.OS == UbuntuID && p.OSVersion == UbuntuVersion)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// userMark is what Lima replaces with its user in the script.
const userMark = "{{.User}}"

func socketConf(user string) string {
	return strings.ReplaceAll(socketDropIn, userMark, user)
}

// Reprovision is this marina's provisioning script as the VM runs it
// again (as root, in one round trip) for the Lima user given (from the
// observation): as Lima would at boot. It restarts Docker when the
// daemon's files or its major change.
func Reprovision(marina, user string) (vm.Script, error) {
	if !limaUserRe.MatchString(user) {
		return vm.Script{}, fmt.Errorf("the VM did not say which user Lima made (read %q): run `marina up` again; if it says so again, `marina shell -- id -un` shows it", user)
	}
	body := strings.ReplaceAll(Provision(marina), userMark, user)
	return vm.Script{Name: "provision the VM again", Body: body, Root: true}, nil
}
