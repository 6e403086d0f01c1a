//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pod sandbox's spec as kubelet and containerd write it: a privileged
// container asking for a capability the bounding set lacks, and an
// oomScoreAdj below the runtime's own.
const sandboxSpec = `{"ociVersion":"1.2.0","process":{"oomScoreAdj":-998,"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE"]},"rlimits":[{"type":"RLIMIT_NOFILE","hard":1048576,"soft":1048576}]}}`

func TestFixSpec(t *testing.T) {
	missing := map[string]bool{"CAP_SYS_RESOURCE": true}
	for _, tc := range []struct {
		name, spec string
		bundle     bool
		wantOOM    string // process.oomScoreAdj afterwards, "" for absent
		wantCaps   string
	}{
		{"sandbox: caps dropped, score raised to the floor", sandboxSpec, true, "floor", `{"bounding":["CAP_CHOWN"],"effective":[]}`},
		{"exec process: caps only", `{"oomScoreAdj":-998,"capabilities":{"bounding":["CAP_SYS_RESOURCE"]}}`, false, "-998", `{"bounding":[]}`},
		{"a score above the floor stays", `{"process":{"oomScoreAdj":900}}`, true, "900", ""},
		{"no score stays absent", `{"process":{"args":["sh"]}}`, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(file, []byte(tc.spec), 0o600); err != nil {
				t.Fatal(err)
			}
			key := []string{"process", "capabilities"}
			if !tc.bundle {
				key = []string{"capabilities"}
			}
			if err := fixSpec(file, key, missing, tc.bundle); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(file)
			var doc map[string]any
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				t.Fatal(err)
			}
			proc := doc
			if tc.bundle {
				proc, _ = doc["process"].(map[string]any)
			}
			want := tc.wantOOM
			if want == "floor" {
				want = json.Number(itoa(ownOOMScoreAdj())).String()
			}
			got, _ := proc["oomScoreAdj"].(json.Number)
			if string(got) != want {
				t.Errorf("oomScoreAdj = %q, want %q (file: %s)", got, want, b)
			}
			if tc.wantCaps != "" {
				c, _ := json.Marshal(proc["capabilities"])
				if string(c) != tc.wantCaps {
					t.Errorf("capabilities = %s, want %s", c, tc.wantCaps)
				}
			}
			if tc.bundle && strings.Contains(tc.spec, "rlimits") && !strings.Contains(string(b), `"hard":1048576`) {
				t.Errorf("other fields changed: %s", b)
			}
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestClampOOM(t *testing.T) {
	for _, tc := range []struct {
		in    string
		floor int64
		want  string
		moved bool
	}{
		{`{"process":{"oomScoreAdj":-998}}`, 0, "0", true},
		{`{"process":{"oomScoreAdj":-998}}`, 500, "500", true},
		{`{"process":{"oomScoreAdj":-998}}`, -999, "-998", false},
		{`{"process":{"oomScoreAdj":100}}`, 0, "100", false},
	} {
		var doc map[string]any
		dec := json.NewDecoder(strings.NewReader(tc.in))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		moved := clampOOM(doc, tc.floor)
		got := doc["process"].(map[string]any)["oomScoreAdj"].(json.Number)
		if moved != tc.moved || string(got) != tc.want {
			t.Errorf("clampOOM(%s, %d) = %v, %s; want %v, %s", tc.in, tc.floor, moved, got, tc.moved, tc.want)
		}
	}
}
