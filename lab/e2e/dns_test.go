package e2e

// marina's local DNS in the lab: marina up runs the real etcd and CoreDNS
// (built here from their modules) in the guest's Docker; cluster create
// applies ExternalDNS to a real kube-apiserver; the test runs the real
// ExternalDNS v0.23.0 binary as a container on the kind network with
// exactly the arguments and environment of the Deployment marina applied,
// read back from the API server, and the ServiceAccount's own token, as a
// pod would run (nothing runs pods in the lab). Every answer is asked for
// from the Mac's namespace, over the route.

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bcollard/marina/internal/dns"
)

var dnsServer = netip.MustParseAddr("172.30.255.53")

// lookup asks marina-dns (or server) from the Mac.
func lookup(t *testing.T, server netip.Addr, name string, tcp bool) dns.Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	a, err := dns.Query(ctx, server, name, tcp)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return a
}

// waitAnswer polls marina-dns until name answers want ("" for NXDOMAIN),
// and returns how long that took.
func waitAnswer(t testing.TB, name, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last dns.Answer
	for time.Since(start) < within {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		a, err := dns.Query(ctx, dnsServer, name, false)
		cancel()
		if err == nil {
			last = a
			if want == "" && a.Rcode == "NXDOMAIN" || want != "" && len(a.Addrs) == 1 && a.Addrs[0].String() == want {
				return time.Since(start)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not answer %q within %s (last: %+v)", name, want, within, last)
	return 0
}

// clusterAdmin is an admin client of cluster name, from its control plane.
func clusterAdmin(t *testing.T, name string) *kubernetes.Clientset {
	t.Helper()
	out := labDocker(t, "port", name+"-control-plane", "6443/tcp")
	first, _, _ := strings.Cut(out, "\n")
	var port int
	if _, err := fmt.Sscanf(first[strings.LastIndex(first, ":")+1:], "%d", &port); err != nil {
		t.Fatalf("API port of %s: %q", name, out)
	}
	cfg, err := adminConfig(name, port)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// inCluster writes, for a container on the kind network, what a pod of
// service account ns/sa finds in /var/run/secrets/kubernetes.io/serviceaccount,
// and returns the folder as the guest sees it and the env that names the
// API server.
func inCluster(t *testing.T, cs *kubernetes.Clientset, cluster, ns, sa string) (string, []string) {
	t.Helper()
	ctx := context.Background()
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, sa, err)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	ca := ""
	if err == nil {
		ca = cm.Data["ca.crt"]
	} else {
		ca = labDocker(t, "exec", cluster+"-control-plane", "cat", "/etc/kubernetes/pki/ca.crt") + "\n"
	}
	guestDir := "/tmp/sa-" + cluster + "-" + sa
	dir := filepath.Join(labRoot(), "vm", "tmp", strings.TrimPrefix(guestDir, "/tmp/"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"token": tok.Status.Token, "ca.crt": ca, "namespace": ns} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ip := containerIP(t, cluster+"-control-plane", "kind")
	return guestDir, []string{"KUBERNETES_SERVICE_HOST=" + ip, "KUBERNETES_SERVICE_PORT=6443"}
}

func ptr[T any](v T) *T { return &v }

// runExternalDNS runs the real ExternalDNS for cluster as its Deployment
// says, on the kind network, as the Deployment's user.
func runExternalDNS(t *testing.T, cluster, etcdImage string) {
	t.Helper()
	cs := clusterAdmin(t, cluster)
	d, err := cs.AppsV1().Deployments(dns.ExternalDNSNamespace).Get(context.Background(), dns.ExternalDNSName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ExternalDNS Deployment marina applied to %s: %v", cluster, err)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("ExternalDNS has %d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	dir, env := inCluster(t, cs, cluster, dns.ExternalDNSNamespace, pod.ServiceAccountName)
	for _, e := range c.Env {
		v := e.Value
		// A variable from a Secret is read from it, as the kubelet does.
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			sec, err := cs.CoreV1().Secrets(dns.ExternalDNSNamespace).Get(context.Background(), ref.SecretKeyRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("ExternalDNS of %s reads %s from Secret %s: %v", cluster, e.Name, ref.SecretKeyRef.Name, err)
			}
			v = string(sec.Data[ref.SecretKeyRef.Key])
		}
		env = append(env, e.Name+"="+v)
	}
	// The environment travels in a file next to the token, not in docker's
	// arguments: it holds the etcd password.
	envFile := filepath.Join(labRoot(), "vm", "tmp", strings.TrimPrefix(dir, "/tmp/"), "env")
	if err := os.WriteFile(envFile, []byte(strings.Join(env, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := "edns-" + cluster
	args := []string{"run", "-d", "--name", name, "--network", "kind", "--read-only",
		"--user", fmt.Sprintf("%d:%d", *pod.SecurityContext.RunAsUser, *pod.SecurityContext.RunAsGroup),
		"-v", labCacheBin("external-dns") + ":/external-dns:ro",
		"-v", dir + ":/var/run/secrets/kubernetes.io/serviceaccount:ro",
		"--env-file", envFile, // read by docker's client, on this side
		"--entrypoint", "/external-dns"}
	// etcd's image is only a root file system here: the binary is ExternalDNS's.
	args = append(append(args, etcdImage), c.Args...)
	_, _ = labCmd(t, "docker", "rm", "-f", name)
	labDocker(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := labCmd(t, "docker", "logs", "--tail", "40", name)
			t.Logf("ExternalDNS of %s:\n%s", cluster, out)
		}
		_, _ = labCmd(t, "docker", "rm", "-f", name)
	})
}

// lbService makes a LoadBalancer Service ns/name and gives it ip, as
// MetalLB would; it returns when the address is set.
func lbService(t *testing.T, cs *kubernetes.Clientset, ns, name, ip string) {
	t.Helper()
	ctx := context.Background()
	_, _ = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	if _, err := cs.CoreV1().Services(ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// etcdKeys are the keys under prefix in marina-dns-etcd, read as
// marina's root user by a workload on the kind network.
func etcdKeys(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := etcdPoke(t, "", etcdCreds(t, "root"), "range", prefix)
	if err != nil {
		t.Fatalf("etcd: %v\n%s", err, out)
	}
	var res struct{ Kvs []struct{ Key string } }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(out, "HTTP 200 ")), &res); err != nil {
		t.Fatalf("etcd: %v\n%s", err, out)
	}
	var keys []string
	for _, kv := range res.Kvs {
		keys = append(keys, unb64(t, kv.Key))
	}
	return keys
}

// etcdCreds are the etcd user who's ("root", or a cluster's ExternalDNS
// as "externaldns-<cluster>"), derived from the Mac's label key as marina
// derives them.
func etcdCreds(t *testing.T, who string) dns.Creds {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(marinaHome(), "label.key"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	pw, err := dns.NewPasswords(key)
	if err != nil {
		t.Fatal(err)
	}
	if who == "root" {
		return pw.Root()
	}
	c, err := pw.Cluster(strings.TrimPrefix(who, "externaldns-"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// etcdPoke runs lab/etcdpoke as a workload in the network namespace of
// node ("" for one of its own on the kind network), as c (anonymous when
// c.User is ""), and returns what it printed ("HTTP <status> <answer>").
func etcdPoke(t *testing.T, node string, c dns.Creds, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(labRoot(), "vm", "tmp", "etcdpoke")
	if _, err := os.Stat(bin); err != nil {
		build := exec.Command("go", "build", "-o", bin, "./lab/etcdpoke")
		build.Dir = filepath.Dir(filepath.Dir(labScript)) // the repository
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build lab/etcdpoke: %v\n%s", err, out)
		}
	}
	// Credentials travel in a file, as a pod's would in a mounted Secret.
	env := filepath.Join(labRoot(), "vm", "tmp", "etcdpoke.env")
	if err := os.WriteFile(env, []byte("ETCD_USERNAME="+c.User+"\nETCD_PASSWORD="+c.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	network := "kind"
	if node != "" {
		network = "container:" + node
	}
	run := []string{"docker", "run", "--rm", "--network", network, "--env-file", env,
		"-v", "/tmp/etcdpoke:/etcdpoke:ro", "--entrypoint", "/etcdpoke", dnsImageRefs(t)["etcd"], "http://172.30.255.52:2379"}
	out, err := labCmd(t, append(run, args...)...)
	return strings.TrimSpace(out), err
}

func TestDNS(t *testing.T) {
	needLab(t)
	t.Cleanup(func() { destroyAll(t) })
	refs := dnsImageRefs(t)
	writeConfig(t, "registries:\n  mirrors: []\n")
	mustMarina(t, "up")
	// The node image is in the guest's Docker once the VM runs.
	writeConfig(t, fmt.Sprintf("kind:\n  nodeImages:\n    v1.36.4: %s\nregistries:\n  mirrors: []\n", nodeImage(t)))
	seedMetalLB(t)
	ctl := startControllers(t)

	t.Run("up runs both servers at their fixed addresses and writes the resolver file", func(t *testing.T) {
		for name, ip := range map[string]string{dns.EtcdName: "172.30.255.52", dns.ServerName: "172.30.255.53"} {
			if got := containerIP(t, name, "kind"); got != ip {
				t.Errorf("%s at %s, want %s", name, got, ip)
			}
			if st := labDocker(t, "inspect", "-f", "{{.State.Status}} {{.HostConfig.RestartPolicy.Name}}", name); st != "running always" {
				t.Errorf("%s: %s", name, st)
			}
		}
		if img := labDocker(t, "inspect", "-f", "{{.Config.Image}}", dns.ServerName); img != refs["coredns"] {
			t.Errorf("marina-dns runs %s, want %s", img, refs["coredns"])
		}
		wantResolver(t, true)
		// A warm up changes nothing: one guest round trip, no sudo.
		r := mustMarina(t, "up", "--debug")
		if n := trips(t, r.stderr); n != 1 {
			t.Errorf("a warm up made %d guest round trips, want 1", n)
		}
		if strings.Contains(r.stderr, "Running the local DNS") || strings.Contains(r.stderr, "Sending names") {
			t.Errorf("a warm up changed the local DNS:\n%s", r.stderr)
		}
	})

	t.Run("not an open resolver: other names are REFUSED and etcd is out of the Mac's reach", func(t *testing.T) {
		for _, tcp := range []bool{false, true} {
			if a := lookup(t, dnsServer, "example.com", tcp); a.Rcode != "REFUSED" {
				t.Errorf("example.com (tcp %v): %s", tcp, a.Rcode)
			}
			if a := lookup(t, dnsServer, dns.ProbeName("demo.internal"), tcp); a.Rcode != "NXDOMAIN" {
				t.Errorf("a name in the zone (tcp %v): %s", tcp, a.Rcode)
			}
		}
		if c, err := net.DialTimeout("tcp", "172.30.255.52:2379", 2*time.Second); err == nil {
			c.Close()
			t.Error("the Mac reaches etcd at 172.30.255.52:2379")
		}
		// Control: the server next to it answers TCP from the Mac.
		c, err := net.DialTimeout("tcp", "172.30.255.53:53", 2*time.Second)
		if err != nil {
			t.Fatalf("the Mac cannot reach marina-dns over TCP either (the test proves nothing): %v", err)
		}
		c.Close()
	})

	for _, n := range []string{"a", "b"} {
		ctl.add(n, 0)
		mustMarina(t, "cluster", "create", n)
	}
	runExternalDNS(t, "a", refs["etcd"])
	runExternalDNS(t, "b", refs["etcd"])
	csA, csB := clusterAdmin(t, "a"), clusterAdmin(t, "b")

	t.Run("a LoadBalancer address answers from the Mac within 5 s, distinct per cluster", func(t *testing.T) {
		lbService(t, csA, "shop", "web", "172.30.1.1")
		lbService(t, csB, "shop", "web", "172.30.2.1")
		// The first sync waits for ExternalDNS's start.
		waitAnswer(t, "web.shop.a.demo.internal", "172.30.1.1", 60*time.Second)
		waitAnswer(t, "web.shop.b.demo.internal", "172.30.2.1", 60*time.Second)
		for _, tcp := range []bool{false, true} {
			if a := lookup(t, dnsServer, "web.shop.b.demo.internal", tcp); len(a.Addrs) != 1 || a.Addrs[0].String() != "172.30.2.1" {
				t.Errorf("b's web (tcp %v): %+v", tcp, a)
			}
		}
		var took []time.Duration
		for i := range 5 {
			name := fmt.Sprintf("svc%d", i)
			ip := fmt.Sprintf("172.30.1.%d", 2+i)
			start := time.Now()
			lbService(t, csA, "shop", name, ip)
			waitAnswer(t, name+".shop.a.demo.internal", ip, 5*time.Second)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		t.Logf("MEASURE dns-first-answer median %s (of %v)", took[2].Round(time.Millisecond), took)
	})

	t.Run("dns list reads the records with their owners", func(t *testing.T) {
		r := mustMarina(t, "dns", "list", "-l", "cluster=b", "-o", "json")
		var recs []dns.Record
		if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		want := []dns.Record{{Name: "web.shop.b.demo.internal", Address: "172.30.2.1", Cluster: "b", Owner: "b"}}
		if fmt.Sprint(recs) != fmt.Sprint(want) {
			t.Errorf("dns list -l cluster=b: %+v", recs)
		}
		if r := mustMarina(t, "dns", "list"); !strings.Contains(r.stdout, "web.shop.a.demo.internal") || !strings.Contains(r.stdout, "svc4.shop.a.demo.internal") {
			t.Errorf("dns list:\n%s", r.stdout)
		}
	})

	t.Run("a cluster's CoreDNS forwards the zone to marina-dns", func(t *testing.T) {
		ctx := context.Background()
		cm, err := csA.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		corefile := cm.Data["Corefile"]
		if !strings.Contains(corefile, "demo.internal:53 {") || !strings.Contains(corefile, "forward . 172.30.255.53") || !strings.HasPrefix(corefile, ".:53 {") {
			t.Fatalf("a's Corefile:\n%s", corefile)
		}
		// CoreDNS as a pod of a would run it: with that Corefile and a
		// token its kubernetes plugin can list with.
		_, _ = csA.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "lab-coredns"}}, metav1.CreateOptions{})
		_, _ = csA.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "lab-coredns"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "lab-coredns", Namespace: "kube-system"}},
		}, metav1.CreateOptions{})
		dir, env := inCluster(t, csA, "a", "kube-system", "lab-coredns")
		conf := filepath.Join(labRoot(), "vm", "tmp", "corefile-a")
		if err := os.WriteFile(conf, []byte(corefile), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"run", "-d", "--name", "coredns-a", "--network", "kind",
			"-v", "/tmp/corefile-a:/etc/coredns/Corefile:ro", "-v", dir + ":/var/run/secrets/kubernetes.io/serviceaccount:ro"}
		for _, e := range env {
			args = append(args, "-e", e)
		}
		_, _ = labCmd(t, "docker", "rm", "-f", "coredns-a")
		labDocker(t, append(args, refs["coredns"], "-conf", "/etc/coredns/Corefile")...)
		t.Cleanup(func() {
			if t.Failed() {
				out, _ := labCmd(t, "docker", "logs", "--tail", "40", "coredns-a")
				t.Logf("a's CoreDNS:\n%s", out)
			}
			_, _ = labCmd(t, "docker", "rm", "-f", "coredns-a")
		})
		podDNS := netip.MustParseAddr(containerIP(t, "coredns-a", "kind"))
		var a dns.Answer
		waitFor(t, 30*time.Second, "a's CoreDNS to answer for web.shop.b.demo.internal", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var err error
			a, err = dns.Query(ctx, podDNS, "web.shop.b.demo.internal", false)
			return err == nil && len(a.Addrs) == 1
		})
		if a.Addrs[0].String() != "172.30.2.1" {
			t.Errorf("a's CoreDNS answers %v", a.Addrs)
		}
	})

	t.Run("a deleted Service's name goes within 5 s", func(t *testing.T) {
		if err := csA.CoreV1().Services("shop").Delete(context.Background(), "svc0", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("MEASURE dns-nxdomain-after-delete %s", waitAnswer(t, "svc0.shop.a.demo.internal", "", 5*time.Second).Round(time.Millisecond))
	})

	t.Run("no cluster's workload can make another cluster's names go", func(t *testing.T) {
		node := "b-control-plane"
		zoneA, zoneB := dns.KeyPrefix("a.demo.internal"), dns.KeyPrefix("b.demo.internal")
		// A workload of b with no password: etcd refuses every write.
		for _, kv := range [][2]string{{zoneB + "junk/00000000", "not json"}, {zoneA + "shop/web/ffffffff", `{"host":"172.30.9.9"}`}} {
			if out, err := etcdPoke(t, node, dns.Creds{}, "put", kv[0], kv[1]); err == nil || !strings.Contains(out, "user name is empty") {
				t.Errorf("an anonymous write of %s: %v, %s", kv[0], err, out)
			}
		}
		// A privileged workload of b that took b's ExternalDNS credentials
		// from its Secret: its own zone only.
		sec, err := csB.CoreV1().Secrets(dns.ExternalDNSNamespace).Get(context.Background(), dns.ExternalDNSSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stolen := dns.Creds{User: string(sec.Data["ETCD_USERNAME"]), Password: string(sec.Data["ETCD_PASSWORD"])}
		if out, err := etcdPoke(t, node, stolen, "put", zoneA+"shop/web/ffffffff", `{"host":"172.30.9.9"}`); err == nil || !strings.Contains(out, "permission denied") {
			t.Errorf("b's user writing into a's zone: %v, %s", err, out)
		}
		if out, err := etcdPoke(t, node, stolen, "put", zoneB+"junk/00000000", "not json"); err != nil {
			t.Fatalf("b's user writing a malformed value into its own zone: %v, %s", err, out)
		}
		t.Cleanup(func() {
			_, _ = etcdPoke(t, "", etcdCreds(t, "root"), "put", zoneB+"junk/00000000", `{"host":"172.30.2.250"}`)
		})
		// a's names answer, and a's ExternalDNS, which reads its own zone
		// alone, goes on publishing while b's value is there.
		if got := lookup(t, dnsServer, "web.shop.a.demo.internal", false); len(got.Addrs) != 1 || got.Addrs[0].String() != "172.30.1.1" {
			t.Errorf("a's web: %+v", got)
		}
		lbService(t, csA, "shop", "fresh", "172.30.1.20")
		waitAnswer(t, "fresh.shop.a.demo.internal", "172.30.1.20", 30*time.Second)
		// marina's own view reports the value and goes on.
		r := mustMarina(t, "dns", "list")
		if !strings.Contains(r.stdout, "fresh.shop.a.demo.internal") || !strings.Contains(r.stderr, zoneB+"junk/00000000") {
			t.Errorf("dns list with a malformed value:\n%s\n%s", r.stdout, r.stderr)
		}
	})

	t.Run("the names still answer after lima0 moves", func(t *testing.T) {
		moveLima0(t)
		mustMarina(t, "up")
		if a := lookup(t, dnsServer, "web.shop.a.demo.internal", false); len(a.Addrs) != 1 || a.Addrs[0].String() != "172.30.1.1" {
			t.Errorf("after the move: %+v", a)
		}
		r := shownStatus(t, "status", "-o", "json")
		var st struct{ DNS map[string]any }
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status -o json: %v\n%s", err, r.stdout)
		}
		if st.DNS == nil || st.DNS["ok"] != true {
			t.Errorf("status's DNS section: %v", st.DNS)
		}
	})

	t.Run("up puts an older cluster on the local DNS once", func(t *testing.T) {
		// Back on the lab's lima0 address first (the move above is undone).
		mustMarina(t, "up")
		// b as a marina without local DNS left it: no record, no
		// ExternalDNS (the lab has no namespace controller to finish a
		// namespace's deletion: the Deployment goes alone).
		inGuest(t, "rm /etc/marina/clusters/b/addons")
		if err := csB.AppsV1().Deployments(dns.ExternalDNSNamespace).Delete(context.Background(), dns.ExternalDNSName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		r := mustMarina(t, "up", "--dry-run")
		if !strings.Contains(r.stdout, "put b on the local DNS") || strings.Contains(r.stdout, "put a,") {
			t.Errorf("up --dry-run:\n%s", r.stdout)
		}
		mustMarina(t, "up")
		if _, err := csB.AppsV1().Deployments(dns.ExternalDNSNamespace).Get(context.Background(), dns.ExternalDNSName, metav1.GetOptions{}); err != nil {
			t.Errorf("up did not install ExternalDNS in b: %v", err)
		}
		if got := strings.TrimSpace(inGuest(t, "cat /etc/marina/clusters/b/addons")); got != "dns=demo.internal dnsauth=1 registry=localhost:5001" {
			t.Errorf("b's record: %q", got)
		}
		r = mustMarina(t, "up", "--debug")
		if n := trips(t, r.stderr); n != 1 || strings.Contains(r.stderr, "ExternalDNS") {
			t.Errorf("the next up made %d guest round trips, and:\n%s", n, r.stderr)
		}
	})

	t.Run("cluster delete removes the cluster's names", func(t *testing.T) {
		if keys := etcdKeys(t, dns.KeyPrefix("a.demo.internal")); len(keys) == 0 {
			t.Fatal("a has no records to remove (the test proves nothing)")
		}
		// a's ExternalDNS runs in its node and dies with it. The lab's runs
		// beside the node and outlives it: syncing from its informers'
		// cache, it wrote a's records back between marina's removal of them
		// and of its etcd user (seen once in CI). It goes first, as kind's
		// delete would take it; its records stay.
		labDocker(t, "rm", "-f", "edns-a")
		mustMarina(t, "cluster", "delete", "a")
		if keys := etcdKeys(t, dns.KeyPrefix("a.demo.internal")); len(keys) != 0 {
			t.Errorf("a's records remain: %v", keys)
		}
		if a := lookup(t, dnsServer, "web.shop.a.demo.internal", false); a.Rcode != "NXDOMAIN" {
			t.Errorf("a's web after delete: %+v", a)
		}
		keys := etcdKeys(t, dns.KeyPrefix("b.demo.internal"))
		sort.Strings(keys)
		if len(keys) == 0 {
			t.Errorf("deleting a removed b's records")
		}
	})
}

// dnsImageRefs are the lab's etcd and CoreDNS images (lab/lab dns-images).
func dnsImageRefs(t *testing.T) map[string]string {
	t.Helper()
	lines := labLines(t, "dns-images")
	m := map[string]string{}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	if m["etcd"] == "" || m["coredns"] == "" {
		t.Fatalf("lab/lab dns-images printed %q", lines)
	}
	return m
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func unb64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// marina dns flush, as the Mac's user with the macOS code: it says each
// command before sudo runs it, and runs Apple's two, in order, as root (the
// lab's stand-ins at their macOS paths record the calls); --dry-run runs
// neither. As root with the Linux code, it says there is nothing to flush.
func TestDNSFlush(t *testing.T) {
	needLab(t)
	log := filepath.Join(labRoot(), "mac", "dns-flush.log")
	if err := os.Remove(log); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	r := mustUserMarina(t, "dns", "flush", "--dry-run")
	if !strings.Contains(r.stdout, "run `sudo /usr/bin/dscacheutil -flushcache`") {
		t.Errorf("dry run:\n%s", r.stdout)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("the dry run ran something: %v", err)
	}
	r = mustUserMarina(t, "dns", "flush")
	for _, said := range []string{"marina runs: sudo /usr/bin/dscacheutil -flushcache", "marina runs: sudo /usr/bin/killall -HUP mDNSResponder"} {
		if !strings.Contains(r.stderr, said) {
			t.Errorf("not said: %s\n%s", said, r.stderr)
		}
	}
	b, err := os.ReadFile(log)
	if want := "dscacheutil -flushcache\nkillall -HUP mDNSResponder\n"; err != nil || string(b) != want {
		t.Errorf("ran as root: %q (%v), want %q", b, err, want)
	}
	r = marina(t, "dns", "flush")
	if r.code == 0 || !strings.Contains(r.stderr, "this host is not a Mac") {
		t.Errorf("on Linux: exit %d\n%s", r.code, r.stderr)
	}
}
