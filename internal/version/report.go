package version

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/vm"
)

// Report is what `marina version` reports: this marina, the versions
// it pins for what it runs (built in; a config can pin other node images),
// and the limactl it finds.
type Report struct {
	Version   string  `json:"version"`
	Commit    string  `json:"commit,omitempty"`
	Modified  bool    `json:"modified,omitempty"`
	Date      string  `json:"date,omitempty"`
	GoVersion string  `json:"goVersion"`
	Platform  string  `json:"platform"`
	Pins      Pins    `json:"pins"`
	Limactl   Limactl `json:"limactl"`
	// VM is what the last marina up noted of the VM; nil when none did.
	VM *VM `json:"vm,omitempty"`
}

// VM is the VM's provisioning as the last marina up left it (guest.Seen),
// read on the Mac: version does not reach the VM.
type VM struct {
	Name          string    `json:"name,omitempty"`
	ProvisionedBy string    `json:"provisionedBy,omitempty"`
	NotedAt       time.Time `json:"notedAt,omitzero"`
	// Behind is set when this marina provisions its VMs with another
	// script: marina up provisions the VM again, in place. Nil when there
	// is no note to tell.
	Behind *bool `json:"behind,omitempty"`
	// Note says why there is no note to read: none yet, or one that is
	// not up's.
	Note string `json:"note,omitempty"`
}

// VMOf is the report's VM from up's note (guest.LoadSeen's results), or,
// without one, from the VMs Lima has (instances): a VM an older marina
// brought up last has no note.
func VMOf(s *guest.Seen, err error, instances []string) *VM {
	switch {
	case err != nil:
		return &VM{Note: err.Error()}
	case s != nil:
		behind := s.Behind()
		return &VM{Name: s.VM, ProvisionedBy: s.Marina, NotedAt: s.At, Behind: &behind}
	case len(instances) > 0:
		return &VM{Name: strings.Join(instances, ", "), Note: "no note of its provisioning yet (an older marina brought it up last): `marina status` says whether it is behind, and `marina up` brings it up to date in place"}
	}
	return nil
}

// Pins are the versions marina runs, each read from where marina
// uses it.
type Pins struct {
	Kind    string `json:"kind"`    // the kind CLI in the VM
	Kubectl string `json:"kubectl"` // kubectl in the VM (one of its minor is kept)
	// NodeVersion is the default Kubernetes version; NodeVersions every
	// one with a digest-pinned node image, newest first.
	NodeVersion  string   `json:"nodeVersion"`
	NodeVersions []string `json:"nodeVersions"`
	// MetalLB is the default, MetalLBVersions those with a pinned manifest.
	MetalLB         string   `json:"metalLB"`
	MetalLBVersions []string `json:"metalLBVersions"`
	ExternalDNS     string   `json:"externalDNS"`
	// MetricsServer is the version a Fleet gets unless it says one;
	// MetricsServerVersions those with a pinned manifest, oldest first.
	MetricsServer         string   `json:"metricsServer"`
	MetricsServerVersions []string `json:"metricsServerVersions"`
	DockerMajor           int      `json:"dockerMajor"` // the Docker Engine major the VM runs
	LimaMinimum           string   `json:"limaMinimum"` // the oldest Lima marina works with
}

// Limactl is the limactl marina would run: its path and version,
// or a note saying why there is none.
type Limactl struct {
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	Note    string `json:"note,omitempty"`
}

// LimactlWait bounds `limactl --version`: version must answer at once
// even when limactl hangs.
const LimactlWait = 2 * time.Second

// GetReport reports this marina's version and pins, and asks the limactl
// find gives (the one marina runs: $LIMACTL, else the PATH) for its
// version, waiting at most wait. It reads no config and never reaches the
// VM.
func GetReport(ctx context.Context, find func() (*vm.Limactl, error), wait time.Duration) Report {
	b := Get()
	ms := addons.MetricsServerVersions()
	info := Report{
		Version: b.Version, Commit: b.Commit, Modified: b.Modified, Date: b.Date, GoVersion: b.Go, Platform: b.Platform,
		Pins: Pins{
			Kind:                  vm.KindVersion,
			Kubectl:               vm.KubectlVersion,
			NodeVersion:           config.DefaultNodeVersion,
			NodeVersions:          config.Kind{}.NodeVersions(),
			MetalLB:               config.DefaultMetalLBVersion,
			MetalLBVersions:       addons.MetalLBVersions(),
			ExternalDNS:           dns.ExternalDNSVersion,
			MetricsServer:         ms[len(ms)-1], // the last is the default
			MetricsServerVersions: ms,
			DockerMajor:           vm.DockerMajor,
			LimaMinimum:           fmt.Sprintf("%d.%d.%d", vm.MinLima[0], vm.MinLima[1], vm.MinLima[2]),
		},
	}
	info.Limactl = askLimactl(ctx, find, wait)
	return info
}

func askLimactl(ctx context.Context, find func() (*vm.Limactl, error), wait time.Duration) Limactl {
	l, err := find()
	if err != nil {
		return Limactl{Note: err.Error()}
	}
	found := Limactl{Path: l.Bin}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	v, tooOld, err := l.FoundVersion(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		found.Note = fmt.Sprintf("`%s --version` did not answer within %s", l.Bin, wait)
	case err != nil:
		found.Note = err.Error()
	case tooOld != nil:
		found.Version, found.Note = v, tooOld.Error()
	default:
		found.Version = v
	}
	return found
}
