package guest

import (
	"encoding/base64"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/run"
)

// ClustersDir holds one folder per cluster in the VM: the containerd
// certs.d its nodes mount read-only.
const ClustersDir = "/etc/marina/clusters"

// ClusterDir is cluster name's folder in the VM, refused for anything but
// a cluster name (a DNS label): names reach scripts and paths here.
func ClusterDir(name string) (string, error) {
	if err := cluster.CheckName(name); err != nil {
		return "", err
	}
	return fileutil.Child(ClustersDir, name)
}

// CertsDir is the certs.d folder of cluster name in the VM.
func CertsDir(name string) (string, error) {
	d, err := ClusterDir(name)
	if err != nil {
		return "", err
	}
	return path.Join(d, "certs.d"), nil
}

// The files kind's control plane keeps that marina reads back.
const apiServerCert = "/etc/kubernetes/pki/apiserver.crt"

// KindSpec is what KindCreate makes a cluster from.
type KindSpec struct {
	Name, Image string
	Config      []byte            // kind's config
	CertsD      map[string]string // path under certs.d → content
	Addons      string            // the cluster's addons record (DNSRecord)
	EtcdAuth    string            // EtcdAuth with the cluster's user: runs before kind
	Retain      bool              // kind create --retain
	// Images are pulled onto every node while kind still runs (Prepull).
	Images []string
}

// KindCreate is the script that creates cluster k.Name: it writes the
// cluster's certs.d, runs kind with the config on stdin, then prints the
// cluster's export (see ParseExports). The name is checked here and the
// image quoted; the certs.d files travel in quoted here-documents (see put)
// and the kind config base64-encoded, so none of their text is shell.
func KindCreate(k KindSpec) (string, error) {
	name, image, certsD, addons, etcdAuth := k.Name, k.Image, k.CertsD, k.Addons, k.EtcdAuth
	dir, err := ClusterDir(name)
	if err != nil {
		return "", err
	}
	certs := path.Join(dir, "certs.d")
	b := NewBatch()
	b.Sh("rm -rf " + run.ShellQuote(dir))
	keys := make([]string, 0, len(certsD))
	for key := range certsD {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	b.Sh("install -d -m 0755 " + run.ShellQuote(certs))
	for _, key := range keys {
		f := path.Join(certs, key)
		if !strings.HasPrefix(f, certs+"/") {
			return "", fmt.Errorf("%q is not a file under certs.d", key)
		}
		if err := b.Put(File{Path: f, Mode: "0644", Content: certsD[key]}, ""); err != nil {
			return "", err
		}
	}
	if addons != "" {
		if err := b.Put(File{Path: path.Join(dir, addonsFile), Mode: "0644", Content: addons + "\n"}, ""); err != nil {
			return "", err
		}
	}
	// The cluster's etcd user first: its ExternalDNS cannot start without.
	if etcdAuth != "" {
		b.Sh(etcdAuth)
	}
	// Each cluster has its own kind kubeconfig in its folder: creates and
	// deletes that run at once (a fleet) would otherwise queue on the lock
	// of one shared file, which kind gives up on after a moment.
	args := []string{"kind", "create", "cluster", "--name", name, "--image", image, "--config", "-", "--kubeconfig", path.Join(dir, kindKubeconfig)}
	if k.Retain {
		args = append(args, "--retain")
	}
	// kind's lines go to stderr as they are, and with the time each was
	// printed to the cluster's stages file: its " • stage" and " ✓ stage"
	// lines time kind's own stages (ParseStages).
	stages := run.ShellQuote(path.Join(dir, stagesFile))
	b.Sh(stampFunc)
	if len(k.Images) > 0 {
		b.Sh(prepullFunc)
		b.Sh(fmt.Sprintf("prepull %s %s %s </dev/null >/dev/null 2>&1 &\npulls=$!\ntrap 'kill \"$pulls\" 2>/dev/null || true' EXIT",
			stages, run.ShellQuote(kindClusterLabel+"="+name), run.Quote(k.Images)))
	}
	b.Sh(fmt.Sprintf("printf '%%s' %s | base64 -d | %s 2>&1 | stamp %s", base64.StdEncoding.EncodeToString(k.Config), run.Quote(args), stages))
	// The export: the kubeconfig kind has just written (kind get
	// kubeconfig would ask Docker and the node for it again: seconds in
	// the lab), and the API server's certificate.
	b.Sh(fmt.Sprintf("echo %s\ncat %s", run.ShellQuote("@@ kubeconfig "+name), run.ShellQuote(path.Join(dir, kindKubeconfig))))
	b.Sh(fmt.Sprintf("echo %s\ndocker exec %s cat %s", run.ShellQuote("@@ cert "+name), run.ShellQuote(name+"-control-plane"), apiServerCert))
	b.Sh(fmt.Sprintf("echo %s\ncat %s", run.ShellQuote("@@ stages "+name), stages))
	return b.Script(), nil
}

// The admin kubeconfig kubeadm writes on a control-plane node, which
// kind's own export is made from.
const adminConf = "/etc/kubernetes/admin.conf"

// AdminWait bounds KindAdmin's wait for kubeadm's files.
const AdminWait = 300

// stagesFile, in a cluster's folder, holds kind's lines of its create,
// each after the time it was printed (seconds since the epoch).
const stagesFile = "kind-stages"

// stampFunc copies its input to stderr, and each line after the time it
// came to the file $1.
const stampFunc = `stamp() {
	local line
	while IFS= read -r line; do
		printf '%s\n' "$line" >&2
		printf '%s %s\n' "$(date +%s.%N)" "$line" >>"$1"
	done
}`

// kindClusterLabel is the label kind puts on a cluster's node containers,
// with the cluster's name.
const kindClusterLabel = "io.x-k8s.kind.cluster"

// prepullFunc pulls images onto a cluster's nodes while kind still runs:
// the add-ons' pods are scheduled the moment a node is Ready, and the
// kubelet pulls one image at a time, so their images were 2 to 5 s of a
// create. It starts when kind starts the control plane (from its stamped
// lines in the stages file $1): every node runs by then, its containerd
// reading marina's certs.d, so the pulls come through the mirrors. Each
// node pulls one image after another, the nodes at once; a pull that
// fails is left to the kubelet, which pulls what is missing as it would
// have. It is called as prepull STAGES LABEL IMAGE….
const prepullFunc = `started() {
	local l
	[ -f "$1" ] || return 1
	while IFS= read -r l; do
		case $l in *" • Starting control-plane"*) return 0 ;; esac
	done <"$1"
	return 1
}
prepull() {
	local stages=$1 label=$2 i=0 n
	shift 2
	until started "$stages"; do
		i=$((i + 1))
		[ "$i" -le 600 ] || return 0
		sleep 0.5
	done
	for n in $(docker ps -q --filter "label=$label"); do
		(for img in "$@"; do timeout 120 docker exec "$n" crictl pull "$img" || true; done) &
	done
	wait
}`

// Stage is one of kind's stages: what kind called it, and when it began
// and ended by the VM's clock.
type Stage struct {
	Name       string
	Start, End time.Time
}

// ParseStages reads kind's stages from a stages section: each " • NAME …"
// line begins one, and the " ✓ NAME" (or " ✗ NAME") line after it ends it.
// Lines that are not kind's stages, or not stamped, are skipped.
func ParseStages(section []byte) []Stage {
	var out []Stage
	open := -1
	for line := range strings.Lines(string(section)) {
		ts, text, ok := strings.Cut(strings.TrimRight(line, "\n"), " ")
		if !ok {
			continue
		}
		sec, err := strconv.ParseFloat(ts, 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, int64(sec*float64(time.Second)))
		switch {
		case strings.HasPrefix(text, " • "):
			name := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(text, " • ")), "..."))
			out = append(out, Stage{Name: name, Start: at})
			open = len(out) - 1
		case (strings.HasPrefix(text, " ✓ ") || strings.HasPrefix(text, " ✗ ")) && open >= 0:
			out[open].End = at
			open = -1
		}
	}
	if open >= 0 { // a stage that did not end: kind failed in it
		out = out[:open]
	}
	return out
}

// KindAdmin is the script that waits, while kind creates cluster name, for
// its API server to answer on port (the guest's 127.0.0.1, where kind
// publishes it), then prints the admin kubeconfig kubeadm wrote on the
// control-plane node and the API server's certificate as KindExport does:
// the kubeconfig as kubeadm wrote it (its server is the node's own name,
// which the caller replaces, as it does kind's). kubeadm writes both
// before it starts the API server. The wait asks the port, not the node
// (a docker exec costs far more, while kind needs the CPU); it gives up
// after AdminWait seconds without printing anything.
func KindAdmin(name string, port int) (string, error) {
	if _, err := ClusterDir(name); err != nil {
		return "", err
	}
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("API port %d of cluster %s is not a port (a marina bug)", port, name)
	}
	node := run.ShellQuote(name + "-control-plane")
	var b strings.Builder
	b.WriteString("set -eu -o pipefail\n")
	// Any HTTP answer will do: the server runs (curl fails while nothing
	// listens, or Docker's proxy cannot reach it yet).
	fmt.Fprintf(&b, "i=0\nuntil curl -sk --max-time 1 -o /dev/null https://127.0.0.1:%d/livez; do\n", port)
	fmt.Fprintf(&b, "\ti=$((i + 1))\n\t[ \"$i\" -le %d ] || exit 0\n\tsleep 0.5\ndone\n", 2*AdminWait)
	fmt.Fprintf(&b, "docker exec %s test -s %s -a -s %s || exit 0\n", node, adminConf, apiServerCert)
	fmt.Fprintf(&b, "echo %s\ndocker exec %s cat %s\n", run.ShellQuote("@@ kubeconfig "+name), node, adminConf)
	fmt.Fprintf(&b, "echo %s\ndocker exec %s cat %s\n", run.ShellQuote("@@ cert "+name), node, apiServerCert)
	return b.String(), nil
}

// KindExport prints the exports of clusters names (see ParseExports).
func KindExport(names []string) (string, error) {
	exp, err := exportScript(names)
	return "set -eu -o pipefail\n" + exp, err
}

// exportScript prints, per cluster, kind's kubeconfig and the API server's
// certificate (to see which addresses it is valid for).
func exportScript(names []string) (string, error) {
	var b strings.Builder
	for _, n := range names {
		if _, err := ClusterDir(n); err != nil {
			return "", err
		}
		q := run.ShellQuote(n)
		fmt.Fprintf(&b, "echo %s\nkind get kubeconfig --name %s\n", run.ShellQuote("@@ kubeconfig "+n), q)
		fmt.Fprintf(&b, "echo %s\ndocker exec %s cat %s\n", run.ShellQuote("@@ cert "+n), run.ShellQuote(n+"-control-plane"), apiServerCert)
	}
	return b.String(), nil
}

// Export is what the VM says about one cluster's API server.
type Export struct {
	Kubeconfig []byte // as kind exports it
	Cert       []byte // the API server's serving certificate, PEM
	Stages     []byte // kind's stamped lines (KindCreate's only)
}

// ParseExports reads the output of KindCreate or KindExport.
func ParseExports(out string) map[string]Export {
	m := map[string]Export{}
	for k, v := range sections(out) {
		what, name, _ := strings.Cut(k, " ")
		e := m[name]
		switch what {
		case "kubeconfig":
			e.Kubeconfig = []byte(v)
		case "cert":
			e.Cert = []byte(v)
		case "stages":
			e.Stages = []byte(v)
		default:
			continue
		}
		m[name] = e
	}
	return m
}

// KindDelete deletes clusters names and their folders in the VM. kind
// treats a missing cluster as deleted. A node Docker is still removing
// (another delete, or the rollback of a marina that was stopped at once)
// makes kind fail with "already in progress": that is waited out, for
// up to a minute; any other failure ends the script.
func KindDelete(names []string) (string, error) {
	var b strings.Builder
	b.WriteString("set -eu -o pipefail\n" + kindDeleteFunc)
	for _, n := range names {
		dir, err := ClusterDir(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "kind_delete %s\nrm -rf %s\n", run.ShellQuote(n), run.ShellQuote(dir))
	}
	return b.String(), nil
}

// kindKubeconfig is the file in a cluster's folder where kind keeps its
// kubeconfig entry (marina builds the Mac's from kind get kubeconfig).
const kindKubeconfig = "kind.kubeconfig"

const kindDeleteFunc = `# kind_delete NAME: kind delete cluster, again while Docker is still
# removing one of its nodes. NAME is a checked cluster name. A kind that
# was killed while it wrote the cluster's own kubeconfig (a second Ctrl-C
# during create) leaves its lock file, and every later kind delete fails
# on it: the file is in marina's folder of this cluster, which goes next.
kind_delete() {
	local out tries=0
	rm -f -- "` + ClustersDir + `/$1/` + kindKubeconfig + `.lock"
	until out=$(kind delete cluster --name "$1" --kubeconfig "` + ClustersDir + `/$1/` + kindKubeconfig + `" 2>&1); do
		tries=$((tries + 1))
		case "$out" in
		*"already in progress"*) [ "$tries" -lt 60 ] && { sleep 1; continue; } ;;
		esac
		printf '%s\n' "$out" >&2
		return 1
	done
	printf '%s\n' "$out" >&2
}
`
