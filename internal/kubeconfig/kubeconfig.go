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
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"gopkg.in/yaml.v3"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/bcollard/marina/internal/fileutil"
)

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
	return Files(getenv, home)[0]
}

// Files are the kubeconfig files kubectl reads: those of $KUBECONFIG, else
// ~/.kube/config. kubectl takes an entry from the first file that has it.
func Files(getenv func(string) string, home string) []string {
	var out []string
	for _, p := range filepath.SplitList(getenv("KUBECONFIG")) {
		if p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = append(out, filepath.Join(home, ".kube", "config"))
	}
	return out
}

// the sections of a kubeconfig that hold named entries.
var sections = []string{"clusters", "contexts", "users"}

// Merge puts the entries of cluster (a kubeconfig of marina's, all named
// name) into the kubeconfig at target, replacing only entries of that name
// that marina wrote itself and touching nothing else. An entry of that name
// that marina did not write (the user's own "dev") is an error that changes
// nothing. current-context is left alone.
func Merge(target, name string, cluster []byte, o Owner) error {
	var src yaml.Node
	if err := yaml.Unmarshal(cluster, &src); err != nil || len(src.Content) == 0 {
		return fmt.Errorf("read the kubeconfig of %s: %v", name, err) //nolint:errorlint // err may be nil here
	}
	entries := map[string]*yaml.Node{}
	for _, sec := range sections {
		for _, item := range seqItems(mapValue(src.Content[0], sec)) {
			if _, home := markOf(sec, item); itemName(item) == name && home == o.Home && o.Home != "" {
				entries[sec] = item
			}
		}
		if entries[sec] == nil {
			return fmt.Errorf("the kubeconfig of %s has no %s entry named %q that this marina home wrote", name, strings.TrimSuffix(sec, "s"), name)
		}
	}
	return edit(target, func(root *yaml.Node) (bool, error) {
		if err := clash(target, root, name, o); err != nil {
			return false, err
		}
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
		return true, nil
	})
}

// CheckMerge reports whether clusters names could be merged into the
// first of files: an error when any of them (kubectl reads them all) holds
// entries of one of the names that marina did not write. It reads each
// file once and changes nothing, so that a create fails before kind runs
// rather than after.
func CheckMerge(files []string, o Owner, names ...string) error {
	for _, f := range files {
		root, err := readTarget(f)
		if err != nil {
			return err
		}
		if root == nil {
			continue
		}
		for _, n := range names {
			if err := clash(f, root, n, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// clash is the error for entries named name in root that o does not own:
// the user's own, another marina home's, or (unless o.Legacy) an older
// marina's.
func clash(target string, root *yaml.Node, name string, o Owner) error {
	var foreign []string
	var marked *yaml.Node
	section := ""
	for _, sec := range sections {
		for _, item := range seqItems(mapValue(root, sec)) {
			if itemName(item) != name || o.owns(sec, item) {
				continue
			}
			if owned(sec, item) {
				marked, section = item, sec
				continue
			}
			foreign = append(foreign, strings.TrimSuffix(sec, "s"))
		}
	}
	if len(foreign) > 0 {
		return fmt.Errorf("%s already has a %s named %q that marina did not write; marina leaves it alone and changed nothing: choose another cluster name, or rename yours first (kubectl config rename-context %s %s-old, and its cluster and user)",
			target, strings.Join(dedupe(foreign), ", "), name, name, name)
	}
	if marked != nil {
		return fmt.Errorf("the entries named %q in %s are %s; marina leaves them alone and changed nothing: %s", name, target, o.whose(section, marked), o.fix(section, marked, name, target))
	}
	return nil
}

// owned reports whether a kubeconfig entry (an item of clusters, users or
// contexts) carries marina's mark, whichever home wrote it.
func owned(section string, item *yaml.Node) bool {
	marked, _ := markOf(section, item)
	return marked
}

// markOf is whether an entry carries marina's mark, and the home it
// names ("" for a mark of a marina that named none).
func markOf(section string, item *yaml.Node) (bool, string) {
	inner := mapValue(item, map[string]string{"clusters": "cluster", "users": "user", "contexts": "context"}[section])
	for _, ext := range seqItems(mapValue(inner, "extensions")) {
		if itemName(ext) == Mark {
			home := ""
			if h := mapValue(mapValue(ext, "extension"), "home"); h != nil && h.Kind == yaml.ScalarNode {
				home = h.Value
			}
			return true, home
		}
	}
	return false, ""
}

// Owner is the marina home an operation acts for: the folder it keeps its
// config in (config.Paths.Dir). ~/.kube/config and ~/.kube/marina are
// shared by every home, so an entry is a home's to replace or remove only
// when its mark names that home: another home's VM listing a cluster of
// the same name cannot reach it (S11).
type Owner struct {
	Home string
	// Legacy lets the operation take entries an older marina marked
	// without naming a home: only for a cluster the user named.
	Legacy bool
}

// owns reports whether o may replace or remove the entry.
func (o Owner) owns(section string, item *yaml.Node) bool {
	marked, home := markOf(section, item)
	return marked && o.Home != "" && (home == o.Home || (home == "" && o.Legacy))
}

// whose says who an entry o does not own belongs to.
func (o Owner) whose(section string, item *yaml.Node) string {
	switch marked, home := markOf(section, item); {
	case !marked:
		return "not marina's (yours)"
	case home == "":
		return "marina's, from an older marina that did not record which marina home wrote it"
	default:
		return "another marina home's (" + home + ")"
	}
}

// fix says how the user acts on an entry o does not own.
func (o Owner) fix(section string, item *yaml.Node, name, where string) string {
	switch marked, home := markOf(section, item); {
	case !marked:
		return "it is not marina's to change; if it is a leftover of yours, remove it from " + where + " by hand"
	case home == "":
		return fmt.Sprintf("if it is this home's, `marina kubeconfig remove %s` then `marina kubeconfig merge %s` take it over; if it is a leftover, remove it from %s by hand", name, name, where)
	default:
		return fmt.Sprintf("run marina with MARINA_HOME=%s to act on it; if that home is gone, remove it from %s by hand", home, where)
	}
}

func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// Removed is what Remove did.
type Removed struct {
	// Entries are the sections (cluster, user, context) whose entry of the
	// name marina removed.
	Entries []string
	// Foreign are the sections holding an entry of the name that marina
	// did not write, and so kept.
	Foreign []string
	// Others says whose entries of the name marina wrote for another home
	// (or an older marina's, unless the Owner takes those) were kept, ""
	// when none.
	Others string
}

// Remove drops the entries named name that marina wrote from target, and
// clears current-context when it named the context removed. Entries of
// that name marina did not write stay, and are reported. A missing file
// is fine.
func Remove(target, name string, o Owner) (Removed, error) {
	var r Removed
	if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	err := edit(target, func(root *yaml.Node) (bool, error) {
		for _, sec := range sections {
			seq := mapValue(root, sec)
			if seq == nil || seq.Kind != yaml.SequenceNode {
				continue
			}
			kept := seq.Content[:0]
			for _, item := range seq.Content {
				switch {
				case itemName(item) != name:
				case o.owns(sec, item):
					r.Entries = append(r.Entries, strings.TrimSuffix(sec, "s"))
					continue
				case owned(sec, item):
					r.Others = o.whose(sec, item)
				default:
					r.Foreign = append(r.Foreign, strings.TrimSuffix(sec, "s"))
				}
				kept = append(kept, item)
			}
			seq.Content = kept
		}
		removedContext := false
		for _, e := range r.Entries {
			removedContext = removedContext || e == "context"
		}
		if cc := mapValue(root, "current-context"); removedContext && cc != nil && cc.Value == name {
			cc.Value = ""
		}
		return len(r.Entries) > 0, nil
	})
	return r, err
}

// Use makes name the current context of target.
func Use(target, name string) error {
	return edit(target, func(root *yaml.Node) (bool, error) {
		setMapValue(root, "current-context", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name})
		return true, nil
	})
}

// Has reports whether target holds a context named name that o owns.
func Has(target, name string, o Owner) (bool, error) {
	root, err := readTarget(target)
	if err != nil || root == nil {
		return false, err
	}
	for _, item := range seqItems(mapValue(root, "contexts")) {
		if itemName(item) == name && o.owns("contexts", item) {
			return true, nil
		}
	}
	return false, nil
}

// Contexts are the names of the contexts in target that marina wrote,
// in the file's order; none when the file is missing.
func Contexts(target string) ([]string, error) {
	root, err := readTarget(target)
	if err != nil || root == nil {
		return nil, err
	}
	var out []string
	for _, item := range seqItems(mapValue(root, "contexts")) {
		if owned("contexts", item) {
			out = append(out, itemName(item))
		}
	}
	return out, nil
}

// Current is target's current context ("" when none).
func Current(target string) (string, error) {
	root, err := readTarget(target)
	if err != nil || root == nil {
		return "", err
	}
	if cc := mapValue(root, "current-context"); cc != nil && cc.Kind == yaml.ScalarNode {
		return cc.Value, nil
	}
	return "", nil
}

// MaxSize bounds what marina reads as a kubeconfig.
const MaxSize = 16 << 20

// realTarget is the file target names: target itself, or where its
// symlink points (dotfiles keep ~/.kube/config as a link). A link to
// nothing is an error: writing a new file in its place would break the
// user's setup.
func realTarget(target string) (string, error) {
	st, err := os.Lstat(target)
	if errors.Is(err, os.ErrNotExist) || (err == nil && st.Mode()&os.ModeSymlink == 0) {
		return target, nil
	}
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(target)
	if errors.Is(err, os.ErrNotExist) {
		dest, _ := os.Readlink(target)
		return "", fmt.Errorf("%s is a symlink to %s, which does not exist: marina will not replace the link with a file; create its target or remove the link, then try again", target, dest)
	}
	if err != nil {
		return "", fmt.Errorf("%s is a symlink marina cannot follow: %w", target, err)
	}
	return real, nil
}

// readTarget reads and parses target as one YAML document and returns
// its top-level mapping; nil when the file is missing or empty.
func readTarget(target string) (*yaml.Node, error) {
	doc, err := readDoc(target)
	if err != nil || doc == nil {
		return nil, err
	}
	return doc.Content[0], nil
}

// readDoc is readTarget's document, comments and all.
func readDoc(target string) (*yaml.Node, error) {
	real, err := realTarget(target)
	if err != nil {
		return nil, err
	}
	old, err := fileutil.ReadRegular(real, MaxSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", target, err)
	}
	if len(bytes.TrimSpace(old)) == 0 {
		return nil, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(old))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("read %s: %w (fix or move it, then try again)", target, err)
	}
	// A trailing "---" starts an empty document: fine. One with content
	// would be dropped by the rewrite.
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || (len(next.Content) > 0 && !(next.Content[0].Kind == yaml.ScalarNode && next.Content[0].Tag == "!!null")) {
			return nil, fmt.Errorf("%s holds more than one YAML document: marina would drop all but the first, so it changes nothing; keep one (kubectl reads only the first)", target)
		}
	}
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
		return nil, nil
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a kubeconfig (its top level is not a mapping)", target)
	}
	return &doc, nil
}

// lockWait is how long edit waits for another writer of the same file.
var lockWait = 30 * time.Second

// held are kubectl lock files this process holds now.
var held sync.Map

// ReleaseLocks removes the kubectl lock files this process holds, for a
// marina that must stop at once: left behind, they would keep kubectl
// from writing the kubeconfig until someone removed them. (The flocks go
// with the process.)
func ReleaseLocks() {
	held.Range(func(k, _ any) bool {
		os.Remove(k.(string))
		return true
	})
}

// edit applies change to target's YAML under two locks: an flock that
// serialises marina processes (released by the kernel if one dies), and
// kubectl's own "<file>.lock", so that kubectl and marina never write the
// file at the same time. The result is checked with clientcmd and written
// atomically with mode 0600; an error from change leaves the file as it
// was.
func edit(target string, change func(root *yaml.Node) (bool, error)) error {
	real, err := realTarget(target)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	unlock, err := lock(target)
	if err != nil {
		return err
	}
	defer unlock()

	doc, err := readDoc(target)
	if err != nil {
		return err
	}
	if doc == nil {
		root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setMapValue(root, "apiVersion", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "v1"})
		setMapValue(root, "kind", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "Config"})
		setMapValue(root, "preferences", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
		doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	}
	if changed, err := change(doc.Content[0]); err != nil || !changed {
		return err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if _, err := clientcmd.Load(b.Bytes()); err != nil {
		return fmt.Errorf("the merged %s would not load (%w); it was left as it was", target, err)
	}
	if err := backup(real, target); err != nil {
		return err
	}
	return fileutil.WriteAtomic(real, b.Bytes(), 0o600)
}

// BackupSuffix names the copy of a kubeconfig marina keeps from before
// its first change of the day, as klimax did: one copy, beside the file
// (beside a symlink, not in the dotfiles it points into), replaced on the
// next day marina changes the file.
const BackupSuffix = ".marina-backup"

// now dates the backups (tests move it).
var now = time.Now

// backup copies real (target's file) to target+BackupSuffix, unless there
// is nothing in it or the copy there is from today.
func backup(real, target string) error {
	dst := target + BackupSuffix
	if st, err := os.Lstat(dst); err == nil && st.Mode().IsRegular() {
		y1, m1, d1 := st.ModTime().Date()
		y2, m2, d2 := now().Date()
		if y1 == y2 && m1 == m2 && d1 == d2 {
			return nil
		}
	}
	old, err := fileutil.ReadRegular(real, MaxSize)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(bytes.TrimSpace(old)) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s to back it up: %w", target, err)
	}
	// WriteAtomic renames over dst: a link there is replaced, not followed.
	if err := fileutil.WriteAtomic(dst, old, 0o600); err != nil {
		return fmt.Errorf("back up %s to %s before changing it: %w", target, dst, err)
	}
	t := now()
	return os.Chtimes(dst, t, t)
}

// lock takes both locks on target, within lockWait; unlock lets go of
// them.
func lock(target string) (unlock func(), err error) {
	fl := flock.New(target + ".marina-lock")
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", target, err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("another marina has held %s for %s; try again when it is done", target, lockWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	kubectlLock := target + ".lock"
	for {
		f, err := os.OpenFile(kubectlLock, os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			f.Close()
			break
		}
		if !errors.Is(err, os.ErrExist) {
			fl.Unlock()
			return nil, fmt.Errorf("lock %s: %w", target, err)
		}
		if time.Now().After(deadline) {
			fl.Unlock()
			return nil, fmt.Errorf("%s is locked by %s (kubectl writing it?); if nothing is, remove the lock file", target, kubectlLock)
		}
		time.Sleep(20 * time.Millisecond)
	}
	held.Store(kubectlLock, true)
	return func() {
		os.Remove(kubectlLock)
		held.Delete(kubectlLock)
		fl.Unlock()
	}, nil
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
