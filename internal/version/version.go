// Package version reports which marina this is.
package version

import (
	"runtime"
	"runtime/debug"

	"golang.org/x/mod/module"
)

// Version, Commit and Date are stamped at build time, for a release
// (.goreleaser.yaml does it):
//
//	go build -ldflags "-X github.com/bcollard/marina/internal/version.Version=v0.3.0 -X github.com/bcollard/marina/internal/version.Commit=$(git rev-parse HEAD)" ./cmd/marina
//
// Unstamped, the build info Go records says the same: `go install
// ./cmd/marina` in a clone records the version of the tag (or a
// pseudo-version) and the revision; `go install …/cmd/marina@v0.3.0`
// records the module's version.
var (
	Version = ""
	Commit  = ""
	Date    = "" // when the commit was made, RFC 3339
)

// Build is what this binary knows of itself.
type Build struct {
	Version  string // the stamped version, else the module's, else "dev"
	Commit   string // the VCS revision it was built from; "" when unknown
	Modified bool   // built from a tree with uncommitted changes
	Date     string // the commit's time (RFC 3339); "" when unknown
	Go       string // the Go release that built it
	Platform string // GOOS/GOARCH
}

// Get is this binary's Build.
func Get() Build { return get(debug.ReadBuildInfo) }

// get is Get with the build info read by read (tests give their own).
func get(read func() (*debug.BuildInfo, bool)) Build {
	b := Build{Version: Version, Commit: Commit, Date: Date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := read(); ok {
		if v := bi.Main.Version; b.Version == "" && v != "" && v != "(devel)" {
			b.Version = v
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.modified" && Commit == "":
				b.Modified = s.Value == "true"
			case s.Key == "vcs.time" && b.Date == "":
				b.Date = s.Value
			}
		}
		if bi.GoVersion != "" {
			b.Go = bi.GoVersion
		}
	}
	// A module built from the module cache has no VCS settings, but its
	// pseudo-version carries the commit's prefix.
	if b.Commit == "" && module.IsPseudoVersion(b.Version) {
		b.Commit, _ = module.PseudoVersionRev(b.Version)
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	return b
}

// String is the version on one line: the version, or for an unversioned
// build "dev" with the commit when known ("dev-0123456789ab-dirty").
func (b Build) String() string {
	if b.Version != "dev" || b.Commit == "" {
		return b.Version
	}
	rev := b.Commit
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if b.Modified {
		rev += "-dirty"
	}
	return "dev-" + rev
}

// String is this binary's version on one line.
func String() string { return Get().String() }
