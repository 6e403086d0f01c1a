package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The floors of internal/, written down (docs/development.md, "Layout"). Every arrow
// points down: the CLI imports the feature packages, a feature package
// the session kernel and the floors below it, the kernel only the floors.
var (
	// floors are the packages that each own one concern of the outside
	// world or of marina's own data; they know nothing of a command.
	floors = []string{"addons", "cluster", "config", "dns", "docker", "fileutil", "golden", "guest", "host",
		"kube", "kubeconfig", "podnet", "registry", "run", "slot", "testmanifests", "testpki", "ui", "vm"}
	// kernel is what every command works with.
	kernel = []string{"session"}
	// features may import each other only along these arrows.
	features = map[string][]string{
		"dashboard":   {"doctor", "fleet", "kindcluster", "status"},
		"doctor":      {"kindcluster", "machine", "status"},
		"dockerctx":   nil,
		"fleet":       {"kindcluster"},
		"image":       {"fleet", "kindcluster"},
		"kindcluster": nil,
		"logs":        {"doctor", "status", "version"},
		"machine":     {"kindcluster", "sudoers"},
		"migrate":     {"dockerctx", "fleet", "machine", "skill"},
		"skill":       {"version"},
		"status":      nil,
		"sudoers":     nil,
		"version":     nil,
	}
)

// maxLines bounds a package's non-test lines: past it, it holds more than
// one concern.
const maxLines = 3000

type goPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	// TestImports and XTestImports are the tests' own imports.
	TestImports  []string
	XTestImports []string
}

// TestLayers fails when a package of internal/ imports across the floors
// written above, when an internal package or test imports the lab, or
// when a package passes maxLines.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "github.com/bcollard/marina/internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/bcollard/marina/"
	short := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, mod), "internal/") }
	top := func(p string) string { return strings.Split(short(p), "/")[0] }
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		name, pkg := short(p.ImportPath), top(p.ImportPath)
		allowed := func(imp string) bool {
			to := top(imp)
			switch {
			case to == pkg: // a package's own sub-packages (session/sessiontest)
				return true
			case slices.Contains(floors, pkg):
				return slices.Contains(floors, to)
			case slices.Contains(kernel, pkg):
				return slices.Contains(floors, to)
			case pkg == "cli":
				return true
			}
			if _, ok := features[pkg]; !ok {
				t.Errorf("%s is in no floor: add it to floors, kernel or features in layers_test.go", name)
				return true
			}
			return slices.Contains(floors, to) || slices.Contains(kernel, to) || slices.Contains(features[pkg], to)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, mod+"lab/") {
				t.Errorf("%s imports the lab (%s): the lab is the tier above internal/", name, short(imp))
			}
			if strings.HasPrefix(imp, mod+"internal/") && !allowed(imp) {
				t.Errorf("%s imports %s, across the floors", name, short(imp))
			}
		}
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			if strings.HasPrefix(imp, mod+"lab/") {
				t.Errorf("%s's tests import the lab (%s)", name, short(imp))
			}
		}
		n := 0
		for _, f := range p.GoFiles {
			n += countLines(t, filepath.Join(p.Dir, f))
			if _, ok := features[pkg]; ok {
				checkPrintsNothing(t, filepath.Join(p.Dir, f), name+"/"+f)
			}
		}
		if n > maxLines {
			t.Errorf("%s has %d non-test lines, more than %d: split it by concern", name, n, maxLines)
		}
	}
	if seen < 20 {
		t.Fatalf("go list saw %d packages: the test looks at nothing", seen)
	}
}

// passThrough are the feature files that hand the terminal's streams to
// something else: marina shell runs the user's command on them.
var passThrough = []string{"machine/shell.go"}

// checkPrintsNothing fails when a feature package's file writes to the
// Env's stdout (e.Stdout, s.Env.Stdout) or the process's (os.Stdout): a
// feature returns what it did, and only the CLI prints it.
func checkPrintsNothing(t *testing.T, path, name string) {
	if slices.Contains(passThrough, name) {
		return
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Stdout" {
			return true
		}
		switch x := sel.X.(type) {
		case *ast.Ident:
			if x.Name == "e" || x.Name == "env" || x.Name == "os" {
				t.Errorf("%s writes to %s.Stdout: return the result, and print it in internal/cli", name, x.Name)
			}
		case *ast.SelectorExpr:
			if x.Sel.Name == "Env" || x.Sel.Name == "e" {
				t.Errorf("%s writes to %s.Stdout: return the result, and print it in internal/cli", name, x.Sel.Name)
			}
		}
		return true
	})
}

func countLines(t *testing.T, path string) int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		n++
	}
	return n
}
