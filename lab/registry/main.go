// Command registry is distribution's own registry, built from
// github.com/distribution/distribution/v3 at the version marina pins
// (registry:3.1.2), with the storage drivers marina's mirrors use: the
// filesystem (and the in-memory one). distribution's cmd/registry also
// links the Azure, GCS and S3 drivers and their cloud SDKs, which no lab
// registry can reach: without them its build on a fresh machine went from
// 154 s to 61 s.
package main

import (
	_ "net/http/pprof" // as distribution's cmd/registry: its debug server's handlers
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/auth/silly"
	_ "github.com/distribution/distribution/v3/registry/auth/token"
	_ "github.com/distribution/distribution/v3/registry/proxy"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/middleware/redirect"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/middleware/rewrite"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
