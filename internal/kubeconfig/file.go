package kubeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bcollard/marina/internal/fileutil"
)

// FromKind turns kind's export of cluster name into marina's kubeconfig,
// with the API server at server; cert is the API server's serving
// certificate, which must name an address the Mac can use.
func FromKind(kindConfig, cert []byte, name, server, home string) ([]byte, error) {
	tlsName, err := TLSServerName(cert, server)
	if err != nil {
		return nil, fmt.Errorf("%w: the cluster cannot be reached at %s; recreate it", err, server)
	}
	return Rename(kindConfig, name, server, tlsName, home)
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

// WriteFile writes cluster name's own kubeconfig, 0600 in a 0700 folder,
// over a file there only when o owns it: ~/.kube/marina is shared by every
// marina home, and another's file of that name is not this one's to
// replace.
func WriteFile(path, name string, kc []byte, o Owner) error {
	if err := CheckFile(path, name, o); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fileutil.WriteAtomic(path, kc, 0o600)
}

// NotOwnedError is a cluster's kubeconfig file that is not the Owner's to
// replace, remove or use.
type NotOwnedError struct {
	Path, Name string
	// What completes "it …": whose the file is.
	What string
	fix  string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s, so marina left it alone: %s", e.Path, e.What, e.fix)
}

// CheckFile is nil when cluster name's file at path is missing or o's;
// otherwise a *NotOwnedError saying whose it is.
func CheckFile(path, name string, o Owner) error {
	root, err := readTarget(path)
	if err != nil || root == nil {
		return err
	}
	for _, item := range seqItems(mapValue(root, "contexts")) {
		if itemName(item) == name {
			if o.owns("contexts", item) {
				return nil
			}
			return &NotOwnedError{Path: path, Name: name, What: "is " + o.whose("contexts", item), fix: o.fix("contexts", item, name, path)}
		}
	}
	return &NotOwnedError{Path: path, Name: name, What: "has no context " + name + " that marina wrote", fix: "if it is a leftover, move it away"}
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

// Own reports whether path is cluster name's own kubeconfig
// as marina writes it: a regular file (not a link to elsewhere) whose
// context name carries marina's mark. Missing is false; anything else that
// is not marina's is an error that says what it is.
func Own(path, name string, o Owner) (bool, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !st.Mode().IsRegular():
		return false, fmt.Errorf("it is not a file marina wrote (%s)", st.Mode().Type())
	}
	var no *NotOwnedError
	switch err := CheckFile(path, name, o); {
	case errors.As(err, &no):
		return false, errors.New("it " + no.What)
	case err != nil:
		return false, err
	}
	return true, nil
}
