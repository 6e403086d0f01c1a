package machine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

func intact(t *testing.T, docs string, secret []byte) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(docs, "thesis.txt")); err != nil || !bytes.Equal(b, secret) {
		t.Fatalf("the user's file behind the link is gone or changed: %v", err)
	}
}

// S1: a mirror's folder the VM replaced with a link out of the cache is
// refused, naming it, and nothing behind it is touched; a link deep in a
// real mirror folder is removed as a link, its target untouched.
func TestCleanCacheFollowsNoLink(t *testing.T) {
	for _, mirror := range []string{"registry-quayio", "registry-dockerio"} {
		t.Run(mirror, func(t *testing.T) {
			f := sessiontest.New(t)
			f.Config(nil)
			docs, secret := f.HostileCache()
			for _, m := range config.Default().Registries.Mirrors {
				f.Mirrors = append(f.Mirrors, docker.Container{ID: m.Name + "-id", Name: m.Name, State: "running", Labels: map[string]string{registry.LabelMirror: m.Name}})
			}
			_, err := CleanCache(context.Background(), f.Env, []string{mirror}, CleanCacheOptions{Yes: true})
			path := filepath.Join(f.Env.Paths.RegistryCache(), mirror)
			if err == nil || !strings.Contains(err.Error(), path+" is a symbolic link") {
				t.Errorf("clean-cache %s: %v", mirror, err)
			}
			intact(t, docs, secret)
			if _, err := os.Lstat(filepath.Join(filepath.Dir(filepath.Dir(f.Env.Paths.RegistryCache())), ".marina", "config.yaml")); err != nil {
				t.Errorf("marina's own config went: %v", err)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link itself was changed: %v", err)
			}
			// Refused before anything happened: no mirror was stopped.
			if got := f.Called("docker.remove"); len(got) != 0 {
				t.Errorf("mirrors stopped before the refusal: %v", got)
			}
		})
	}
	t.Run("a link inside a mirror's folder", func(t *testing.T) {
		f := sessiontest.New(t)
		f.Config(nil)
		docs, secret := f.HostileCache()
		if _, err := CleanCache(context.Background(), f.Env, []string{"registry-gcrio"}, CleanCacheOptions{Yes: true}); err != nil {
			t.Fatalf("%v\n%s", err, f.Stderr.String())
		}
		intact(t, docs, secret)
		ents, err := os.ReadDir(filepath.Join(f.Env.Paths.RegistryCache(), "registry-gcrio"))
		if err != nil || len(ents) != 0 {
			t.Errorf("registry-gcrio after emptying: %v %v", ents, err)
		}
	})
}
