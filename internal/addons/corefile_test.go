package addons

import (
	"os"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
)

func kubeadmCorefile(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/kubeadm.Corefile")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type res = config.DNSResolver

func TestCorefileAddsBlocksAfterKubeadms(t *testing.T) {
	orig := kubeadmCorefile(t)
	got, err := Corefile(orig, []res{
		{Domain: "Corp.Example.com.", Resolvers: []string{"10.0.0.53", "10.0.0.54:5353"}},
		{Domain: "demo.internal", Resolvers: []string{"172.30.255.53"}},
		{Domain: "v6.example", Resolvers: []string{"fd00::53", "[fd00::54]:5353"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := orig + `
# BEGIN marina: forwarding from kind.customDnsResolvers; edit the marina config, not this part
corp.example.com:53 {
    errors
    cache 30
    forward . 10.0.0.53 10.0.0.54:5353
}
demo.internal:53 {
    errors
    cache 30
    forward . 172.30.255.53
}
v6.example:53 {
    errors
    cache 30
    forward . fd00::53 [fd00::54]:5353
}
# END marina
`
	if got != want {
		t.Fatalf("Corefile =\n%s\nwant\n%s", got, want)
	}
	keys := serverKeys(got)
	for _, z := range []string{"", "corp.example.com", "demo.internal", "v6.example"} {
		if !keys[z] {
			t.Errorf("result has no server block for %q: keys %v", z, keys)
		}
	}
}

func TestCorefileIsIdempotentAndReplacesOnlyItsOwnBlocks(t *testing.T) {
	orig := kubeadmCorefile(t)
	a := []res{{Domain: "a.example", Resolvers: []string{"10.0.0.1"}}, {Domain: "b.example", Resolvers: []string{"10.0.0.2"}}}
	b := []res{{Domain: "c.example", Resolvers: []string{"10.0.0.3"}}}

	once, err := Corefile(orig, a)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Corefile(once, a)
	if err != nil {
		t.Fatal(err)
	}
	if twice != once {
		t.Fatalf("second run changed the Corefile:\n%s\nthen\n%s", once, twice)
	}

	other, err := Corefile(once, b)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := Corefile(orig, b)
	if other != fresh {
		t.Errorf("replacing the list left traces of the old one:\n%s\nwant\n%s", other, fresh)
	}
	if strings.Contains(other, "a.example") || !strings.Contains(other, "c.example:53 {") {
		t.Errorf("blocks not replaced:\n%s", other)
	}

	for _, empty := range [][]res{nil, {}} {
		back, err := Corefile(other, empty)
		if err != nil {
			t.Fatal(err)
		}
		if back != orig {
			t.Errorf("an empty list did not restore the original byte for byte:\n%q\nwant\n%q", back, orig)
		}
	}
}

// User text around marina's section, even after it, stays where it is.
func TestCorefileKeepsTextAroundTheSection(t *testing.T) {
	orig := kubeadmCorefile(t)
	with, _ := Corefile(orig, []res{{Domain: "a.example", Resolvers: []string{"10.0.0.1"}}})
	userBlock := "user.example:53 {\n    forward . 10.9.9.9\n}\n"
	edited := with + userBlock

	got, err := Corefile(edited, []res{{Domain: "b.example", Resolvers: []string{"10.0.0.2"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := orig + userBlock + "\n" + beginMarker + "\nb.example:53 {\n    errors\n    cache 30\n    forward . 10.0.0.2\n}\n" + endMarker + "\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if back, _ := Corefile(got, nil); back != orig+userBlock {
		t.Errorf("removal gave\n%q\nwant\n%q", back, orig+userBlock)
	}
}

func TestCorefileWithoutFinalNewlineRoundTrips(t *testing.T) {
	for _, orig := range []string{"", ".:53 {\n    forward . 8.8.8.8\n}", ".:53 {\n}\n\n", "# only a comment"} {
		with, err := Corefile(orig, []res{{Domain: "x.example", Resolvers: []string{"10.0.0.1"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(with, orig) {
			t.Errorf("%q: original is not kept at the start of %q", orig, with)
		}
		if !strings.Contains(with, "\n"+beginMarker+"\n") {
			t.Errorf("%q: section does not start on its own line: %q", orig, with)
		}
		if back, _ := Corefile(with, nil); back != orig {
			t.Errorf("round trip of %q gave %q", orig, back)
		}
	}
}

func TestCorefileRejects(t *testing.T) {
	orig := kubeadmCorefile(t)
	section, _ := Corefile(orig, []res{{Domain: "a.example", Resolvers: []string{"10.0.0.1"}}})
	many := make([]string, 16)
	for i := range many {
		many[i] = "10.0.0.1"
	}
	tests := []struct {
		name      string
		existing  string
		resolvers []res
		want      string
	}{
		{"bad domain", orig, []res{{Domain: "bad_domain", Resolvers: []string{"1.1.1.1"}}}, `"bad_domain" is not a domain name`},
		{"empty domain", orig, []res{{Domain: "", Resolvers: []string{"1.1.1.1"}}}, "is not a domain name"},
		{"root", orig, []res{{Domain: ".", Resolvers: []string{"1.1.1.1"}}}, "is not a domain name"},
		{"injection", orig, []res{{Domain: "a.example {\n}\n.", Resolvers: []string{"1.1.1.1"}}}, "is not a domain name"},
		{"hostname resolver", orig, []res{{Domain: "a.example", Resolvers: []string{"dns.google"}}}, `resolvers[0]: "dns.google" is not an IP address`},
		{"resolver with brace", orig, []res{{Domain: "a.example", Resolvers: []string{"1.1.1.1 }"}}}, "is not an IP address"},
		{"zone", orig, []res{{Domain: "a.example", Resolvers: []string{"fe80::1%eth0"}}}, "IPv6 zone"},
		{"port 0", orig, []res{{Domain: "a.example", Resolvers: []string{"1.1.1.1:0"}}}, "port 0"},
		{"no resolvers", orig, []res{{Domain: "a.example"}}, "no resolvers for a.example"},
		{"too many", orig, []res{{Domain: "a.example", Resolvers: many}}, "at most 15"},
		{"twice", orig, []res{{Domain: "a.example", Resolvers: []string{"1.1.1.1"}}, {Domain: "A.example.", Resolvers: []string{"1.1.1.2"}}}, "a.example is listed twice"},
		{"cluster domain", orig, []res{{Domain: "svc.cluster.local", Resolvers: []string{"1.1.1.1"}}}, "cluster's own DNS"},
		{"existing block", orig + "a.example {\n    forward . 9.9.9.9\n}\n", []res{{Domain: "a.example", Resolvers: []string{"1.1.1.1"}}}, "already has a server block for a.example:53 that marina did not write"},
		{"existing block with port and dot", orig + "dns://A.Example.:53 {\n}\n", []res{{Domain: "a.example", Resolvers: []string{"1.1.1.1"}}}, "already has a server block"},
		{"existing block in a list of keys", orig + "b.example a.example:53 {\n}\n", []res{{Domain: "a.example", Resolvers: []string{"1.1.1.1"}}}, "already has a server block"},
		{"begin without end", strings.Replace(section, endMarker, "# the end", 1), nil, "begin line without its end line"},
		{"end without begin", strings.Replace(section, beginMarker, "# the start", 1), nil, "end line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Corefile(tt.existing, tt.resolvers)
			if err == nil {
				t.Fatalf("accepted; result:\n%s", got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

// Blocks that only look like the same zone do not count as taken: another
// port, another transport, a comment, a nested block.
func TestCorefileConflictCheckIsExact(t *testing.T) {
	orig := kubeadmCorefile(t) +
		"a.example:5353 {\n}\n" +
		"tls://a.example {\n}\n" +
		"# a.example {\n" +
		"other.example {\n    a.example {\n    }\n}\n" +
		"\"quoted # not a comment\" {\n}\n"
	got, err := Corefile(orig, []res{{Domain: "a.example", Resolvers: []string{"1.1.1.1"}}})
	if err != nil {
		t.Fatalf("false conflict: %v", err)
	}
	if !strings.HasPrefix(got, orig) {
		t.Error("original not kept")
	}
	keys := serverKeys(orig)
	if !keys["quoted # not a comment"] || !keys["other.example"] || keys["a.example"] {
		t.Errorf("serverKeys = %v", keys)
	}
}

// FuzzCorefile checks, for any Corefile and any resolver entry, that the
// text outside marina's section survives byte for byte, that a second run
// changes nothing, and that an empty list gives the text back.
func FuzzCorefile(f *testing.F) {
	orig := kubeadmCorefile(f)
	with, _ := Corefile(orig, []res{{Domain: "a.example", Resolvers: []string{"10.0.0.1"}}})
	for _, s := range []string{orig, with, "", "}", "{", "\n", beginMarker, endMarker + "\n" + beginMarker, "a.example {\n}", "\"# {\n"} {
		f.Add(s, "corp.example.com", "10.0.0.53", "[fd00::1]:53")
		f.Add(s, "a.example", "1.1.1.1", "bad")
		f.Add(s, "x y", "1.1.1.1}", "")
	}
	f.Fuzz(func(t *testing.T, existing, domain, r1, r2 string) {
		rs := []res{{Domain: domain, Resolvers: []string{r1}}}
		if r2 != "" {
			rs[0].Resolvers = append(rs[0].Resolvers, r2)
		}
		base, baseErr := removeSection(existing)
		got, err := Corefile(existing, rs)
		if err != nil {
			return
		}
		if baseErr != nil {
			t.Fatalf("accepted a Corefile with a damaged section: %v", baseErr)
		}
		if !strings.HasPrefix(got, base) {
			t.Fatalf("original text not kept:\n%q\nin\n%q", base, got)
		}
		if again, err := Corefile(got, rs); err != nil || again != got {
			t.Fatalf("second run changed the result (err %v):\n%q\nthen\n%q", err, got, again)
		}
		if back, err := Corefile(got, nil); err != nil || back != base {
			t.Fatalf("empty list gave %q (err %v), want %q", back, err, base)
		}
		// What marina added is exactly its own server block: one zone, on
		// its own lines, braces balanced.
		added := got[len(base):]
		if !strings.HasPrefix(added, "\n"+beginMarker+"\n") || !strings.HasSuffix(added, "\n"+endMarker+"\n") {
			t.Fatalf("section not delimited: %q", added)
		}
		if strings.Count(added, "{") != 1 || strings.Count(added, "}") != 1 {
			t.Fatalf("section is not one plain block: %q", added)
		}
		if keys := serverKeys(added); len(keys) != 1 {
			t.Fatalf("section serves %v, want one zone", keys)
		}
	})
}
