package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Fresh is how long a snapshot is given again: the page's views of one
// refresh, and every open tab, cost one read of the lab.
const Fresh = 2 * time.Second

// readTimeout bounds one read of the lab.
const readTimeout = 30 * time.Second

// csp allows the page its own script, style and requests, and nothing
// else: no inline script, no other origin, no frames, no forms.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Server serves the page and the views. It changes nothing anywhere: every
// route is a GET.
type Server struct {
	src   Source
	hosts []string // the Hosts a request may name: the address it printed
	// base is Serve's context: the shared reads end with it, not with
	// the request that started them.
	base context.Context

	mu   sync.Mutex // one read of the lab at a time; the others wait for it
	last Snapshot
	at   time.Time

	doctor sync.Mutex // one doctor at a time
}

// Listen opens the server's socket on loopback, on port (0: a free one).
func Listen(port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(port)))
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w: choose another --port, or leave it out for a free one", port, err)
	}
	return ln, nil
}

// URL is the page's address on ln.
func URL(ln net.Listener) string { return "http://" + ln.Addr().String() + "/" }

// New is a server of src answering on ln's address.
func New(src Source, ln net.Listener) *Server {
	s := &Server{src: src, hosts: []string{ln.Addr().String()}, base: context.Background()}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && a.Port == 80 {
		s.hosts = append(s.hosts, a.IP.String()) // a browser leaves the default port out
	}
	return s
}

// Serve serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a Serve that failed ends the shutdown's wait too
	s.base = ctx
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler is the server's routes behind its guard.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets") // the folder is embedded: it is there
	mux.Handle("GET /{$}", http.FileServerFS(static))
	for _, f := range []string{"app.js", "app.css"} {
		mux.Handle("GET /"+f, http.FileServerFS(static))
	}
	// Browsers ask for it; there is none (an answer, not a logged 404).
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	view := func(pick func(Snapshot) any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { writeJSON(w, pick(s.snapshot())) }
	}
	mux.Handle("GET /api/snapshot", view(func(v Snapshot) any { return v }))
	mux.Handle("GET /api/status", view(func(v Snapshot) any { return v.Status }))
	mux.Handle("GET /api/clusters", view(func(v Snapshot) any { return v.Clusters }))
	mux.Handle("GET /api/services", view(func(v Snapshot) any { return v.Services }))
	mux.Handle("GET /api/dns", view(func(v Snapshot) any { return v.DNS }))
	mux.Handle("GET /api/registries", view(func(v Snapshot) any { return v.Mirrors }))
	mux.Handle("GET /api/fleets", view(func(v Snapshot) any { return v.Fleets }))
	mux.HandleFunc("GET /api/doctor", func(w http.ResponseWriter, r *http.Request) {
		s.doctor.Lock()
		defer s.doctor.Unlock()
		rep, err := s.src.Doctor(r.Context())
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, rep)
	})
	return s.guard(mux)
}

// guard refuses what a page of another site could make a browser send: a
// request whose Host is not the address this server printed (DNS
// rebinding), one the browser marks as sent by another site (a doctor
// run it cannot read, but would start), and any method but GET and HEAD
// (nothing here changes anything). Every answer carries a strict
// Content-Security-Policy.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if !slices.Contains(s.hosts, r.Host) {
			http.Error(w, "this server answers only to "+s.hosts[0]+" (the address marina dashboard printed)", http.StatusForbidden)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			http.Error(w, "this server answers only its own page", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// snapshot is the lab as last read, read again when older than Fresh.
func (s *Server) snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && time.Since(s.at) < Fresh {
		return s.last
	}
	// The read is shared: a tab that went away does not cut it short;
	// the server's end does.
	rctx, cancel := context.WithTimeout(s.base, readTimeout)
	defer cancel()
	s.last, s.at = s.src.Snapshot(rctx), time.Now()
	return s.last
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
