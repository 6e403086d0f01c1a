package app

import (
	"context"
	"fmt"
	"io"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/vm"
)

// Status is what marina status reports; its JSON form is a stable contract.
type Status struct {
	VM VMStatus `json:"vm"`
}

// VMStatus is the VM section.
type VMStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"` // Running, Stopped, Broken, … or NotCreated
	VMType string `json:"vmType,omitempty"`
	Arch   string `json:"arch,omitempty"`
	CPUs   int    `json:"cpus,omitempty"`
	Memory string `json:"memory,omitempty"`
	Disk   string `json:"disk,omitempty"`
	Dir    string `json:"dir,omitempty"`
	// Lima0 is the guest's vzNAT address with its prefix (running VM only).
	Lima0 string `json:"lima0,omitempty"`
	// DockerSocket is the forwarded socket; Docker is the daemon version
	// answering on it.
	DockerSocket string   `json:"dockerSocket"`
	Docker       string   `json:"docker,omitempty"`
	Errors       []string `json:"errors,omitempty"`
}

// NotCreated is the status of a VM that does not exist.
const NotCreated = "NotCreated"

// GetStatus observes everything it can and never stops at the first
// failure: each problem lands in Errors next to what was learned.
func GetStatus(ctx context.Context, e *Env) (Status, error) {
	cfg, err := e.VMConfig()
	if err != nil {
		return Status{}, err
	}
	l, err := e.Limactl()
	if err != nil {
		return Status{}, err
	}
	name := cfg.VM.Name
	s := Status{VM: VMStatus{Name: name, Status: NotCreated, DockerSocket: e.Paths.DockerSocket(name)}}
	in, err := l.Get(ctx, name)
	if err != nil {
		return s, err
	}
	if in == nil {
		return s, nil
	}
	v := &s.VM
	v.Status, v.VMType, v.Arch, v.CPUs, v.Dir = in.Status, in.VMType, in.Arch, in.CPUs, in.Dir
	v.Memory = units.BytesSize(float64(in.Memory))
	v.Disk = units.BytesSize(float64(in.Disk))
	v.Errors = append(v.Errors, in.Errors...)
	if in.Status != vm.StatusRunning {
		return s, nil
	}
	if st, err := guest.Observe(ctx, e.Guest(l, name)); err != nil {
		v.Errors = append(v.Errors, err.Error())
	} else {
		v.Lima0 = st.Lima0.String()
	}
	dc, err := docker.Dial(v.DockerSocket)
	if err == nil {
		defer dc.Close()
		v.Docker, err = dc.Version(ctx)
	}
	if err != nil {
		v.Errors = append(v.Errors, err.Error())
	}
	return s, nil
}

// PrintStatus writes the text form.
func PrintStatus(w io.Writer, s Status) {
	v := s.VM
	fmt.Fprintln(w, "=== VM ===")
	if v.Status == NotCreated {
		fmt.Fprintf(w, "  %s: not created (run `marina up`)\n", v.Name)
		return
	}
	fmt.Fprintf(w, "  name:     %s\n", v.Name)
	fmt.Fprintf(w, "  status:   %s\n", v.Status)
	fmt.Fprintf(w, "  machine:  %s %s, %d CPUs, %s memory, %s disk\n", v.VMType, v.Arch, v.CPUs, v.Memory, v.Disk)
	if v.Lima0 != "" {
		fmt.Fprintf(w, "  lima0:    %s\n", v.Lima0)
	}
	if v.Docker != "" {
		fmt.Fprintf(w, "  docker:   %s on unix://%s\n", v.Docker, v.DockerSocket)
	}
	for _, err := range v.Errors {
		fmt.Fprintf(w, "  problem:  %s\n", err)
	}
}
