package ui

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestPlainSteps(t *testing.T) {
	var b bytes.Buffer
	u := New(&b, false, false)
	u.Start("Creating VM marina")
	u.Relabel("Created VM marina")
	u.Debugf("hidden without --debug")
	u.Start("Waiting for Docker")
	u.End(false)
	u.End(true) // nothing open: no output
	want := " • Creating VM marina …\n ✓ Created VM marina\n • Waiting for Docker …\n ✗ Waiting for Docker\n"
	if b.String() != want {
		t.Errorf("output:\n%q\nwant:\n%q", b.String(), want)
	}
}

func TestSmartStepsClearTheSpinner(t *testing.T) {
	var b bytes.Buffer
	u := New(&b, true, true)
	u.Start("Starting VM")
	u.Debugf("a log line")
	u.End(true)
	out := b.String()
	if !strings.Contains(out, "\r\x1b[2Kdebug: a log line\n") {
		t.Errorf("log line did not clear the spinner first: %q", out)
	}
	if !strings.HasSuffix(out, "\r\x1b[2K ✓ Starting VM\n") {
		t.Errorf("step end: %q", out)
	}
}

func TestConfirm(t *testing.T) {
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, "\n": false, "n\n": false, "": false, "yep\n": false} {
		var out bytes.Buffer
		if got := Confirm(strings.NewReader(in), &out, "Delete?"); got != want {
			t.Errorf("Confirm(%q) = %v", in, got)
		}
		if out.String() != "Delete? [y/N] " {
			t.Errorf("prompt = %q", out.String())
		}
	}
}

func TestRender(t *testing.T) {
	v := map[string]any{"vm": map[string]any{"name": "marina"}}
	var b bytes.Buffer
	if err := Render(&b, "json", v); err != nil || b.String() != "{\n  \"vm\": {\n    \"name\": \"marina\"\n  }\n}\n" {
		t.Errorf("json = %q, %v", b.String(), err)
	}
	b.Reset()
	if err := Render(&b, "yaml", v); err != nil || b.String() != "vm:\n  name: marina\n" {
		t.Errorf("yaml = %q, %v", b.String(), err)
	}
	if err := Render(&b, "xml", v); err == nil {
		t.Error("xml accepted")
	}
}

func TestIsSmartTerminal(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	// A file that is not a terminal is never smart.
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsSmartTerminal(f, env(map[string]string{"TERM": "xterm-256color"})) {
		t.Error("/dev/null is smart")
	}
}
