package logs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

type entry struct {
	name string
	typ  byte
	body string
}

func tarGz(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size, h.Linkname = 0, "/etc/shadow"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// unpack is every file of the archive at path, by name.
func unpack(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

const (
	mirrorPassword = "hunter2-mirror-secret"
	pemKey         = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oCdE3k\n-----END EC PRIVATE KEY-----"
	token          = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.planted"
	clientKey      = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpwbGFudGVk"
)

// Every secret the fixture plants, in the config, in what the VM sends
// and in kind's export, is absent from the archive; what a report needs
// is there; the VM's tar cannot put a file outside the archive's folders.
func TestCollectLeavesNoSecret(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(func(c *config.Config) {
		c.Registries.Mirrors[0].Username = "me"
		c.Registries.Mirrors[0].Password = mirrorPassword
	})
	f.DNSWarm()
	f.Cluster("dev", 1, "https://127.0.0.1:7001")
	key, err := session.LoadLabelKey(f.Env.Paths)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := dns.NewPasswords(key.Key)
	devPW, _ := pw.Cluster("dev")
	secrets := []string{
		mirrorPassword, base64.StdEncoding.EncodeToString([]byte(mirrorPassword)),
		hex.EncodeToString(key.Key), pw.Root().Password, pw.Reader().Password, devPW.Password,
		"MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oCdE3k", token, clientKey,
	}
	f.Scripts["gather logs"] = vm.Result{Stdout: tarGz(t, []entry{
		{"./vm/iptables-save.txt", tar.TypeReg, "-A MARINA-REACH -s 192.168.64.1/32 -j ACCEPT\n"},
		{"./vm/containers/registry-dockerio.log", tar.TypeReg, "proxy auth for me:" + mirrorPassword + " as " + base64.StdEncoding.EncodeToString([]byte(mirrorPassword)) + "\n"},
		{"./vm/docker-inspect.json", tar.TypeReg, `{"Env": ["ETCD_PASSWORD=` + devPW.Password + `", "ROOT=` + pw.Root().Password + `"], "key": "` + hex.EncodeToString(key.Key) + `"}` + "\n"},
		{"./clusters/dev/dev-control-plane/pods/app.log", tar.TypeReg, "printing " + pemKey + "\nAuthorization: Bearer " + token + "\n"},
		{"./clusters/dev/dev-control-plane/kubeconfig", tar.TypeReg, "users:\n- user:\n    client-key-data: " + clientKey + "\n    token: " + token + "\n"},
		{"./clusters/dev.txt", tar.TypeReg, "Exporting logs for cluster \"dev\"\n"},
		{"../escape.txt", tar.TypeReg, "out"},
		{"/etc/abs.txt", tar.TypeReg, "out"},
		{"./vm/link", tar.TypeSymlink, ""},
		{"./other/top.txt", tar.TypeReg, "out"},
	})}
	out := filepath.Join(t.TempDir(), "bug.tar.gz")
	w, err := Collect(context.Background(), f.Env, Options{Output: out})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	files := unpack(t, out)
	for _, want := range []string{"version.txt", "config.yaml", "status.json", "doctor.json", "vm/iptables-save.txt", "vm/containers/registry-dockerio.log", "vm/docker-inspect.json", "clusters/dev/dev-control-plane/pods/app.log", "clusters/dev.txt"} {
		if _, ok := files[Root+"/"+want]; !ok {
			t.Errorf("the archive has no %s: %v", want, w.Files)
		}
	}
	if len(files) != len(w.Files) || !slices.Equal(slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}), slices.Sorted(slices.Values(w.Files))) {
		t.Errorf("the table of contents %v is not the archive's %v", w.Files, files)
	}
	for name, body := range files {
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s holds the planted secret %q:\n%s", name, s, body)
			}
		}
		if strings.Contains(name, "escape") || strings.Contains(name, "abs.txt") || strings.Contains(name, "link") || strings.Contains(name, "other/") {
			t.Errorf("the VM's tar put %s in the archive", name)
		}
	}
	if !strings.Contains(files[Root+"/vm/iptables-save.txt"], "MARINA-REACH") {
		t.Errorf("the rules were lost: %q", files[Root+"/vm/iptables-save.txt"])
	}
	if w.Redacted < 8 {
		t.Errorf("%d secrets taken out, want at least 8", w.Redacted)
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o600 {
		t.Errorf("archive mode %v", st.Mode())
	}
	if got := f.Called("guest.run gather logs"); len(got) != 1 {
		t.Errorf("gathering took %d round trips: %v", len(got), got)
	}

	// A second run to the same file replaces nothing.
	before, _ := os.ReadFile(out)
	if _, err := Collect(context.Background(), f.Env, Options{Output: out}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second run to the same file: %v", err)
	}
	if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
		t.Error("the existing archive was changed")
	}
}

// A cluster named must be running; one not there is named.
func TestCollectClusters(t *testing.T) {
	f := sessiontest.TwoClusters(t)
	f.NodeContainers[1].State = "exited"
	dir := t.TempDir()
	if _, err := Collect(context.Background(), f.Env, Options{Output: filepath.Join(dir, "a.tar.gz"), Clusters: []string{"b"}}); err == nil || !strings.Contains(err.Error(), "cluster b is not running") {
		t.Errorf("a stopped cluster: %v", err)
	}
	if _, err := Collect(context.Background(), f.Env, Options{Output: filepath.Join(dir, "b.tar.gz"), Clusters: []string{"zz"}}); err == nil || !strings.Contains(err.Error(), "there is no cluster zz") {
		t.Errorf("a missing cluster: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.tar.gz")); !os.IsNotExist(err) {
		t.Errorf("a failed run left its archive: %v", err)
	}
	f.Scripts["gather logs"] = vm.Result{Stdout: tarGz(t, nil)}
	if _, err := Collect(context.Background(), f.Env, Options{Output: filepath.Join(dir, "c.tar.gz")}); err != nil {
		t.Fatal(err)
	}
	body := f.Bodies["gather logs"]
	if !strings.Contains(body, "--name a ") || strings.Contains(body, "--name b ") {
		t.Errorf("kind exports the running a only:\n%s", body)
	}
}

// Each form of a secret is taken out, and what only looks like one at a
// glance is kept: a report must still say what happened.
func TestScrubForms(t *testing.T) {
	s := &scrubber{}
	s.add("kind") // too short to search for inside words
	for _, c := range []struct{ in, out string }{
		{"password: hunter2x", "password: <redacted by marina>"},
		{`password: "a b,c" next`, "password: <redacted by marina> next"},
		{"ETCD_PASSWORD=s3cr3t-value", "ETCD_PASSWORD=<redacted by marina>"},
		{`{"password":"x y"}`, `{"password":<redacted by marina>}`},
		{`"Authorization": "Bearer abc.def"`, `"Authorization": "Bearer <redacted by marina>"`},
		{"Authorization:[Basic dXNlcjpwYXNz]", "Authorization:[Basic <redacted by marina>]"},
		{"Authorization: Bearer abc", "Authorization: Bearer <redacted by marina>"},
		{"pulling https://me:pa55word@registry.example/v2/", "pulling https://me:<redacted by marina>@registry.example/v2/"},
		{`{"auths":{"r":{"auth":"bWU6cGFzcw=="}}}`, `{"auths":{"r":{"auth":<redacted by marina>}}}`},
		{"--token abcdef --v 2", "--token <redacted by marina> --v 2"},
		{"    client-key-data: LS0tLS1CRUdJTg==", "    client-key-data: <redacted by marina>"},
		// Kept: a package name, a Go struct dump's empty field, a word
		// holding a short password.
		{"install base-passwd:amd64 3.6.1", "install base-passwd:amd64 3.6.1"},
		{"PDNSAPIKey: TLSCA: Policy:sync", "PDNSAPIKey: TLSCA: Policy:sync"},
		{"kind-control-plane", "kind-control-plane"},
		{"tokenFile: /var/run/x", "tokenFile: /var/run/x"},
	} {
		if got, _ := s.clean([]byte(c.in)); string(got) != c.out {
			t.Errorf("clean(%q) = %q, want %q", c.in, got, c.out)
		}
	}
}

// A VM that cannot say what it has is said in the archive, which keeps
// what marina read before.
func TestCollectKeepsTheArchiveWhenTheVMFails(t *testing.T) {
	f := sessiontest.TwoClusters(t)
	f.Fail["guest.run gather logs"] = errors.New("ssh: connection refused")
	out := filepath.Join(t.TempDir(), "bug.tar.gz")
	if _, err := Collect(context.Background(), f.Env, Options{Output: out}); err != nil {
		t.Fatal(err)
	}
	files := unpack(t, out)
	if !strings.Contains(files[Root+"/vm-error.txt"], "ssh: connection refused") || files[Root+"/version.txt"] == "" {
		t.Errorf("archive: %v", files)
	}
}
