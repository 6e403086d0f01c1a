package kubeconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// FromKlimax turns klimax's kubeconfig of cluster name (the file klimax
// kept in ~/.kube/klimax: kind's export with kind-<name> renamed <name>
// and the API server's address put in) into marina's own kubeconfig of
// that cluster: the same server, CA and client certificate and key, its
// entries marked as marina's. The file is read as strictly as kind's
// export from the VM, and must be of name: anything more (another entry,
// a plugin, a token, a file reference, another name) is refused.
//
// tls-server-name is left unset: the file carries no serving certificate
// to check the server against, and klimax wrote an address the
// certificate names (the VM's address, which it added to the
// certificate when it made the cluster, or 127.0.0.1). Should that
// address have moved, marina's usual check of its kubeconfigs (Stale)
// re-exports from kind with the certificate, through FromKind.
func FromKlimax(data []byte, name, home string) ([]byte, error) {
	s, err := parseKlimax(data, name)
	if err != nil {
		return nil, err
	}
	return build(name, s, home)
}

// parseKlimax reads klimax's kubeconfig of cluster name.
func parseKlimax(data []byte, name string) (single, error) {
	fail := func(err error) (single, error) {
		return single{}, fmt.Errorf("klimax's kubeconfig of %s: %w", name, err)
	}
	s, err := parseSingle(data, false)
	if err != nil {
		return fail(err)
	}
	// parseSingle read it strictly: this reading succeeds, for the names.
	var c clientcmdv1.Config
	if err := sigsyaml.Unmarshal(data, &c); err != nil {
		return fail(err)
	}
	if c.Clusters[0].Name != name || c.AuthInfos[0].Name != name || c.Contexts[0].Name != name {
		return fail(fmt.Errorf("its cluster, user and context are named %q, %q and %q, not %q", c.Clusters[0].Name, c.AuthInfos[0].Name, c.Contexts[0].Name, name))
	}
	if err := checkServer(s.server); err != nil {
		return fail(err)
	}
	return s, nil
}

// checkServer accepts an API server address as klimax wrote it:
// https://<host>:<port>, nothing more.
func checkServer(server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("its server %q is not a URL: %w", server, err)
	}
	if u.Scheme != "https" || u.Hostname() == "" || u.Port() == "" || u.User != nil || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return fmt.Errorf("its server %q is not https://<address>:<port>", server)
	}
	// kind's own 0.0.0.0, which klimax replaces with the address.
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("its server %q is kind's listening address, not one to reach the cluster at", server)
	}
	return nil
}

// ForeignError is what Adopt found of the name in the user's kubeconfig
// that neither marina nor klimax wrote as it is now: the user's own (or
// changed by the user), left alone.
type ForeignError struct {
	Target, Name string
	// Sections are those (cluster, user, context) whose entry of Name is
	// the user's.
	Sections []string
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s: the %s named %q %s not what klimax merged there: left alone, as your own", e.Target, strings.Join(e.Sections, ", "), e.Name, map[bool]string{true: "is", false: "are"}[len(e.Sections) == 1])
}

// Adopt marks as marina's the cluster, user and context entries named
// name in the kubeconfig at target that klimax merged there from its
// kubeconfig of name (klimax): those without marina's mark whose values
// are exactly those of that file (the cluster's server and CA and no
// other setting, the user's client certificate and key and nothing else,
// the context's cluster and user and no namespace). Nothing else in the
// file changes. It returns the sections adopted (cluster, context, user).
//
// An entry of the name that differs in any way is the user's: it is left
// alone, and the error is then a *ForeignError naming its sections, with
// the other entries adopted all the same (the sections returned). An
// entry marina already marked is left as it is: a second Adopt finds
// nothing to do and writes nothing. A missing target is nothing to do.
// With dryRun, the answer is the same and nothing is written.
func Adopt(target, name string, klimax []byte, dryRun bool, home string) ([]string, error) {
	s, err := parseKlimax(klimax, name)
	if err != nil {
		return nil, err
	}
	want, marks, err := klimaxEntries(name, s, home)
	if err != nil {
		return nil, err
	}
	root, err := readTarget(target)
	if err != nil || root == nil {
		return nil, err
	}
	adopt, foreign := adoptable(root, name, want)
	if dryRun || len(adopt) == 0 {
		return sectionsOf(adopt), foreignError(target, name, foreign)
	}
	var done, left []string
	err = edit(target, func(root *yaml.Node) (bool, error) {
		// Again under the lock: the file may have changed since.
		adopt, foreign := adoptable(root, name, want)
		for _, a := range adopt {
			setMapValue(a.inner, "extensions", marks[a.section])
		}
		done, left = sectionsOf(adopt), foreign
		return len(adopt) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return done, foreignError(target, name, left)
}

func foreignError(target, name string, sections []string) error {
	if len(sections) == 0 {
		return nil
	}
	return &ForeignError{Target: target, Name: name, Sections: sections}
}

// inner is the key of a section's item that holds its settings.
var inner = map[string]string{"clusters": "cluster", "users": "user", "contexts": "context"}

// klimaxEntries are, for each section, the settings klimax merged from
// its kubeconfig of name (as JSON of clientcmd's types, which leaves
// unset fields out), and the node of marina's mark, as build writes it.
func klimaxEntries(name string, s single, home string) (want map[string][]byte, marks map[string]*yaml.Node, err error) {
	want = map[string][]byte{}
	for sec, v := range map[string]any{
		"clusters": clientcmdv1.Cluster{Server: s.server, CertificateAuthorityData: s.ca},
		"users":    clientcmdv1.AuthInfo{ClientCertificateData: s.cert, ClientKeyData: s.key},
		"contexts": clientcmdv1.Context{Cluster: name, AuthInfo: name},
	} {
		if want[sec], err = json.Marshal(v); err != nil {
			return nil, nil, err
		}
	}
	ours, err := build(name, s, home)
	if err != nil {
		return nil, nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(ours, &doc); err != nil || len(doc.Content) == 0 {
		return nil, nil, fmt.Errorf("read marina's own kubeconfig of %s: %v", name, err) //nolint:errorlint // err may be nil here
	}
	marks = map[string]*yaml.Node{}
	for _, sec := range sections {
		for _, item := range seqItems(mapValue(doc.Content[0], sec)) {
			if itemName(item) == name {
				marks[sec] = mapValue(mapValue(item, inner[sec]), "extensions")
			}
		}
		if marks[sec] == nil {
			return nil, nil, fmt.Errorf("marina's own kubeconfig of %s has no mark on its %s", name, inner[sec])
		}
	}
	return want, marks, nil
}

type adoption struct {
	section string
	inner   *yaml.Node
}

func sectionsOf(as []adoption) []string {
	var out []string
	for _, a := range as {
		out = append(out, inner[a.section])
	}
	return out
}

// adoptable finds in root the entries named name to adopt (unmarked, and
// what klimax merged), and the sections whose entry of the name is the
// user's. An entry marina marked is neither; so is a section without an
// entry of the name. A name listed twice in a section is the user's
// doing: both stay.
func adoptable(root *yaml.Node, name string, want map[string][]byte) (adopt []adoption, foreign []string) {
	for _, sec := range sections {
		var items []*yaml.Node
		for _, item := range seqItems(mapValue(root, sec)) {
			if itemName(item) == name {
				items = append(items, item)
			}
		}
		switch {
		case len(items) == 0:
		case len(items) > 1:
			foreign = append(foreign, inner[sec])
		case owned(sec, items[0]):
		case isKlimax(sec, items[0], want[sec]):
			adopt = append(adopt, adoption{section: sec, inner: mapValue(items[0], inner[sec])})
		default:
			foreign = append(foreign, inner[sec])
		}
	}
	return adopt, foreign
}

// isKlimax reports whether item (of section sec) decodes, strictly, to
// exactly the settings want.
func isKlimax(sec string, item *yaml.Node, want []byte) bool {
	if in := mapValue(item, inner[sec]); in == nil || in.Kind != yaml.MappingNode {
		return false
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	if err := enc.Encode(item); err != nil || enc.Close() != nil {
		return false
	}
	var got any
	var err error
	switch sec {
	case "clusters":
		var e clientcmdv1.NamedCluster
		err = sigsyaml.UnmarshalStrict(b.Bytes(), &e)
		got = e.Cluster
	case "users":
		var e clientcmdv1.NamedAuthInfo
		err = sigsyaml.UnmarshalStrict(b.Bytes(), &e)
		got = e.AuthInfo
	case "contexts":
		var e clientcmdv1.NamedContext
		err = sigsyaml.UnmarshalStrict(b.Bytes(), &e)
		got = e.Context
	default:
		err = errors.New("no such section")
	}
	if err != nil {
		return false
	}
	j, err := json.Marshal(got)
	return err == nil && bytes.Equal(j, want)
}
