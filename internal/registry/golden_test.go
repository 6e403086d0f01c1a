package registry

import (
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/golden"
)

// The distribution config of a mirror with upstream credentials, its
// credential helper, and the
// hosts.toml that sends a node's docker.io pulls through the default
// Docker Hub mirror, byte for byte. After a meant change:
// go test ./internal/registry -run TestGolden -update, and review the diff.
func TestGolden(t *testing.T) {
	m := config.DefaultMirrors()[0]
	m.Username, m.Password = "me", "example-password: 'quoted' # not a comment"
	cfg, err := Config(m)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "registry-config.yml.golden", cfg)
	auth, err := Auth(m)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "registry-auth.sh.golden", auth)

	files, err := CertsD(config.DefaultMirrors())
	if err != nil {
		t.Fatal(err)
	}
	hosts, ok := files["docker.io/hosts.toml"]
	if !ok {
		t.Fatalf("no docker.io/hosts.toml in %v", files)
	}
	golden.Check(t, "hosts.toml.golden", []byte(hosts))
}
