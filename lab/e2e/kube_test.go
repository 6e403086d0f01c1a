package e2e

// A real Kubernetes API server for tests: etcd and kube-apiserver v1.36.1
// (built by lab/lab from lab/kube into the lab's build cache), started once
// per test binary inside the mac namespace, on loopback only. The mac
// namespace has no route off the machine, so nothing the API server does
// (webhooks, DNS) can leave it.

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/bcollard/marina/internal/testpki"
)

// kubeServiceCIDR is the shared API server's service range.
const kubeServiceCIDR = "10.96.0.0/16"

// The shared API server; see kubeAPI.
var kube struct {
	once       sync.Once
	mu         sync.Mutex
	skip       string // why the binaries are unusable
	err        error  // why it did not start
	cfg        *rest.Config
	kubeconfig string
	dir        string
	procs      []kubeProc // etcd first
}

// kubeProc is a started server; done closes when it has exited.
type kubeProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// labCacheBin is where lab/lab keeps its builds.
func labCacheBin(name string) string {
	cache := os.Getenv("MARINA_LAB_CACHE")
	if cache == "" {
		cache = "/var/cache/marina-lab"
	}
	return filepath.Join(cache, "bin", name)
}

// kubeAPI returns an admin client config and an admin kubeconfig file for
// the test binary's one etcd + kube-apiserver, starting them on first use.
// It skips when the lab (or its Kubernetes builds) is not there. The
// servers stop when the test binary ends (stopKubeAPI, from TestMain).
// Tests share the API server: use your own namespaces and object names.
func kubeAPI(t *testing.T) (*rest.Config, string) {
	t.Helper()
	needLab(t)
	kube.once.Do(startKubeAPI)
	if kube.skip != "" {
		t.Skip(kube.skip)
	}
	if kube.err != nil {
		t.Fatalf("the lab API server: %v", kube.err)
	}
	return rest.CopyConfig(kube.cfg), kube.kubeconfig
}

func startKubeAPI() {
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(labCacheBin(b)); err != nil {
			kube.skip = fmt.Sprintf("%s is not built (%v): lab/lab up builds it from lab/kube", b, err)
			return
		}
	}
	// Under the lab's root when there is one: `lab/lab down` removes it
	// even if this binary is killed before it can.
	parent := ""
	if root := labRoot(); root != "" {
		parent = filepath.Join(root, "run")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			kube.err = err
			return
		}
	}
	dir, err := os.MkdirTemp(parent, "marina-kube-")
	if err != nil {
		kube.err = err
		return
	}
	kube.dir = dir
	if kube.err = runKubeAPI(dir); kube.err != nil {
		stopKubeAPI()
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func runKubeAPI(dir string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	certs, err := kubePKI(dir)
	if err != nil {
		return err
	}

	start := func(name string, args ...string) (kubeProc, error) {
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			return kubeProc{}, err
		}
		defer logf.Close()
		c := exec.Command(labCacheBin(name), args...)
		c.Stdout, c.Stderr = logf, logf
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			return kubeProc{}, err
		}
		p := kubeProc{cmd: c, done: make(chan struct{})}
		go func() { _ = c.Wait(); close(p.done) }()
		kube.procs = append(kube.procs, p)
		return p, nil
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	if _, err := start("etcd",
		"--name=lab", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=lab="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	api, err := start("kube-apiserver",
		"--etcd-servers="+clientURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file="+certs.path("apiserver.crt"), "--tls-private-key-file="+certs.path("apiserver.key"),
		"--client-ca-file="+certs.path("ca.crt"),
		"--service-cluster-ip-range="+kubeServiceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+certs.path("sa.pub"),
		"--service-account-signing-key-file="+certs.path("sa.key"),
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		"--v=1",
	)
	if err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}

	host := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cfg := &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   certs.data("ca.crt"),
			CertData: certs.data("admin.crt"),
			KeyData:  certs.data("admin.key"),
		},
		QPS: 100, Burst: 200,
	}
	if err := waitReadyz(cfg, api, 2*time.Minute); err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "kube-apiserver.log"))
		etcdLogs, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
		return fmt.Errorf("%w\nkube-apiserver log (end):\n%s\netcd log (end):\n%s", err, tail(string(logs), 30), tail(string(etcdLogs), 10))
	}

	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["lab-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "lab-admin"}
	kc.CurrentContext = "lab"
	path := filepath.Join(dir, "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return err
	}
	kube.cfg, kube.kubeconfig = cfg, path
	return nil
}

// waitReadyz polls /readyz until it answers ok, the API server exits or
// the time is up.
func waitReadyz(cfg *rest.Config, proc kubeProc, within time.Duration) error {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-proc.done:
			return fmt.Errorf("kube-apiserver exited before it was ready: %v", proc.cmd.ProcessState)
		case <-time.After(500 * time.Millisecond):
		}
		resp, err := hc.Get(cfg.Host + "/readyz")
		if err != nil {
			last = err.Error()
			continue
		}
		body := new(bytes.Buffer)
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Sprintf("%d %s", resp.StatusCode, tail(body.String(), 5))
	}
	return fmt.Errorf("kube-apiserver not ready after %s: %s", within, last)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stopKubeAPI ends the shared API server and etcd and removes their files.
// TestMain calls it after the tests; it is a no-op when nothing started.
func stopKubeAPI() {
	kube.mu.Lock()
	defer kube.mu.Unlock()
	// The API server first, then its etcd.
	for i := len(kube.procs) - 1; i >= 0; i-- {
		p := kube.procs[i]
		pgid := -p.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-p.done
		}
	}
	kube.procs = nil
	if kube.dir != "" {
		_ = os.RemoveAll(kube.dir)
		kube.dir = ""
	}
}

// pkiFiles is the folder of the API server's PKI; data reads one file.
type pkiFiles string

func (p pkiFiles) path(name string) string { return filepath.Join(string(p), name) }

func (p pkiFiles) data(name string) []byte {
	b, err := os.ReadFile(p.path(name))
	if err != nil {
		panic(err)
	}
	return b
}

// kubePKI writes what the API server and its clients need, laid out as
// kubeadm does (internal/testpki): a CA, the serving certificate (127.0.0.1,
// localhost, the kubernetes service names and the first service IP), an
// admin client certificate in system:masters, and the service-account key
// pair.
func kubePKI(dir string) (pkiFiles, error) {
	pdir := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		return "", err
	}
	ca, err := testpki.LoadOrMakeCA(pdir, "ca", "marina-lab-kubernetes-ca")
	if err != nil {
		return "", err
	}
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
	if _, _, err := ca.Issue("apiserver", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, dns, ips); err != nil {
		return "", err
	}
	if _, _, err := ca.Issue("admin", pkix.Name{CommonName: "lab-admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return "", err
	}
	return pkiFiles(pdir), testpki.ServiceAccountKey(pdir)
}

// TestKubeAPI proves the shared API server: client-go writes and reads, and
// kubectl (the lab's own build) reads through the admin kubeconfig.
func TestKubeAPI(t *testing.T) {
	cfg, kubeconfig := kubeAPI(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.36.1" {
		t.Errorf("API server version %q, want v1.36.1", v.GitVersion)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-api-test", Labels: map[string]string{"marina.test": "yes"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["marina.test"] != "yes" {
		t.Errorf("namespace labels %v", got.Labels)
	}

	kubectl := labCacheBin("kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Skipf("kubectl is not built: %v", err)
	}
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "ns", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get ns: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "namespace/kube-api-test") {
		t.Errorf("kubectl get ns:\n%s", out)
	}
	out, err = exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl version: %v\n%s", err, out)
	}
	if strings.Count(string(out), "v1.36.1") != 2 {
		t.Errorf("kubectl version: want client and server v1.36.1:\n%s", out)
	}
}
