package docker

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// engine is a stand-in Docker Engine for the conversion's unit tests: the
// few endpoints Endpoints and Reattach call, over a unix socket, with the
// state they change. What a real Engine does with them is the lab's to
// prove (TestMigrate); this checks the order and the resumption.
type engine struct {
	mu   sync.Mutex
	net  *fakeNet // the kind network; nil when there is none
	ctrs map[string]*fakeCtr
	log  []string
}

type fakeNet struct {
	id, name, driver         string
	subnet, gateway, ipRange string
	options                  map[string]string
	managed                  bool
}

type fakeCtr struct {
	id, name string
	running  bool
	// on is its endpoint on the kind network, nil when it is not on it.
	on *fakeEP
}

type fakeEP struct {
	ip, ipam string
	aliases  []string
}

var version = regexp.MustCompile(`^/v[0-9.]+`)

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	path := version.ReplaceAllString(r.URL.Path, "")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	notFound := func(what string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": what + " not found"})
	}
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	ctr := func(id string) *fakeCtr {
		for _, c := range e.ctrs {
			if c.id == id || c.name == id {
				return c
			}
		}
		return nil
	}
	switch {
	case parts[0] == "_ping":
		w.Header().Set("Api-Version", "1.52")
		_, _ = w.Write([]byte("OK"))
	case r.Method == http.MethodGet && path == "/containers/json":
		var out []map[string]any
		for _, c := range e.ctrs {
			if c.on != nil {
				out = append(out, map[string]any{"Id": c.id})
			}
		}
		reply(out)
	case len(parts) == 3 && parts[0] == "containers":
		c := ctr(parts[1])
		if c == nil {
			notFound("container " + parts[1])
			return
		}
		switch parts[2] {
		case "json":
			nets := map[string]any{}
			if c.on != nil {
				ep := map[string]any{"IPAddress": c.on.ip, "Aliases": c.on.aliases}
				if c.on.ipam != "" {
					ep["IPAMConfig"] = map[string]any{"IPv4Address": c.on.ipam}
				}
				nets["kind"] = ep
			}
			reply(map[string]any{"Id": c.id, "Name": "/" + c.name, "State": map[string]any{"Running": c.running},
				"NetworkSettings": map[string]any{"Networks": nets}})
		case "stop":
			c.running = false
			e.log = append(e.log, "stop "+c.name)
			w.WriteHeader(http.StatusNoContent)
		case "start":
			c.running = true
			e.log = append(e.log, "start "+c.name)
			w.WriteHeader(http.StatusNoContent)
		}
	case r.Method == http.MethodPost && path == "/networks/create":
		var body struct {
			Name    string
			Driver  string
			Options map[string]string
			Labels  map[string]string
			IPAM    struct {
				Config []struct{ Subnet, Gateway, IPRange string }
			}
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		c := body.IPAM.Config[0]
		e.net = &fakeNet{id: "new", name: body.Name, driver: body.Driver, subnet: c.Subnet, gateway: c.Gateway, ipRange: c.IPRange,
			options: body.Options, managed: body.Labels[labelManaged] == "true"}
		e.log = append(e.log, "create network "+body.Name)
		reply(map[string]string{"Id": "new"})
	case parts[0] == "networks" && len(parts) >= 2:
		n := e.net
		if n == nil || (parts[1] != n.id && parts[1] != n.name) {
			notFound("network " + parts[1])
			return
		}
		switch {
		case r.Method == http.MethodGet:
			labels := map[string]string{}
			if n.managed {
				labels[labelManaged] = "true"
			}
			reply(map[string]any{"Id": n.id, "Name": n.name, "Driver": n.driver, "Options": n.options, "Labels": labels,
				"IPAM": map[string]any{"Config": []map[string]string{{"Subnet": n.subnet, "Gateway": n.gateway, "IPRange": n.ipRange}}}})
		case r.Method == http.MethodDelete:
			for _, c := range e.ctrs {
				if c.on != nil {
					w.WriteHeader(http.StatusForbidden)
					_ = json.NewEncoder(w).Encode(map[string]string{"message": "error while removing network: network kind has active endpoints"})
					return
				}
			}
			e.net = nil
			e.log = append(e.log, "remove network")
			w.WriteHeader(http.StatusNoContent)
		case parts[2] == "disconnect":
			var body struct{ Container string }
			_ = json.NewDecoder(r.Body).Decode(&body)
			c := ctr(body.Container)
			if c.on == nil {
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(map[string]string{"message": "container " + c.id + " is not connected to network kind"})
				return
			}
			c.on = nil
			e.log = append(e.log, "disconnect "+c.name)
			w.WriteHeader(http.StatusOK)
		case parts[2] == "connect":
			var body struct {
				Container      string
				EndpointConfig struct {
					IPAMConfig *struct{ IPv4Address string }
					Aliases    []string
				}
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			c := ctr(body.Container)
			ep := &fakeEP{aliases: body.EndpointConfig.Aliases}
			if body.EndpointConfig.IPAMConfig != nil {
				ep.ip, ep.ipam = body.EndpointConfig.IPAMConfig.IPv4Address, body.EndpointConfig.IPAMConfig.IPv4Address
			}
			c.on = ep
			e.log = append(e.log, "connect "+c.name+" "+ep.ip+" "+strings.Join(ep.aliases, ","))
			w.WriteHeader(http.StatusOK)
		}
	default:
		http.Error(w, "not in the stand-in engine: "+r.Method+" "+path, http.StatusNotImplemented)
	}
}

// serve runs e on a unix socket and returns a client for it.
func (e *engine) serve(t *testing.T) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(e)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// klimaxLab is klimax's kind network (no ip-range, no marina options) with
// three nodes on it: a worker that sorts before its control plane, both
// running, and a stopped node whose address Docker keeps in its IPAM
// config only.
func klimaxLab() *engine {
	return &engine{
		net: &fakeNet{id: "old", name: "kind", driver: "bridge", subnet: "172.30.0.0/16", gateway: "172.30.0.1", options: map[string]string{}},
		ctrs: map[string]*fakeCtr{
			"w":  {id: "w0rker1234567890", name: "a-worker", running: true, on: &fakeEP{ip: "172.30.2.3", aliases: []string{"a-worker", "w0rker123456", "node"}}},
			"cp": {id: "c0ntrol1234567890", name: "b-control-plane", running: true, on: &fakeEP{ip: "172.30.1.2", aliases: []string{"b-control-plane"}}},
			"s":  {id: "st0pped1234567890", name: "c-stopped", on: &fakeEP{ipam: "172.30.3.9"}},
		},
	}
}

func TestEndpointsRecordsWhatReattachNeeds(t *testing.T) {
	c := klimaxLab().serve(t)
	eps, err := c.Endpoints(context.Background(), "kind")
	if err != nil {
		t.Fatal(err)
	}
	want := []Endpoint{
		{ID: "w0rker1234567890", Name: "a-worker", IP: netip.MustParseAddr("172.30.2.3"), Aliases: []string{"node"}, Running: true},
		{ID: "c0ntrol1234567890", Name: "b-control-plane", IP: netip.MustParseAddr("172.30.1.2"), Running: true},
		{ID: "st0pped1234567890", Name: "c-stopped", IP: netip.MustParseAddr("172.30.3.9")},
	}
	if !slices.EqualFunc(eps, want, func(a, b Endpoint) bool {
		return a.ID == b.ID && a.Name == b.Name && a.IP == b.IP && slices.Equal(a.Aliases, b.Aliases) && a.Running == b.Running
	}) {
		t.Errorf("endpoints:\n%+v\nwant\n%+v", eps, want)
	}
}

// A network that is not marina's is made again, and every container comes
// back at its own address with its aliases: the running ones stopped
// first and started last, control planes before the other nodes.
func TestReattachMakesTheNetworkAgain(t *testing.T) {
	e := klimaxLab()
	c := e.serve(t)
	ctx := context.Background()
	eps, err := c.Endpoints(ctx, "kind")
	if err != nil {
		t.Fatal(err)
	}
	spec := KindNetworkSpec(netip.MustParsePrefix("172.30.0.0/16"), "lima0")
	var said []string
	if err := c.Reattach(ctx, spec, eps, func(s string) { said = append(said, s) }); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"stop a-worker", "stop b-control-plane",
		"disconnect a-worker", "disconnect b-control-plane", "disconnect c-stopped",
		"remove network", "create network kind",
		"connect a-worker 172.30.2.3 node", "connect b-control-plane 172.30.1.2 ", "connect c-stopped 172.30.3.9 ",
		"start b-control-plane", "start a-worker",
	}
	if !slices.Equal(e.log, want) {
		t.Errorf("the engine saw:\n%s\nwant\n%s", strings.Join(e.log, "\n"), strings.Join(want, "\n"))
	}
	if len(said) != len(want) {
		t.Errorf("said %d steps for %d: %q", len(said), len(want), said)
	}
	have, err := c.InspectNetwork(ctx, "kind")
	if err != nil {
		t.Fatal(err)
	}
	if d := spec.Differences(have); len(d) > 0 || !have.Managed {
		t.Errorf("the network is not marina's after the conversion: %v (managed %v)", d, have.Managed)
	}
	if e.ctrs["s"].running {
		t.Error("a stopped node was started")
	}
}

// A conversion stopped after the network was made again completes when
// called with the same endpoints: nothing is removed twice, only what is
// not connected yet is, and the nodes that ran start.
func TestReattachResumes(t *testing.T) {
	spec := KindNetworkSpec(netip.MustParsePrefix("172.30.0.0/16"), "lima0")
	e := &engine{
		net: &fakeNet{id: "new", name: "kind", driver: "bridge", subnet: spec.Subnet.String(), gateway: spec.Gateway.String(),
			ipRange: spec.IPRange.String(), options: spec.Options, managed: true},
		ctrs: map[string]*fakeCtr{
			"w":  {id: "w0rker1234567890", name: "a-worker", on: &fakeEP{ip: "172.30.2.3", ipam: "172.30.2.3"}},
			"cp": {id: "c0ntrol1234567890", name: "b-control-plane"},
		},
	}
	c := e.serve(t)
	eps := []Endpoint{
		{ID: "w0rker1234567890", Name: "a-worker", IP: netip.MustParseAddr("172.30.2.3"), Running: true},
		{ID: "c0ntrol1234567890", Name: "b-control-plane", IP: netip.MustParseAddr("172.30.1.2"), Running: true},
	}
	if err := c.Reattach(context.Background(), spec, eps, func(string) {}); err != nil {
		t.Fatal(err)
	}
	want := []string{"connect b-control-plane 172.30.1.2 ", "start b-control-plane", "start a-worker"}
	if !slices.Equal(e.log, want) {
		t.Errorf("the engine saw:\n%s\nwant\n%s", strings.Join(e.log, "\n"), strings.Join(want, "\n"))
	}
}

// An address outside the new subnet would change: nothing is touched.
func TestReattachKeepsEveryAddress(t *testing.T) {
	e := klimaxLab()
	c := e.serve(t)
	spec := KindNetworkSpec(netip.MustParsePrefix("172.31.0.0/16"), "lima0")
	eps := []Endpoint{{ID: "c0ntrol1234567890", Name: "b-control-plane", IP: netip.MustParseAddr("172.30.1.2"), Running: true}}
	err := c.Reattach(context.Background(), spec, eps, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "container b-control-plane has 172.30.1.2, outside 172.31.0.0/16") {
		t.Fatalf("err = %v", err)
	}
	if len(e.log) != 0 {
		t.Errorf("it changed %v", e.log)
	}
}
