package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/fileutil"
)

// Klimax is where a klimax installation keeps its state on the Mac, all
// derived from the home folder as klimax derived it.
type Klimax struct {
	Home string // the user's home folder
	Dir  string // ~/.klimax: klimax's folder and its LIMA_HOME
}

// Locate is the klimax installation of the user whose home is home.
func Locate(home string) Klimax {
	return Klimax{Home: home, Dir: filepath.Join(home, ".klimax")}
}

// Config is klimax's default config file.
func (k Klimax) Config() string { return filepath.Join(k.Dir, "config.yaml") }

// Cache holds the mirrors' caches (cacheStorage: host).
func (k Klimax) Cache() string { return filepath.Join(k.Dir, "registry-cache") }

// KubeDir holds the clusters' own kubeconfig files.
func (k Klimax) KubeDir() string { return filepath.Join(k.Home, ".kube", "klimax") }

// Skill is the folder of klimax's agent skill.
func (k Klimax) Skill() string { return filepath.Join(k.Home, ".claude", "skills", "klimax") }

// Key is Lima's SSH key in klimax's LIMA_HOME.
func (k Klimax) Key() string { return filepath.Join(k.Dir, "_config", "user") }

// Instance is the Lima instance folder of VM name.
func (k Klimax) Instance(name string) (string, error) {
	if err := checkLimaDir(name); err != nil {
		return "", err
	}
	return filepath.Join(k.Dir, name), nil
}

// Kept is where migrate keeps what it replaced outside ~/.klimax (klimax's
// skill, its lima.yaml), so that nothing it replaces is lost.
func (k Klimax) Kept() string { return filepath.Join(k.Dir, "migrated") }

// checkLimaDir refuses a VM name that would name one of the folders Lima
// and klimax keep beside the instances, or reach outside ~/.klimax.
func checkLimaDir(name string) error {
	if err := fileutil.CheckElement(name); err != nil {
		return fmt.Errorf("klimax's VM name: %w", err)
	}
	switch name {
	case "_config", "_networks", "share", "registry-cache", "migrated", "config.yaml":
		return fmt.Errorf("klimax's VM name %q is one of the folders beside the VMs in ~/.klimax", name)
	}
	if strings.HasPrefix(name, ".") {
		return fmt.Errorf("klimax's VM name %q starts with a dot", name)
	}
	return nil
}

// Found reports whether home holds a klimax installation: its config or
// its folder.
func Found(home string) bool {
	st, err := os.Stat(Locate(home).Dir)
	return err == nil && st.IsDir()
}

// ReadConfig reads klimax's config file; a missing one is nil data (klimax
// ran on its defaults then).
func (k Klimax) ReadConfig() ([]byte, error) {
	b, err := fileutil.ReadRegular(k.Config(), config.MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read klimax's config: %w", err)
	}
	return b, nil
}

// Kubeconfigs lists the clusters that have a kubeconfig file in
// ~/.kube/klimax, sorted; names that cannot be cluster names are skipped.
func (k Klimax) Kubeconfigs() ([]string, error) {
	ents, err := os.ReadDir(k.KubeDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", k.KubeDir(), err)
	}
	var out []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".kubeconfig")
		if !ok || !e.Type().IsRegular() || n == "" || fileutil.CheckElement(n) != nil || strings.HasPrefix(n, ".") {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// CacheDirs lists the mirror folders in klimax's host cache, sorted.
func (k Klimax) CacheDirs() ([]string, error) {
	ents, err := os.ReadDir(k.Cache())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", k.Cache(), err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}
