package fleet_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/fleet"
)

// klimaxFleet is a klimax manifest with comments everywhere, mirrors
// marina's config may not have, and klimax's apiVersion also in a comment
// before the real one.
const klimaxFleet = `# demo fleet (was apiVersion: klimax.dev/v1alpha1 in klimax)
apiVersion: klimax.dev/v1alpha1   # klimax's
kind: Fleet
metadata:
  name: demo # the fleet label
spec:
  maxParallel: 2
  # defaults for all
  defaults:
    region: europe-west4
    registries: {mirrors: [docker.io, us-docker.pkg.dev]}
  clusters:
    - east
    - name: west
      dependsOn: [east]
      addons:
        metricsServer: {enabled: true, version: v0.7.1}
# the end
`

// marinas is what Rewrite must make of s: the apiVersion's value (the
// last text value in s), and only it, replaced.
func marinas(s, value string) string {
	j := strings.LastIndex(s, value)
	return s[:j] + strings.Replace(value, fleet.KlimaxAPIVersion, fleet.APIVersion, 1) + s[j+len(value):]
}

func rewrite(t *testing.T, in string) string {
	t.Helper()
	out, changed, err := fleet.Rewrite([]byte(in))
	if err != nil || !changed {
		t.Fatalf("Rewrite = %v, %v\n%s", changed, err, in)
	}
	// A second rewrite has nothing to do.
	again, changed, err := fleet.Rewrite(out)
	if err != nil || changed || !bytes.Equal(again, out) {
		t.Errorf("Rewrite of its output = %v, %v", changed, err)
	}
	return string(out)
}

func TestRewriteKeepsEveryOtherByte(t *testing.T) {
	out := rewrite(t, klimaxFleet)
	if want := marinas(klimaxFleet, fleet.KlimaxAPIVersion); out != want {
		t.Errorf("Rewrite =\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(out, "# demo fleet (was apiVersion: klimax.dev/v1alpha1 in klimax)\n") {
		t.Error("the comment was rewritten")
	}
	// The same Fleet as klimax's, read as fleet apply reads it.
	k := fleet.Known{Mirrors: []string{"docker.io", "us-docker.pkg.dev"}, MetricsServer: []string{"v0.7.1", "v0.8.0"}}
	before, err := fleet.Load("f", []byte(klimaxFleet), k)
	if err != nil {
		t.Fatal(err)
	}
	after, err := fleet.Load("f", []byte(out), k)
	if err != nil {
		t.Fatal(err)
	}
	if !before.Converted || after.Converted || after.Name != "demo" {
		t.Errorf("Converted %v → %v, name %q", before.Converted, after.Converted, after.Name)
	}
	after.Converted = true
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the Fleet changed:\n%+v\n%+v", before, after)
	}
}

func TestRewriteForms(t *testing.T) {
	body := "kind: Fleet\nspec:\n  clusters: [a]\n"
	cases := map[string]struct{ in, value string }{
		"double quotes": {"apiVersion: \"klimax.dev/v1alpha1\"\n" + body, `"klimax.dev/v1alpha1"`},
		"single quotes": {"apiVersion:   'klimax.dev/v1alpha1' # q\n" + body, `'klimax.dev/v1alpha1'`},
		"a tag":         {"apiVersion: !!str \"klimax.dev/v1alpha1\"\n" + body, `"klimax.dev/v1alpha1"`},
		"an anchor":     {"apiVersion: &v klimax.dev/v1alpha1\n" + body, "klimax.dev/v1alpha1"},
		"not first":     {body + "apiVersion: klimax.dev/v1alpha1\n", "klimax.dev/v1alpha1"},
		"CRLF":          {strings.ReplaceAll("# c\r\napiVersion: klimax.dev/v1alpha1\r\n"+body, "\n", "\r\n"), "klimax.dev/v1alpha1"},
		"CR":            {strings.ReplaceAll("# c\napiVersion: \"klimax.dev/v1alpha1\"\n"+body, "\n", "\r"), `"klimax.dev/v1alpha1"`},
		"BOM":           {"\ufeffapiVersion: klimax.dev/v1alpha1\n" + body, "klimax.dev/v1alpha1"},
		// Characters of more than one byte before it on its line.
		"flow":          {"{kind: Fleet, spec: {clusters: [{name: a, registries: {mirrors: [\"é€\"]}}]}, apiVersion: klimax.dev/v1alpha1}\n", "klimax.dev/v1alpha1"},
		"indented flow": {"# x\n{\n  kind: Fleet, spec: {clusters: [a]},\n  \"apiVersion\": 'klimax.dev/v1alpha1'\n}\n", `'klimax.dev/v1alpha1'`},
	}
	for what, c := range cases {
		t.Run(what, func(t *testing.T) {
			if _, err := fleet.Load("f", []byte(c.in), fleet.Known{Mirrors: []string{"é€"}}); err != nil {
				t.Fatalf("the parser refuses the fixture: %v", err)
			}
			if out, want := rewrite(t, c.in), marinas(c.in, c.value); out != want {
				t.Errorf("Rewrite = %q, want %q", out, want)
			}
		})
	}
}

func TestRewriteMarinasIsUnchanged(t *testing.T) {
	in := []byte(marinas(klimaxFleet, fleet.KlimaxAPIVersion))
	out, changed, err := fleet.Rewrite(in)
	if err != nil || changed || !bytes.Equal(out, in) {
		t.Errorf("Rewrite of marina's = %v, %v", changed, err)
	}
}

func TestRewriteRefuses(t *testing.T) {
	body := "kind: Fleet\nspec:\n  clusters: [a]\n"
	cases := map[string]struct{ in, want string }{
		"empty":          {"", "empty"},
		"a list":         {"- a\n- b\n", "expected a mapping"},
		"a Deployment":   {"apiVersion: apps/v1\nkind: Deployment\n", "not a Fleet's"},
		"an unknown key": {"apiVersion: klimax.dev/v1alpha1\n" + body + "status: {}\n", `unknown key "status"`},
		"not YAML":       {"apiVersion: klimax.dev/v1alpha1\nkind: [\n", "not YAML"},
		"two documents":  {"apiVersion: klimax.dev/v1alpha1\n" + body + "---\n" + body, "second YAML document"},
	}
	for what, c := range cases {
		t.Run(what, func(t *testing.T) {
			out, changed, err := fleet.Rewrite([]byte(c.in))
			var fe *fleet.Error
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || changed || out != nil {
				t.Errorf("Rewrite = %q, %v, %v", out, changed, err)
			}
		})
	}
	// Forms whose bytes are not the value as it reads: the parser takes
	// them, Rewrite says to edit them by hand.
	for what, in := range map[string]string{
		"folded": "apiVersion: >-\n  klimax.dev/v1alpha1\n" + body,
		"escape": "apiVersion: \"klimax.dev\\x2Fv1alpha1\"\n" + body,
	} {
		t.Run(what, func(t *testing.T) {
			if f, err := fleet.Load("f", []byte(in), fleet.Known{}); err != nil || !f.Converted {
				t.Fatalf("the parser refuses the fixture: %v", err)
			}
			out, changed, err := fleet.Rewrite([]byte(in))
			if err == nil || !strings.Contains(err.Error(), "by hand") || changed || out != nil {
				t.Errorf("Rewrite = %q, %v, %v", out, changed, err)
			}
		})
	}
}

// What Rewrite changes is the apiVersion's value, and the Fleet read
// back is the same.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{klimaxFleet, "apiVersion: 'klimax.dev/v1alpha1'\nkind: Fleet\nspec: {clusters: [a]}\n", "{apiVersion: klimax.dev/v1alpha1, kind: Fleet, spec: {clusters: [a]}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, changed, err := fleet.Rewrite([]byte(in))
		if err != nil || !changed {
			return
		}
		if len(out) != len(in) || strings.Count(string(out), fleet.APIVersion) != strings.Count(in, fleet.APIVersion)+1 {
			t.Fatalf("Rewrite(%q) = %q", in, out)
		}
		k := fleet.Known{}
		before, err1 := fleet.Load("f", []byte(in), k)
		after, err2 := fleet.Load("f", out, k)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("Load before %v, after %v", err1, err2)
		}
		if err1 == nil {
			after.Converted = true
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("the Fleet changed:\n%q\n%q", in, out)
			}
		}
	})
}
