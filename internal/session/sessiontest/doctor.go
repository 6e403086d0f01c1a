package sessiontest

import (
	"context"
	"maps"
	"net/netip"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/slot"
)

// DoctorWorld is what the fakes answer doctor's own questions with; its
// zero value is a healthy lab on an Apple silicon Mac.
type DoctorWorld struct {
	// Health replaces the guest's Health when set (the default: Docker
	// active, kind's inotify limits, half the disk free, no Rosetta).
	Health *guest.Health
	// Net changes the guest's routing state before it is returned.
	Net func(*guest.NetState)
	// Upstreams answer the probes (the default: every upstream answers).
	Upstreams map[string]guest.UpstreamResult
	// Table is the host's routing Table (nil: the route Lookup answers,
	// and the default route).
	Table []host.Route
	// Dial is what a connection to the kind bridge's gateway gets.
	Dial error
	// OS is the host's (default darwin); rosetta: Rosetta 2 installed.
	OS      string
	Rosetta bool
	// KubeErr fails a cluster's /version; noPool leaves a cluster without
	// marina's pool; pools overrides what it holds.
	KubeErr map[string]error
	NoPool  map[string]bool
	Pools   map[string][]string
	// Records is what etcd answers root for the local DNS's Records, when
	// doctor asks (nil: it does not answer).
	Records []byte
}

func (g Guest) ObserveWith(_ context.Context, p guest.Probes) (guest.State, error) {
	if err := g.Call("guest.observe"); err != nil {
		return guest.State{}, err
	}
	st := g.State()
	g.Mu.Lock()
	defer g.Mu.Unlock()
	dw := g.Doctor
	if dw.Health != nil {
		st.Health = *dw.Health
		st.Health.Upstreams = maps.Clone(dw.Health.Upstreams)
	} else {
		st.Health = guest.Health{Docker: "active", InotifyWatches: 524288, InotifyInstances: 512,
			Disk: guest.Disk{Known: true, Mount: "/", Used: 50 << 20, Avail: 50 << 20}}
	}
	if st.Health.Upstreams == nil {
		st.Health.Upstreams = map[string]guest.UpstreamResult{}
		for _, u := range p.Upstreams {
			r, ok := dw.Upstreams[u.Mirror]
			if !ok {
				r = guest.UpstreamResult{OK: true}
			}
			st.Health.Upstreams[u.Mirror] = r
		}
	}
	if dw.Net != nil {
		dw.Net(&st.Net)
	}
	if p.Records != "" && dw.Records != nil {
		st.Health.Records, st.Health.RecordsRead = dw.Records, true
	}
	// The measures answer as the measuring script's own round trip would.
	if r, ok := g.Scripts["measure the mirror caches"]; ok && p.Sizes != "" {
		st.Health.Sizes = guest.ParseSizes(string(r.Stdout))
	}
	return st, nil
}

func (h Host) Overlapping(ctx context.Context, p netip.Prefix) ([]host.Route, error) {
	if err := h.Call("host.routes " + p.String()); err != nil {
		return nil, err
	}
	h.Mu.Lock()
	table := h.Doctor.Table
	h.Mu.Unlock()
	if table == nil {
		r, _ := h.Lookup(ctx, p)
		table = []host.Route{*r}
	}
	var out []host.Route
	for _, r := range table {
		if r.Dest.Overlaps(p) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (h Host) Dial(_ context.Context, addr netip.AddrPort) error {
	if err := h.Call("host.dial " + addr.String()); err != nil {
		return err
	}
	h.Mu.Lock()
	defer h.Mu.Unlock()
	return h.Doctor.Dial
}

func (h Host) OS() string {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	if h.Doctor.OS == "" {
		return "darwin"
	}
	return h.Doctor.OS
}

func (h Host) Rosetta() bool {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	return h.Doctor.Rosetta
}

func (k Kube) ServerVersion(context.Context) (string, error) {
	if err := k.Call("kube " + k.Name + " version"); err != nil {
		return "", err
	}
	k.Mu.Lock()
	defer k.Mu.Unlock()
	if err := k.Doctor.KubeErr[k.Name]; err != nil {
		return "", err
	}
	return "v1.36.1", nil
}

func (k Kube) Ready(context.Context) error {
	return k.Call("kube " + k.Name + " ready")
}

// Get reads an object of the cluster: MetalLB's pool, as doctor's world
// scripts it (Doctor.Pools, Doctor.NoPool), or the slot's.
func (k Kube) Get(_ context.Context, r schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	if err := k.Call("kube " + k.Name + " get " + r.Resource + " " + ns + "/" + name); err != nil {
		return nil, err
	}
	if r != kube.PoolResource {
		return nil, nil
	}
	addrs, found, err := k.pool()
	if !found || err != nil {
		return nil, err
	}
	list := make([]any, len(addrs))
	for i, a := range addrs {
		list[i] = a
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"addresses": list}}}, nil
}

func (k Kube) pool() ([]string, bool, error) {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	if k.Doctor.NoPool[k.Name] {
		return nil, false, nil
	}
	if p, ok := k.Doctor.Pools[k.Name]; ok {
		return p, true, nil
	}
	for _, c := range k.NodeContainers {
		if c.Cluster == k.Name && len(c.APIPorts) > 0 {
			r, err := slot.MetalLBRanges(netip.MustParsePrefix("172.30.0.0/16"), c.APIPorts[0]-slot.APIPort(0))
			return r, true, err
		}
	}
	return nil, true, nil
}
