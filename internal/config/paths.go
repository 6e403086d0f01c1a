package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcollard/marina/internal/fileutil"
)

// Paths locates everything marina keeps on the host.
type Paths struct {
	Home   string // the user's home folder
	Dir    string // marina's folder: $MARINA_HOME, else ~/.marina
	Config string // the config file: --config, else <Dir>/config.yaml
	// Named is set when --config named Config: such a file must exist, as
	// only marina's own <Dir>/config.yaml is written with the defaults.
	Named bool
}

// ResolvePaths applies MARINA_HOME and the --config flag (empty when unset).
func ResolvePaths(getenv func(string) string, configFlag string) (Paths, error) {
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return Paths{}, errors.New("cannot find your home folder: set HOME")
		}
		home = h
	}
	p := Paths{Home: home, Dir: getenv("MARINA_HOME")}
	if p.Dir == "" {
		p.Dir = filepath.Join(home, ".marina")
	}
	p.Config, p.Named = configFlag, configFlag != ""
	if p.Config == "" {
		p.Config = filepath.Join(p.Dir, "config.yaml")
	}
	return p, nil
}

// CheckNamed fails when --config names a file that does not exist: a typo
// must not leave marina planning from the defaults, nor writing a default
// config at the mistyped path.
func (p Paths) CheckNamed() error {
	if !p.Named {
		return nil
	}
	if _, err := os.Stat(p.Config); errors.Is(err, os.ErrNotExist) {
		return p.namedMissing()
	}
	return nil
}

// namedMissing is the error for a --config that names no file.
func (p Paths) namedMissing() error {
	shown := p.Config
	if abs, err := filepath.Abs(p.Config); err == nil && abs != p.Config {
		shown += " (" + abs + ")"
	}
	return fmt.Errorf("--config names %s, which does not exist: check the path, or create the file (an empty file means the defaults); without --config marina uses %s, which marina up writes with the defaults",
		shown, filepath.Join(p.Dir, "config.yaml"))
}

// LimaHome is the LIMA_HOME marina runs limactl with, so its VM stays apart
// from the user's own Lima instances.
func (p Paths) LimaHome() string { return filepath.Join(p.Dir, "lima") }

// VMFiles are the host paths that belong to one VM.
type VMFiles struct {
	// InstanceDir is the Lima instance folder.
	InstanceDir string
	// DockerSocket is where Lima forwards the VM's Docker socket.
	DockerSocket string
}

// VM is where VM name's files are: each a plain child of its folder, or an
// error for a name that would reach elsewhere.
func (p Paths) VM(name string) (VMFiles, error) {
	dir, err := fileutil.Child(p.LimaHome(), name)
	if err != nil {
		return VMFiles{}, fmt.Errorf("VM name: %w", err)
	}
	sock, err := fileutil.Child(p.Home, "."+name+".docker.sock")
	if err != nil {
		return VMFiles{}, fmt.Errorf("VM name: %w", err)
	}
	return VMFiles{InstanceDir: dir, DockerSocket: sock}, nil
}

// Routes records the host routes marina made.
func (p Paths) Routes() string { return filepath.Join(p.Dir, "routes.json") }

// Sudoers records the sudoers drop-in marina installed.
func (p Paths) Sudoers() string { return filepath.Join(p.Dir, "sudoers.json") }

// Provisioned is marina up's note of how the VM was provisioned, which
// marina version reads (guest.Seen).
func (p Paths) Provisioned() string { return filepath.Join(p.Dir, "provisioned.json") }

// LabelKey keys the digests marina puts in container labels (so a label
// cannot be used to check a guessed registry password).
func (p Paths) LabelKey() string { return filepath.Join(p.Dir, "label.key") }

// RegistryCache is the host folder that holds the mirrors' caches.
func (p Paths) RegistryCache() string { return filepath.Join(p.Dir, "registry-cache") }

// Cache holds downloads marina keeps (the MetalLB manifest).
func (p Paths) Cache() string { return filepath.Join(p.Dir, "cache") }

// Slots holds the slot reservations of clusters being created, and
// SlotsLock serialises choosing one.
func (p Paths) Slots() string { return filepath.Join(p.Dir, "slots") }

// SlotsLock is the lock file taken while a free slot is chosen.
func (p Paths) SlotsLock() string { return filepath.Join(p.Dir, "slots.lock") }

// KubeconfigDir holds the clusters' own kubeconfig files.
func (p Paths) KubeconfigDir() string { return filepath.Join(p.Home, ".kube", "marina") }

// Kubeconfig is cluster name's own kubeconfig file.
func (p Paths) Kubeconfig(name string) (string, error) {
	f, err := fileutil.Child(p.KubeconfigDir(), name+".kubeconfig")
	if err != nil || strings.ContainsAny(name, "*?[") {
		return "", fmt.Errorf("cluster %q has no kubeconfig file name: it is not a cluster name", name)
	}
	return f, nil
}

// Stopped holds a record per cluster marina cluster stop stopped.
func (p Paths) Stopped() string { return filepath.Join(p.Dir, "stopped") }

// StoppedRecord is the record cluster stop keeps of cluster name.
func (p Paths) StoppedRecord(name string) (string, error) {
	f, err := fileutil.Child(p.Stopped(), name+".json")
	if err != nil {
		return "", fmt.Errorf("cluster %q has no record file name: it is not a cluster name", name)
	}
	return f, nil
}

// MirrorCache is mirror name's cache folder on the Mac.
func (p Paths) MirrorCache(name string) (string, error) {
	d, err := fileutil.Child(p.RegistryCache(), name)
	if err != nil {
		return "", fmt.Errorf("mirror %q: %w", name, err)
	}
	return d, nil
}

// ResolverCopy is marina's copy of the Mac's resolver file for domain,
// which sudo installs into place.
func (p Paths) ResolverCopy(domain string) string {
	return filepath.Join(p.Dir, "resolver", domain)
}
