package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// status lists the VM's clusters from Docker, in the same single guest
// round trip as before.
func TestStatusListsTheClusters(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Cluster("dev", 1, "")
	// east: its worker stopped; west: its control plane.
	f.NodeContainers = append(f.NodeContainers,
		docker.Node{Container: docker.Container{ID: "e-cp", Name: "east-control-plane", State: "running"}, Cluster: "east", Role: "control-plane", APIPorts: []int{7002}},
		docker.Node{Container: docker.Container{ID: "e-w", Name: "east-worker", State: "exited"}, Cluster: "east", Role: "worker"},
		docker.Node{Container: docker.Container{ID: "w-cp", Name: "west-control-plane", State: "exited"}, Cluster: "west", Role: "control-plane", APIPorts: []int{7003}})
	st, err := Get(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	want := []ClusterStatus{{Name: "dev", Slot: 1, Nodes: 1, State: "running"}, {Name: "east", Slot: 2, Nodes: 2, State: "partial"}, {Name: "west", Slot: 3, Nodes: 1, State: "stopped"}}
	if st.Clusters == nil || !reflect.DeepEqual(*st.Clusters, want) {
		t.Errorf("clusters = %+v, want %+v", st.Clusters, want)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("status made %d guest round trips, want 1: %v", len(got), got)
	}
	if got := f.Called("docker.kind-nodes"); len(got) != 1 {
		t.Errorf("Docker was asked for the nodes %d times, want 1", len(got))
	}
	if len(st.VM.Errors) != 0 {
		t.Errorf("errors: %v", st.VM.Errors)
	}
	for _, format := range []string{"json", "yaml"} {
		var b bytes.Buffer
		if err := ui.Render(&b, format, st); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "clusters") || !strings.Contains(b.String(), "east") {
			t.Errorf("-o %s lacks the clusters:\n%s", format, b.String())
		}
	}
}

// status says how much of the Docker Hub mirror's cache on the Mac is
// node images, with no guest round trip more.
func TestStatusNodeImages(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.CachedBlob("registry-dockerio", "kindest/node", "_manifests/revisions", 'b', 2048)
	st, err := Get(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mirrors == nil {
		t.Fatal("no mirrors section")
	}
	for _, m := range *st.Mirrors {
		want := int64(0)
		if m.Name == "registry-dockerio" {
			want = 2048
		}
		if m.NodeImageBytes != want {
			t.Errorf("%s: node images %d, want %d", m.Name, m.NodeImageBytes, want)
		}
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("status made %d guest round trips, want 1: %v", len(got), got)
	}
}

// The clusters field is an empty list when the VM runs none, and absent
// when the VM does not run.
func TestStatusClustersField(t *testing.T) {
	field := func(t *testing.T, st Status) (json.RawMessage, bool) {
		t.Helper()
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		v, ok := m["clusters"]
		return v, ok
	}
	f := sessiontest.New(t)
	f.Config(nil)
	st, err := Get(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := field(t, st); !ok || string(v) != "[]" {
		t.Errorf("running VM without clusters: clusters = %s (present %v), want []", v, ok)
	}
	var y bytes.Buffer
	if err := ui.Render(&y, "yaml", st); err != nil || !regexp.MustCompile(`(?m)^clusters: \[\]$`).MatchString(y.String()) {
		t.Errorf("-o yaml without clusters (%v):\n%s", err, y.String())
	}
	for _, state := range []string{vm.StatusStopped, ""} {
		f := sessiontest.New(t)
		f.Config(nil)
		f.Cluster("dev", 1, "")
		if state == "" {
			f.Instance = nil
		} else {
			f.Instance.Status = state
		}
		st, err := Get(context.Background(), f.Env)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := field(t, st); ok {
			t.Errorf("VM %q: clusters = %s, want none", state, v)
		}
		if got := f.Called("docker."); len(got) != 0 {
			t.Errorf("VM %q: Docker was asked %v", state, got)
		}
	}
}

// A Docker that cannot list the nodes lands in the VM's errors; the rest
// of status stands.
func TestStatusClustersDockerError(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.Fail["docker.kind-nodes"] = errBoom
	st, err := Get(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	if st.Clusters != nil {
		t.Errorf("clusters = %+v, want none (unknown)", *st.Clusters)
	}
	if len(st.VM.Errors) != 1 || st.VM.Errors[0] != "listing the clusters: boom" {
		t.Errorf("errors = %q", st.VM.Errors)
	}
	if st.Guest == nil || !st.Guest.OK {
		t.Errorf("the guest network section went: %+v", st.Guest)
	}
	// Docker down altogether: its error is said once, not once more for
	// the clusters.
	f = sessiontest.New(t)
	f.Config(nil)
	f.Fail["docker.version"] = errBoom
	f.Fail["docker.kind-nodes"] = errBoom
	st, err = Get(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	if st.Clusters != nil || len(st.VM.Errors) != 1 || st.VM.Errors[0] != "boom" {
		t.Errorf("Docker down: clusters %v, errors %q", st.Clusters, st.VM.Errors)
	}
}

// What status shows as broken is what makes marina status exit 1: each
// thing it marks ✗ or reports as a problem; a healthy lab, or a VM that is
// stopped or not created, has none.
func TestStatusProblems(t *testing.T) {
	for _, c := range []struct {
		name    string
		breakIt func(*sessiontest.World)
		want    []string // each a prefix of one problem, in order
	}{
		{"healthy", func(*sessiontest.World) {}, nil},
		{"stopped", func(f *sessiontest.World) { f.Instance.Status = vm.StatusStopped }, nil},
		{"not created", func(f *sessiontest.World) { f.Instance = nil }, nil},
		{"broken", func(f *sessiontest.World) {
			f.Instance.Status, f.Instance.Errors = vm.StatusBroken, []string{"the hostagent died"}
		},
			[]string{"VM marina is Broken", "the hostagent died"}},
		{"guest unreachable", func(f *sessiontest.World) { f.Fail["guest.observe"] = errors.New("ssh: connection refused") },
			[]string{"ssh: connection refused"}},
		{"Docker down", func(f *sessiontest.World) { f.Fail["docker.version"] = errBoom; f.Fail["docker.kind-nodes"] = errBoom },
			[]string{"boom", "guest network: kind network"}},
		{"kind network untrusted", func(f *sessiontest.World) {
			delete(f.Network.Options, "com.docker.network.bridge.trusted_host_interfaces")
		}, []string{"guest network: kind network"}},
		{"local DNS down", func(f *sessiontest.World) {
			f.Mirrors = slices.DeleteFunc(f.Mirrors, func(c docker.Container) bool { return c.Name == dns.ServerName })
		}, []string{"local DNS: marina-dns missing"}},
		{"lima0 moved", func(f *sessiontest.World) {
			// marina's own route, through lima0's old address.
			old := netip.MustParseAddr("192.168.64.9")
			if err := f.MustMade().Add(f.Network.Subnet, old); err != nil {
				t.Fatal(err)
			}
			f.Route.Gateway = old
		}, []string{"host route: 172.30.0.0/16 → wrong gateway (via 192.168.64.9; the VM's lima0 is 192.168.64.3)"}},
		{"a VPN's route", func(f *sessiontest.World) { f.Route.Gateway = netip.MustParseAddr("10.8.0.1") },
			[]string{"host route: 172.30.0.0/16 → taken by"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sessiontest.Healthy(t)
			f.Network.Options = maps.Clone(f.Network.Options)
			c.breakIt(f)
			st, err := Get(context.Background(), f.Env)
			if err != nil {
				t.Fatal(err)
			}
			got := st.Problems()
			ok := len(got) == len(c.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], c.want[i])
			}
			if !ok {
				t.Errorf("problems = %q, want %q", got, c.want)
			}
		})
	}
}

// status's one guest round trip starts while Lima is asked about the VM
// (both cost tens of milliseconds on a Mac): Lima's answer waits here until
// the guest was asked. A VM that does not run shows so, whatever that
// early round trip said.
func TestStatusObservesWhileAskingLima(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	asked := make(chan struct{})
	var once sync.Once
	f.Before = func(call string) {
		switch call {
		case "guest.observe":
			once.Do(func() { close(asked) })
		case "vm.get marina":
			select {
			case <-asked:
			case <-time.After(10 * time.Second):
				t.Error("Lima answered before the guest was asked: the round trips ran one after the other")
			}
		}
	}
	st, err := Get(context.Background(), f.Env)
	if err != nil || st.VM.Status != vm.StatusRunning || len(st.VM.Errors) != 0 {
		t.Fatalf("status: %+v, %v", st.VM, err)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("status made %d guest round trips, want 1: %v", len(got), got)
	}

	f = sessiontest.New(t)
	f.Config(nil)
	f.Instance.Status = vm.StatusStopped
	st, err = Get(context.Background(), f.Env)
	if err != nil || st.VM.Status != vm.StatusStopped || st.Guest != nil || st.Clusters != nil {
		t.Errorf("a stopped VM: %+v, guest %+v, clusters %v, %v", st.VM, st.Guest, st.Clusters, err)
	}
}

// A VM provisioned by another marina is said with what differs and the
// way forward: up in place, or a new VM for another Ubuntu release.
func TestStatusVMBehind(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	st, err := Get(context.Background(), f.Env)
	if err != nil {
		t.Fatal(err)
	}
	if st.VM.Behind != "" || st.VM.Upgrade != "" || st.VM.ProvisionedBy != "v9.9.9" {
		t.Errorf("a current VM: %+v", st.VM)
	}
	p := guest.Provisioned("v0.1.0", "marina", "29.1.0")
	p.Record.Script = strings.Repeat("0", 64)
	f.Provisioning = &p
	if st, err = Get(context.Background(), f.Env); err != nil {
		t.Fatal(err)
	}
	if st.VM.Behind != "provisioned by marina v0.1.0 (this is v9.9.9)" || !strings.HasPrefix(st.VM.Upgrade, "`marina up` provisions it again in place") {
		t.Errorf("an older VM: %+v", st.VM)
	}
	p.OSVersion = "22.04"
	if st, err = Get(context.Background(), f.Env); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.VM.Upgrade, "it runs ubuntu 22.04, which marina cannot provision in place: `marina destroy && marina up` makes a new VM") {
		t.Errorf("another Ubuntu release: %+v", st.VM)
	}
}
