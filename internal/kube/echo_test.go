package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// S7: the echo server's answer must come from the address marina checked;
// a redirect (a hostile cluster's server) is not followed anywhere.
func TestClientIPFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte("10.0.0.1:1234"))
	}))
	defer other.Close()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/latest/meta-data", http.StatusFound)
	}))
	defer echo.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	seen, _, err := clientIP(ctx, echo.URL+"/clientip")
	if err == nil || !strings.Contains(err.Error(), "HTTP 302 Found") {
		t.Errorf("seen %q, error %v: want no answer, naming the redirect", seen, err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target was called %d times", n)
	}
}

func TestClientIPReadsTheAnswer(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.RemoteAddr + "\n"))
	}))
	defer echo.Close()
	seen, mine, err := clientIP(context.Background(), echo.URL+"/clientip")
	if err != nil || !strings.HasPrefix(seen, "127.0.0.1:") || mine != "127.0.0.1" {
		t.Errorf("seen %q, mine %q, error %v", seen, mine, err)
	}
}
