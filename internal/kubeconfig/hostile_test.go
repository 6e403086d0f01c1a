package kubeconfig

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// pemPair makes a self-signed certificate and its key, PEM-encoded.
func pemPair(t *testing.T, cn string) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

// kindExport is what `kind get kubeconfig --name NAME` prints, with real
// certificates, plus extra lines under the user and cluster.
func kindExport(t *testing.T, name, userExtra, clusterExtra string) []byte {
	t.Helper()
	ca, _ := pemPair(t, "kubernetes")
	crt, key := pemPair(t, "kubernetes-admin")
	b64 := base64.StdEncoding.EncodeToString
	return []byte(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ` + b64(ca) + `
    server: https://127.0.0.1:7003
` + clusterExtra + `  name: kind-` + name + `
contexts:
- context:
    cluster: kind-` + name + `
    user: kind-` + name + `
  name: kind-` + name + `
current-context: kind-` + name + `
kind: Config
preferences: {}
users:
- name: kind-` + name + `
  user:
    client-certificate-data: ` + b64(crt) + `
    client-key-data: ` + b64(key) + `
` + userExtra)
}

// Whoever is root in the VM writes the export: an exec plugin in it must
// never run on the Mac, and nothing of it may be merged.
func TestHostileExportRunsNothing(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "PWNED")
	plugin := filepath.Join(dir, "plugin")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\ntouch "+mark+"\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"x\"}}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	defer srv.Close()
	target := filepath.Join(dir, "config")
	hostile := map[string][]byte{
		"exec":            kindExport(t, "dev", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: "+plugin+"\n      interactiveMode: Never\n", ""),
		"auth-provider":   kindExport(t, "dev", "    auth-provider:\n      name: oidc\n      config:\n        idp-issuer-url: https://evil.example.com\n", ""),
		"tokenFile":       kindExport(t, "dev", "    tokenFile: /Users/me/.ssh/id_ed25519\n", ""),
		"token":           kindExport(t, "dev", "    token: abc\n", ""),
		"proxy-url":       kindExport(t, "dev", "", "    proxy-url: http://evil.example.com:3128\n"),
		"insecure":        kindExport(t, "dev", "", "    insecure-skip-tls-verify: true\n"),
		"ca file":         kindExport(t, "dev", "", "    certificate-authority: /etc/hosts\n"),
		"client key file": kindExport(t, "dev", "    client-key: /Users/me/.ssh/id_ed25519\n", ""),
		"extra user":      append(kindExport(t, "dev", "", ""), []byte("- name: other\n  user:\n    token: x\n")...),
	}
	refused := map[string]string{
		"exec": "user.exec", "auth-provider": "user.auth-provider", "tokenFile": "user.tokenFile", "token": "user.token",
		"proxy-url": "cluster.proxy-url", "insecure": "cluster.insecure-skip-tls-verify", "ca file": "cluster.certificate-authority,",
		"client key file": "user.client-key,", "extra user": "2 users",
	}
	for what, kc := range hostile {
		t.Run(what, func(t *testing.T) {
			os.Remove(mark)
			os.Remove(target)
			out, err := Rename(kc, "dev", srv.URL, "", testHome)
			if err == nil {
				// What marina would do next with it: talk to the cluster.
				if rc, err := clientcmd.RESTConfigFromKubeConfig(out); err == nil {
					rc.TLSClientConfig = rest.TLSClientConfig{Insecure: true}
					if c, err := rest.HTTPClientFor(rc); err == nil {
						req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
						resp, err := c.Do(req)
						if err == nil {
							resp.Body.Close()
						}
					}
				}
				if err := Merge(target, "dev", out, testOwner); err != nil {
					t.Logf("merge: %v", err)
				}
				t.Errorf("the export with %s was accepted:\n%s", what, out)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("the exec plugin ran")
			}
			if _, err := os.Stat(target); err == nil {
				t.Errorf("something was merged into %s", target)
			}
			// The error names what was refused.
			if err != nil && !strings.Contains(err.Error(), refused[what]) {
				t.Errorf("the error does not name %q: %v", refused[what], err)
			}
		})
	}
}

// A user's own entries of a cluster's name are never replaced.
func TestMergeNeverReplacesTheUsersEntries(t *testing.T) {
	target := filepath.Join(t.TempDir(), "config")
	user := `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster:
    server: https://dev.corp.example.com
users:
- name: dev
  user:
    token: corp-token
contexts:
- name: dev
  context:
    cluster: dev
    user: dev
`
	if err := os.WriteFile(target, []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	kc, err := Rename(kindExport(t, "dev", "", ""), "dev", "https://192.168.64.3:7001", "", testHome)
	if err != nil {
		t.Fatal(err)
	}
	err = Merge(target, "dev", kc, testOwner)
	if b, _ := os.ReadFile(target); string(b) != user {
		t.Errorf("merge changed the user's kubeconfig:\n%s", b)
	}
	if err == nil || !strings.Contains(err.Error(), "dev") {
		t.Errorf("merge over the user's dev: %v", err)
	}
}
