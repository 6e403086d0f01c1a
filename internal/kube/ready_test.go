package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Ready waits through a server that is not ready yet (as kube-apiserver
// answers /readyz with 500 while its RBAC roles load), stops at once on
// refused credentials, and says what the server last answered when it
// never became ready.
func TestReady(t *testing.T) {
	serve := func(t *testing.T, h http.HandlerFunc) *Cluster {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		k, err := New(&rest.Config{Host: srv.URL}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	notReady := func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("[-]poststarthook/rbac/bootstrap-roles failed: not finished\nreadyz check failed"))
	}

	t.Run("waits until ready", func(t *testing.T) {
		var n atomic.Int32
		k := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				t.Errorf("asked for %s", r.URL.Path)
			}
			if n.Add(1) < 3 {
				notReady(w)
				return
			}
			_, _ = w.Write([]byte("ok"))
		})
		if err := k.Ready(context.Background()); err != nil || n.Load() != 3 {
			t.Errorf("Ready after %d asks: %v", n.Load(), err)
		}
	})

	t.Run("refused credentials are final", func(t *testing.T) {
		var n atomic.Int32
		k := serve(t, func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
		})
		err := k.Ready(context.Background())
		if err == nil || !strings.Contains(err.Error(), "refuses the kubeconfig's credentials") || n.Load() != 1 {
			t.Errorf("after %d asks: %v", n.Load(), err)
		}
	})

	t.Run("never ready names the last answer", func(t *testing.T) {
		k := serve(t, func(w http.ResponseWriter, r *http.Request) { notReady(w) })
		ctx, cancel := context.WithTimeout(context.Background(), 3*PollInterval)
		defer cancel()
		err := k.Ready(ctx)
		if err == nil || !strings.Contains(err.Error(), "not ready yet") || !strings.Contains(err.Error(), "bootstrap-roles") {
			t.Errorf("got %v", err)
		}
	})
}
