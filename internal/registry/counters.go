package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Counters are distribution's proxy metrics (its /debug/vars).
type Counters struct {
	Requests uint64 `json:"requests"`
	Hits     uint64 `json:"hits"`
	Misses   uint64 `json:"misses"`
}

// String is c as hits/misses; "-" when nil (not known).
func (c *Counters) String() string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", c.Hits, c.Misses)
}

// ProxyCounters asks the mirror at ip for its blob and manifest counters,
// on its debug port: the same route that carries the Mac's traffic to
// LoadBalancer addresses. Both are nil when it does not answer.
func ProxyCounters(ctx context.Context, ip string) (blobs, manifests *Counters) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	u := "http://" + net.JoinHostPort(ip, strconv.Itoa(DebugPort)) + "/debug/vars"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil
	}
	defer resp.Body.Close()
	var v struct {
		Registry struct {
			Proxy struct {
				Blobs, Manifests *Counters
			} `json:"proxy"`
		} `json:"registry"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v) != nil {
		return nil, nil
	}
	return v.Registry.Proxy.Blobs, v.Registry.Proxy.Manifests
}
