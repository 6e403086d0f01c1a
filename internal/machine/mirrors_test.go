package machine

import (
	"maps"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/registry"
)

func specsFor(t *testing.T, ms ...config.Mirror) []registry.Spec {
	t.Helper()
	s, err := registry.Specs(config.Registries{Image: config.DefaultRegistryImage, Mirrors: ms}, "/var/lib/marina/registry-cache", []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runningMirror(s registry.Spec, id string) docker.Container {
	return docker.Container{ID: id, Name: s.Name, State: "running", Labels: map[string]string{registry.LabelMirror: s.Name, registry.LabelConfig: s.Digest}}
}

func sums(specs ...registry.Spec) map[string]string {
	m := map[string]string{}
	for _, s := range specs {
		maps.Copy(m, s.Files())
	}
	return m
}

// edited are the specs' sums with file's changed; gone, without it.
func edited(file string, specs ...registry.Spec) map[string]string {
	m := sums(specs...)
	m[file] = "0"
	return m
}

func gone(file string, specs ...registry.Spec) map[string]string {
	m := sums(specs...)
	delete(m, file)
	return m
}

func names(cs []docker.Container) string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Name)
	}
	return strings.Join(n, ",")
}

func specNames(ss []registry.Spec) string {
	var n []string
	for _, s := range ss {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func TestPlanMirrors(t *testing.T) {
	quay := config.Mirror{Name: "registry-quayio", Port: 5010, RemoteURL: "https://quay.io"}
	gcr := config.Mirror{Name: "registry-gcrio", Port: 5020, RemoteURL: "https://gcr.io"}
	q, g := specsFor(t, quay)[0], specsFor(t, gcr)[0]
	quay2 := quay
	quay2.RemoteURL = "https://quay.example.com"
	q2 := specsFor(t, quay2)[0]
	old := docker.Container{ID: "x", Name: "registry-old", State: "running", Labels: map[string]string{registry.LabelMirror: "registry-old", registry.LabelConfig: "d"}}
	stopped := runningMirror(q, "q")
	stopped.State = "exited"

	cases := []struct {
		name           string
		specs          []registry.Spec
		have           []docker.Container
		sums           map[string]string
		writes         bool
		create, remove string
	}{
		{"nothing yet", []registry.Spec{q, g}, nil, nil, true, "registry-quayio,registry-gcrio", ""},
		{"all in place", []registry.Spec{q, g}, []docker.Container{runningMirror(q, "q"), runningMirror(g, "g")}, sums(q, g), false, "", ""},
		{"one upstream changed", []registry.Spec{q2, g}, []docker.Container{runningMirror(q, "q"), runningMirror(g, "g")}, sums(q, g), true, "registry-quayio", "registry-quayio"},
		{"a file edited in the VM", []registry.Spec{q, g}, []docker.Container{runningMirror(q, "q"), runningMirror(g, "g")}, edited(q.ConfigFile, q, g), true, "registry-quayio", "registry-quayio"},
		{"a credential helper edited in the VM", []registry.Spec{q, g}, []docker.Container{runningMirror(q, "q"), runningMirror(g, "g")}, edited(g.AuthFile, q, g), true, "registry-gcrio", "registry-gcrio"},
		{"a credential helper gone", []registry.Spec{q, g}, []docker.Container{runningMirror(q, "q"), runningMirror(g, "g")}, gone(q.AuthFile, q, g), true, "registry-quayio", "registry-quayio"},
		{"a mirror left the config", []registry.Spec{q}, []docker.Container{runningMirror(q, "q"), old}, sums(q), false, "", "registry-old"},
		{"a stale config file", []registry.Spec{q}, []docker.Container{runningMirror(q, "q")}, sums(q, g), true, "", ""},
		{"a stopped mirror", []registry.Spec{q}, []docker.Container{stopped}, sums(q), false, "registry-quayio", "registry-quayio"},
		{"no mirrors at all", nil, []docker.Container{runningMirror(q, "q")}, sums(q), true, "", "registry-quayio"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planMirrors(c.specs, c.have, c.sums)
			if p.writes != c.writes || specNames(p.create) != c.create || names(p.remove) != c.remove {
				t.Errorf("plan: writes %v create %q remove %q; want %v %q %q", p.writes, specNames(p.create), names(p.remove), c.writes, c.create, c.remove)
			}
			for _, s := range p.steps() {
				if strings.Contains(s.String(), "recreate") && s.Reason == "" {
					t.Errorf("step without a reason: %s", s)
				}
			}
		})
	}
}
