// Package version reports which marina this is.
package version

import "runtime/debug"

// Version is stamped at build time:
// -ldflags "-X github.com/bcollard/marina/internal/version.Version=v0.3.0".
var Version = ""

// String returns the stamped version, else the module version `go install
// …@version` records, else "dev" with the commit when the build knows it.
func String() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev-" + rev
}
