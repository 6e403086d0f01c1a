package e2e

// Shell completion against the lab: marina __complete, as a shell calls it,
// reads the lab's real Docker behind the forwarded socket, the clusters'
// real API servers and the lab's config.

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
)

var completionEnd = regexp.MustCompile(`^Completion ended with directive: [A-Za-z, ]+\n$`)

// completion runs `marina __complete args…` and returns the names offered
// and the directive; an exit status other than 0, or anything on stderr
// but cobra's own line, fails the test.
func completion(t *testing.T, args ...string) ([]string, int) {
	t.Helper()
	r := marina(t, append([]string{"__complete"}, args...)...)
	if r.code != 0 || !completionEnd.MatchString(r.stderr) {
		t.Fatalf("marina __complete %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	var d int
	if _, err := fmt.Sscanf(lines[len(lines)-1], ":%d", &d); err != nil {
		t.Fatalf("marina __complete %q printed no directive last:\n%s", args, r.stdout)
	}
	return lines[:len(lines)-1], d
}

// offers checks that completing args offers want, and no file names (:4,
// ShellCompDirectiveNoFileComp).
func offers(t *testing.T, want []string, args ...string) {
	t.Helper()
	names, d := completion(t, args...)
	if !slices.Equal(names, want) || d != 4 {
		t.Errorf("marina __complete %q = %q :%d, want %q :4", args, names, d, want)
	}
}

// configMirrors are the mirrors of the lab's marina config.
func configMirrors(t *testing.T) []string {
	t.Helper()
	paths, err := config.ResolvePaths(os.Getenv, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(paths)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range cfg.Registries.Mirrors {
		names = append(names, m.Name)
	}
	return names
}

// testCompletion runs in TestClusters while its clusters exist: the names
// a tab offers are the clusters cluster list shows, the regions their
// nodes carry, the contexts marina merged and the configured mirrors.
func testCompletion(t *testing.T) {
	rows := listClusters(t)
	var names, regions []string
	for _, r := range rows {
		names = append(names, r.Name)
		if g := r.Labels["topology.kubernetes.io/region"]; g != "" && !slices.Contains(regions, g) {
			regions = append(regions, g)
		}
	}
	slices.Sort(names)
	slices.Sort(regions)
	if len(names) < 2 || len(regions) < 2 {
		t.Fatalf("the test needs two clusters in two regions, the lab has %+v", rows)
	}
	offers(t, names, "cluster", "delete", "")
	offers(t, names[1:], "cluster", "delete", names[0], "")
	offers(t, names, "cluster", "label", "")
	offers(t, names, "kubeconfig", "merge", "")
	offers(t, names, "kubeconfig", "path", "")
	// The contexts marina wrote; the user's own (prod, dev-staging) stay out.
	var contexts []string
	for _, n := range names {
		if hasContext(t, n) {
			contexts = append(contexts, n)
		}
	}
	offers(t, contexts, "kubeconfig", "use", "")
	offers(t, regions, "cluster", "create", "x", "--region", "")
	offers(t, configMirrors(t), "registry", "clean-cache", "")
	names, d := completion(t, "fleet", "apply", "-f", "")
	if d != 8 || !slices.Equal(names, []string{"yaml", "yml"}) {
		t.Errorf("fleet apply -f offers %q :%d, want YAML files (:8)", names, d)
	}
}

// testCompletionVMDown runs in TestLifecycle while the VM is stopped:
// nothing live is offered, no file names, no error; what the config names
// still is.
func testCompletionVMDown(t *testing.T) {
	for _, args := range [][]string{
		{"cluster", "delete", ""},
		{"kubeconfig", "merge", ""},
		{"fleet", "describe", ""},
		{"cluster", "create", "x", "--region", ""},
	} {
		offers(t, nil, args...)
	}
	offers(t, configMirrors(t), "registry", "clean-cache", "")
}
