package guest

import (
	"encoding/base64"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bcollard/marina/internal/run"
)

// ClustersDir holds one folder per cluster in the VM: the containerd
// certs.d its nodes mount read-only.
const ClustersDir = "/etc/marina/clusters"

// CertsDir is the certs.d folder of cluster name in the VM.
func CertsDir(name string) string { return path.Join(ClustersDir, name, "certs.d") }

// The files kind's control plane keeps that marina reads back.
const apiServerCert = "/etc/kubernetes/pki/apiserver.crt"

// KindCreate is the script that creates cluster name: it writes the
// cluster's certs.d (path under certs.d → content), runs kind with the
// config on stdin, then prints the cluster's export (see ParseExports).
// name and image must have been validated; everything else travels
// base64-encoded.
func KindCreate(name, image string, kindConfig []byte, certsD map[string]string, retain bool) string {
	b := NewBatch()
	dir := path.Join(ClustersDir, name)
	b.Sh("rm -rf " + run.ShellQuote(dir))
	keys := make([]string, 0, len(certsD))
	for k := range certsD {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.Sh("install -d -m 0755 " + run.ShellQuote(CertsDir(name)))
	for _, k := range keys {
		b.Put(File{Path: path.Join(CertsDir(name), k), Mode: "0644", Content: certsD[k]}, "")
	}
	args := []string{"kind", "create", "cluster", "--name", name, "--image", image, "--config", "-"}
	if retain {
		args = append(args, "--retain")
	}
	b.Sh(fmt.Sprintf("printf '%%s' %s | base64 -d | %s >&2", base64.StdEncoding.EncodeToString(kindConfig), run.Quote(args)))
	b.Sh(exportScript([]string{name}))
	return b.Script()
}

// KindExport prints the exports of clusters names (see ParseExports).
func KindExport(names []string) string {
	return "set -eu -o pipefail\n" + exportScript(names)
}

// exportScript prints, per cluster, kind's kubeconfig and the API server's
// certificate (to see which addresses it is valid for).
func exportScript(names []string) string {
	var b strings.Builder
	for _, n := range names {
		q := run.ShellQuote(n)
		fmt.Fprintf(&b, "echo '@@ kubeconfig %s'\nkind get kubeconfig --name %s\n", n, q)
		fmt.Fprintf(&b, "echo '@@ cert %s'\ndocker exec %s cat %s\n", n, run.ShellQuote(n+"-control-plane"), apiServerCert)
	}
	return b.String()
}

// Export is what the VM says about one cluster's API server.
type Export struct {
	Kubeconfig []byte // as kind exports it
	Cert       []byte // the API server's serving certificate, PEM
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
		default:
			continue
		}
		m[name] = e
	}
	return m
}

// KindDelete deletes clusters names and their folders in the VM. kind
// treats a missing cluster as deleted.
func KindDelete(names []string) string {
	var b strings.Builder
	b.WriteString("set -eu -o pipefail\n")
	for _, n := range names {
		fmt.Fprintf(&b, "kind delete cluster --name %s >&2\nrm -rf %s\n", run.ShellQuote(n), run.ShellQuote(path.Join(ClustersDir, n)))
	}
	return b.String()
}
