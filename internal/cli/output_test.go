package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/app"
)

// status's text ends with the clusters of a running VM: one line each,
// (none), or unknown when Docker could not list them; a VM that does not
// run has no such section.
func TestPrintStatusClusters(t *testing.T) {
	running := app.VMStatus{Name: "marina", Status: "Running", VMType: "vz", Arch: "aarch64", CPUs: 4, Memory: "10GiB", Disk: "40GiB"}
	list := []app.ClusterStatus{{Name: "dev", Slot: 1, Nodes: 1, State: "running"}, {Name: "east-long", Slot: 12, Nodes: 3, State: "stopped"}, {Name: "odd", Nodes: 1, State: "running"}}
	none := []app.ClusterStatus{}
	for _, c := range []struct {
		name string
		st   app.Status
		want string // the end of the text; "" for no clusters section
	}{
		{"clusters", app.Status{VM: running, Clusters: &list},
			"=== Clusters ===\n  dev        slot 1   running  1 node\n  east-long  slot 12  stopped  3 nodes\n  odd        slot -   running  1 node\n"},
		{"none", app.Status{VM: running, Clusters: &none},
			"=== Clusters ===\n  (none): `marina cluster create NAME` makes one\n"},
		{"unknown", app.Status{VM: running},
			"=== Clusters ===\n  unknown: Docker did not list them (the VM's problems above say why)\n"},
		{"stopped VM", app.Status{VM: app.VMStatus{Name: "marina", Status: "Stopped"}}, ""},
		{"no VM", app.Status{VM: app.VMStatus{Name: "marina", Status: app.NotCreated}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printStatus(&b, c.st)
			out := b.String()
			if c.want == "" {
				if strings.Contains(out, "Clusters") {
					t.Errorf("a clusters section:\n%s", out)
				}
				return
			}
			if !strings.HasSuffix(out, c.want) {
				t.Errorf("status text ends:\n%s\nwant it to end:\n%s", out, c.want)
			}
		})
	}
}
