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

// Found reports whether home holds a klimax installation: its folder,
// or a link where it would be (which Check refuses).
func Found(home string) bool {
	st, err := os.Lstat(Locate(home).Dir)
	return err == nil && (st.IsDir() || st.Mode()&fs.ModeSymlink != 0)
}

// LinkError is a link where migrate expected one of klimax's own folders:
// migrate follows no link, so it and what it points at are left alone.
type LinkError struct {
	Path, Target string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a link to %s, not klimax's own folder: migrate follows no link, so it leaves both alone", e.Path, e.Target)
}

// linked is a LinkError when path is a link, nil otherwise.
func linked(path string) error {
	if to, err := os.Readlink(path); err == nil {
		return &LinkError{Path: path, Target: to}
	}
	return nil
}

// Check refuses a klimax folder that is a link: everything migrate moves
// and renames is under it.
func (k Klimax) Check() error {
	if err := linked(k.Dir); err != nil {
		return fmt.Errorf("%w; nothing was changed: if it is your klimax installation, put the folder itself at %s and run marina migrate again", err, k.Dir)
	}
	return nil
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

// CacheDirs lists the folders in klimax's host cache that migrate moves,
// sorted: real folders named after one of mirrors (klimax's mirrors in
// effect). Everything else there is left alone, and said in notes: a link
// (the cache folder itself, or an entry), something that is not a folder,
// a folder of no mirror of klimax's.
func (k Klimax) CacheDirs(mirrors map[string]string) (dirs, notes []string, err error) {
	if err := linked(k.Cache()); err != nil {
		return nil, []string{err.Error()}, nil
	}
	ents, err := os.ReadDir(k.Cache())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", k.Cache(), err)
	}
	for _, e := range ents {
		p := filepath.Join(k.Cache(), e.Name())
		_, mirror := mirrors[e.Name()]
		switch {
		case strings.HasPrefix(e.Name(), "."):
		case e.Type()&fs.ModeSymlink != 0:
			if err := linked(p); err != nil {
				notes = append(notes, err.Error())
			} else { // gone meanwhile
				notes = append(notes, p+" changed while migrate looked: left alone")
			}
		case !e.IsDir():
			notes = append(notes, p+" is not a folder: left alone")
		case !mirror:
			notes = append(notes, p+" is no mirror of klimax's config: left alone")
		default:
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	return dirs, notes, nil
}
