package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/doctor"
	"github.com/bcollard/marina/internal/fleet"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/status"
)

// fake is a Source whose snapshot the test sets, counting its reads.
type fake struct {
	mu     sync.Mutex
	snap   Snapshot
	reads  atomic.Int32
	doctor atomic.Int32
}

func (f *fake) Snapshot(context.Context) Snapshot {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	// A deep copy: the server keeps it while the test changes the lab.
	var s Snapshot
	b, _ := json.Marshal(f.snap)
	_ = json.Unmarshal(b, &s)
	s.Time = time.Now()
	return s
}

func (f *fake) Doctor(context.Context) (doctor.Report, error) {
	f.doctor.Add(1)
	return doctor.Report{Checks: []doctor.Check{{Name: "route", Status: doctor.Fail, Finding: "missing", Fix: "marina up"}}, Summary: doctor.Summary{Fail: 1}}, nil
}

func (f *fake) set(change func(*Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.snap)
}

// lab is a fake lab of two clusters, one with a LoadBalancer, and a
// hostile label value.
func lab() *fake {
	st := status.Status{VM: status.VMStatus{Name: "marina", Status: "Running", Lima0: "192.168.64.3/24", Docker: "29.1.0"},
		Route: status.RouteStatus{CIDR: "172.30.0.0/16", State: "present", Line: "172.30.0.0/16 via 192.168.64.3"}}
	web := Service{LoadBalancer: kube.LoadBalancer{Namespace: "shop", Name: "web", Addresses: []string{"172.30.1.1"}, Ports: []kube.Port{{Name: "http", Port: 8080, Protocol: "TCP"}}},
		DNSName: "web.shop.dev.demo.internal", URLs: []string{"http://web.shop.dev.demo.internal:8080/"}}
	return &fake{snap: Snapshot{
		Status: &st,
		Clusters: []kindcluster.Row{
			{Name: "dev", Num: 1, APIPort: 7001, Nodes: 2, State: "running", Labels: map[string]string{"team": `<img src=x onerror=alert(1)>`}},
			{Name: "east", Num: 2, APIPort: 7002, Nodes: 1, State: "stopped"},
		},
		Services: []ClusterServices{
			{Cluster: "dev", API: "https://127.0.0.1:7001", Labels: []string{"marina.dev/fleet=demo", `team=<img src=x onerror=alert(1)>`}, Version: "v1.36.4", Nodes: 2, Ready: 2, LoadBalancers: []Service{web}, PoolUsed: 1, PoolSize: PoolSize, ServiceRange: "10.1.0.0/16", PodRange: "10.11.0.0/16", Pool: []string{"172.30.1.1-172.30.1.7", "172.30.1.16-172.30.1.254"}},
			{Cluster: "east", LoadBalancers: []Service{}, PoolSize: PoolSize, ServiceRange: "10.2.0.0/16", PodRange: "10.12.0.0/16"},
		},
		DNS: []dns.Record{{Name: "web.shop.dev.demo.internal", Address: "172.30.1.1", Cluster: "dev", Owner: "dev"}},
		Mirrors: []status.MirrorStatus{{Name: "registry-dockerio", Upstream: "https://registry-1.docker.io", Port: 5000, State: "running", CacheBytes: 123456789,
			Blobs: &registry.Counters{Requests: 10, Hits: 7, Misses: 3}}},
		Fleets:  []fleet.ListRow{{Name: "demo", Clusters: []string{"dev", "east"}, DependsOn: map[string][]string{"east": {"dev"}}}},
		Domain:  "demo.internal",
		Network: "172.30.0.0/16",
	}}
}

// serve runs a server of src on a free loopback port for the test.
func serve(t *testing.T, src Source) string {
	t.Helper()
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(src, ln).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return URL(ln)
}

func get(t *testing.T, url, host string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The server listens on loopback only, and answers only requests naming
// the address it printed (a DNS-rebinding page names its own), only GETs,
// each with a strict policy.
func TestGuard(t *testing.T) {
	f := lab()
	url := serve(t, f)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on loopback", url)
	}
	for _, host := range []string{"evil.example", "localhost" + strings.TrimPrefix(strings.TrimSuffix(url, "/"), "http://127.0.0.1"), "127.0.0.1"} {
		resp, body := get(t, url+"api/snapshot", host)
		if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "dev") {
			t.Errorf("Host %s: %d %s", host, resp.StatusCode, body)
		}
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(method, url+"api/doctor", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", method, resp.StatusCode)
		}
	}
	// A page of another site, in a browser that says so.
	req, _ := http.NewRequest(http.MethodGet, url+"api/doctor", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site request: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if f.doctor.Load() != 0 || f.reads.Load() != 0 {
		t.Errorf("a refused request reached the lab: %d doctor runs, %d reads", f.doctor.Load(), f.reads.Load())
	}
	for _, path := range []string{"", "app.js", "app.css", "api/snapshot"} {
		resp, _ := get(t, url+path, "")
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("/%s: %d, CSP %q", path, resp.StatusCode, csp)
		}
	}
}

// Each view is its command's value; the views of one refresh (and of
// every tab) cost one read of the lab.
func TestViews(t *testing.T) {
	f := lab()
	url := serve(t, f)
	var snap Snapshot
	_, body := get(t, url+"api/snapshot", "")
	if err := json.Unmarshal([]byte(body), &snap); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{"api/clusters": f.snap.Clusters, "api/services": f.snap.Services, "api/dns": f.snap.DNS, "api/status": f.snap.Status} {
		_, body := get(t, url+path, "")
		w, _ := json.Marshal(want)
		var a, b any
		_ = json.Unmarshal([]byte(body), &a)
		_ = json.Unmarshal(w, &b)
		if ja, jb := mustJSON(a), mustJSON(b); ja != jb {
			t.Errorf("%s:\n%s\nwant\n%s", path, ja, jb)
		}
	}
	if n := f.reads.Load(); n != 1 {
		t.Errorf("the lab was read %d times for one refresh's views, want 1", n)
	}
	_, body = get(t, url+"api/doctor", "")
	if !strings.Contains(body, `"fix": "marina up"`) || f.doctor.Load() != 1 {
		t.Errorf("doctor: %s", body)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

type port80 struct{ net.Listener }

func (port80) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

// On port 80 a browser names the host alone: that is the address too.
func TestGuardPort80(t *testing.T) {
	h := New(lab(), port80{}).Handler()
	for host, want := range map[string]int{"127.0.0.1": http.StatusOK, "127.0.0.1:80": http.StatusOK, "localhost": http.StatusForbidden} {
		req := httptest.NewRequest(http.MethodGet, "http://"+host+"/app.css", nil)
		req.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
}
