package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bcollard/marina/internal/fileutil"
)

// FromKind turns kind's export of cluster name into marina's kubeconfig,
// with the API server at server; cert is the API server's serving
// certificate, which must name an address the Mac can use.
func FromKind(kindConfig, cert []byte, name, server string) ([]byte, error) {
	tlsName, err := TLSServerName(cert, server)
	if err != nil {
		return nil, fmt.Errorf("%w: the cluster cannot be reached at %s; recreate it", err, server)
	}
	return Rename(kindConfig, name, server, tlsName)
}

// ReadFile reads cluster name's own kubeconfig file at path.
func ReadFile(path, name string) ([]byte, error) {
	kc, err := fileutil.ReadRegular(path, MaxSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, Missing(name, path)
	}
	return kc, err
}

// Missing is the error for cluster name's kubeconfig file not at path.
func Missing(name, path string) error {
	return fmt.Errorf("cluster %s has no kubeconfig at %s: `marina kubeconfig merge %s` writes it", name, path, name)
}

// WriteFile writes a cluster's own kubeconfig, 0600 in a 0700 folder.
func WriteFile(path string, kc []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fileutil.WriteAtomic(path, kc, 0o600)
}

// Stale reports whether the kubeconfig at path names an API server other
// than server (lima0's address moved since it was written). A file that is
// missing or unreadable is not stale: there is nothing to point elsewhere.
func Stale(path, name, server string) bool {
	kc, err := ReadFile(path, name)
	if err != nil {
		return false
	}
	s, err := Server(kc)
	return err == nil && s != server
}
