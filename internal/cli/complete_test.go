package cli

// Completion through cobra's __complete, as a shell calls it, over the
// production code path: the config file, the user's kubeconfig, Docker's
// Engine API on the VM's forwarded socket (a stand-in daemon answering the
// two requests a completion makes) and a cluster's API server (a TLS
// stand-in reached through the cluster's own kubeconfig).

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/testpki"
)

const (
	noFiles  = int(cobra.ShellCompDirectiveNoFileComp)
	fileExts = int(cobra.ShellCompDirectiveFilterFileExt)
)

// completeHome is a home with a config (nil: none) and no limactl on
// PATH: a completion that asked limactl would offer nothing. HOME is
// short, so that the Docker socket's path fits a unix socket's.
func completeHome(t *testing.T, change func(*config.Config)) config.Paths {
	t.Helper()
	isolate(t)
	home, err := os.MkdirTemp("", "m")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("HOME", home)
	t.Setenv("MARINA_HOME", filepath.Join(home, ".marina"))
	t.Setenv("KUBECONFIG", "")
	paths, err := config.ResolvePaths(os.Getenv, "")
	if err != nil {
		t.Fatal(err)
	}
	if change == nil {
		return paths
	}
	cfg := config.Default()
	change(&cfg)
	b, err := config.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(paths.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.Config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return paths
}

func defaults(*config.Config) {}

// socket is the VM's forwarded Docker socket.
func socket(t *testing.T, paths config.Paths) string {
	t.Helper()
	files, err := paths.VM("marina")
	if err != nil {
		t.Fatal(err)
	}
	return files.DockerSocket
}

var directiveLine = regexp.MustCompile(`^Completion ended with directive: [A-Za-z, ]+\n$`)

// complete runs `marina __complete args…` and returns the names offered
// and the directive; anything but cobra's own line on stderr, or an exit
// status other than 0, fails the test.
func complete(t *testing.T, args ...string) ([]string, int) {
	t.Helper()
	out, errs, code := runCLI(t, append([]string{"__complete"}, args...)...)
	if code != 0 || !directiveLine.MatchString(errs) {
		t.Fatalf("__complete %q: exit %d, stderr %q", args, code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var d int
	if _, err := fmt.Sscanf(lines[len(lines)-1], ":%d", &d); err != nil {
		t.Fatalf("__complete %q: no directive last:\n%s", args, out)
	}
	names := lines[:len(lines)-1]
	if len(names) == 0 {
		names = nil
	}
	return names, d
}

// wantNames checks that completing args offers want and no files.
func wantNames(t *testing.T, want []string, args ...string) {
	t.Helper()
	names, d := complete(t, args...)
	if !slices.Equal(names, want) || d != noFiles {
		t.Errorf("__complete %q = %q :%d, want %q :%d", args, names, d, want, noFiles)
	}
}

// daemon stands in for the VM's Docker behind its forwarded socket: it
// answers the version ping and the container list, and logs every request.
type daemon struct {
	mu         sync.Mutex
	containers []listed
	requests   []string
}

// listed is a container as Docker lists it.
type listed struct {
	name, state string
	labels      map[string]string
}

// kindNode is a node container of cluster as kind labels it.
func kindNode(cluster, role, state string) listed {
	return listed{name: cluster + "-" + role, state: state, labels: map[string]string{"io.x-k8s.kind.cluster": cluster, "io.x-k8s.kind.role": role}}
}

var apiVersion = regexp.MustCompile(`^/v[0-9.]+`)

func serveDocker(t *testing.T, sock string, nodes ...listed) *daemon {
	t.Helper()
	d := &daemon{containers: nodes}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: d}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return d
}

func (d *daemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := apiVersion.ReplaceAllString(r.URL.Path, "")
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = append(d.requests, r.Method+" "+path)
	switch path {
	case "/_ping":
		w.Header().Set("Api-Version", "1.51")
		_, _ = io.WriteString(w, "OK")
	case "/containers/json":
		var filters map[string]map[string]bool
		if f := r.URL.Query().Get("filters"); f != "" {
			if err := json.Unmarshal([]byte(f), &filters); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		out := []map[string]any{}
		for _, c := range d.containers {
			if matches(c.labels, filters["label"]) {
				out = append(out, map[string]any{"Id": c.name + "-id", "Names": []string{"/" + c.name}, "State": c.state, "Labels": c.labels, "Image": "kindest/node"})
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"not served by this stand-in"}`)
	}
}

// matches is Docker's label filter: each key, or key=value, is there.
func matches(labels map[string]string, want map[string]bool) bool {
	for f := range want {
		k, v, hasValue := strings.Cut(f, "=")
		got, ok := labels[k]
		if !ok || (hasValue && got != v) {
			return false
		}
	}
	return true
}

// reads are the requests since the last call, the version ping left out.
func (d *daemon) reads() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.DeleteFunc(slices.Clone(d.requests), func(r string) bool { return strings.HasSuffix(r, " /_ping") })
	d.requests = nil
	return out
}

// apiServer stands in for the clusters' API servers: it answers GET of a
// control-plane node with that cluster's labels and logs what it is asked.
type apiServer struct {
	*httptest.Server
	ca       *testpki.CA
	serving  []byte
	mu       sync.Mutex
	labels   map[string]map[string]string // by cluster
	requests []string
}

func serveAPI(t *testing.T, labels map[string]map[string]string) *apiServer {
	t.Helper()
	ca, err := testpki.LoadOrMakeCA(t.TempDir(), "ca", "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := ca.Issue("", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	a := &apiServer{ca: ca, serving: crt, labels: labels}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	a.StartTLS()
	t.Cleanup(a.Close)
	return a
}

func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, r.Method+" "+r.URL.Path)
	name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/nodes/")
	cl, cp := strings.CutSuffix(name, "-control-plane")
	if !ok || !cp || a.labels[cl] == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Node", "apiVersion": "v1", "metadata": map[string]any{"name": name, "labels": a.labels[cl]}})
}

func (a *apiServer) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.Clone(a.requests)
	slices.Sort(out)
	return out
}

// kubeconfig is marina's kubeconfig of cluster name on this server, made
// from what kind would export, as marina makes it.
func (a *apiServer) kubeconfig(t *testing.T, name, home string) []byte {
	t.Helper()
	crt, key, err := a.ca.Issue("", pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"kubeadm:cluster-admins"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	kind := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kind-%[1]s
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: %[2]s}
users:
- name: kind-%[1]s
  user: {client-certificate-data: %[3]s, client-key-data: %[4]s}
contexts:
- name: kind-%[1]s
  context: {cluster: kind-%[1]s, user: kind-%[1]s}
current-context: kind-%[1]s
`, name, b64(a.ca.PEM()), b64(crt), b64(key))
	kc, err := kubeconfig.FromKind([]byte(kind), a.serving, name, a.URL, home)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// writeKubeconfig writes cluster name's own kubeconfig file.
func (a *apiServer) writeKubeconfig(t *testing.T, paths config.Paths, name string) {
	t.Helper()
	p, err := paths.Kubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.WriteFile(p, name, a.kubeconfig(t, name, paths.Dir), kubeconfig.Owner{Home: paths.Dir}); err != nil {
		t.Fatal(err)
	}
}

func TestCompleteClusterNames(t *testing.T) {
	paths := completeHome(t, defaults)
	d := serveDocker(t, socket(t, paths),
		kindNode("dev", "control-plane", "running"),
		kindNode("east", "control-plane", "running"),
		kindNode("east", "worker", "running"),
		kindNode("old", "control-plane", "exited"),
		// Anyone with the socket can write labels: not a name marina gives.
		kindNode("Bad;name", "control-plane", "running"),
		listed{name: "registry-quayio", state: "running", labels: map[string]string{"marina.dev/mirror": "registry-quayio"}},
	)
	all := []string{"dev", "east", "old"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"cluster", "delete", ""}, all},
		{[]string{"cluster", "delete", "e"}, []string{"east"}},
		{[]string{"cl", "rm", "dev", ""}, []string{"east", "old"}}, // aliases; a name given is not offered again
		{[]string{"cluster", "delete", "-y", "dev", "old", ""}, []string{"east"}},
		{[]string{"cluster", "label", ""}, all},
		{[]string{"cluster", "verify", ""}, all},
		{[]string{"kubeconfig", "merge", ""}, all},
		{[]string{"kc", "merge", "east", ""}, []string{"dev", "old"}},
		{[]string{"fleet", "adopt", "demo", "dev", ""}, []string{"east", "old"}},
		{[]string{"--debug", "cluster", "delete", ""}, all}, // --debug logs nothing here
	} {
		wantNames(t, c.want, c.args...)
		// One cheap read: the container list, no inspect, no guest.
		if r := d.reads(); !slices.Equal(r, []string{"GET /containers/json"}) {
			t.Errorf("__complete %q asked Docker for %q, want one container list", c.args, r)
		}
	}
	// Commands that take one name offer nothing after it, and ask nothing.
	for _, args := range [][]string{
		{"cluster", "label", "dev", ""},
		{"cluster", "verify", "dev", ""},
		{"cluster", "create", ""}, // a new name: nothing to offer
	} {
		wantNames(t, nil, args...)
		if r := d.reads(); len(r) != 0 {
			t.Errorf("__complete %q asked Docker for %q", args, r)
		}
	}
}

// With the VM down, Docker unreachable or nothing to read, a completion
// offers nothing and no files, prints nothing but cobra's line, and exits 0.
func TestCompleteWithoutAVM(t *testing.T) {
	asks := [][]string{
		{"cluster", "delete", ""},
		{"cluster", "label", ""},
		{"kubeconfig", "merge", ""},
		{"fleet", "describe", ""},
		{"fleet", "adopt", ""},
		{"cluster", "create", "x", "--region", ""},
		{"cluster", "create", "x", "--zone", ""},
		{"registry", "clean-cache", ""},
		{"kubeconfig", "use", ""},
		{"kubeconfig", "path", ""},
	}
	for _, c := range []struct {
		what  string
		setup func(t *testing.T, paths config.Paths)
	}{
		{"no config, no VM", nil},
		{"VM stopped: no socket", func(*testing.T, config.Paths) {}},
		{"VM stopped: the socket file stayed, nothing listens", func(t *testing.T, paths config.Paths) {
			l, err := net.Listen("unix", socket(t, paths))
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
		}},
		{"VM up, its Docker down: the forward takes the connection and drops it", func(t *testing.T, paths config.Paths) {
			l, err := net.Listen("unix", socket(t, paths))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		}},
		{"a config marina cannot read", func(t *testing.T, paths config.Paths) {
			if err := os.WriteFile(paths.Config, []byte("vm:\n\tcpus: 4\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.what, func(t *testing.T) {
			var paths config.Paths
			if c.setup == nil {
				paths = completeHome(t, nil)
			} else {
				paths = completeHome(t, func(cfg *config.Config) { cfg.Registries.Mirrors = nil })
				c.setup(t, paths)
			}
			for _, args := range asks {
				wantNames(t, nil, args...)
			}
		})
	}
}

// Neither __complete nor the completion command prints klimax's hint (or
// anything else) where the shell reads.
func TestCompletionPrintsNoHint(t *testing.T) {
	paths := completeHome(t, nil)
	if err := os.MkdirAll(filepath.Join(paths.Home, ".klimax"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, errs, _ := runCLI(t, "status"); !strings.Contains(errs, "marina migrate") {
		t.Fatalf("the hint this test relies on is not given any more: %q", errs)
	}
	wantNames(t, nil, "cluster", "delete", "")
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		out, errs, code := runCLI(t, "completion", sh)
		if code != 0 || errs != "" || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d, stderr %q, %d bytes of script", sh, code, errs, len(out))
		}
	}
}

func TestCompleteLabelValues(t *testing.T) {
	paths := completeHome(t, defaults)
	serveDocker(t, socket(t, paths),
		kindNode("dev", "control-plane", "running"),
		kindNode("east", "control-plane", "running"),
		kindNode("west", "control-plane", "exited"),
		kindNode("new", "control-plane", "running"), // no kubeconfig yet: nothing to ask with
	)
	api := serveAPI(t, map[string]map[string]string{
		"dev":  {cluster.RegionLabel: "lab-1", cluster.ZoneLabel: "lab-1a", cluster.FleetLabel: "demo"},
		"east": {cluster.RegionLabel: "europe-west2", cluster.ZoneLabel: "europe-west2-b", cluster.FleetLabel: "demo"},
		"west": {cluster.RegionLabel: "never-asked", cluster.FleetLabel: "other"},
	})
	for _, n := range []string{"dev", "east", "west"} {
		api.writeKubeconfig(t, paths, n)
	}
	wantNames(t, []string{"europe-west2", "lab-1"}, "cluster", "create", "x", "--region", "")
	wantNames(t, []string{"lab-1"}, "cluster", "create", "x", "--region=l")
	wantNames(t, []string{"europe-west2-b", "lab-1a"}, "cluster", "create", "x", "--region", "lab-1", "--zone", "")
	for _, args := range [][]string{{"fleet", "describe", ""}, {"fleet", "label", ""}, {"fleet", "delete", ""}, {"fleet", "adopt", ""}} {
		wantNames(t, []string{"demo"}, args...)
	}
	wantNames(t, nil, "fleet", "describe", "demo", "")
	// One GET per running cluster with a kubeconfig; a stopped one is not
	// waited for.
	asked := api.asked()
	if n := len(asked); n != 14 || slices.Contains(asked, "GET /api/v1/nodes/west-control-plane") {
		t.Errorf("the API servers were asked %d times:\n%s", n, strings.Join(asked, "\n"))
	}
	for _, r := range asked {
		if r != "GET /api/v1/nodes/dev-control-plane" && r != "GET /api/v1/nodes/east-control-plane" {
			t.Errorf("asked for %s", r)
		}
	}
}

// A label value read from an API server reaches the shell only when it is
// a label value: one with a line break would add candidates of its own.
func TestCompleteLabelValuesRefusesWhatIsNoLabelValue(t *testing.T) {
	paths := completeHome(t, defaults)
	serveDocker(t, socket(t, paths), kindNode("dev", "control-plane", "running"), kindNode("east", "control-plane", "running"))
	api := serveAPI(t, map[string]map[string]string{
		"dev":  {cluster.RegionLabel: "lab-1\n:0\nrm -rf ~"},
		"east": {cluster.RegionLabel: "europe-west2"},
	})
	api.writeKubeconfig(t, paths, "dev")
	api.writeKubeconfig(t, paths, "east")
	wantNames(t, []string{"europe-west2"}, "cluster", "create", "x", "--region", "")
}

func TestCompleteFromTheConfig(t *testing.T) {
	const pinned = "kindest/node:v1.33.9@sha256:0000000000000000000000000000000000000000000000000000000000000000"
	completeHome(t, func(c *config.Config) {
		c.Registries.Mirrors = []config.Mirror{
			{Name: "registry-quayio", Port: 5010, RemoteURL: "https://quay.io"},
			{Name: "registry-ghcr", Port: 5020, RemoteURL: "https://ghcr.io"},
		}
		c.Kind.NodeImages = map[string]string{"v1.33.9": pinned}
	})
	wantNames(t, []string{"registry-quayio", "registry-ghcr"}, "registry", "clean-cache", "")
	wantNames(t, []string{"registry-ghcr"}, "registry", "clean-cache", "registry-quayio", "")
	versions, d := complete(t, "cluster", "create", "x", "--node-version", "")
	want := append(slices.Collect(maps.Keys(config.NodeImages)), "v1.33.9")
	if d != noFiles || len(versions) != len(want) || versions[len(versions)-1] != "v1.33.9" {
		t.Fatalf("--node-version offers %q :%d, want %q, newest first", versions, d, want)
	}
	for _, v := range want {
		if !slices.Contains(versions, v) {
			t.Errorf("--node-version does not offer %s: %q", v, versions)
		}
	}
	wantNames(t, []string{"v1.33.9"}, "cluster", "create", "x", "--node-version", "v1.33")
}

func TestCompleteNodeVersionsWithoutConfig(t *testing.T) {
	completeHome(t, nil)
	versions, _ := complete(t, "cluster", "create", "x", "--node-version", "")
	if len(versions) != len(config.NodeImages) {
		t.Errorf("--node-version without a config offers %q, want kind's published versions", versions)
	}
}

// The kubeconfig commands that work from files offer what is there, with
// the VM down: path and env the clusters' own files, use and remove the
// contexts marina wrote, never the user's own.
func TestCompleteKubeconfigNames(t *testing.T) {
	paths := completeHome(t, defaults)
	api := serveAPI(t, nil)
	api.writeKubeconfig(t, paths, "dev")
	api.writeKubeconfig(t, paths, "east")
	dir := paths.KubeconfigDir()
	for _, junk := range []string{"notes.txt", "Bad_Name.kubeconfig", ".kubeconfig"} {
		if err := os.WriteFile(filepath.Join(dir, junk), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.kubeconfig"), 0o700); err != nil {
		t.Fatal(err)
	}
	wantNames(t, []string{"dev", "east"}, "kubeconfig", "path", "")
	wantNames(t, []string{"dev", "east"}, "kubeconfig", "env", "")
	wantNames(t, nil, "kubeconfig", "path", "dev", "")

	target := filepath.Join(paths.Home, ".kube", "config")
	own := "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster: {server: https://prod.example:6443}\nusers:\n- name: prod\n  user: {token: x}\ncontexts:\n- name: prod\n  context: {cluster: prod, user: prod}\ncurrent-context: prod\n"
	if err := os.WriteFile(target, []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	wantNames(t, nil, "kubeconfig", "use", "")
	if err := kubeconfig.Merge(target, "dev", api.kubeconfig(t, "dev", paths.Dir), kubeconfig.Owner{Home: paths.Dir}); err != nil {
		t.Fatal(err)
	}
	wantNames(t, []string{"dev"}, "kubeconfig", "use", "")
	wantNames(t, []string{"dev"}, "kc", "rm", "")
	wantNames(t, nil, "kubeconfig", "use", "dev", "")
}

// Every -o offers its formats; every file flag and argument offers YAML
// files and nothing else.
func TestCompleteOutputAndFiles(t *testing.T) {
	completeHome(t, nil)
	root := newRoot(io.Discard, io.Discard).command()
	seen := 0
	walk(root, func(c *cobra.Command, path []string) {
		if c.LocalFlags().Lookup("output") == nil {
			return
		}
		seen++
		wantNames(t, []string{"text", "json", "yaml"}, append(path, "-o", "")...)
	})
	if seen < 6 {
		t.Errorf("only %d commands have -o", seen)
	}
	for _, args := range [][]string{
		{"fleet", "apply", "-f", ""},
		{"cluster", "apply", "-f", ""},
		{"cluster", "delete", "-f", ""},
		{"fleet", "delete", "--filename", ""},
		{"migrate", ""},
		{"migrate", "a.yaml", ""},
		{"--config", ""},
		{"status", "-c", ""},
	} {
		names, d := complete(t, args...)
		if d != fileExts || !slices.Equal(names, yamlFiles) {
			t.Errorf("__complete %q = %q :%d, want YAML files", args, names, d)
		}
	}
}

// No argument or flag value of any command falls back to the shell's file
// completion: the walk reaches commands and flags added later too.
func TestNoCompletionOffersFiles(t *testing.T) {
	completeHome(t, nil)
	root := newRoot(io.Discard, io.Discard).command()
	files := map[string]bool{"migrate": true}
	n := 0
	walk(root, func(c *cobra.Command, path []string) {
		check := func(args []string, fileFlag bool) {
			n++
			_, d := complete(t, args...)
			switch {
			case fileFlag && d == fileExts:
			case d&noFiles == 0:
				t.Errorf("__complete %q falls back to file names (:%d)", args, d)
			}
		}
		check(append(slices.Clone(path), ""), files[strings.Join(path, " ")])
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.NoOptDefVal != "" || f.Name == "help" {
				return // a switch: nothing to complete
			}
			check(append(slices.Clone(path), "--"+f.Name, ""), f.Name == "filename" || f.Name == "config")
		})
	})
	if n < 60 {
		t.Errorf("only %d completions checked: the walk missed commands", n)
	}
}

// Each path and flag the completion tables name is a real command's: a
// renamed command would otherwise lose its completion without a sound.
func TestCompletionTablesNameRealCommands(t *testing.T) {
	r := newRoot(io.Discard, io.Discard)
	root := r.command()
	find := func(path string) *cobra.Command {
		c, rest, err := root.Find(strings.Fields(path))
		if err != nil || len(rest) != 0 || c.CommandPath() != "marina "+path {
			t.Errorf("the completion table names %q: no such command", path)
			return nil
		}
		return c
	}
	for path := range r.argCompletions() {
		find(path)
	}
	for path, flags := range r.flagCompletions() {
		if c := find(path); c != nil {
			for name := range flags {
				if c.Flags().Lookup(name) == nil {
					t.Errorf("the completion table names %s --%s: no such flag", path, name)
				}
			}
		}
	}
}

// walk calls fn for every command below root that runs, with its path.
func walk(root *cobra.Command, fn func(c *cobra.Command, path []string)) {
	var visit func(c *cobra.Command, path []string)
	visit = func(c *cobra.Command, path []string) {
		if c.Hidden {
			return
		}
		if c.Runnable() && len(path) > 0 {
			fn(c, path)
		}
		for _, sub := range c.Commands() {
			visit(sub, append(slices.Clone(path), sub.Name()))
		}
	}
	visit(root, nil)
}
