// Package dashtest drives the dashboard's page in a real headless
// Chromium, for the dashboard's tests and the lab's.
package dashtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/launcher/flags"
	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// Browser finds Chromium for the page's tests: $MARINA_CHROMIUM, else
// chromium on the PATH. Without one the tests are skipped, unless
// $MARINA_REQUIRE_BROWSER is 1 (CI installs Debian's chromium and sets
// it): then they fail.
func Browser(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MARINA_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("MARINA_REQUIRE_BROWSER") == "1" {
			t.Fatalf("no chromium on the PATH, and MARINA_REQUIRE_BROWSER=1: apt-get install chromium")
		}
		t.Skip("no chromium on the PATH (apt-get install chromium): the page's browser tests need one")
	}
	return p
}

// Tab is a page of a headless Chromium, with every console error,
// uncaught exception, log error (a Content-Security-Policy refusal among
// them) and dialog (alert) it met.
type Tab struct {
	Page *rod.Page
	mu   sync.Mutex
	bad  []string
}

// NewTab starts a headless Chromium with a window of width × height, and
// extra command-line flags (name=value, or name), and opens a tab.
func NewTab(t testing.TB, width, height int, extra ...string) *Tab {
	t.Helper()
	l := launcher.New().Bin(Browser(t)).Headless(true).NoSandbox(true).Leakless(false).
		UserDataDir(t.TempDir()).
		// This machine's network is closed: Chromium must not try it.
		Set("disable-gpu").Set("disable-background-networking").Set("disable-component-update").
		Set("disable-sync").Set("disable-quic").Set("no-first-run")
	for _, f := range extra { // name=value, or name
		if name, value, ok := strings.Cut(f, "="); ok {
			l = l.Set(flags.Flag(name), value)
		} else {
			l = l.Set(flags.Flag(f))
		}
	}
	u, err := l.Launch()
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b := rod.New().ControlURL(u).Timeout(2 * time.Minute)
	if err := b.Connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(); l.Kill() })
	p, err := b.Page(proto.TargetCreateTarget{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: width, Height: height, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	tb := &Tab{Page: p}
	add := func(what string) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		tb.bad = append(tb.bad, what)
	}
	if err := (proto.LogEnable{}).Call(p); err != nil {
		t.Fatal(err)
	}
	go p.EachEvent(
		func(e *proto.RuntimeExceptionThrown) { add("exception: " + e.ExceptionDetails.Text) },
		func(e *proto.RuntimeConsoleAPICalled) {
			if e.Type == proto.RuntimeConsoleAPICalledTypeError {
				add("console.error " + p.MustObjectsToJSON(e.Args).String())
			}
		},
		func(e *proto.LogEntryAdded) {
			if e.Entry.Level == proto.LogLogEntryLevelError {
				add("log: " + e.Entry.Text)
			}
		},
		func(e *proto.PageJavascriptDialogOpening) {
			add("dialog: " + e.Message)
			_ = proto.PageHandleJavaScriptDialog{Accept: false}.Call(p)
		},
	)()
	return tb
}

// DarkMode has the tab follow an OS in dark mode (prefers-color-scheme).
func (tb *Tab) DarkMode(t testing.TB) {
	t.Helper()
	if err := (proto.EmulationSetEmulatedMedia{Features: []*proto.EmulationMediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}).Call(tb.Page); err != nil {
		t.Fatal(err)
	}
}

// Clean fails the test for whatever went wrong on the page so far.
func (tb *Tab) Clean(t testing.TB) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, b := range tb.bad {
		t.Errorf("the page: %s", b)
	}
}

// Open loads url and waits for sel.
func (tb *Tab) Open(t testing.TB, url, sel string) {
	t.Helper()
	if err := tb.Page.Navigate(url); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Page.Element(sel); err != nil {
		t.Fatalf("%s never showed: %v", sel, err)
	}
}

// Text is the rendered text of sel.
func (tb *Tab) Text(t testing.TB, sel string) string {
	t.Helper()
	e, err := tb.Page.Element(sel)
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Text()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Eval is the value of the JavaScript expression js on the page.
func (tb *Tab) Eval(t testing.TB, js string) gson.JSON {
	t.Helper()
	r, err := tb.Page.Eval("() => " + js)
	if err != nil {
		t.Fatal(err)
	}
	return r.Value
}

// Screenshot saves the page as PNG in $MARINA_SCREENSHOTS (default: a
// folder of the test's, removed when it ends), and says where.
func (tb *Tab) Screenshot(t testing.TB, name string) {
	t.Helper()
	dir := os.Getenv("MARINA_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := tb.Page.Screenshot(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
