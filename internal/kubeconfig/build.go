package kubeconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"
)

// Mark is the extension marina puts on the cluster, user and context it
// writes, naming the marina home that wrote them: what carries it is that
// home's to replace or remove (Owner); anything else in a kubeconfig is
// the user's, or another home's, and is never touched.
const Mark = "marina.dev"

func mark(home string) []clientcmdv1.NamedExtension {
	raw, err := json.Marshal(map[string]string{"managed-by": "marina", "home": home})
	if err != nil {
		panic(err) // strings always encode
	}
	return []clientcmdv1.NamedExtension{{Name: Mark, Extension: runtime.RawExtension{Raw: raw}}}
}

// single is the one cluster, user and context of a kubeconfig, read
// strictly.
type single struct {
	server, tlsServerName string
	ca, cert, key         []byte
}

// parseSingle reads a kubeconfig that must hold exactly one cluster, user
// and context, all named as its current context says, with the CA, the
// client certificate and its key as data, and nothing else: no exec or
// auth-provider plugin, no token or file reference, no proxy, no insecure
// flag, no impersonation. ours allows what marina itself writes on top:
// its mark and tls-server-name.
func parseSingle(data []byte, ours bool) (single, error) {
	var c clientcmdv1.Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return single{}, fmt.Errorf("it is not a kubeconfig marina can read: %w", err)
	}
	if c.Kind != "Config" || c.APIVersion != "v1" {
		return single{}, fmt.Errorf("it is %s %s, not a v1 Config", c.APIVersion, c.Kind)
	}
	if len(c.Clusters) != 1 || len(c.AuthInfos) != 1 || len(c.Contexts) != 1 {
		return single{}, fmt.Errorf("it holds %d clusters, %d users and %d contexts, not one of each", len(c.Clusters), len(c.AuthInfos), len(c.Contexts))
	}
	cl, u, cx := c.Clusters[0], c.AuthInfos[0], c.Contexts[0]
	if cx.Name != c.CurrentContext || cx.Context.Cluster != cl.Name || cx.Context.AuthInfo != u.Name {
		return single{}, errors.New("its context, cluster and user do not belong together")
	}
	s := single{server: cl.Cluster.Server, ca: cl.Cluster.CertificateAuthorityData, cert: u.AuthInfo.ClientCertificateData, key: u.AuthInfo.ClientKeyData}
	var extra []string
	if ours {
		s.tlsServerName = cl.Cluster.TLSServerName
		cl.Cluster.TLSServerName = ""
		cl.Cluster.Extensions = dropMark(cl.Cluster.Extensions)
		u.AuthInfo.Extensions = dropMark(u.AuthInfo.Extensions)
		cx.Context.Extensions = dropMark(cx.Context.Extensions)
	}
	cl.Cluster.Server, cl.Cluster.CertificateAuthorityData = "", nil
	u.AuthInfo.ClientCertificateData, u.AuthInfo.ClientKeyData = nil, nil
	cx.Context.Cluster, cx.Context.AuthInfo = "", ""
	extra = append(extra, setFields("cluster", cl.Cluster)...)
	extra = append(extra, setFields("user", u.AuthInfo)...)
	extra = append(extra, setFields("context", cx.Context)...)
	extra = append(extra, setFields("preferences", c.Preferences)...)
	if len(c.Extensions) > 0 {
		extra = append(extra, "extensions")
	}
	if len(extra) > 0 {
		return single{}, fmt.Errorf("it sets %s, which marina never accepts from the VM: only the API server's CA and a client certificate and key", strings.Join(extra, ", "))
	}
	if len(s.ca) == 0 || len(s.cert) == 0 || len(s.key) == 0 {
		return single{}, errors.New("it lacks the CA, the client certificate or its key")
	}
	if !x509.NewCertPool().AppendCertsFromPEM(s.ca) {
		return single{}, errors.New("its certificate-authority-data is not a PEM certificate")
	}
	if _, err := tls.X509KeyPair(s.cert, s.key); err != nil {
		return single{}, fmt.Errorf("its client certificate and key are not a pair: %w", err)
	}
	return s, nil
}

// setFields names the fields of v (a kubeconfig section) that are set.
func setFields(section string, v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		return []string{section}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return []string{section}
	}
	var out []string
	for k, raw := range m {
		switch string(raw) {
		case "null", `""`, "false", "[]", "{}", "0":
			continue
		}
		out = append(out, section+"."+k)
	}
	sort.Strings(out)
	return out
}

func dropMark(ext []clientcmdv1.NamedExtension) []clientcmdv1.NamedExtension {
	var out []clientcmdv1.NamedExtension
	for _, e := range ext {
		if e.Name != Mark {
			out = append(out, e)
		}
	}
	return out
}

// build writes marina's kubeconfig for cluster name from s: entries all
// named name and marked as marina's, the current context name.
func build(name string, s single, home string) ([]byte, error) {
	if home == "" || !filepath.IsAbs(home) {
		return nil, fmt.Errorf("the kubeconfig of %s names no marina home (a marina bug)", name)
	}
	c := clientcmdv1.Config{
		Kind: "Config", APIVersion: "v1", CurrentContext: name,
		Clusters: []clientcmdv1.NamedCluster{{Name: name, Cluster: clientcmdv1.Cluster{
			Server: s.server, TLSServerName: s.tlsServerName, CertificateAuthorityData: s.ca, Extensions: mark(home),
		}}},
		AuthInfos: []clientcmdv1.NamedAuthInfo{{Name: name, AuthInfo: clientcmdv1.AuthInfo{
			ClientCertificateData: s.cert, ClientKeyData: s.key, Extensions: mark(home),
		}}},
		Contexts: []clientcmdv1.NamedContext{{Name: name, Context: clientcmdv1.Context{
			Cluster: name, AuthInfo: name, Extensions: mark(home),
		}}},
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	if _, err := clientcmd.Load(b); err != nil {
		return nil, fmt.Errorf("the kubeconfig marina built for %s does not load: %w", name, err)
	}
	return b, nil
}

// Rename builds marina's kubeconfig for cluster name from the kubeconfig
// kind exports in the VM: it takes the API server's CA and the client
// certificate and key from it and nothing else, refusing an export that
// carries anything more (whoever is root in the VM writes it; an exec
// plugin or a token file in it would run or leak on the Mac). The entries
// are named name and marked as home's; the server is server, and
// tlsServerName, when set, is the name its certificate is checked against
// (for a server address the certificate does not carry).
func Rename(kindConfig []byte, name, server, tlsServerName, home string) ([]byte, error) {
	s, err := parseSingle(kindConfig, false)
	if err != nil {
		return nil, fmt.Errorf("kind's kubeconfig for %s from the VM: %w; nothing was written", name, err)
	}
	s.server, s.tlsServerName = server, tlsServerName
	return build(name, s, home)
}

// RESTConfig is a client configuration from one of marina's own cluster
// kubeconfigs, read as strictly as an export.
func RESTConfig(kc []byte) (*rest.Config, error) {
	if _, err := parseSingle(kc, true); err != nil {
		return nil, fmt.Errorf("not a kubeconfig marina wrote: %w", err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "marina"
	return rc, nil
}
