package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// What a build reports, from what Go recorded in it and what -ldflags -X
// stamped.
func TestGet(t *testing.T) {
	const rev = "4e9583daa70213ba8ba4900144f18b3c9caa43a0"
	const at = "2026-12-03T11:41:35Z"
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: "true"}}
	info := func(v string, s ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/bcollard/marina", Version: v}, Settings: s}, true
		}
	}
	for _, c := range []struct {
		name            string
		stamp, stampRev string
		read            func() (*debug.BuildInfo, bool)
		want            Build
		line            string
	}{
		{"go install @version", "", "", info("v0.3.0"),
			Build{Version: "v0.3.0", Go: "go1.26.8"}, "v0.3.0"},
		{"go install @commit: the pseudo-version's revision", "", "", info("v0.0.0-20261203114135-4e9583daa702"),
			Build{Version: "v0.0.0-20261203114135-4e9583daa702", Commit: "4e9583daa702", Go: "go1.26.8"}, "v0.0.0-20261203114135-4e9583daa702"},
		{"go install in a clone", "", "", info("v0.3.1-0.20261203114135-4e9583daa702+dirty", vcs...),
			Build{Version: "v0.3.1-0.20261203114135-4e9583daa702+dirty", Commit: rev, Modified: true, Date: at, Go: "go1.26.8"}, "v0.3.1-0.20261203114135-4e9583daa702+dirty"},
		{"go build without a version", "", "", info("(devel)", vcs...),
			Build{Version: "dev", Commit: rev, Modified: true, Date: at, Go: "go1.26.8"}, "dev-4e9583daa702-dirty"},
		{"nothing known", "", "", info("(devel)"),
			Build{Version: "dev", Go: "go1.26.8"}, "dev"},
		{"no build info", "", "", func() (*debug.BuildInfo, bool) { return nil, false },
			Build{Version: "dev", Go: runtime.Version()}, "dev"},
		{"stamped", "v0.4.0", "abc123", info("(devel)", vcs...),
			Build{Version: "v0.4.0", Commit: "abc123", Date: "2026-12-01T09:00:00Z", Go: "go1.26.8"}, "v0.4.0"},
		{"version stamped, commit from the build", "v0.4.0", "", info("v0.4.0", vcs...),
			Build{Version: "v0.4.0", Commit: rev, Modified: true, Date: at, Go: "go1.26.8"}, "v0.4.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			Version, Commit, Date = c.stamp, c.stampRev, ""
			if c.stampRev != "" {
				Date = "2026-12-01T09:00:00Z" // a release stamps all three
			}
			t.Cleanup(func() { Version, Commit, Date = "", "", "" })
			c.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
			got := get(c.read)
			if got != c.want {
				t.Errorf("get = %+v\nwant  %+v", got, c.want)
			}
			if got.String() != c.line {
				t.Errorf("String = %q, want %q", got.String(), c.line)
			}
		})
	}
}
