package kubeconfig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/client-go/tools/clientcmd"
)

// klimaxCluster is one cluster as klimax left it: kind's export, and the
// file klimax made of it in ~/.kube/klimax.
type klimaxCluster struct {
	name, addr   string
	num          int
	ca, crt, key string // base64, as in the files
}

// newKlimaxCluster makes a cluster's PKI as kind's kubeadm does: a CA,
// and an admin client certificate it signed.
func newKlimaxCluster(t *testing.T, name string, num int) klimaxCluster {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		DNSNames: []string{"kubernetes"},
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"kubeadm:cluster-admins"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	return klimaxCluster{
		name: name, addr: "192.168.105.5", num: num,
		ca:  b64(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		crt: b64(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		key: b64(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})),
	}
}

// kind is `kind get kubeconfig --name <name>` as it reads in the VM: the
// server is the first 6443 binding, klimax's 0.0.0.0:700N. The extras go
// into the cluster, user and context, and tail at the end.
func (k klimaxCluster) kind(clusterExtra, userExtra, contextExtra, tail string) string {
	n := "kind-" + k.name
	return `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ` + k.ca + `
    server: https://0.0.0.0:` + fmt.Sprint(7000+k.num) + `
` + clusterExtra + `  name: ` + n + `
contexts:
- context:
    cluster: ` + n + `
` + contextExtra + `    user: ` + n + `
  name: ` + n + `
current-context: ` + n + `
kind: Config
preferences: {}
users:
- name: ` + n + `
  user:
    client-certificate-data: ` + k.crt + `
    client-key-data: ` + k.key + `
` + userExtra + tail
}

// klimaxFile is what klimax made of the export: the address put in for
// 0.0.0.0, every kind-<name> renamed <name>.
func (k klimaxCluster) klimaxFile(clusterExtra, userExtra, contextExtra, tail string) []byte {
	s := strings.ReplaceAll(k.kind(clusterExtra, userExtra, contextExtra, tail), "https://0.0.0.0:", "https://"+k.addr+":")
	return []byte(strings.ReplaceAll(s, "kind-"+k.name, k.name))
}

func (k klimaxCluster) file() []byte { return k.klimaxFile("", "", "", "") }

func (k klimaxCluster) server() string { return fmt.Sprintf("https://%s:%d", k.addr, 7000+k.num) }

// merged are klimax's entries of k in a kubeconfig it merged them into,
// each section's item at the given indentation (yaml.v3's, as marina
// writes, or kubectl's "- " at the key's column).
func (k klimaxCluster) merged(ind string) (cluster, context, user string) {
	cluster = ind + "- cluster:\n" + ind + "    certificate-authority-data: " + k.ca + "\n" + ind + "    server: " + k.server() + "\n" + ind + "  name: " + k.name + "\n"
	context = ind + "- context:\n" + ind + "    cluster: " + k.name + "\n" + ind + "    user: " + k.name + "\n" + ind + "  name: " + k.name + "\n"
	user = ind + "- name: " + k.name + "\n" + ind + "  user:\n" + ind + "    client-certificate-data: " + k.crt + "\n" + ind + "    client-key-data: " + k.key + "\n"
	return
}

// userKubeconfig is ~/.kube/config after klimax merged dev and east into
// it, in the layout marina's own writes keep: the user's comments, own
// entries (prod), extensions and a top-level key kubeconfig does not
// define, klimax's dev as it merged it, and east whose user entry the
// user made their own since.
func userKubeconfig(dev, east klimaxCluster) string {
	dc, dx, du := dev.merged("  ")
	ec, ex, _ := east.merged("  ")
	return `# my kubeconfig; keep this comment
apiVersion: v1
kind: Config
current-context: prod # the one I use
preferences: {}
clusters:
  # prod comes first
  - name: prod
    cluster:
      server: https://prod.example.com
      extensions:
        - name: client.authentication.k8s.io/exec
          extension:
            audience: prod
` + dc + ec + `contexts:
  - name: prod
    context:
      cluster: prod
      user: prod-admin
      namespace: payments
` + dx + ex + `users:
  - name: prod-admin
    user:
      exec:
        apiVersion: client.authentication.k8s.io/v1
        command: aws
        args: [eks, get-token, --cluster-name, prod]
        interactiveMode: Never
` + du + `  # my own east user, not klimax's
  - name: east
    user:
      token: my-own-token
extensions:
  - name: tool.example.com/settings
    extension:
      anything: [1, 2, 3]
x-my-tool: kept as it is
`
}

// withoutMarks is b with the blocks of marina's mark (as edit writes them)
// cut out, and how many there were.
func withoutMarks(b []byte) ([]byte, int) {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	n := 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		ind := l[:len(l)-len(strings.TrimLeft(l, " "))]
		if strings.TrimSpace(l) == "extensions:" && i+4 < len(lines) &&
			lines[i+1] == ind+"  - extension:\n" && lines[i+2] == ind+"      home: "+testHome+"\n" &&
			lines[i+3] == ind+"      managed-by: marina\n" && lines[i+4] == ind+"    name: marina.dev\n" {
			i += 4
			n++
			continue
		}
		out.WriteString(l)
	}
	return []byte(out.String()), n
}

// marked lists the entries of root that carry marina's mark, as
// "section/name".
func marked(t *testing.T, b []byte) []string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sec := range sections {
		for _, item := range seqItems(mapValue(doc.Content[0], sec)) {
			if owned(sec, item) {
				out = append(out, inner[sec]+"/"+itemName(item))
			}
		}
	}
	slices.Sort(out)
	return out
}

// stamp sets target's mtime in the past, and returns what a later look
// compares: its bytes and mtime.
func stamp(t *testing.T, target string) string {
	t.Helper()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	return look(t, target)
}

func look(t *testing.T, target string) string {
	t.Helper()
	st, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime().String() + "\n" + string(b)
}

func TestFromKlimaxIsWhatMarinaWrites(t *testing.T) {
	k := newKlimaxCluster(t, "dev", 1)
	got, err := FromKlimax(k.file(), "dev", testHome)
	if err != nil {
		t.Fatal(err)
	}
	// What marina writes for the same server from kind's export.
	want, err := Rename([]byte(k.kind("", "", "", "")), "dev", k.server(), "", testHome)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("FromKlimax =\n%s\nmarina writes\n%s", got, want)
	}
	if _, err := RESTConfig(got); err != nil {
		t.Errorf("marina does not read it as its own: %v", err)
	}
	if s, err := Server(got); err != nil || s != "https://192.168.105.5:7001" {
		t.Errorf("Server = %q, %v", s, err)
	}
	if m := marked(t, got); !reflect.DeepEqual(m, []string{"cluster/dev", "context/dev", "user/dev"}) {
		t.Errorf("marked = %v", m)
	}
	// klimax's loopback mode wrote 127.0.0.1.
	k.addr = "127.0.0.1"
	if _, err := FromKlimax(k.file(), "dev", testHome); err != nil {
		t.Errorf("a loopback server: %v", err)
	}
}

// klimax's file is on the Mac, but whatever wrote it: it is read as
// strictly as an export from the VM.
func TestFromKlimaxRefusesWhatIsNotKlimaxs(t *testing.T) {
	k := newKlimaxCluster(t, "dev", 1)
	other := newKlimaxCluster(t, "other", 2)
	_, _, otherUser := other.merged("")
	cases := map[string]struct {
		data []byte
		name string
		want string
	}{
		"exec":            {k.klimaxFile("", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /tmp/x\n", "", ""), "dev", "user.exec"},
		"token":           {k.klimaxFile("", "    token: abc\n", "", ""), "dev", "user.token"},
		"tokenFile":       {k.klimaxFile("", "    tokenFile: /Users/me/.ssh/id_ed25519\n", "", ""), "dev", "user.tokenFile"},
		"client key file": {k.klimaxFile("", "    client-key: /Users/me/.ssh/id_ed25519\n", "", ""), "dev", "user.client-key"},
		"ca file":         {k.klimaxFile("    certificate-authority: /etc/hosts\n", "", "", ""), "dev", "cluster.certificate-authority,"},
		"insecure":        {k.klimaxFile("    insecure-skip-tls-verify: true\n", "", "", ""), "dev", "cluster.insecure-skip-tls-verify"},
		"proxy":           {k.klimaxFile("    proxy-url: http://evil.example.com:3128\n", "", "", ""), "dev", "cluster.proxy-url"},
		"namespace":       {k.klimaxFile("", "", "    namespace: kube-system\n", ""), "dev", "context.namespace"},
		"extra user":      {k.klimaxFile("", "", "", otherUser), "dev", "2 users"},
		"extensions":      {k.klimaxFile("", "", "", "extensions:\n- name: x\n  extension: {}\n"), "dev", "extensions"},
		"marked":          {k.klimaxFile("    extensions:\n    - name: marina.dev\n      extension: {managed-by: marina}\n", "", "", ""), "dev", "cluster.extensions"},
		"another name":    {k.file(), "east", `named "dev", "dev" and "dev", not "east"`},
		"kind's names":    {[]byte(strings.ReplaceAll(k.kind("", "", "", ""), "https://0.0.0.0:", "https://192.168.105.5:")), "dev", `"kind-dev"`},
		"kind's server":   {[]byte(strings.ReplaceAll(k.kind("", "", "", ""), "kind-dev", "dev")), "dev", "kind's listening address"},
		"http":            {bytes.Replace(k.file(), []byte("https://"), []byte("http://"), 1), "dev", "not https://"},
		"path":            {bytes.Replace(k.file(), []byte(":7001\n"), []byte(":7001/api/proxy\n"), 1), "dev", "not https://"},
		"userinfo":        {bytes.Replace(k.file(), []byte("https://"), []byte("https://me:pw@"), 1), "dev", "not https://"},
		"no port":         {bytes.Replace(k.file(), []byte(":7001\n"), []byte("\n"), 1), "dev", "not https://"},
		"not a pair":      {bytes.Replace(k.file(), []byte(k.key), []byte(other.key), 1), "dev", "not a pair"},
		"not yaml":        {[]byte("{{{"), "dev", "not a kubeconfig"},
		"empty":           {nil, "dev", "not a v1 Config"},
		"a list":          {[]byte("- dev\n"), "dev", "not a kubeconfig"},
	}
	for what, c := range cases {
		t.Run(what, func(t *testing.T) {
			out, err := FromKlimax(c.data, c.name, testHome)
			if err == nil {
				t.Fatalf("accepted:\n%s", out)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "klimax's kubeconfig of "+c.name) {
				t.Errorf("the error does not name %q: %v", c.want, err)
			}
			// Nor does Adopt take it, or write anything with it.
			target := filepath.Join(t.TempDir(), "config")
			body := "apiVersion: v1\nkind: Config\n"
			if err := os.WriteFile(target, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, err := Adopt(target, c.name, c.data, false, testHome); err == nil {
				t.Errorf("Adopt took it: %v", got)
			}
			if b, _ := os.ReadFile(target); string(b) != body {
				t.Errorf("Adopt changed the file:\n%s", b)
			}
		})
	}
}

func TestAdoptMarksKlimaxsEntriesOnly(t *testing.T) {
	dev, east := newKlimaxCluster(t, "dev", 1), newKlimaxCluster(t, "east", 2)
	target := filepath.Join(t.TempDir(), "config")
	orig := userKubeconfig(dev, east)
	if err := os.WriteFile(target, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	// The fixture is laid out as marina writes: its bytes can be
	// compared.
	if re, err := reencode([]byte(orig)); err != nil || string(re) != orig {
		t.Fatalf("the fixture is not in marina's layout (%v):\n%s", err, re)
	}
	before := stamp(t, target)

	// A dry run gives the answer and writes nothing.
	got, err := Adopt(target, "dev", dev.file(), true, testHome)
	if err != nil || !reflect.DeepEqual(got, []string{"cluster", "context", "user"}) {
		t.Errorf("dry run of dev = %v, %v", got, err)
	}
	got, err = Adopt(target, "east", east.file(), true, testHome)
	var fe *ForeignError
	if !reflect.DeepEqual(got, []string{"cluster", "context"}) || !errors.As(err, &fe) || !reflect.DeepEqual(fe.Sections, []string{"user"}) {
		t.Errorf("dry run of east = %v, %v", got, err)
	}
	if look(t, target) != before {
		t.Fatal("the dry run wrote the file")
	}
	if _, err := os.Stat(target + ".lock"); !os.IsNotExist(err) {
		t.Error("the dry run left a lock")
	}

	got, err = Adopt(target, "dev", dev.file(), false, testHome)
	if err != nil || !reflect.DeepEqual(got, []string{"cluster", "context", "user"}) {
		t.Fatalf("Adopt(dev) = %v, %v", got, err)
	}
	got, err = Adopt(target, "east", east.file(), false, testHome)
	if !reflect.DeepEqual(got, []string{"cluster", "context"}) || !errors.As(err, &fe) || !reflect.DeepEqual(fe.Sections, []string{"user"}) {
		t.Fatalf("Adopt(east) = %v, %v", got, err)
	}
	if !strings.Contains(err.Error(), `user named "east" is not what klimax merged`) || !strings.Contains(err.Error(), "left alone") {
		t.Errorf("the error: %v", err)
	}
	after, _ := os.ReadFile(target)
	if m := marked(t, after); !reflect.DeepEqual(m, []string{"cluster/dev", "cluster/east", "context/dev", "context/east", "user/dev"}) {
		t.Errorf("marked = %v\n%s", m, after)
	}
	// Every byte but the marks is as it was.
	rest, n := withoutMarks(after)
	if n != 5 || string(rest) != orig {
		t.Errorf("%d marks; the rest changed:\n%s", n, after)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if c, err := clientcmd.Load(after); err != nil || c.CurrentContext != "prod" || c.Clusters["dev"].Server != dev.server() {
		t.Fatalf("after adoption: %v %+v", err, c)
	}

	// Once adopted, nothing is left to do: nothing is written.
	before = stamp(t, target)
	for _, k := range []klimaxCluster{dev, east} {
		got, err := Adopt(target, k.name, k.file(), false, testHome)
		if len(got) != 0 || (k.name == "dev") != (err == nil) {
			t.Errorf("Adopt(%s) again = %v, %v", k.name, got, err)
		}
	}
	if look(t, target) != before {
		t.Error("a second Adopt wrote the file")
	}

	// marina owns them now: Merge replaces dev, Remove takes each away.
	kc, err := FromKlimax(dev.file(), "dev", testHome)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(kc), dev.server(), "https://192.168.105.9:7001", 1)
	if err := Merge(target, "dev", []byte(moved), testOwner); err != nil {
		t.Fatalf("Merge over the adopted dev: %v", err)
	}
	if c, _ := clientcmd.LoadFromFile(target); c.Clusters["dev"].Server != "https://192.168.105.9:7001" {
		t.Errorf("dev was not replaced: %+v", c.Clusters["dev"])
	}
	if r, err := Remove(target, "dev", testOwner); err != nil || len(r.Entries) != 3 || len(r.Foreign) != 0 {
		t.Errorf("Remove(dev) = %+v, %v", r, err)
	}
	if r, err := Remove(target, "east", testOwner); err != nil || !reflect.DeepEqual(r.Entries, []string{"cluster", "context"}) || !reflect.DeepEqual(r.Foreign, []string{"user"}) {
		t.Errorf("Remove(east) = %+v, %v", r, err)
	}
	// What is left is what the user had: east's user entry is theirs.
	final, _ := os.ReadFile(target)
	want := without(semantic(t, []byte(orig)), "dev")
	for _, sec := range []string{"clusters", "contexts"} {
		want[sec] = without(map[string]any{sec: want[sec]}, "east")[sec]
	}
	if !reflect.DeepEqual(semantic(t, final), want) {
		t.Errorf("after Remove:\n%s", final)
	}
	if !strings.Contains(string(final), "# my kubeconfig; keep this comment") || !strings.Contains(string(final), "# my own east user, not klimax's") {
		t.Errorf("comments were lost:\n%s", final)
	}
}

// reencode is b as edit writes it back.
func reencode(b []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	err := enc.Close()
	return out.Bytes(), err
}

// stripMarks is a kubeconfig read as a map with marina's marks taken out
// (an extensions list left empty goes too).
func stripMarks(m map[string]any) map[string]any {
	for _, sec := range sections {
		items, _ := m[sec].([]any)
		for _, it := range items {
			e, _ := it.(map[string]any)
			in, _ := e[inner[sec]].(map[string]any)
			exts, ok := in["extensions"].([]any)
			if !ok {
				continue
			}
			var kept []any
			for _, x := range exts {
				if xm, _ := x.(map[string]any); xm["name"] != Mark {
					kept = append(kept, x)
				}
			}
			if len(kept) == 0 {
				delete(in, "extensions")
			} else {
				in["extensions"] = kept
			}
		}
	}
	return m
}

// A kubeconfig kubectl wrote (its own layout: lists at the key's column)
// keeps every entry, value and comment; marina's writer lays it out as
// it does.
func TestAdoptKubectlLayout(t *testing.T) {
	dev := newKlimaxCluster(t, "dev", 1)
	dc, dx, du := dev.merged("")
	orig := "apiVersion: v1\nclusters:\n" + dc + "- cluster:\n    server: https://other.example.com\n  name: other # mine\ncontexts:\n" + dx +
		"current-context: dev\nkind: Config\npreferences: {}\nusers:\n" + du
	target := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(target, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Adopt(target, "dev", dev.file(), false, testHome)
	if err != nil || len(got) != 3 {
		t.Fatalf("Adopt = %v, %v", got, err)
	}
	after, _ := os.ReadFile(target)
	if !reflect.DeepEqual(stripMarks(semantic(t, after)), semantic(t, []byte(orig))) {
		t.Errorf("more than the marks changed:\n%s", after)
	}
	if !strings.Contains(string(after), "name: other # mine") {
		t.Errorf("the comment was lost:\n%s", after)
	}
	if c, err := clientcmd.Load(after); err != nil || c.CurrentContext != "dev" {
		t.Errorf("after: %v %+v", err, c)
	}
}

// An entry of the name that is not exactly klimax's is the user's.
func TestAdoptLeavesChangedEntries(t *testing.T) {
	dev := newKlimaxCluster(t, "dev", 1)
	other := newKlimaxCluster(t, "dev", 1)
	dc, dx, du := dev.merged("  ")
	oc, _, ou := other.merged("  ")
	head := "apiVersion: v1\nkind: Config\n"
	file := func(c, x, u string) string { return head + "clusters:\n" + c + "contexts:\n" + x + "users:\n" + u }
	// in puts extra lines into the settings of an entry, after its line
	// after.
	in := func(entry, after, extra string) string {
		if !strings.Contains(entry, after) {
			t.Fatalf("no %q in %q", after, entry)
		}
		return strings.Replace(entry, after, after+extra, 1)
	}
	server := "      server: " + dev.server() + "\n"
	cases := map[string]struct {
		body    string
		foreign []string
	}{
		"another server": {file(strings.Replace(dc, ":7001", ":7009", 1), dx, du), []string{"cluster"}},
		"another CA":     {file(oc, dx, du), []string{"cluster"}},
		"insecure":       {file(in(dc, server, "      insecure-skip-tls-verify: true\n"), dx, du), []string{"cluster"}},
		"tls-server-name": {file(strings.Replace(dc, "    server:", "    tls-server-name: localhost\n      server:", 1), dx, du),
			[]string{"cluster"}},
		"an extension":      {file(in(dc, server, "      extensions:\n        - name: x\n          extension: {}\n"), dx, du), []string{"cluster"}},
		"a namespace":       {file(dc, in(dx, "      user: dev\n", "      namespace: apps\n"), du), []string{"context"}},
		"another user":      {file(dc, strings.Replace(dx, "user: dev", "user: me", 1), du), []string{"context"}},
		"a token":           {file(dc, dx, du+"      token: x\n"), []string{"user"}},
		"another cert":      {file(dc, dx, ou), []string{"user"}},
		"an unknown key":    {file(dc, dx, du+"    note: mine\n"), []string{"user"}},
		"listed twice":      {file(dc+dc, dx, du), []string{"cluster"}},
		"a flow of its own": {file("  - {name: dev, cluster: {server: x}}\n", dx, du), []string{"cluster"}},
	}
	for what, c := range cases {
		t.Run(what, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "config")
			if err := os.WriteFile(target, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := clientcmd.Load([]byte(c.body)); err != nil && what != "listed twice" {
				t.Fatalf("the fixture does not load: %v", err)
			}
			got, err := Adopt(target, "dev", dev.file(), true, testHome)
			var fe *ForeignError
			if !errors.As(err, &fe) || !reflect.DeepEqual(fe.Sections, c.foreign) || len(got) != 3-len(c.foreign) {
				t.Errorf("Adopt = %v, %v; want %v left alone", got, err, c.foreign)
			}
			if slices.Contains(got, c.foreign[0]) {
				t.Errorf("adopted the user's %s", c.foreign[0])
			}
		})
	}
}

func TestAdoptNothing(t *testing.T) {
	dev := newKlimaxCluster(t, "dev", 1)
	dir := filepath.Join(t.TempDir(), "kube")
	target := filepath.Join(dir, "config")
	for _, dry := range []bool{true, false} {
		if got, err := Adopt(target, "dev", dev.file(), dry, testHome); err != nil || len(got) != 0 {
			t.Errorf("Adopt into no file = %v, %v", got, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("Adopt made the folder of a missing kubeconfig")
	}
	// A kubeconfig without the name's entries stays as it is.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, read(t, "user-config.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := stamp(t, target)
	if got, err := Adopt(target, "east", newKlimaxCluster(t, "east", 2).file(), false, testHome); err != nil || len(got) != 0 {
		t.Errorf("Adopt(east) = %v, %v", got, err)
	}
	if look(t, target) != before {
		t.Error("the file was written")
	}
}
