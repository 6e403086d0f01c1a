package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bcollard/marina/internal/dashboard/dashtest"
	"github.com/bcollard/marina/internal/run"
)

// dashboardLab is TestRealCluster's part for marina dashboard, on dev
// (web.shop at webIP) and edge (no LoadBalancer yet): the page in a real
// Chromium on the Mac shows both clusters' cards, a Service made in edge
// while it is open, and a link that opens web through the route; the
// server refuses another Host. Screenshots are kept in $MARINA_SCREENSHOTS.
func dashboardLab(t *testing.T, agnhost, webIP string) {
	t.Run("dashboard: both clusters' LoadBalancers on the page, a new one without a reload, a link through the route", func(t *testing.T) {
		url := startDashboard(t)
		tb := dashtest.NewTab(t, 1280, 800)
		tb.Open(t, url, `article[data-cluster="dev"] li[data-service="shop/web"]`)
		dev := tb.Text(t, `article[data-cluster="dev"]`)
		for _, want := range []string{webIP, "http://web.shop.dev.demo.internal/", "2 of 2 Ready", " of 246 used"} {
			if !strings.Contains(dev, want) {
				t.Errorf("dev's card lacks %q:\n%s", want, dev)
			}
		}
		if edge := tb.Text(t, `article[data-cluster="edge"]`); !strings.Contains(edge, "No LoadBalancer Services") {
			t.Errorf("edge's card:\n%s", edge)
		}

		// A Service made while the page is open shows with its address.
		edgeIP := webService(t, contextClient(t, "edge"), "shop", agnhost)
		t.Cleanup(func() {
			_ = contextClient(t, "edge").CoreV1().Namespaces().Delete(context.Background(), "shop", metav1.DeleteOptions{})
		})
		sel := `article[data-cluster="edge"] a[href="http://web.shop.edge.demo.internal/"]`
		if _, err := tb.Page.Timeout(30 * time.Second).Element(sel); err != nil {
			t.Fatalf("edge's new Service did not show without a reload: %v\n%s", err, tb.Text(t, `article[data-cluster="edge"]`))
		}
		if edge := tb.Text(t, `article[data-cluster="edge"]`); !strings.Contains(edge, edgeIP) {
			t.Errorf("edge's card lacks its address %s:\n%s", edgeIP, edge)
		}
		// The names and the registries come from the same observation
		// as status (one guest round trip): the DNS records and the push
		// registry's measure, read in the real VM.
		if names := tb.Text(t, `#dns`); !strings.Contains(names, "web.shop.dev.demo.internal") || !strings.Contains(names, webIP) {
			t.Errorf("the DNS names:\n%s", names)
		}
		if regs := tb.Text(t, `#registries`); !strings.Contains(regs, "marina-registry") || !regexp.MustCompile(`marina-registry\s+push: localhost:5001\s+running\s+[0-9.]+ [kMG]?B`).MatchString(regs) {
			t.Errorf("the registries (the push registry measured in the VM):\n%s", regs)
		}
		if topo := tb.Text(t, `#topology`); !strings.Contains(topo, "dev") || !strings.Contains(topo, "edge") || !strings.Contains(topo, "route ok") {
			t.Errorf("the topology: %s", topo)
		}
		tb.Screenshot(t, "dashboard-lab-1280.png")
		tb.Clean(t)

		narrow := dashtest.NewTab(t, 420, 900)
		narrow.Open(t, url, `article[data-cluster="edge"] li[data-service="shop/web"]`)
		if scroll, width := narrow.Eval(t, `document.documentElement.scrollWidth`).Int(), narrow.Eval(t, `window.innerWidth`).Int(); scroll > width {
			t.Errorf("the page is %d px wide in a %d px window", scroll, width)
		}
		narrow.Screenshot(t, "dashboard-lab-420.png")
		narrow.Clean(t)
		dark := dashtest.NewTab(t, 1280, 800)
		dark.DarkMode(t)
		dark.Open(t, url, `article[data-cluster="edge"] li[data-service="shop/web"]`)
		dark.Screenshot(t, "dashboard-lab-1280-dark.png")
		dark.Clean(t)

		// The link opens web through the route: Chromium resolves the name
		// as the local DNS answers it (the lab's Mac has no
		// /etc/resolver), and web's echo sees the Mac's own address.
		href := tb.Eval(t, `document.querySelector('article[data-cluster="dev"] a[href^="http://web.shop.dev"]').href`).Str()
		waitAnswer(t, "web.shop.dev.demo.internal", webIP, 30*time.Second)
		via := dashtest.NewTab(t, 1280, 800, "host-resolver-rules=MAP web.shop.dev.demo.internal "+webIP)
		via.Open(t, href+"clientip", "body")
		if body := via.Text(t, "body"); !strings.HasPrefix(body, macAddr+":") {
			t.Errorf("%sclientip in the browser: %q, want the Mac's %s:PORT", href, body, macAddr)
		}

		// Another Host (a DNS-rebinding page's) gets nothing.
		req, _ := http.NewRequest(http.MethodGet, url+"api/snapshot", nil)
		req.Host = "evil.example"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host evil.example: %d, want 403", resp.StatusCode)
		}
	})
}

// startDashboard runs marina dashboard for the test and returns the
// address it printed.
func startDashboard(t *testing.T) string {
	t.Helper()
	c := exec.Command(marinaBin, "dashboard", "--no-open")
	var errb run.Buffer
	c.Stderr = &errb
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	t.Cleanup(func() {
		_ = c.Process.Signal(os.Interrupt) // Ctrl-C stops it
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("marina dashboard after Ctrl-C: %v\n%s", err, errb.String())
			}
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			t.Errorf("marina dashboard did not stop within 10 s of Ctrl-C")
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("marina dashboard printed no address: %v\n%s", err, errb.String())
	}
	f := strings.Fields(line)
	if len(f) < 3 || !strings.HasPrefix(f[2], "http://127.0.0.1:") {
		t.Fatalf("marina dashboard said %q", line)
	}
	return f[2]
}
