package image

import (
	"slices"
	"testing"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"app":                  "docker.io/library/app:latest",
		"app:dev":              "docker.io/library/app:dev",
		"me/app:1":             "docker.io/me/app:1",
		"ghcr.io/me/app:1.2":   "ghcr.io/me/app:1.2",
		"localhost:5001/app:x": "localhost:5001/app:x",
	} {
		if got, err := Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "App:dev", "app:dev;id", "app dev", "-app"} {
		if got, err := Normalize(bad); err == nil {
			t.Errorf("Normalize(%q) = %q", bad, got)
		}
	}
}

func TestFromArchive(t *testing.T) {
	loaded := []string{"app:dev", "sha256:0123", "ghcr.io/me/w:1"}
	got, err := fromArchive(nil, loaded, "a.tar")
	if err != nil || !slices.Equal(got, []string{"docker.io/library/app:dev", "ghcr.io/me/w:1"}) {
		t.Errorf("every named image: %q, %v", got, err)
	}
	if _, err := fromArchive([]string{"docker.io/library/other:1"}, loaded, "a.tar"); err == nil {
		t.Error("an image the archive does not hold was accepted")
	}
	if _, err := fromArchive(nil, []string{"sha256:0123"}, "a.tar"); err == nil {
		t.Error("an archive of unnamed images loads nothing a pod could name")
	}
}
