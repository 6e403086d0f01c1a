package kubeconfig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/client-go/tools/clientcmd"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func renamed(t *testing.T, name, server string) []byte {
	t.Helper()
	b, err := Rename(kindExport(t, name, "", ""), name, server, "", testHome)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRenameUsesClientcmdNames(t *testing.T) {
	b := renamed(t, "dev", "https://192.168.64.3:7003")
	c, err := clientcmd.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.CurrentContext != "dev" || len(c.Clusters) != 1 || len(c.AuthInfos) != 1 || len(c.Contexts) != 1 {
		t.Fatalf("renamed = %+v", c)
	}
	if c.Clusters["dev"].Server != "https://192.168.64.3:7003" || c.Contexts["dev"].Cluster != "dev" || c.Contexts["dev"].AuthInfo != "dev" {
		t.Errorf("entries = %+v %+v", c.Clusters["dev"], c.Contexts["dev"])
	}
	if len(c.Clusters["dev"].CertificateAuthorityData) == 0 || len(c.AuthInfos["dev"].ClientKeyData) == 0 {
		t.Error("credentials were lost in the rename")
	}
	if strings.Contains(string(b), "kind-dev") {
		t.Error("the kind- names survived")
	}
	if s, err := Server(b); err != nil || s != "https://192.168.64.3:7003" {
		t.Errorf("Server = %q, %v", s, err)
	}
}

// semantic is a kubeconfig as a generic map, for comparing what marina must
// not touch.
func semantic(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func without(m map[string]any, name string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		items, ok := v.([]any)
		if !ok || (k != "clusters" && k != "contexts" && k != "users") {
			out[k] = v
			continue
		}
		var kept []any
		for _, it := range items {
			if e, ok := it.(map[string]any); ok && e["name"] == name {
				continue
			}
			kept = append(kept, it)
		}
		out[k] = kept
	}
	return out
}

func TestMergeKeepsEverythingElse(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "config")
	orig := read(t, "user-config.yaml")
	if err := os.WriteFile(target, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	// The file holds the user's own dev: merging dev is refused, east goes in.
	if err := Merge(target, "dev", renamed(t, "dev", "https://192.168.64.3:7003"), testOwner); err == nil {
		t.Error("merge replaced the user's own dev")
	}
	if err := Merge(target, "east", renamed(t, "east", "https://192.168.64.3:7003"), testOwner); err != nil {
		t.Fatal(err)
	}
	// A second merge of a cluster replaces marina's own entries.
	if err := Merge(target, "east", renamed(t, "east", "https://192.168.64.3:7004"), testOwner); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(target)
	if !reflect.DeepEqual(without(semantic(t, after), "east"), semantic(t, orig)) {
		t.Errorf("merge changed what it does not own:\n%s", after)
	}
	if !strings.Contains(string(after), "# my clusters; do not lose this comment") {
		t.Error("the comment was lost")
	}
	c, err := clientcmd.Load(after)
	if err != nil {
		t.Fatal(err)
	}
	if c.CurrentContext != "prod" {
		t.Errorf("current-context = %q, want prod kept", c.CurrentContext)
	}
	if c.Clusters["east"].Server != "https://192.168.64.3:7004" || len(c.AuthInfos["east"].ClientCertificateData) == 0 {
		t.Errorf("east was not replaced: %+v %+v", c.Clusters["east"], c.AuthInfos["east"])
	}
	if n := strings.Count(string(after), "name: east\n"); n != 3 {
		t.Errorf("east appears %d times, want once per section", n)
	}
	st, _ := os.Stat(target)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %o, want 0600", st.Mode().Perm())
	}

	// Removing it gives back what was there; the user's dev stays.
	if r, err := Remove(target, "east", testOwner); err != nil || len(r.Entries) != 3 || len(r.Foreign) != 0 {
		t.Fatalf("Remove(east) = %+v, %v", r, err)
	}
	after, _ = os.ReadFile(target)
	if !reflect.DeepEqual(semantic(t, after), semantic(t, orig)) {
		t.Errorf("remove changed what it does not own:\n%s", after)
	}
	if r, err := Remove(target, "dev", testOwner); err != nil || len(r.Entries) != 0 || len(r.Foreign) != 3 {
		t.Errorf("Remove(dev) = %+v, %v", r, err)
	}
	if b, _ := os.ReadFile(target); !reflect.DeepEqual(semantic(t, b), semantic(t, orig)) {
		t.Errorf("remove of the user's dev changed the file:\n%s", b)
	}
}

func TestMergeIntoNothing(t *testing.T) {
	target := filepath.Join(t.TempDir(), "new", "config")
	if err := Merge(target, "dev", renamed(t, "dev", "https://127.0.0.1:7001"), testOwner); err != nil {
		t.Fatal(err)
	}
	c, err := clientcmd.LoadFromFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if c.Clusters["dev"] == nil || c.CurrentContext != "" {
		t.Errorf("new kubeconfig = %+v", c)
	}
	if err := Use(target, "dev"); err != nil {
		t.Fatal(err)
	}
	if c, _ := clientcmd.LoadFromFile(target); c.CurrentContext != "dev" {
		t.Errorf("after Use current-context = %q", c.CurrentContext)
	}
	if _, err := Remove(target, "dev", testOwner); err != nil {
		t.Fatal(err)
	}
	if c, _ := clientcmd.LoadFromFile(target); c.CurrentContext != "" || len(c.Contexts) != 0 {
		t.Errorf("after Remove = %+v", c)
	}
	if _, err := Remove(filepath.Join(t.TempDir(), "missing"), "dev", testOwner); err != nil {
		t.Errorf("Remove of a missing file: %v", err)
	}
}

func TestConcurrentMergesLoseNothing(t *testing.T) {
	target := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(target, read(t, "user-config.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("c%02d", i)
			errs <- Merge(target, name, renamed(t, name, fmt.Sprintf("https://192.168.64.3:%d", 7000+i)), testOwner)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := clientcmd.LoadFromFile(target)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if c.Contexts[fmt.Sprintf("c%02d", i)] == nil {
			t.Errorf("c%02d was lost", i)
		}
	}
	if c.Contexts["prod"] == nil || c.CurrentContext != "prod" {
		t.Error("the user's own entries were lost")
	}
	if _, err := os.Stat(target + ".lock"); !os.IsNotExist(err) {
		t.Error("kubectl's lock file was left behind")
	}
}

func TestKubectlLockIsHonoured(t *testing.T) {
	target := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(target+".lock", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := lockWait
	lockWait = 200 * 1e6
	defer func() { lockWait = old }()
	err := Merge(target, "dev", renamed(t, "dev", "https://127.0.0.1:7001"), testOwner)
	if err == nil || !strings.Contains(err.Error(), "locked by") {
		t.Errorf("merge while kubectl holds the lock: %v", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Error("the file was written while locked")
	}
}

func TestSymlinkStaysASymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles-kubeconfig")
	if err := os.WriteFile(real, read(t, "user-config.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := Merge(link, "east", renamed(t, "east", "https://127.0.0.1:7001"), testOwner); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced by a file")
	}
	if ok, _ := Has(real, "east", testOwner); !ok {
		t.Error("the link's target did not get the cluster")
	}
}

func TestBadTargetIsLeftAlone(t *testing.T) {
	target := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(target, []byte("- just\n- a list\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Merge(target, "dev", renamed(t, "dev", "https://127.0.0.1:7001"), testOwner)
	if err == nil || !strings.Contains(err.Error(), "not a kubeconfig") {
		t.Errorf("merge into a list: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "- just\n- a list\n" {
		t.Error("the file was changed")
	}
}

func TestTarget(t *testing.T) {
	env := map[string]string{"KUBECONFIG": ":/a/first:/b/second"}
	if got := Target(func(k string) string { return env[k] }, "/home/me"); got != "/a/first" {
		t.Errorf("Target = %s", got)
	}
	if got := Target(func(string) string { return "" }, "/home/me"); got != "/home/me/.kube/config" {
		t.Errorf("Target = %s", got)
	}
}

// servingCert is a self-signed certificate like kind's API server's.
func servingCert(t *testing.T, dns []string, ips ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestTLSServerName(t *testing.T) {
	kindCert := servingCert(t, []string{"dev-control-plane", "kubernetes", "localhost"}, "10.1.0.1", "172.30.128.2", "127.0.0.1", "192.168.64.2")
	cases := []struct {
		cert    []byte
		server  string
		want    string
		wantErr bool
	}{
		{kindCert, "https://192.168.64.2:7001", "", false},
		{kindCert, "https://127.0.0.1:7001", "", false},
		// lima0 moved after the cluster was created: checked against localhost.
		{kindCert, "https://192.168.64.7:7001", "localhost", false},
		{servingCert(t, []string{"kubernetes"}, "10.1.0.1"), "https://192.168.64.7:7001", "", true},
		{[]byte("not a cert"), "https://192.168.64.2:7001", "", true},
	}
	for _, c := range cases {
		got, err := TLSServerName(c.cert, c.server)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("TLSServerName(%s) = %q, %v; want %q, error %v", c.server, got, err, c.want, c.wantErr)
		}
	}
	b, err := Rename(kindExport(t, "x", "", ""), "x", "https://192.168.64.7:7001", "localhost", testHome)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientcmd.Load(b)
	if err != nil || c.Clusters["x"].TLSServerName != "localhost" {
		t.Fatalf("tls-server-name not kept: %v %+v", err, c)
	}
}

// A kubeconfig link to nothing is not replaced by a file, and a file of
// two documents is not cut down to one.
func TestDanglingLinkAndTwoDocuments(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "config")
	if err := os.Symlink(filepath.Join(dir, "dotfiles", "kubeconfig"), link); err != nil {
		t.Fatal(err)
	}
	if err := Merge(link, "dev", renamed(t, "dev", "https://127.0.0.1:7001"), testOwner); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("merge into a dangling link: %v", err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	two := filepath.Join(dir, "two")
	body := "apiVersion: v1\nkind: Config\n---\napiVersion: v1\nkind: Config\ncontexts:\n- name: x\n  context: {cluster: x, user: x}\n"
	if err := os.WriteFile(two, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Merge(two, "dev", renamed(t, "dev", "https://127.0.0.1:7001"), testOwner); err == nil || !strings.Contains(err.Error(), "more than one YAML document") {
		t.Errorf("merge into two documents: %v", err)
	}
	if b, _ := os.ReadFile(two); string(b) != body {
		t.Error("the file was changed")
	}
}

// marina's own files are read as strictly as an export: one with a
// plugin added is refused.
func TestRESTConfigOnlyFromMarinasFiles(t *testing.T) {
	kc := renamed(t, "dev", "https://127.0.0.1:7001")
	if _, err := RESTConfig(kc); err != nil {
		t.Fatalf("marina's own kubeconfig: %v", err)
	}
	bad := strings.Replace(string(kc), "    client-key-data:", "    tokenFile: /etc/shadow\n    client-key-data:", 1)
	if bad == string(kc) {
		t.Fatal("the test did not change the file")
	}
	if _, err := RESTConfig([]byte(bad)); err == nil || !strings.Contains(err.Error(), "tokenFile") {
		t.Errorf("RESTConfig with a tokenFile: %v", err)
	}
}

// A trailing "---" is an empty document, not a second one; a clash in a
// later $KUBECONFIG file counts (kubectl reads them all); Has sees only
// marina's contexts.
func TestTrailingSeparatorLaterFilesAndHas(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first")
	if err := os.WriteFile(first, []byte("apiVersion: v1\nkind: Config\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Merge(first, "east", renamed(t, "east", "https://127.0.0.1:7001"), testOwner); err != nil {
		t.Errorf("merge into a file ending in ---: %v", err)
	}
	second := filepath.Join(dir, "second")
	if err := os.WriteFile(second, read(t, "user-config.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckMerge([]string{first, second}, testOwner, "dev"); err == nil || !strings.Contains(err.Error(), second) {
		t.Errorf("CheckMerge with the user's dev in the second file: %v", err)
	}
	if err := CheckMerge([]string{first, second}, testOwner, "east"); err != nil {
		t.Errorf("CheckMerge of marina's own east: %v", err)
	}
	if ok, _ := Has(second, "dev", testOwner); ok {
		t.Error("Has counts the user's own dev as marina's")
	}
	if ok, _ := Has(first, "east", testOwner); !ok {
		t.Error("Has misses marina's east")
	}
}

func TestReleaseLocks(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "config.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	held.Store(lock, true)
	ReleaseLocks()
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("the lock is still there: %v", err)
	}
	held.Delete(lock)
}

// testHome is the marina home the tests' kubeconfigs are written for.
const testHome = "/Users/me/.marina"

var testOwner = Owner{Home: testHome}

// The first change of a day keeps a copy of the file as it was; later
// changes that day keep it; the next day's first change replaces it. A
// new file has nothing to back up, and a link at the backup's place is
// replaced, not written through.
func TestBackupBeforeTheFirstChangeOfTheDay(t *testing.T) {
	day := time.Date(2026, 12, 5, 9, 0, 0, 0, time.Local)
	now = func() time.Time { return day }
	t.Cleanup(func() { now = time.Now })
	dir := t.TempDir()
	target := filepath.Join(dir, "config")
	backup := target + BackupSuffix
	if err := Merge(target, "a", renamed(t, "a", "https://127.0.0.1:7001"), testOwner); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(backup); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a new file was backed up: %v", err)
	}
	orig := read(t, "user-config.yaml")
	if err := os.WriteFile(target, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	// Someone links the backup's name to a file of theirs.
	theirs := filepath.Join(dir, "theirs")
	if err := os.WriteFile(theirs, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(theirs, backup); err != nil {
		t.Fatal(err)
	}
	if err := Merge(target, "east", renamed(t, "east", "https://127.0.0.1:7003"), testOwner); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(target)
	if err := Merge(target, "west", renamed(t, "west", "https://127.0.0.1:7004"), testOwner); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(backup)
	if err != nil || !bytes.Equal(b, orig) {
		t.Errorf("the backup is not the file before the day's first change: %v\n%s", err, b)
	}
	if st, _ := os.Lstat(backup); st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Errorf("backup mode %v", st.Mode())
	}
	if b, _ := os.ReadFile(theirs); string(b) != "keep" {
		t.Errorf("the backup wrote through a link: %q", b)
	}
	now = func() time.Time { return day.Add(24 * time.Hour) }
	if _, err := Remove(target, "west", testOwner); err != nil {
		t.Fatal(err)
	}
	// The next day's copy is the file before that day's change: east and west in it.
	if b, _ := os.ReadFile(backup); bytes.Equal(b, orig) || bytes.Equal(b, first) || !strings.Contains(string(b), "name: west") {
		t.Errorf("the next day's backup:\n%s", b)
	}
}
