package config

import (
	"errors"
	"os"
	"path/filepath"
)

// Paths locates everything marina keeps on the host.
type Paths struct {
	Home   string // the user's home folder
	Dir    string // marina's folder: $MARINA_HOME, else ~/.marina
	Config string // the config file: --config, else <Dir>/config.yaml
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
	p.Config = configFlag
	if p.Config == "" {
		p.Config = filepath.Join(p.Dir, "config.yaml")
	}
	return p, nil
}

// LimaHome is the LIMA_HOME marina runs limactl with, so its VM stays apart
// from the user's own Lima instances.
func (p Paths) LimaHome() string { return filepath.Join(p.Dir, "lima") }

// InstanceDir is the Lima instance folder of VM name.
func (p Paths) InstanceDir(name string) string { return filepath.Join(p.LimaHome(), name) }

// DockerSocket is where Lima forwards the VM's Docker socket.
func (p Paths) DockerSocket(name string) string {
	return filepath.Join(p.Home, "."+name+".docker.sock")
}

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

// Kubeconfig is cluster name's own kubeconfig file.
func (p Paths) Kubeconfig(name string) string {
	return filepath.Join(p.Home, ".kube", "marina", name+".kubeconfig")
}
