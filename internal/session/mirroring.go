package session

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/vm"
)

// VMMirrors reads from the VM's lima.yaml whether Lima mirrors the API
// ports a loopback-mode cluster listens on (Lima keeps the file in the
// instance folder and rewrites it on limactl start --set). The folder is
// the one marina's paths give, not one limactl printed.
func VMMirrors(p config.Paths, name string) (bool, error) {
	b, path, err := limaYAML(p, name)
	if err != nil {
		return false, err
	}
	ports := make([]int, 0, slot.Max)
	for n := slot.Min; n <= slot.Max; n++ {
		ports = append(ports, slot.APIPort(n))
	}
	m, err := vm.PortMirroring(b, ports)
	if err != nil {
		return false, fmt.Errorf("%s: %w: `marina destroy && marina up` makes the VM again", path, err)
	}
	return m, nil
}

// limaYAML reads VM name's lima.yaml, and says where it is.
func limaYAML(p config.Paths, name string) ([]byte, string, error) {
	files, err := p.VM(name)
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(files.InstanceDir, "lima.yaml")
	b, err := fileutil.ReadRegular(path, MaxLimaYAML)
	if err != nil {
		return nil, "", fmt.Errorf("read VM %s's settings: %w", name, err)
	}
	return b, path, nil
}

// VMForwards reads from the VM's lima.yaml whether Lima forwards the
// VM's 127.0.0.1:port to the Mac (the push registry's).
func VMForwards(p config.Paths, name string, port int) (bool, error) {
	b, _, err := limaYAML(p, name)
	if err != nil {
		return false, err
	}
	return vm.Forwards(b, port)
}

// CheckMirroring refuses a cluster whose API address the VM would not
// serve: a loopback-mode cluster (network.disablePortMirroring: false) on
// a VM that does not mirror ports. The other way round works (a cluster
// published on every address is reached on lima0).
func (s *Session) CheckMirroring() error {
	if s.Config.Network.DisablePortMirroring || s.Instance == nil {
		return nil
	}
	mirrors, err := VMMirrors(s.Paths, s.Name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: `marina up` repairs or recreates VM %s", err, s.Name)
	}
	if err != nil || mirrors {
		return err
	}
	return fmt.Errorf("network.disablePortMirroring is false in %s, but VM %s does not mirror ports yet: a cluster made now would have its API server on the Mac's 127.0.0.1, where nothing would answer. Run `marina up` (it restarts the VM to apply the setting) first, or set it back to true", s.Paths.Config, s.Name)
}

// MaxLimaYAML bounds reading an instance's lima.yaml (a few KiB are
// written there).
const MaxLimaYAML = 1 << 20
