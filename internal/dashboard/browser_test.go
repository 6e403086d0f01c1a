package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/bcollard/marina/internal/dashboard/dashtest"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/status"
)

// The page against a fake lab: it loads without an error, shows each
// cluster's addresses and names as links, keeps a hostile label value
// text, shows a Service made while it is open without a reload, and runs
// doctor on demand.
func TestPage(t *testing.T) {
	f := lab()
	url := serve(t, f)
	tb := dashtest.NewTab(t, 1280, 800)
	tb.Open(t, url, `article[data-cluster="dev"]`)
	dev, east := tb.Text(t, `article[data-cluster="dev"]`), tb.Text(t, `article[data-cluster="east"]`)
	for _, want := range []string{"shop/web", "172.30.1.1", "http://web.shop.dev.demo.internal:8080/", "2 of 2 Ready", "v1.36.4", "https://127.0.0.1:7001", "1 of 246 used", "team=<img src=x onerror=alert(1)>"} {
		if !strings.Contains(dev, want) {
			t.Errorf("dev's card lacks %q:\n%s", want, dev)
		}
	}
	if !strings.Contains(east, "Cluster stopped: marina cluster start east") {
		t.Errorf("east's card:\n%s", east)
	}
	if imgs, links := tb.Eval(t, `document.querySelectorAll("img").length`).Int(), tb.Eval(t, `document.querySelectorAll('a[href="http://web.shop.dev.demo.internal:8080/"]').length`).Int(); imgs != 0 || links != 1 {
		t.Errorf("%d img elements (a label became HTML), %d links to web", imgs, links)
	}
	topo := tb.Text(t, `#topology`)
	for _, want := range []string{"Mac", "route ok", "kind network 172.30.0.0/16", "dev", "east", "registry-dockerio"} {
		if !strings.Contains(topo, want) {
			t.Errorf("the topology lacks %q: %s", want, topo)
		}
	}
	// The fleet as its graph: an arrow from dev to east, which depends
	// on it.
	if got := tb.Eval(t, `document.querySelector('[data-fleet="demo"] svg').getAttribute("aria-label")`).Str(); got != "fleet demo: dev; east depends on dev" {
		t.Errorf("the fleet graph says %q", got)
	}
	if n := tb.Eval(t, `document.querySelectorAll('[data-fleet="demo"] line.edge').length`).Int(); n != 1 {
		t.Errorf("%d arrows in the fleet graph, want 1", n)
	}
	tb.Screenshot(t, "dashboard-fake-1280.png")

	// A Service made while the page is open shows at a refresh.
	f.set(func(s *Snapshot) {
		s.Services[0].LoadBalancers = append(s.Services[0].LoadBalancers, Service{LoadBalancer: kube.LoadBalancer{Namespace: "shop", Name: "api", Addresses: []string{"172.30.1.2"}, Ports: []kube.Port{{Port: 80, Protocol: "TCP"}}},
			DNSName: "api.shop.dev.demo.internal", URLs: []string{"http://api.shop.dev.demo.internal/"}})
	})
	if _, err := tb.Page.Timeout(Fresh + 3*refresh).Element(`li[data-service="shop/api"] a[href="http://api.shop.dev.demo.internal/"]`); err != nil {
		t.Errorf("a new Service did not show without a reload: %v", err)
	}

	b, err := tb.Page.Element(`#run-doctor`)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Click(proto.InputMouseButtonLeft, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Page.Element(`#doctor .check`); err != nil {
		t.Fatal(err)
	}
	if report := tb.Text(t, `#doctor`); !strings.Contains(report, "Fix: marina up") || !strings.Contains(report, "1 failed") {
		t.Errorf("doctor's report: %s", report)
	}
	tb.Clean(t)
}

// refresh is app.js's REFRESH_MS.
const refresh = 5 * time.Second

// The page is readable on a narrow window, with nothing wider than it,
// and in the OS's dark theme.
func TestPageNarrowAndDark(t *testing.T) {
	f := lab()
	url := serve(t, f)
	tb := dashtest.NewTab(t, 420, 900)
	tb.Open(t, url, `article[data-cluster="dev"]`)
	if scroll, width := tb.Eval(t, `document.documentElement.scrollWidth`).Int(), tb.Eval(t, `window.innerWidth`).Int(); scroll > width {
		t.Errorf("the page is %d px wide in a %d px window", scroll, width)
	}
	tb.Screenshot(t, "dashboard-fake-420.png")
	dark := dashtest.NewTab(t, 1280, 800)
	dark.DarkMode(t)
	dark.Open(t, url, `article[data-cluster="dev"]`)
	if bg := dark.Eval(t, `getComputedStyle(document.body).backgroundColor`).Str(); bg != "rgb(13, 17, 23)" {
		t.Errorf("dark theme background %s", bg)
	}
	dark.Screenshot(t, "dashboard-fake-1280-dark.png")
	tb.Clean(t)
	dark.Clean(t)
}

// A VM that does not run is said once per section, not as errors.
func TestPageVMStopped(t *testing.T) {
	f := lab()
	f.set(func(s *Snapshot) {
		st := *s.Status
		st.VM.Status = "Stopped"
		s.Status = &st
		s.Clusters, s.Services, s.DNS, s.Fleets = nil, nil, nil, nil
		s.Errors = map[string]string{"clusters": "VM marina is not running", "dns": "VM marina is not running"}
	})
	tb := dashtest.NewTab(t, 1280, 800)
	tb.Open(t, serve(t, f), `#clusters p`)
	for _, sel := range []string{"#clusters", "#dns"} {
		if got := tb.Text(t, sel); got != "VM marina not running (Stopped): marina up starts it." {
			t.Errorf("%s: %q", sel, got)
		}
	}
	if got := tb.Text(t, "#summary"); !strings.Contains(got, "VM marina Stopped: marina up starts it") {
		t.Errorf("summary: %q", got)
	}
	tb.Clean(t)
}

// A cluster whose control plane runs and a worker does not is partial, as
// status says: its Services still show.
func TestPagePartialCluster(t *testing.T) {
	f := lab()
	f.set(func(s *Snapshot) {
		st := *s.Status
		st.Clusters = &[]status.ClusterStatus{{Name: "dev", Slot: 1, Nodes: 2, State: "partial"}, {Name: "east", Slot: 2, Nodes: 1, State: "stopped"}}
		s.Status = &st
		s.Clusters[0].State = "stopped" // its row: not every node runs
	})
	tb := dashtest.NewTab(t, 1280, 800)
	tb.Open(t, serve(t, f), `article[data-cluster="dev"]`)
	dev := tb.Text(t, `article[data-cluster="dev"]`)
	for _, want := range []string{"dev (partial)", "A node of it is not running: marina cluster start dev starts it.", "shop/web"} {
		if !strings.Contains(dev, want) {
			t.Errorf("dev's card lacks %q:\n%s", want, dev)
		}
	}
	tb.Clean(t)
}
