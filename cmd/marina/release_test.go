package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The release's -ldflags (.goreleaser.yaml) stamp what marina version
// shows: the same flags, with a release's values put in for GoReleaser's
// templates, build a marina for this machine that reports them.
func TestReleaseStampsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds marina: not in the fast tier")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct {
			Main    string   `yaml:"main"`
			Goos    []string `yaml:"goos"`
			Goarch  []string `yaml:"goarch"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil || len(cfg.Builds) != 1 {
		t.Fatalf(".goreleaser.yaml: %v, %d builds", err, len(cfg.Builds))
	}
	build := cfg.Builds[0]
	if strings.Join(build.Goos, " ") != "darwin" || strings.Join(build.Goarch, " ") != "arm64 amd64" || build.Main != "./cmd/marina" {
		t.Errorf("the release builds %s of %v/%v, want ./cmd/marina for darwin/arm64 and darwin/amd64", build.Main, build.Goos, build.Goarch)
	}
	const commit, date = "4e9583daa70213ba8ba4900144f18b3c9caa43a0", "2026-12-03T11:41:35Z"
	flags := strings.NewReplacer("{{ .Version }}", "0.4.0", "{{ .FullCommit }}", commit, "{{ .CommitDate }}", date).Replace(strings.Join(build.Ldflags, " "))
	if strings.Contains(flags, "{{") {
		t.Fatalf("a template this test does not fill: %s", flags)
	}
	bin := filepath.Join(t.TempDir(), "marina")
	if out, err := exec.Command("go", "build", "-o", bin, "-ldflags", flags, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", flags, err, out)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("marina version: %v", err)
	}
	var v struct{ Version, Commit, Date string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != "v0.4.0" || v.Commit != commit || v.Date != date {
		t.Errorf("marina version of a release build says %+v", v)
	}
	if out, _ := exec.Command(bin, "--version").Output(); !strings.Contains(string(out), "v0.4.0") {
		t.Errorf("marina --version: %s", out)
	}
}
