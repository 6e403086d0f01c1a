package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	hostcfg "github.com/containerd/containerd/v2/core/remotes/docker/config"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/crypto/bcrypt"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/vm"
)

const (
	upstreamHost = "lab-upstream:5443"
	labUser      = "labuser"
	testRepo     = "test/echo"
)

func labRoot() string { return os.Getenv("MARINA_LAB_ROOT") }

// writeConfig replaces the lab Mac user's config.
// A body without a dns section gets the lab's DNS images (the pinned
// ones cannot be pulled here).
func writeConfig(t testing.TB, body string) {
	t.Helper()
	if err := os.MkdirAll(marinaHome(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(marinaHome(), "config.yaml"), []byte(labImages(body)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// labImages is config body with the lab's images where it names none:
// the DNS images, and the registry image the push registry runs whatever
// the mirrors are.
func labImages(body string) string {
	if !strings.Contains(body, "\ndns:") && !strings.HasPrefix(body, "dns:") {
		body += "dns:\n" + dnsImagesYAML()
	}
	switch {
	case !strings.Contains(body, "registries:"):
		body += "registries:\n  image: " + registryImage() + "\n"
	case !strings.Contains(body, "\n  image: "):
		body = strings.Replace(body, "registries:\n", "registries:\n  image: "+registryImage()+"\n", 1)
	}
	return body
}

// dnsImagesYAML is the dns.images setting for the lab's etcd and CoreDNS
// images (lab/lab dns-images), indented under dns:.
func dnsImagesYAML() string {
	ref := func(name string) string {
		b, err := os.ReadFile(filepath.Join(labRoot(), "images", name+".ref"))
		if err != nil {
			panic("the lab's " + name + " image: " + err.Error())
		}
		return strings.TrimSpace(string(b))
	}
	return "  images:\n    etcd: " + ref("etcd") + "\n    coredns: " + ref("coredns") + "\n"
}

// registryImage is the lab's registry:3.1.2 pinned by its digest (see
// lab/lab registry-image): what registries.image names in the lab, where
// the official image cannot be pulled.
func registryImage() string {
	b, err := os.ReadFile(filepath.Join(labRoot(), "images", "registry.ref"))
	if err != nil {
		panic("the lab's registry image: " + err.Error())
	}
	return strings.TrimSpace(string(b))
}

func mirrorsConfig(cache, password, quayURL string) string {
	return fmt.Sprintf(`registries:
  cacheStorage: %s
  image: %s
  mirrors:
    - name: registry-lab
      port: 5060
      remoteURL: https://%s
      username: %s
      password: %q
    - name: registry-quayio
      port: 5010
      remoteURL: %s
`, cache, registryImage(), upstreamHost, labUser, password, quayURL)
}

// startUpstream runs lab-upstream on the kind network: a TLS registry (the
// lab CA signed its certificate) that wants a password, as a private
// upstream would. It returns the upstream's address.
func startUpstream(t testing.TB, password string) string {
	t.Helper()
	dir := filepath.Join(labRoot(), "vm", "tmp", "lab-upstream") // the guest's /tmp/lab-upstream
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"htpasswd": labUser + ":" + string(hash) + "\n",
		"config.yml": `version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: /var/lib/registry
http:
  addr: :5443
  tls:
    certificate: /up/tls.crt
    key: /up/tls.key
auth:
  htpasswd:
    realm: lab
    path: /up/htpasswd
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for src, dst := range map[string]string{"lab-upstream.crt": "tls.crt", "lab-upstream.key": "tls.key"} {
		b, err := os.ReadFile(filepath.Join(labRoot(), "ca", src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = labCmd(t, "docker", "rm", "-f", "lab-upstream")
	labDocker(t, "run", "-d", "--name", "lab-upstream", "--network", "kind", "-v", "/tmp/lab-upstream:/up:ro",
		"registry:3.1.2", "serve", "/up/config.yml")
	ip := containerIP(t, "lab-upstream", "kind")
	waitFor(t, 20*time.Second, "lab-upstream to answer", func() bool {
		c, err := net.DialTimeout("tcp", ip+":5443", time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return ip
}

func labCA(t testing.TB) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(labRoot(), "ca", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	return pool
}

// image is a small OCI image: a config and one layer.
type image struct {
	manifest       []byte
	manifestDigest string
	blobs          map[string][]byte // digest → content
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func makeImage(t *testing.T) image {
	t.Helper()
	var tarb bytes.Buffer
	tw := tar.NewWriter(&tarb)
	payload := make([]byte, 64<<10)
	_, _ = rand.Read(payload)
	_ = tw.WriteHeader(&tar.Header{Name: "data.bin", Mode: 0o644, Size: int64(len(payload))})
	_, _ = tw.Write(payload)
	_ = tw.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(tarb.Bytes())
	_ = zw.Close()
	layer := gz.Bytes()
	cfg, _ := json.Marshal(ocispec.Image{
		Platform: ocispec.Platform{Architecture: "amd64", OS: "linux"},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: nil},
	})
	cfg = bytes.Replace(cfg, []byte(`"diff_ids":null`), []byte(`"diff_ids":["`+digestOf(tarb.Bytes())+`"]`), 1)
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     ocispec.MediaTypeImageManifest,
		"config":        map[string]any{"mediaType": ocispec.MediaTypeImageConfig, "digest": digestOf(cfg), "size": len(cfg)},
		"layers":        []any{map[string]any{"mediaType": ocispec.MediaTypeImageLayerGzip, "digest": digestOf(layer), "size": len(layer)}},
	}
	mb, _ := json.Marshal(m)
	return image{manifest: mb, manifestDigest: digestOf(mb), blobs: map[string][]byte{digestOf(cfg): cfg, digestOf(layer): layer}}
}

// push uploads img to the upstream with the registry HTTP API.
func push(t *testing.T, upstreamIP, password string, img image) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: labCA(t), ServerName: "lab-upstream"},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, upstreamIP+":5443")
		},
	}}
	do := func(method, url string, body []byte, ctype string) *http.Response {
		req, _ := http.NewRequest(method, url, bytes.NewReader(body))
		req.SetBasicAuth(labUser, password)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		return resp
	}
	base := "https://" + upstreamHost + "/v2/" + testRepo
	for d, b := range img.blobs {
		resp := do(http.MethodPost, base+"/blobs/uploads/", nil, "")
		loc := resp.Header.Get("Location")
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || loc == "" {
			t.Fatalf("start upload: %s", resp.Status)
		}
		if !strings.HasPrefix(loc, "http") {
			loc = "https://" + upstreamHost + loc
		}
		sep := "?"
		if strings.Contains(loc, "?") {
			sep = "&"
		}
		resp = do(http.MethodPut, loc+sep+"digest="+d, b, "application/octet-stream")
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("upload %s: %s", d, resp.Status)
		}
	}
	resp := do(http.MethodPut, base+"/manifests/1", img.manifest, ocispec.MediaTypeImageManifest)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("put manifest: %s", resp.Status)
	}
}

// pull fetches img the way a kind node's containerd would: hosts come from
// the certs.d folder marina generates, resolved by containerd's own
// ConfigureHosts; names resolve as Docker's DNS resolves them on the kind
// network.
func pull(t *testing.T, certsD string, img image) error {
	t.Helper()
	addr := func(name string) string {
		out, err := labCmd(t, "docker", "inspect", "-f", "{{(index .NetworkSettings.Networks \"kind\").IPAddress}}", name)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}
	ca := labCA(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hosts := hostcfg.ConfigureHosts(ctx, hostcfg.HostOptions{
		HostDir: hostcfg.HostDirFromRoot(certsD),
		UpdateClient: func(c *http.Client) error {
			c.Transport = &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: ca},
				DialContext: func(ctx context.Context, network, hostport string) (net.Conn, error) {
					h, p, _ := net.SplitHostPort(hostport)
					if ip := addr(h); ip != "" {
						hostport = net.JoinHostPort(ip, p)
					}
					return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, hostport)
				},
			}
			return nil
		},
	})
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: hosts})
	name, desc, err := resolver.Resolve(ctx, upstreamHost+"/"+testRepo+":1")
	if err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	if desc.Digest.String() != img.manifestDigest {
		return fmt.Errorf("resolved %s, want %s", desc.Digest, img.manifestDigest)
	}
	fetcher, err := resolver.Fetcher(ctx, name)
	if err != nil {
		return err
	}
	fetch := func(d ocispec.Descriptor) ([]byte, error) {
		rc, err := fetcher.Fetch(ctx, d)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	mb, err := fetch(desc)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return err
	}
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		b, err := fetch(d)
		if err != nil {
			return fmt.Errorf("blob %s: %w", d.Digest, err)
		}
		if digestOf(b) != d.Digest.String() {
			return fmt.Errorf("blob %s arrived corrupted", d.Digest)
		}
	}
	return nil
}

// blobGets counts the upstream's GETs of each blob of img, from its access log.
func blobGets(t *testing.T, img image) map[string]int {
	t.Helper()
	logs, _ := labCmd(t, "docker", "logs", "lab-upstream")
	n := map[string]int{}
	for d := range img.blobs {
		n[d] = strings.Count(logs, `"GET /v2/`+testRepo+`/blobs/`+d)
	}
	return n
}

func certsDFor(t *testing.T, names ...string) string {
	t.Helper()
	cfg, err := config.Load(config.Paths{Home: home(), Dir: marinaHome(), Config: filepath.Join(marinaHome(), "config.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := registry.Select(cfg.Registries.Mirrors, names)
	if err != nil {
		t.Fatal(err)
	}
	files, err := registry.CertsD(sel)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func containerID(t *testing.T, name string) string {
	t.Helper()
	out, err := labCmd(t, "docker", "inspect", "-f", "{{.Id}}", name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

func cachedBlob(root, mirror, digest string) string {
	hexd := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(root, mirror, "docker", "registry", "v2", "blobs", "sha256", hexd[:2], hexd, "data")
}

func TestRegistryMirrors(t *testing.T) {
	needLab(t)
	password := "pw-" + hex.EncodeToString(digestBytes(8))
	t.Cleanup(func() { marina(t, "destroy", "-y") })
	// The upstream lives on the kind network, which the first up makes.
	writeConfig(t, "registries:\n  mirrors: []\n")
	mustMarina(t, "up")
	upstreamIP := startUpstream(t, password)
	img := makeImage(t)
	push(t, upstreamIP, password, img)
	writeConfig(t, mirrorsConfig("host", password, "https://quay.io"))
	r := mustMarina(t, "up", "--debug")
	if strings.Contains(r.stdout+r.stderr, password) {
		t.Error("marina up printed the upstream password")
	}
	macCache := filepath.Join(marinaHome(), "registry-cache")

	t.Run("pulls go through the mirror and the upstream serves each blob once", func(t *testing.T) {
		certs := certsDFor(t, "registry-lab")
		for i := 1; i <= 2; i++ {
			if err := pull(t, certs, img); err != nil {
				t.Fatalf("pull %d: %v", i, err)
			}
		}
		for d, n := range blobGets(t, img) {
			if n != 1 {
				t.Errorf("the upstream served %s %d times over two pulls, want once", d, n)
			}
		}
		logs, _ := labCmd(t, "docker", "logs", "lab-upstream")
		if !strings.Contains(logs, "auth.user.name="+labUser) {
			var some []string
			for _, l := range strings.Split(logs, "\n") {
				if strings.Contains(l, "blobs/sha256") {
					some = append(some, l)
				}
			}
			t.Errorf("the upstream saw no request from the configured user; blob requests:\n%s", strings.Join(some, "\n"))
		}
		for d := range img.blobs {
			if _, err := os.Stat(cachedBlob(macCache, "registry-lab", d)); err != nil {
				t.Errorf("blob %s is not in the cache on the Mac side: %v", d, err)
			}
		}
	})

	t.Run("credentials stay out of the container and in a root-only file", func(t *testing.T) {
		out, err := labCmd(t, "docker", "inspect", "registry-lab")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, password) {
			t.Error("docker inspect shows the password")
		}
		var ins []struct {
			Config struct{ Env, Cmd, Entrypoint []string }
			Args   []string
		}
		if err := json.Unmarshal([]byte(out), &ins); err != nil || len(ins) != 1 {
			t.Fatalf("inspect: %v", err)
		}
		all := strings.Join(append(append(append(ins[0].Config.Env, ins[0].Config.Cmd...), ins[0].Config.Entrypoint...), ins[0].Args...), " ")
		if strings.Contains(all, password) || strings.Contains(all, labUser) {
			t.Errorf("env or args carry credentials: %s", all)
		}
		st := strings.TrimSpace(inGuest(t, "stat -c '%a %U %G' "+registry.ConfigDir+"/registry-lab.yml "+registry.ConfigDir))
		if st != "600 root root\n700 root root" && st != "600 root root\r\n700 root root" {
			if lines := strings.Split(st, "\n"); len(lines) != 2 || lines[0] != "600 root root" || lines[1] != "700 root root" {
				t.Errorf("config file and folder modes: %q, want 600 and 700, root", st)
			}
		}
		// The credentials are in the credential helper only, which only
		// root can read or run.
		if st := strings.TrimSpace(inGuest(t, "stat -c '%a %U %G' "+registry.ConfigDir+"/registry-lab.auth")); st != "700 root root" {
			t.Errorf("credential helper mode: %q, want 700, root", st)
		}
		in := func(file string) string {
			return strings.TrimSpace(inGuest(t, "grep -cF -- "+shellQuote(password)+" "+registry.ConfigDir+"/"+file+" || true"))
		}
		if yml, auth := in("registry-lab.yml"), in("registry-lab.auth"); yml != "0" || auth != "1" {
			t.Errorf("lines with the password: %s in the config, %s in the credential helper; want 0 and 1", yml, auth)
		}
	})

	t.Run("a recreated mirror serves from the Mac-side cache without the upstream", func(t *testing.T) {
		before := blobGets(t, img)
		labDocker(t, "rm", "-f", "registry-lab")
		r := mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "run the mirror registry-lab") {
			t.Errorf("plan:\n%s", r.stdout)
		}
		mustMarina(t, "up")
		waitFor(t, 20*time.Second, "the new mirror to answer", func() bool {
			return labDocker(t, "inspect", "-f", "{{.State.Running}}", "registry-lab") == "true"
		})
		time.Sleep(time.Second)
		labDocker(t, "stop", "lab-upstream")
		defer labDocker(t, "start", "lab-upstream")
		if err := pull(t, certsDFor(t, "registry-lab"), img); err != nil {
			t.Fatalf("pull with the upstream stopped: %v", err)
		}
		labDocker(t, "start", "lab-upstream")
		if after := blobGets(t, img); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("the upstream served blobs again: %v → %v", before, after)
		}
	})

	t.Run("warm up makes at most 2 round trips and changes nothing", func(t *testing.T) {
		ids := containerID(t, "registry-lab") + containerID(t, "registry-quayio")
		r := mustMarina(t, "up", "--debug")
		if n := trips(t, r.stderr); n > 2 {
			t.Errorf("%d round trips", n)
		}
		if got := containerID(t, "registry-lab") + containerID(t, "registry-quayio"); got != ids {
			t.Error("warm up recreated a mirror")
		}
	})

	t.Run("changing one mirror's upstream recreates that mirror only", func(t *testing.T) {
		lab, quay := containerID(t, "registry-lab"), containerID(t, "registry-quayio")
		writeConfig(t, mirrorsConfig("host", password, "https://quay.example.com"))
		mustMarina(t, "up")
		if containerID(t, "registry-lab") != lab {
			t.Error("registry-lab was recreated")
		}
		if q := containerID(t, "registry-quayio"); q == quay || q == "" {
			t.Error("registry-quayio was not recreated")
		}
		if !strings.Contains(inGuest(t, "cat "+registry.ConfigDir+"/registry-quayio.yml"), "remoteurl: https://quay.example.com") {
			t.Error("the new upstream is not in the config file")
		}
	})

	t.Run("registry list reports state, cache and hits", func(t *testing.T) {
		r := mustMarina(t, "registry", "list", "-o", "json")
		var rows []struct {
			Name, State string
			CacheBytes  int64
			Blobs       *struct{ Hits, Misses uint64 }
		}
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		var lab *struct {
			Name, State string
			CacheBytes  int64
			Blobs       *struct{ Hits, Misses uint64 }
		}
		for i := range rows {
			if rows[i].Name == "registry-lab" {
				lab = &rows[i]
			}
		}
		if lab == nil || lab.State != "running" || lab.CacheBytes < 64<<10 {
			t.Fatalf("registry-lab row: %+v", lab)
		}
		if lab.Blobs == nil || lab.Blobs.Hits < 2 {
			t.Errorf("blob counters (read over the route from the Mac): %+v", lab.Blobs)
		}
		text := mustMarina(t, "registry", "list").stdout
		if !strings.Contains(text, "registry-lab") || !strings.Contains(text, "https://"+upstreamHost) {
			t.Errorf("list:\n%s", text)
		}
	})

	t.Run("clean-cache empties the cache and restarts the mirror", func(t *testing.T) {
		mustMarina(t, "registry", "clean-cache", "registry-lab")
		for d := range img.blobs {
			if _, err := os.Stat(cachedBlob(macCache, "registry-lab", d)); !os.IsNotExist(err) {
				t.Errorf("blob %s still cached (%v)", d, err)
			}
		}
		if labDocker(t, "inspect", "-f", "{{.State.Running}}", "registry-lab") != "true" {
			t.Error("registry-lab is not running after clean-cache")
		}
		r := marina(t, "registry", "clean-cache", "registry-nope")
		if r.code == 0 || !strings.Contains(r.stderr, `no mirror is named "registry-nope"`) {
			t.Errorf("unknown mirror: %d %s", r.code, r.stderr)
		}
	})

	t.Run("root in the VM cannot make clean-cache or list act behind a link (S1)", func(t *testing.T) {
		// The user's files, beside marina's home on the Mac.
		docs := filepath.Join(filepath.Dir(marinaHome()), "Documents")
		if err := os.MkdirAll(docs, 0o755); err != nil {
			t.Fatal(err)
		}
		thesis := filepath.Join(docs, "thesis.txt")
		if err := os.WriteFile(thesis, []byte("years of work\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// Each writes through the guest's mount of the cache, which stands
		// for virtiofs: root in the guest itself, and a privileged
		// container with the folder mounted, as a privileged pod (a kind
		// node is such a container) reaches it. The links are the audit's:
		// to ~/Documents, and to the home itself.
		importTool(t, "ln", lnImage)
		for _, c := range []struct{ how, target, mirror string }{
			{"root in the guest", "../../Documents", "registry-lab"},
			{"a privileged container", "../..", "registry-quayio"},
		} {
			if c.how == "root in the guest" {
				inGuest(t, "cd "+vm.GuestCacheDir+" && rm -rf "+c.mirror+" && ln -s "+c.target+" "+c.mirror)
			} else {
				labDocker(t, "run", "--rm", "--privileged", "-v", vm.GuestCacheDir+":/c", lnImage, c.target, "/c/"+c.mirror)
			}
			link := filepath.Join(macCache, c.mirror)
			if got, err := os.Readlink(link); err != nil || got != c.target {
				t.Fatalf("%s: the link is not on the Mac (the test proves nothing): %q %v", c.how, got, err)
			}
			running := containerID(t, c.mirror)
			for _, args := range [][]string{{"registry", "clean-cache", c.mirror}, {"registry", "clean-cache", "-y"}} {
				r := marina(t, args...)
				if r.code == 0 || !strings.Contains(r.stderr, link+" is a symbolic link") || strings.Contains(r.stdout+r.stderr, "Emptying") {
					t.Errorf("%s: %s through a link: exit %d\n%s%s", c.how, strings.Join(args, " "), r.code, r.stdout, r.stderr)
				}
			}
			r := marina(t, "registry", "list", "-o", "json")
			if r.code != 0 || !strings.Contains(r.stderr, link+" is a symbolic link") {
				t.Errorf("%s: registry list through a link: exit %d\n%s", c.how, r.code, r.stderr)
			}
			if b, err := os.ReadFile(thesis); err != nil || string(b) != "years of work\n" {
				t.Fatalf("%s: the user's file behind the link: %v", c.how, err)
			}
			if _, err := os.Stat(filepath.Join(marinaHome(), "config.yaml")); err != nil {
				t.Fatalf("%s: marina's own home: %v", c.how, err)
			}
			if got, err := os.Readlink(link); err != nil || got != c.target {
				t.Errorf("%s: the link itself was changed: %q %v", c.how, got, err)
			}
			if containerID(t, c.mirror) != running {
				t.Errorf("%s: the mirror was stopped before the refusal", c.how)
			}
			// Back as up would leave it, for what follows.
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
		}
		mustMarina(t, "up")
		// Emptying every cache leaves the push registry alone: it is no
		// cache.
		push := containerID(t, "marina-registry")
		mustMarina(t, "registry", "clean-cache", "-y")
		if push == "" || containerID(t, "marina-registry") != push {
			t.Errorf("clean-cache -y touched the push registry's container (%q)", push)
		}
	})

	t.Run("a removed or renamed mirror's container goes", func(t *testing.T) {
		cfg := strings.Replace(mirrorsConfig("host", password, "https://quay.io"), "name: registry-lab", "name: registry-lab2", 1)
		cfg = cfg[:strings.Index(cfg, "    - name: registry-quayio")]
		writeConfig(t, cfg)
		mustMarina(t, "up")
		for _, gone := range []string{"registry-lab", "registry-quayio"} {
			if containerID(t, gone) != "" {
				t.Errorf("%s is still there", gone)
			}
		}
		if containerID(t, "registry-lab2") == "" {
			t.Error("registry-lab2 was not created")
		}
		// The push registry's file stays beside it; registry-lab's config
		// and credential helper went with it.
		if out := inGuest(t, "ls "+registry.ConfigDir); strings.Join(strings.Fields(out), " ") != "marina-registry.yml registry-lab2.auth registry-lab2.yml" {
			t.Errorf("config files: %q", out)
		}
	})

	t.Run("cacheStorage guest keeps the cache on the VM's disk", func(t *testing.T) {
		mustMarina(t, "destroy", "-y")
		if err := os.RemoveAll(macCache); err != nil {
			t.Fatal(err)
		}
		writeConfig(t, "registries:\n  cacheStorage: guest\n  mirrors: []\n")
		mustMarina(t, "up")
		upstreamIP := startUpstream(t, password)
		push(t, upstreamIP, password, img)
		writeConfig(t, mirrorsConfig("guest", password, "https://quay.io"))
		mustMarina(t, "up")
		if err := pull(t, certsDFor(t, "registry-lab"), img); err != nil {
			t.Fatal(err)
		}
		for d := range img.blobs {
			p := cachedBlob("/var/lib/marina/registry-cache", "registry-lab", d)
			if _, err := labCmd(t, "vm", "test", "-f", p); err != nil {
				t.Errorf("blob %s is not on the VM's disk", d)
			}
			if _, err := os.Stat(cachedBlob(macCache, "registry-lab", d)); !os.IsNotExist(err) {
				t.Errorf("blob %s is on the Mac side in guest mode", d)
			}
		}
		r := mustMarina(t, "registry", "list", "-o", "json")
		if !strings.Contains(r.stdout, `"cacheDir": "/var/lib/marina/registry-cache/registry-lab (in the VM)"`) {
			t.Errorf("list in guest mode:\n%s", r.stdout)
		}
	})
}

func digestBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
