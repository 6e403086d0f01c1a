package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The benchmarks time whole marina runs against a running lab VM, as a user
// would see them, and report the guest round trips each one makes (on a
// real Mac every round trip costs tens of milliseconds more than here). The
// VM runs three registry mirrors whose upstream answers, as it would on a
// Mac that is online, and the local DNS; BenchmarkFloor is what status and
// up cannot go under, measured in the same run.
//
//	go test ./lab/e2e -run '^$' -bench 'Floor|Status|UpNoop' -benchtime 20x

var benchReady bool

func benchVM(b *testing.B) {
	needLab(b)
	if benchReady {
		return
	}
	writeConfig(b, "registries:\n  mirrors: []\n")
	mustMarina(b, "up")
	startUpstream(b, "bench-password")
	mirrors := ""
	for i, name := range []string{"registry-lab", "registry-lab2", "registry-lab3"} {
		mirrors += fmt.Sprintf("    - name: %s\n      port: %d\n      remoteURL: https://%s\n      username: %s\n      password: bench-password\n", name, 5060+i, upstreamHost, labUser)
	}
	writeConfig(b, fmt.Sprintf("registries:\n  image: %s\n  mirrors:\n%s", registryImage(), mirrors))
	mustMarina(b, "up")
	benchReady = true
}

func benchMarina(b *testing.B, args ...string) {
	benchVM(b)
	b.ResetTimer()
	var last result
	for i := 0; i < b.N; i++ {
		if args[0] == "status" {
			last = shownStatus(b, append(args, "--debug")...)
		} else {
			last = mustMarina(b, append(args, "--debug")...)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(tripCount(b, last.stderr)), "trips/op")
}

func BenchmarkStatus(b *testing.B) { benchMarina(b, "status") }

// BenchmarkFloor is what status and a no-op up cannot go under: a trivial
// Go program's start, and one round trip into the guest over the ssh
// connection marina keeps open (Lima's ControlMaster), as status makes.
func BenchmarkFloor(b *testing.B) {
	benchVM(b)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	hello := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-o", hello, "hello.go")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build hello.go: %v\n%s", err, out)
	}
	mustMarina(b, "status") // the ControlMaster runs
	ssh := []string{"-F", filepath.Join(instDir(), "ssh.config"), "lima-marina", "true"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := exec.Command(hello).CombinedOutput(); err != nil {
			b.Fatalf("hello: %v\n%s", err, out)
		}
		if out, err := exec.Command("ssh", ssh...).CombinedOutput(); err != nil {
			b.Fatalf("ssh lima-marina true: %v\n%s", err, out)
		}
	}
}

func BenchmarkUpNoop(b *testing.B) { benchMarina(b, "up") }

// BenchmarkCreate times, on the real node image in one VM, a one-node
// marina cluster create (kind, then every add-on ready: MetalLB serving
// its pool, ExternalDNS available, CoreDNS serving the forwards) and kind
// create cluster alone on the same image, one after the other, and
// reports the medians and their ratio. The first op fills the mirrors'
// caches; each cluster is deleted before the next create.
//
//	go test ./lab/e2e -run '^$' -bench Create -benchtime 3x
func BenchmarkCreate(b *testing.B) {
	image := createLab(b)
	b.Cleanup(func() {
		_, _ = labCmd(b, "vm", "kind", "delete", "cluster", "--name", "kindonly", "--kubeconfig", "/tmp/kindonly.kubeconfig")
		_ = marina(b, "cluster", "delete", "bench")
	})
	var withMarina, kindAlone []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		took, _ := timedCreate(b, "bench", "--no-switch-context") // logs its phases
		withMarina = append(withMarina, took)
		b.StopTimer()
		mustMarina(b, "cluster", "delete", "bench")
		b.StartTimer()
		start := time.Now()
		if out, err := labCmd(b, "vm", "kind", "create", "cluster", "--name", "kindonly", "--image", image, "--kubeconfig", "/tmp/kindonly.kubeconfig"); err != nil {
			b.Fatalf("kind create cluster: %v\n%s", err, out)
		}
		kindAlone = append(kindAlone, time.Since(start))
		b.StopTimer()
		if out, err := labCmd(b, "vm", "kind", "delete", "cluster", "--name", "kindonly", "--kubeconfig", "/tmp/kindonly.kubeconfig"); err != nil {
			b.Fatalf("kind delete cluster: %v\n%s", err, out)
		}
		fmt.Fprintf(os.Stderr, "op %d of %d: marina cluster create %v, kind create cluster %v\n", i+1, b.N, withMarina[i].Round(100*time.Millisecond), kindAlone[i].Round(100*time.Millisecond))
		b.StartTimer()
	}
	b.StopTimer()
	m, k := median(withMarina), median(kindAlone)
	b.ReportMetric(m.Seconds(), "marina-s")
	b.ReportMetric(k.Seconds(), "kind-s")
	b.ReportMetric(m.Seconds()/k.Seconds(), "ratio")
	b.Logf("medians of %d: marina %v (%v to %v), kind %v (%v to %v), ratio %.2f", b.N,
		m.Round(100*time.Millisecond), slices.Min(withMarina).Round(100*time.Millisecond), slices.Max(withMarina).Round(100*time.Millisecond),
		k.Round(100*time.Millisecond), slices.Min(kindAlone).Round(100*time.Millisecond), slices.Max(kindAlone).Round(100*time.Millisecond), m.Seconds()/k.Seconds())
}

// createImage is the real node image BenchmarkCreate's VM was set up for
// (the benchmark runs more than once: once for N=1, then for N).
var createImage string

// createLab sets the VM up for real clusters, as TestRealCluster does,
// once, and returns the real node image's reference.
func createLab(b *testing.B) string {
	needLab(b)
	if createImage != "" {
		return createImage
	}
	writeConfig(b, "registries:\n  image: "+registryImage()+"\n  mirrors: []\n")
	mustMarina(b, "up")
	startRegistries(b)
	image := realNodeImage(b)
	writeConfig(b, realConfig(image, "172.30.255.99"))
	mustMarina(b, "up")
	seedMetalLB(b)
	benchReady = false // the status and up benchmarks set their own VM up
	createImage = image
	return image
}

// median is the middle of ds (the mean of the two middle ones).
func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// dnsCluster is the cluster BenchmarkDNS made in this process: the lab,
// and it, go when the run ends.
var dnsCluster bool

// dnsSamples is how many Services one op of BenchmarkDNS times.
const dnsSamples = 10

// BenchmarkDNS times the local DNS as the Mac sees it, in a real cluster,
// dnsSamples times an op: from MetalLB giving a new LoadBalancer Service
// its address to the Service's name first answering from the Mac, and
// from the Service's deletion to the name's NXDOMAIN. Reports the medians
// and logs every sample.
//
//	go test ./lab/e2e -run '^$' -bench DNS -benchtime 1x
func BenchmarkDNS(b *testing.B) {
	createLab(b)
	if !dnsCluster {
		mustMarina(b, "cluster", "create", "dnsbench", "--no-switch-context")
		dnsCluster = true
	}
	cs := contextClient(b, "dnsbench")
	ctx := context.Background()
	var add, del []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N*dnsSamples; i++ {
		name := fmt.Sprintf("s%d-%d", b.N, i)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var ip string
		waitFor(b, time.Minute, "MetalLB to give "+name+" an address", func() bool {
			got, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
			if err == nil && len(got.Status.LoadBalancer.Ingress) == 1 {
				ip = got.Status.LoadBalancer.Ingress[0].IP
			}
			return ip != ""
		})
		fqdn := name + ".default.dnsbench.demo.internal"
		add = append(add, waitAnswer(b, fqdn, ip, time.Minute))
		if err := cs.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		del = append(del, waitAnswer(b, fqdn, "", time.Minute))
	}
	b.StopTimer()
	b.ReportMetric(median(add).Seconds(), "add-s")
	b.ReportMetric(median(del).Seconds(), "delete-s")
	b.Logf("%d samples: address to answer %v, median %v; deletion to NXDOMAIN %v, median %v",
		len(add), rounded(add), median(add).Round(10*time.Millisecond), rounded(del), median(del).Round(10*time.Millisecond))
}

// rounded is ds sorted, to 10 ms, for a log line.
func rounded(ds []time.Duration) []time.Duration {
	out := slices.Sorted(slices.Values(ds))
	for i := range out {
		out[i] = out[i].Round(10 * time.Millisecond)
	}
	return out
}

// BenchmarkFleet times a fleet of three independent one-node clusters
// applied with maxParallel 3 (its makespan) against one create of the
// same cluster alone, and reports both ratios: against one create, and
// against three in a row. On two cores the three compete for the CPU.
//
//	go test ./lab/e2e -run '^$' -bench Fleet -benchtime 1x
func BenchmarkFleet(b *testing.B) {
	createLab(b)
	if dnsCluster { // BenchmarkDNS's, in the same run: not to share the CPU with it
		mustMarina(b, "cluster", "delete", "dnsbench")
		dnsCluster = false
	}
	file := filepath.Join(home(), "fleet-bench.yaml")
	fleet := "apiVersion: marina.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: bench\nspec:\n  maxParallel: 3\n  clusters:\n    - name: fa\n    - name: fb\n    - name: fc\n"
	if err := os.WriteFile(file, []byte(fleet), 0o644); err != nil {
		b.Fatal(err)
	}
	var one, all []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		mustMarina(b, "cluster", "create", "solo", "--no-switch-context")
		one = append(one, time.Since(start))
		b.StopTimer()
		mustMarina(b, "cluster", "delete", "solo")
		b.StartTimer()
		start = time.Now()
		mustMarina(b, "fleet", "apply", "-f", file)
		all = append(all, time.Since(start))
		b.StopTimer()
		mustMarina(b, "cluster", "delete", "fa", "fb", "fc")
		b.StartTimer()
	}
	b.StopTimer()
	o, a := median(one), median(all)
	b.ReportMetric(a.Seconds(), "fleet-s")
	b.ReportMetric(o.Seconds(), "one-s")
	b.ReportMetric(a.Seconds()/o.Seconds(), "x-one")
	b.ReportMetric(a.Seconds()/(3*o.Seconds()), "x-sum")
	b.Logf("fleet of 3 at maxParallel 3: %v; one create %v; %.2f× one, %.2f× three in a row", a.Round(100*time.Millisecond), o.Round(100*time.Millisecond),
		a.Seconds()/o.Seconds(), a.Seconds()/(3*o.Seconds()))
}
