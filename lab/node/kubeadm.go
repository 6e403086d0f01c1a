//go:build linux

package main

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/bcollard/marina/internal/testpki"
)

// pkiDir is where kubeadm keeps the cluster's PKI.
const pkiDir = "/etc/kubernetes/pki"

const (
	manifestsDir = "/etc/kubernetes/manifests" // the servers' command lines (JSON)
	etcdURL      = "http://127.0.0.1:2379"
	// The group kubeadm's join tokens authenticate as.
	bootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"
)

func kubeadm(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: kubeadm init|join|version|reset")
	}
	fs := flag.NewFlagSet("kubeadm "+args[0], flag.ContinueOnError)
	cfgPath := fs.String("config", "/kind/kubeadm.conf", "kubeadm configuration file")
	// Accepted for kind's sake; kubeadm's own meaning does not apply here.
	fs.Bool("skip-token-print", false, "")
	fs.String("skip-phases", "", "")
	fs.String("ignore-preflight-errors", "", "")
	fs.Int("v", 0, "")
	fs.Bool("force", false, "")
	fs.Bool("f", false, "")
	output := fs.String("output", "", "version: short|json|yaml")
	fs.StringVar(output, "o", "", "version: short|json|yaml")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "init":
		c, err := loadKubeadmConfig(*cfgPath, false)
		if err != nil {
			return err
		}
		return kubeadmInit(c)
	case "join":
		c, err := loadKubeadmConfig(*cfgPath, true)
		if err != nil {
			return err
		}
		return kubeadmJoin(c)
	case "version":
		switch *output {
		case "short":
			fmt.Println(kubeVersion)
		case "json", "yaml":
			fmt.Printf(`{"clientVersion":{"gitVersion":%q,"platform":"linux/%s"}}`+"\n", kubeVersion, runtime.GOARCH)
		default:
			fmt.Printf("kubeadm version: &version.Info{GitVersion:%q, Platform:\"linux/%s\"} (lab stand-in)\n", kubeVersion, runtime.GOARCH)
		}
		return nil
	case "reset":
		stopControlPlane()
		for _, p := range []string{"/etc/kubernetes", "/var/lib/etcd"} {
			_ = os.RemoveAll(p)
		}
		return nil
	}
	return fmt.Errorf("kubeadm %s: not supported by the lab's node image", args[0])
}

// nodeName is the kubelet's: the configured name, else the hostname
// (kind's nodes are named after their containers).
func (c *kubeadmConfig) nodeName() string {
	if c.NodeName != "" {
		return strings.ToLower(c.NodeName)
	}
	h, _ := os.Hostname()
	return strings.ToLower(h)
}

func kubeadmInit(c *kubeadmConfig) error {
	name := c.nodeName()
	adv := c.AdvertiseAddress
	if adv == "" {
		adv = firstNodeIP()
	}
	endpoint := c.ControlPlaneEndpoint
	if endpoint == "" {
		endpoint = net.JoinHostPort(adv, strconv.Itoa(c.BindPort))
	}
	clusterName := c.ClusterName
	if clusterName == "" {
		clusterName = "kubernetes"
	}
	fmt.Printf("[init] Using Kubernetes version: %s (the marina lab's stand-in kubeadm)\n", kubeVersion)

	// [certs]
	for _, d := range []string{pkiDir, filepath.Join(pkiDir, "etcd"), manifestsDir, "/var/lib/etcd", "/var/log"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	kca, err := testpki.LoadOrMakeCA(pkiDir, "ca", "kubernetes")
	if err != nil {
		return err
	}
	fpca, err := testpki.LoadOrMakeCA(pkiDir, "front-proxy-ca", "front-proxy-ca")
	if err != nil {
		return err
	}
	// etcd listens on loopback without TLS here; its CA exists because kind
	// copies it to secondary control planes.
	if _, err := testpki.LoadOrMakeCA(pkiDir, "etcd/ca", "etcd-ca"); err != nil {
		return err
	}
	if err := testpki.ServiceAccountKey(pkiDir); err != nil {
		return err
	}
	dns, ips := apiServerSANs(c, name, adv, endpoint)
	if _, _, err := kca.Issue("apiserver", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, dns, ips); err != nil {
		return err
	}
	fmt.Printf("[certs] apiserver serving cert is signed for DNS names %v and IPs %v\n", dns, ips)
	if _, _, err := fpca.Issue("front-proxy-client", pkix.Name{CommonName: "front-proxy-client"}, x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return err
	}
	if _, _, err := kca.Issue("apiserver-kubelet-client", pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"kubeadm:cluster-admins"}}, x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return err
	}

	// [kubeconfig] admin.conf as kubeadm writes it (the kubeadm:cluster-admins
	// group, bound to cluster-admin below) and super-admin.conf (system:masters).
	server := "https://" + endpoint
	writeConf := func(file, user string, orgs []string) (*rest.Config, error) {
		crt, key, err := kca.Issue("", pkix.Name{CommonName: user, Organization: orgs}, x509.ExtKeyUsageClientAuth, nil, nil)
		if err != nil {
			return nil, err
		}
		kc := clientcmdapi.NewConfig()
		ctxName := user + "@" + clusterName
		kc.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: kca.PEM()}
		kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
		kc.Contexts[ctxName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
		kc.CurrentContext = ctxName
		if err := clientcmd.WriteToFile(*kc, filepath.Join("/etc/kubernetes", file)); err != nil {
			return nil, err
		}
		return &rest.Config{
			// Reach this node's own API server, whatever the endpoint's name.
			Host:            "https://127.0.0.1:" + strconv.Itoa(c.BindPort),
			TLSClientConfig: rest.TLSClientConfig{CAData: kca.PEM(), CertData: crt, KeyData: key, ServerName: "localhost"},
		}, nil
	}
	if _, err := writeConf("admin.conf", "kubernetes-admin", []string{"kubeadm:cluster-admins"}); err != nil {
		return err
	}
	super, err := writeConf("super-admin.conf", "kubernetes-super-admin", []string{"system:masters"})
	if err != nil {
		return err
	}
	fmt.Println("[kubeconfig] Wrote /etc/kubernetes/admin.conf and /etc/kubernetes/super-admin.conf")

	// [control-plane] the servers, detached from this exec session.
	etcdArgs := []string{
		"--name=" + name, "--data-dir=/var/lib/etcd",
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=" + name + "=http://127.0.0.1:2380",
		"--unsafe-no-fsync", "--log-level=warn",
	}
	apiArgs := map[string]string{
		"advertise-address":                  adv,
		"allow-privileged":                   "true",
		"authorization-mode":                 "Node,RBAC",
		"bind-address":                       "0.0.0.0",
		"client-ca-file":                     pkiDir + "/ca.crt",
		"enable-admission-plugins":           "NodeRestriction",
		"enable-bootstrap-token-auth":        "true",
		"etcd-servers":                       etcdURL,
		"kubelet-client-certificate":         pkiDir + "/apiserver-kubelet-client.crt",
		"kubelet-client-key":                 pkiDir + "/apiserver-kubelet-client.key",
		"kubelet-preferred-address-types":    "InternalIP,ExternalIP,Hostname",
		"proxy-client-cert-file":             pkiDir + "/front-proxy-client.crt",
		"proxy-client-key-file":              pkiDir + "/front-proxy-client.key",
		"requestheader-allowed-names":        "front-proxy-client",
		"requestheader-client-ca-file":       pkiDir + "/front-proxy-ca.crt",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-username-headers":     "X-Remote-User",
		"secure-port":                        strconv.Itoa(c.BindPort),
		"service-account-issuer":             "https://kubernetes.default.svc." + c.DNSDomain,
		"service-account-key-file":           pkiDir + "/sa.pub",
		"service-account-signing-key-file":   pkiDir + "/sa.key",
		"service-cluster-ip-range":           c.ServiceSubnet,
		"tls-cert-file":                      pkiDir + "/apiserver.crt",
		"tls-private-key-file":               pkiDir + "/apiserver.key",
	}
	for k, v := range c.APIServerExtraArgs {
		apiArgs[k] = v
	}
	if err := writeManifest("etcd", etcdArgs); err != nil {
		return err
	}
	if err := writeManifest("kube-apiserver", flags(apiArgs)); err != nil {
		return err
	}
	if err := startControlPlane(); err != nil {
		return err
	}
	fmt.Println("[control-plane] Started etcd and kube-apiserver (logs: /var/log/etcd.log, /var/log/kube-apiserver.log)")
	if err := waitReadyz(super, 3*time.Minute); err != nil {
		return err
	}
	fmt.Println("[api-check] The API server is healthy")

	// What kubeadm's later phases and the kubelet would have created.
	cs, err := kubernetes.NewForConfig(super)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := initObjects(ctx, cs, c, name); err != nil {
		return err
	}
	fmt.Println("\nYour Kubernetes control-plane has initialized successfully!")
	return nil
}

// apiServerSANs are the serving certificate's names: kubeadm's (the
// kubernetes service names, its first IP, the node's name and advertise
// address, the certSANs of the config) plus every address of the node,
// loopback and the control-plane endpoint's host.
func apiServerSANs(c *kubeadmConfig, name, adv, endpoint string) ([]string, []net.IP) {
	dnsSet, ipSet := map[string]bool{}, map[string]bool{}
	var dns []string
	var ips []net.IP
	add := func(s string) {
		if s == "" {
			return
		}
		if ip := net.ParseIP(s); ip != nil {
			if !ipSet[ip.String()] {
				ipSet[ip.String()] = true
				ips = append(ips, ip)
			}
			return
		}
		if !dnsSet[s] {
			dnsSet[s] = true
			dns = append(dns, s)
		}
	}
	host, _ := os.Hostname()
	for _, s := range []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + c.DNSDomain, "localhost", name, host, adv, "127.0.0.1", "::1"} {
		add(s)
	}
	if h, _, err := net.SplitHostPort(endpoint); err == nil {
		add(h)
	}
	if _, n, err := net.ParseCIDR(strings.Split(c.ServiceSubnet, ",")[0]); err == nil {
		first := append(net.IP(nil), n.IP...)
		first[len(first)-1]++
		add(first.String())
	}
	for _, s := range c.CertSANs {
		add(s)
	}
	for _, ip := range nodeIPs() {
		add(ip)
	}
	return dns, ips
}

func nodeIPs() []string {
	var out []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			out = append(out, n.IP.String())
		}
	}
	return out
}

func firstNodeIP() string {
	for _, ip := range nodeIPs() {
		if net.ParseIP(ip).To4() != nil {
			return ip
		}
	}
	return "127.0.0.1"
}

func writeManifest(name string, argv []string) error {
	b, err := json.MarshalIndent(argv, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(manifestsDir, name+".json"), b, 0o600)
}

// startControlPlane starts etcd and kube-apiserver from their manifests
// unless they run already; each in its own session with its log under
// /var/log, so that it outlives kubeadm's exec session (PID 1 reaps it).
func startControlPlane() error {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		b, err := os.ReadFile(filepath.Join(manifestsDir, name+".json"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		var argv []string
		if err := json.Unmarshal(b, &argv); err != nil {
			return fmt.Errorf("%s manifest: %w", name, err)
		}
		if pidAlive(name) {
			continue
		}
		if err := os.MkdirAll("/var/log", 0o755); err != nil {
			return err
		}
		logf, err := os.OpenFile(filepath.Join("/var/log", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		cmd := exec.Command("/usr/local/bin/"+name, argv...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
		logf.Close()
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		if err := os.WriteFile(pidFile(name), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return err
		}
		_ = cmd.Process.Release()
	}
	return nil
}

func pidFile(name string) string { return filepath.Join("/run", name+".pid") }

func pidAlive(name string) bool {
	b, err := os.ReadFile(pidFile(name))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	// A zombie is not alive: look at the state in /proc.
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(st), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}

func stopControlPlane() {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		b, err := os.ReadFile(pidFile(name))
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			for i := 0; i < 100 && pidAlive(name); i++ {
				time.Sleep(100 * time.Millisecond)
			}
		}
		_ = os.Remove(pidFile(name))
	}
}

func waitReadyz(cfg *rest.Config, within time.Duration) error {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	deadline := time.Now().Add(within)
	last := "no answer"
	for time.Now().Before(deadline) {
		if !pidAlive("kube-apiserver") {
			return fmt.Errorf("kube-apiserver exited; the end of /var/log/kube-apiserver.log:\n%s", logTail("/var/log/kube-apiserver.log", 20))
		}
		resp, err := hc.Get(cfg.Host + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d: %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after %s: %s\nthe end of /var/log/kube-apiserver.log:\n%s", within, last, logTail("/var/log/kube-apiserver.log", 20))
}

func kernelVersion() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kubeadmJoin registers the joining node's Node object (labels, taints,
// addresses, Ready), authenticating with the join token as a kubelet's TLS
// bootstrap would; no kubelet or second API server runs.
func kubeadmJoin(c *kubeadmConfig) error {
	if c.JoinEndpoint == "" || c.JoinToken == "" {
		return errors.New("the JoinConfiguration has no discovery.bootstrapToken apiServerEndpoint and token")
	}
	name := c.nodeName()
	cfg := &rest.Config{
		Host:        "https://" + c.JoinEndpoint,
		BearerToken: c.JoinToken,
		// discovery.bootstrapToken.unsafeSkipCAVerification, as kind sets it.
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	fmt.Printf("[preflight] Joining %s to the cluster at %s (the marina lab's stand-in kubeadm)\n", name, c.JoinEndpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var lastErr error
	for ctx.Err() == nil {
		if lastErr = registerNode(ctx, cs, c, name, c.JoinControlPlane); lastErr == nil {
			fmt.Println("\nThis node has joined the cluster.")
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("registering node %s: %w", name, lastErr)
}

// registerNode creates (or updates) the Node the kubelet would register:
// the kubelet's labels plus --node-labels, kubeadm's control-plane label
// and taint when it is one, the node-ip address, and Ready.
func registerNode(ctx context.Context, cs kubernetes.Interface, c *kubeadmConfig, name string, controlPlane bool) error {
	labels := map[string]string{
		"kubernetes.io/hostname":  name,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/arch":      runtime.GOARCH,
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for k, v := range c.nodeLabels() {
		labels[k] = v
	}
	var taints []corev1.Taint
	if controlPlane {
		labels["node-role.kubernetes.io/control-plane"] = ""
		labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
		if !c.TaintsSet {
			taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
		}
	}
	for _, t := range c.Taints {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	nodeIP := c.KubeletExtraArgs["node-ip"]
	if nodeIP == "" {
		nodeIP = firstNodeIP()
	}
	var addrs []corev1.NodeAddress
	for _, ip := range strings.Split(nodeIP, ",") {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
	now := metav1.Now()
	res := corev1.ResourceList{}
	for k, v := range map[corev1.ResourceName]string{"cpu": strconv.Itoa(runtime.NumCPU()), "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"} {
		res[k] = mustQuantity(v)
	}
	status := corev1.NodeStatus{
		Capacity:    res,
		Allocatable: res,
		Addresses:   addrs,
		// One condition: kind's wait reads the last one.
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message:           "the marina lab's node image: no kubelet runs, kubeadm registered the node",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: kubeVersion, ContainerRuntimeVersion: "containerd://lab",
			OperatingSystem: "linux", Architecture: runtime.GOARCH, OSImage: "marina lab node",
			KernelVersion: kernelVersion(),
		},
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: c.KubeletExtraArgs["provider-id"], Taints: taints},
		Status:     status,
	}
	nodes := cs.CoreV1().Nodes()
	got, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = nodes.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	// Admission (TaintNodesByCondition) taints a new Node not-ready; the
	// node lifecycle controller would lift that once the node is Ready, but
	// no controller manager runs here: the node gets exactly its taints.
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	for k, v := range labels {
		got.Labels[k] = v
	}
	got.Spec.Taints = taints
	if got, err = nodes.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		return err
	}
	got.Status = status
	_, err = nodes.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	return err
}
