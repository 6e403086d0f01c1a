package guest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/dns"
)

// The scripts that set up the local DNS's etcd users, forget a cluster and
// read the records, run with bash and curl against a real etcd (the lab's
// build; the test skips without it) on this machine's loopback: only the
// address, the folder of the marker file and docker are stood in for.
func TestEtcdScriptsAgainstRealEtcd(t *testing.T) {
	l := authedEtcd(t)
	url, etcd, pw, run, dev, east, id, dir := l.url, l.etcd, l.pw, l.run, l.dev, l.east, l.id, l.dir
	const domain = "demo.internal"
	// authedEtcd ran it once: again, it finds everything there.
	if _, err := run("set -eu -o pipefail\n" + l.auth); err != nil {
		t.Fatalf("EtcdAuth run again: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc", "etcd-auth")); err != nil || strings.TrimSpace(string(b)) != id {
		t.Errorf("the marker holds %q (%v), want the container's id", b, err)
	}

	c := etcdClient{t: t, url: url}
	devKey, eastKey := dns.KeyPrefix("dev."+domain)+"shop/web/1a2b3c4d", dns.KeyPrefix("east."+domain)+"shop/web/0a0b0c0d"
	record := `{"host":"172.30.1.1","targetstrip":1}`
	// Nobody without a password writes or reads.
	if err := c.put("", devKey, record); err == nil || !strings.Contains(err.Error(), "user name is empty") {
		t.Errorf("an anonymous write: %v", err)
	}
	// A cluster's ExternalDNS writes its own zone and nothing else, and
	// reads nothing else.
	devTok, eastTok := c.login(dev.Creds), c.login(east.Creds)
	if err := c.put(devTok, devKey, record); err != nil {
		t.Errorf("dev writing its own zone: %v", err)
	}
	if err := c.put(eastTok, eastKey, `{"host":"172.30.2.1","targetstrip":1}`); err != nil {
		t.Errorf("east writing its own zone: %v", err)
	}
	if err := c.put(eastTok, devKey, `not json`); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("east writing into dev's zone: %v", err)
	}
	if err := c.put(eastTok, dns.KeyPrefix(domain)+"x", `not json`); err == nil {
		t.Error("east wrote outside every zone")
	}
	if _, err := c.rangeOf(eastTok, dns.Prefix); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("east reading every record: %v", err)
	}
	if n, err := c.rangeOf(devTok, dns.KeyPrefix("dev."+domain)); err != nil || n != 1 {
		t.Errorf("dev reading its zone: %d keys, %v", n, err)
	}
	// marina-dns reads everything and writes nothing.
	readTok := c.login(pw.Reader())
	if n, err := c.rangeOf(readTok, dns.Prefix); err != nil || n != 2 {
		t.Errorf("marina-dns reading: %d keys, %v", n, err)
	}
	if err := c.put(readTok, devKey, record); err == nil {
		t.Error("marina-dns wrote")
	}

	// dns list reads as root.
	rec, err := DNSRecords(etcd, domain)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(rec)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := dns.ParseRange([]byte(out), domain)
	if err != nil || len(recs) != 2 {
		t.Errorf("dns list read %v (%v) from %s", recs, err, out)
	}

	// doctor's probe reads the same, in a section of its own, and leaves
	// the section out when etcd refuses.
	probe, err := DNSRecordsProbe(etcd, domain)
	if err != nil {
		t.Fatal(err)
	}
	out, err = run("set -u\n" + probe)
	if err != nil || !strings.HasPrefix(out, "@@ dns-records\n") {
		t.Fatalf("the probe: %v\n%s", err, out)
	}
	if h := parseHealth(sections(out)); !h.RecordsRead || !bytes.Contains(h.Records, []byte(`"kvs"`)) {
		t.Errorf("the probe's section: %+v", h)
	}
	wrong := etcd
	wrong.Root.Password = "not-the-password"
	bad, _ := DNSRecordsProbe(wrong, domain)
	if out, err := run("set -u\n" + bad + "echo after\n"); err != nil || out != "after\n" {
		t.Errorf("a refused probe: %v, %q", err, out)
	}

	// Deleting dev forgets its names and its user; east keeps both.
	forget, err := DNSForget(etcd, []string{"dev." + domain}, []string{"dev"})
	if err != nil {
		t.Fatal(err)
	}
	out, err = run("set -eu -o pipefail\n" + forget)
	if err != nil || len(ParseForget(out)) != 0 {
		t.Fatalf("forget: %v, %q", err, out)
	}
	if _, err := c.tryLogin(dev.Creds); err == nil {
		t.Error("dev's user outlived its cluster")
	}
	if n, err := c.rangeOf(c.login(pw.Reader()), dns.Prefix); err != nil || n != 1 {
		t.Errorf("after forgetting dev: %d keys, %v", n, err)
	}
	if err := c.put(c.login(east.Creds), eastKey, record); err != nil {
		t.Errorf("east after dev went: %v", err)
	}

	// A root password marina does not derive (another label key) is said.
	other := etcd
	other.Root.Password = "not-the-password"
	rec, _ = DNSRecords(other, domain)
	if _, err := run(rec); err == nil || !strings.Contains(err.Error(), "refuses marina's root user") {
		t.Errorf("a wrong root password: %v", err)
	}
}

// etcdLab is the lab's etcd on loopback with marina's users set up by
// EtcdAuth (run once), and run, which runs a guest script against it.
type etcdLab struct {
	url       string
	etcd      Etcd
	pw        dns.Passwords
	run       func(script string) (string, error)
	dev, east EtcdUser
	auth, id  string
	dir       string
}

func authedEtcd(t *testing.T) etcdLab {
	t.Helper()
	url := startEtcd(t)
	etcd, pw := goldenEtcd(t)
	const domain = "demo.internal"
	user := func(name string) EtcdUser {
		c, err := pw.Cluster(name)
		if err != nil {
			t.Fatal(err)
		}
		return EtcdUser{Creds: c, Grant: dns.ClusterGrant(name, domain)}
	}
	dev, east := user("dev"), user("east")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// docker inspect answers with the container's id, as in the VM.
	id := strings.Repeat("ab", 32)
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte("#!/bin/sh\necho "+id+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(script string) (string, error) {
		script = strings.ReplaceAll(script, "etcd="+dns.EtcdURL(etcd.Addr), "etcd="+url)
		script = strings.ReplaceAll(script, dns.ConfigDir, filepath.Join(dir, "etc"))
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, errb.String())
		}
		return out.String(), err
	}
	auth, err := EtcdAuth(etcd, pw.Reader(), []EtcdUser{dev, east})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run("set -eu -o pipefail\n" + auth); err != nil {
		t.Fatalf("EtcdAuth: %v", err)
	}
	return etcdLab{url: url, etcd: etcd, pw: pw, run: run, dev: dev, east: east, auth: auth, id: id, dir: dir}
}

// labCache is where lab/lab keeps what it built.
func labCache() string {
	if c := os.Getenv("MARINA_LAB_CACHE"); c != "" {
		return c
	}
	return "/var/cache/marina-lab"
}

// freePort is a loopback port free for TCP and UDP a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free loopback port")
	return 0
}

// startEtcd runs the lab's etcd on free loopback ports until the test
// ends, and returns its client URL.
func startEtcd(t *testing.T) string {
	t.Helper()
	// The local DNS's etcd, at the version marina pins (lab/dnsetcd).
	bin := filepath.Join(labCache(), "bin", "etcd-dns")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not built (lab/lab up builds it): %v", bin, err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on this machine")
	}
	client, peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--name", "t", "--data-dir", t.TempDir(),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "t="+peer, "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; {
		if r, err := http.Post(client+"/v3/auth/status", "application/json", strings.NewReader("{}")); err == nil {
			r.Body.Close()
			return client
		}
		if time.Now().After(deadline) {
			t.Fatal("etcd did not answer within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// etcdClient speaks etcd's JSON gateway, as ExternalDNS and CoreDNS reach
// etcd over its gRPC.
type etcdClient struct {
	t   *testing.T
	url string
}

func (c etcdClient) post(tok, op string, body any) (map[string]any, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, c.url+"/v3/"+op, bytes.NewReader(b))
	if tok != "" {
		req.Header.Set("Authorization", tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %v", op, res.StatusCode, out["message"])
	}
	return out, nil
}

func (c etcdClient) tryLogin(cr dns.Creds) (string, error) {
	out, err := c.post("", "auth/authenticate", map[string]string{"name": cr.User, "password": cr.Password})
	if err != nil {
		return "", err
	}
	tok, _ := out["token"].(string)
	return tok, nil
}

func (c etcdClient) login(cr dns.Creds) string {
	c.t.Helper()
	tok, err := c.tryLogin(cr)
	if err != nil {
		c.t.Fatalf("log in as %s: %v", cr.User, err)
	}
	return tok
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func (c etcdClient) put(tok, key, value string) error {
	_, err := c.post(tok, "kv/put", map[string]string{"key": b64(key), "value": b64(value)})
	return err
}

func (c etcdClient) rangeOf(tok, prefix string) (int, error) {
	out, err := c.post(tok, "kv/range", map[string]string{"key": b64(prefix), "range_end": b64(dns.RangeEnd(prefix))})
	if err != nil {
		return 0, err
	}
	kvs, _ := out["kvs"].([]any)
	return len(kvs), nil
}
