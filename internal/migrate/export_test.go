package migrate

import (
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/fleet"
)

// The Fleet of klimax's clusters is one fleet apply reads, with every
// cluster in its slot and what was read of it.
func TestFleetExport(t *testing.T) {
	cs := []Cluster{
		{Name: "west", Num: 5},
		{Name: "east", Num: 1, Live: true, Workers: 2, NodeVersion: "v1.36.4", Region: "lab-1", Zone: "lab-1a",
			Labels: UserLabels(map[string]string{"managed-by": "klimax", "klimax.dev/fleet": "demo", "team": "net",
				"topology.kubernetes.io/region": "lab-1", "kubernetes.io/hostname": "east-control-plane", "node-role.kubernetes.io/control-plane": ""}),
			Fleet: "demo"},
	}
	b, err := Fleet(cs)
	if err != nil {
		t.Fatal(err)
	}
	known := fleet.Known{NodeImage: func(string) error { return nil }, MetricsServer: []string{"v0.8.0"}}
	f, err := fleet.Load("klimax-fleet.yaml", b, known)
	if err != nil {
		t.Fatalf("fleet.Load: %v\n%s", err, b)
	}
	if f.Name != "" {
		t.Errorf("clusters of different fleets made fleet %q", f.Name)
	}
	if len(f.Members) != 2 {
		t.Fatalf("members %+v", f.Members)
	}
	east, west := f.Members[0], f.Members[1]
	if east.Name != "east" || east.Num != 1 || east.Workers != 2 || east.NodeVersion != "v1.36.4" || east.Region != "lab-1" || east.Zone != "lab-1a" || east.Labels["team"] != "net" {
		t.Errorf("east: %+v", east)
	}
	for k := range east.Labels {
		if k != "team" {
			t.Errorf("east has label %s, not the user's", k)
		}
	}
	if west.Name != "west" || west.Num != 5 || west.Workers != 0 {
		t.Errorf("west: %+v", west)
	}
	if !strings.Contains(string(b), "# west could not be read") {
		t.Errorf("the header does not say west was not read:\n%s", b)
	}

	// One klimax fleet: the Fleet has its name.
	cs[0].Fleet = "demo"
	b, err = Fleet(cs)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := fleet.Load("klimax-fleet.yaml", b, known); err != nil || f.Name != "demo" {
		t.Errorf("fleet %q, %v\n%s", f.Name, err, b)
	}
	// A name marina refuses never reaches the file.
	if _, err := Fleet([]Cluster{{Name: "../x"}}); err == nil {
		t.Error("Fleet accepted the cluster name ../x")
	}
}
