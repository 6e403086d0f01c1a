// Package testmanifests rebuilds, for tests, the addon manifests marina pins,
// from the addons' own Go modules: nothing can be downloaded from GitHub
// here, and a rebuild that gives the pinned bytes shows the pin is the
// release's.
package testmanifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Kustomize is the kustomize that builds metrics-server's release manifest
// (the release runs `kubectl kustomize`, whose kustomize gives the same
// bytes); lab/lab's KUSTOMIZE_VERSION is the same.
const Kustomize = "sigs.k8s.io/kustomize/kustomize/v5@v5.7.1"

// ModuleDir is the folder of module@version, from the module proxy or the
// local module cache.
func ModuleDir(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir() // outside any module: no go.mod or go.sum changes
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w: %s%s", module, version, err, out, stderr.Bytes())
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download -json %s@%s: %w (%s)", module, version, err, out)
	}
	return mod.Dir, nil
}

// MetricsServer is metrics-server's components.yaml at version, built as
// its release builds it: the manifests/overlays/release kustomization of
// its module.
func MetricsServer(version string) ([]byte, error) {
	dir, err := ModuleDir("sigs.k8s.io/metrics-server", version)
	if err != nil {
		return nil, err
	}
	// lab/lab up builds kustomize into its cache: the lab's tests run
	// where the module proxy cannot be reached.
	argv := []string{"go", "run", Kustomize}
	cache := os.Getenv("MARINA_LAB_CACHE")
	if cache == "" {
		cache = "/var/cache/marina-lab"
	}
	if bin := filepath.Join(cache, "bin", "kustomize"); isExec(bin) {
		argv = []string{bin}
	}
	argv = append(argv, "build", filepath.Join(dir, "manifests", "overlays", "release"))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = os.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build of metrics-server %s: %w: %s", version, err, stderr.Bytes())
	}
	return out, nil
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
