package dashboard

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

// A refresh reads the lab through the commands' own code, and changes
// nothing: the views, each running cluster's LoadBalancers with their
// names, links and pool use. Its guest round trips are counted.
func TestLiveSnapshot(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.DNSWarm()
	f.Route = &host.Route{Dest: f.Network.Subnet, Gateway: f.Lima0.Addr(), Interface: "bridge100"}
	f.Cluster("dev", 1, "https://192.168.64.3:7001")
	f.LBs = map[string][]kube.LoadBalancer{"dev": {
		{Namespace: "shop", Name: "web", Addresses: []string{"172.30.1.1", "172.30.9.9"}, Ports: []kube.Port{{Port: 8080, Protocol: "TCP"}, {Port: 53, Protocol: "UDP"}}},
		{Namespace: "shop", Name: "pending", Addresses: []string{}, Ports: []kube.Port{{Port: 80, Protocol: "TCP"}}},
	}}
	kv := func(k, v string) string {
		return fmt.Sprintf(`{"key":%q,"value":%q}`, base64.StdEncoding.EncodeToString([]byte(k)), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	f.Doctor.Records = []byte(`{"kvs":[` + kv("/skydns/internal/demo/dev/shop/web/1a2b3c4d", `{"host":"172.30.1.1","targetstrip":1}`) + `]}`)
	// The push registry's storage, measured in the same observation.
	f.Scripts["measure the mirror caches"] = vm.Result{Stdout: []byte("4096\t" + registry.LocalData + "\n")}
	snap := Live{Env: f.Env}.Snapshot(context.Background())
	if len(snap.Errors) > 0 || snap.Status == nil || snap.Status.Route.State != "present" {
		t.Fatalf("errors %v, status %+v\n%s", snap.Errors, snap.Status, f.Log())
	}
	if len(snap.Clusters) != 1 || snap.Clusters[0].Name != "dev" || snap.Clusters[0].State != "running" || len(snap.Services) != 1 {
		t.Fatalf("clusters %+v, services %+v", snap.Clusters, snap.Services)
	}
	d := snap.Services[0]
	if d.API != "https://192.168.64.3:7001" || len(d.Labels) == 0 || d.ServiceRange != "10.1.0.0/16" || d.PodRange != "10.11.0.0/16" || d.PoolUsed != 1 || d.PoolSize != 246 || d.Ready != 1 || d.Version == "" {
		t.Errorf("dev: %+v", d)
	}
	web, pending := d.LoadBalancers[0], d.LoadBalancers[1]
	if web.DNSName != "web.shop.dev.demo.internal" || !reflect.DeepEqual(web.URLs, []string{"http://web.shop.dev.demo.internal:8080/"}) {
		t.Errorf("web: %+v", web)
	}
	if pending.DNSName != "" || len(pending.URLs) != 0 {
		t.Errorf("a Service without an address got a name: %+v", pending)
	}
	if len(snap.DNS) != 1 || snap.DNS[0].Name != "web.shop.dev.demo.internal" || len(snap.Mirrors) == 0 || len(snap.Fleets) != 0 {
		t.Errorf("dns %+v, registries %+v, fleets %+v", snap.DNS, snap.Mirrors, snap.Fleets)
	}
	for _, m := range snap.Mirrors {
		if m.Push && m.CacheBytes != 4096 {
			t.Errorf("the push registry's storage: %+v", m)
		}
	}
	// One observation carries status's, dns list's and registry list's
	// reads of the VM.
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("a refresh made %d guest round trips, want 1: %v", len(got), got)
	}
	if got := append(f.Called("host.privileged"), f.Called("docker.run")...); len(got) != 0 {
		t.Errorf("a refresh changed something: %v", got)
	}
}

// A VM that does not run: status says so, the registries are shown as
// not running, nothing else is read and nothing is an error.
func TestLiveSnapshotVMStopped(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.DNSWarm()
	f.Mu.Lock()
	f.Instance.Status = vm.StatusStopped
	f.Mu.Unlock()
	snap := Live{Env: f.Env}.Snapshot(context.Background())
	if snap.Status == nil || snap.Status.VM.Status != vm.StatusStopped || len(snap.Errors) > 0 {
		t.Fatalf("status %+v, errors %v", snap.Status, snap.Errors)
	}
	if len(snap.Mirrors) == 0 || snap.Mirrors[0].State != "VM not running" || len(snap.Clusters) != 0 {
		t.Errorf("registries %+v, clusters %+v", snap.Mirrors, snap.Clusters)
	}
	if got := f.Called("guest."); len(got) != 0 {
		t.Errorf("guest round trips to a stopped VM: %v", got)
	}
}

// An invalid config: status shows it, the clusters are still listed, and
// the names and registries say why they are not.
func TestLiveSnapshotInvalidConfig(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Cluster("dev", 1, "https://192.168.64.3:7001")
	if err := os.WriteFile(f.Env.Paths.Config, []byte("vm:\n  name: marina\nnetwork:\n  cidr: not-a-cidr\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := Live{Env: f.Env}.Snapshot(context.Background())
	if snap.Status == nil || snap.Status.ConfigError == "" {
		t.Fatalf("status %+v", snap.Status)
	}
	if len(snap.Clusters) != 1 || snap.Clusters[0].Name != "dev" {
		t.Errorf("clusters %+v, errors %v", snap.Clusters, snap.Errors)
	}
	for _, part := range []string{"dns", "registries"} {
		if !strings.Contains(snap.Errors[part], "the config is invalid") {
			t.Errorf("%s: %q", part, snap.Errors[part])
		}
	}
}

// A Service name or namespace read back from a cluster makes a name and a
// link only when it is a DNS label: anything else is shown, never linked.
func TestServicesOfHostileNames(t *testing.T) {
	bridge := netip.MustParsePrefix("172.30.0.0/16")
	lbs := []kube.LoadBalancer{
		{Namespace: "shop", Name: `web"><script>`, Addresses: []string{"172.30.1.1"}, Ports: []kube.Port{{Port: 80, Protocol: "TCP"}}},
		{Namespace: "a/../b", Name: "web", Addresses: []string{"172.30.1.2"}, Ports: []kube.Port{{Port: 80, Protocol: "TCP"}}},
		{Namespace: "shop", Name: "ok", Addresses: []string{"172.30.1.3"}, Ports: []kube.Port{{Port: 80, Protocol: "TCP"}}},
	}
	cs := servicesOf("dev", 1, lbs, bridge, "demo.internal")
	for _, s := range cs.LoadBalancers[:2] {
		if s.DNSName != "" || len(s.URLs) != 0 {
			t.Errorf("%s/%s got a name: %+v", s.Namespace, s.Name, s)
		}
	}
	if ok := cs.LoadBalancers[2]; ok.DNSName != "ok.shop.dev.demo.internal" || cs.PoolUsed != 3 {
		t.Errorf("the plain one: %+v, pool used %d", ok, cs.PoolUsed)
	}
}
