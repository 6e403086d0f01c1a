// Package kubeconfig writes the kubeconfigs of marina's clusters: one file
// per cluster, renamed from kind's export with clientcmd, and merged into
// the user's kubeconfig under a lock, atomically, leaving every entry and
// field marina does not own as it found it.
package kubeconfig

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"gopkg.in/yaml.v3"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/bcollard/marina/internal/fileutil"
)

// Rename turns the kubeconfig kind exports (cluster, user and context named
// kind-<name>) into one whose three entries are all named name, with the
// API server at server and name as the current context. tlsServerName,
// when set, is the name the server's certificate is checked against (for
// a server address the certificate does not carry).
func Rename(kindConfig []byte, name, server, tlsServerName string) ([]byte, error) {
	in, err := clientcmd.Load(kindConfig)
	if err != nil {
		return nil, fmt.Errorf("read kind's kubeconfig for %s: %w", name, err)
	}
	ctxName := in.CurrentContext
	c, ok := in.Contexts[ctxName]
	if !ok {
		return nil, fmt.Errorf("kind's kubeconfig for %s has no current context", name)
	}
	cluster, ok := in.Clusters[c.Cluster]
	if !ok {
		return nil, fmt.Errorf("kind's kubeconfig for %s lacks cluster %q", name, c.Cluster)
	}
	user, ok := in.AuthInfos[c.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("kind's kubeconfig for %s lacks user %q", name, c.AuthInfo)
	}
	out := clientcmdapi.NewConfig()
	cl := cluster.DeepCopy()
	cl.Server = server
	cl.TLSServerName = tlsServerName
	out.Clusters[name] = cl
	out.AuthInfos[name] = user.DeepCopy()
	nc := c.DeepCopy()
	nc.Cluster, nc.AuthInfo = name, name
	out.Contexts[name] = nc
	out.CurrentContext = name
	return clientcmd.Write(*out)
}

// TLSServerName is what a kubeconfig for server needs in tls-server-name
// for the API server certificate certPEM to verify: "" when the
// certificate carries server's host, else a name it does carry (kind's
// certificates always hold localhost). That keeps a kubeconfig working
// after the VM's address changed, without a new certificate.
func TLSServerName(certPEM []byte, server string) (string, error) {
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		return "", errors.New("the API server certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return "", fmt.Errorf("read the API server certificate: %w", err)
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("server %q: %w", server, err)
	}
	if cert.VerifyHostname(u.Hostname()) == nil {
		return "", nil
	}
	if cert.VerifyHostname("localhost") == nil {
		return "localhost", nil
	}
	return "", fmt.Errorf("the API server certificate is valid for %v %v, not for %s", cert.DNSNames, cert.IPAddresses, u.Hostname())
}

// Server reads the API server address of a cluster kubeconfig.
func Server(kc []byte) (string, error) {
	c, err := clientcmd.Load(kc)
	if err != nil {
		return "", err
	}
	ctx, ok := c.Contexts[c.CurrentContext]
	if !ok {
		return "", errors.New("the kubeconfig has no current context")
	}
	cl, ok := c.Clusters[ctx.Cluster]
	if !ok {
		return "", errors.New("the kubeconfig's context names no cluster")
	}
	return cl.Server, nil
}

// Target is the kubeconfig marina merges into: the first file of
// $KUBECONFIG, else ~/.kube/config.
func Target(getenv func(string) string, home string) string {
	for _, p := range filepath.SplitList(getenv("KUBECONFIG")) {
		if p != "" {
			return p
		}
	}
	return filepath.Join(home, ".kube", "config")
}

// the sections of a kubeconfig that hold named entries.
var sections = []string{"clusters", "contexts", "users"}

// Merge puts the entries of cluster (a kubeconfig of marina's, all named
// name) into the kubeconfig at target, replacing entries of that name and
// touching nothing else. current-context is left alone.
func Merge(target, name string, cluster []byte) error {
	var src yaml.Node
	if err := yaml.Unmarshal(cluster, &src); err != nil || len(src.Content) == 0 {
		return fmt.Errorf("read the kubeconfig of %s: %v", name, err)
	}
	entries := map[string]*yaml.Node{}
	for _, sec := range sections {
		for _, item := range seqItems(mapValue(src.Content[0], sec)) {
			if itemName(item) == name {
				entries[sec] = item
			}
		}
		if entries[sec] == nil {
			return fmt.Errorf("the kubeconfig of %s has no %s entry named %q", name, strings.TrimSuffix(sec, "s"), name)
		}
	}
	return edit(target, func(root *yaml.Node) bool {
		for _, sec := range sections {
			seq := mapValue(root, sec)
			if seq == nil || seq.Kind != yaml.SequenceNode {
				seq = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
				setMapValue(root, sec, seq)
			}
			replaced := false
			for i, item := range seq.Content {
				if itemName(item) == name {
					seq.Content[i] = entries[sec]
					replaced = true
				}
			}
			if !replaced {
				seq.Content = append(seq.Content, entries[sec])
			}
		}
		return true
	})
}

// Remove drops the entries named name from target and clears
// current-context when it named them. A missing file is fine.
func Remove(target, name string) error {
	if _, err := os.Stat(target); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return edit(target, func(root *yaml.Node) bool {
		changed := false
		for _, sec := range sections {
			seq := mapValue(root, sec)
			if seq == nil || seq.Kind != yaml.SequenceNode {
				continue
			}
			kept := seq.Content[:0]
			for _, item := range seq.Content {
				if itemName(item) == name {
					changed = true
					continue
				}
				kept = append(kept, item)
			}
			seq.Content = kept
		}
		if cc := mapValue(root, "current-context"); cc != nil && cc.Value == name {
			cc.Value = ""
			changed = true
		}
		return changed
	})
}

// Use makes name the current context of target.
func Use(target, name string) error {
	return edit(target, func(root *yaml.Node) bool {
		setMapValue(root, "current-context", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name})
		return true
	})
}

// Has reports whether target holds a context named name.
func Has(target, name string) (bool, error) {
	c, err := clientcmd.LoadFromFile(target)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, ok := c.Contexts[name]
	return ok, nil
}

// lockWait is how long edit waits for another writer of the same file.
var lockWait = 30 * time.Second

// edit applies change to target's YAML under two locks: an flock that
// serialises marina processes (released by the kernel if one dies), and
// kubectl's own "<file>.lock", so that kubectl and marina never write the
// file at the same time. The result is checked with clientcmd and written
// atomically with mode 0600.
func edit(target string, change func(root *yaml.Node) bool) error {
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fl := flock.New(target + ".marina-lock")
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := fl.TryLock()
		if err != nil {
			return fmt.Errorf("lock %s: %w", target, err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("another marina has held %s for %s; try again when it is done", target, lockWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer fl.Unlock()
	lock := target + ".lock"
	for {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			f.Close()
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("lock %s: %w", target, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is locked by %s (kubectl writing it?); if nothing is, remove the lock file", target, lock)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer os.Remove(lock)

	old, err := os.ReadFile(target)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", target, err)
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(old)) > 0 {
		if err := yaml.Unmarshal(old, &doc); err != nil {
			return fmt.Errorf("read %s: %w (fix or move it, then try again)", target, err)
		}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		if len(doc.Content) > 0 && !(doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
			return fmt.Errorf("%s is not a kubeconfig (its top level is not a mapping)", target)
		}
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
		root := doc.Content[0]
		setMapValue(root, "apiVersion", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "v1"})
		setMapValue(root, "kind", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "Config"})
		setMapValue(root, "preferences", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
	}
	if !change(doc.Content[0]) {
		return nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if _, err := clientcmd.Load(b.Bytes()); err != nil {
		return fmt.Errorf("the merged %s would not load (%w); it was left as it was", target, err)
	}
	// A kubeconfig that is a symlink (dotfiles) stays one: write its target.
	if real, err := filepath.EvalSymlinks(target); err == nil {
		target = real
	}
	return fileutil.WriteAtomic(target, b.Bytes(), 0o600)
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func setMapValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func seqItems(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

func itemName(item *yaml.Node) string {
	if v := mapValue(item, "name"); v != nil {
		return v.Value
	}
	return ""
}
