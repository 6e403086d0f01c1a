package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/status"
)

// status's text ends with the clusters of a running VM: one line each,
// (none), or unknown when Docker could not list them; a VM that does not
// run has no such section.
func TestPrintStatusClusters(t *testing.T) {
	running := status.VMStatus{Name: "marina", Status: "Running", VMType: "vz", Arch: "aarch64", CPUs: 4, Memory: "10GiB", Disk: "40GiB"}
	list := []status.ClusterStatus{{Name: "dev", Slot: 1, Nodes: 1, State: "running"}, {Name: "east-long", Slot: 12, Nodes: 3, State: "stopped"}, {Name: "odd", Nodes: 1, State: "running"}}
	none := []status.ClusterStatus{}
	for _, c := range []struct {
		name string
		st   status.Status
		want string // the end of the text; "" for no clusters section
	}{
		{"clusters", status.Status{VM: running, Clusters: &list},
			"=== Clusters ===\n  dev        slot 1   running  1 node\n  east-long  slot 12  stopped  3 nodes\n  odd        slot -   running  1 node\n"},
		{"none", status.Status{VM: running, Clusters: &none},
			"=== Clusters ===\n  (none): `marina cluster create NAME` makes one\n"},
		{"unknown", status.Status{VM: running},
			"=== Clusters ===\n  unknown: Docker did not list them (the VM's problems above say why)\n"},
		{"stopped VM", status.Status{VM: status.VMStatus{Name: "marina", Status: "Stopped"}}, ""},
		{"no VM", status.Status{VM: status.VMStatus{Name: "marina", Status: status.NotCreated}}, ""},
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
