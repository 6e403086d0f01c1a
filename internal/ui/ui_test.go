package ui

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
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
	if !strings.HasSuffix(out, "\r\x1b[2K \x1b[32m✓\x1b[0m Starting VM\n") {
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

// A long step says what it is doing: each stage a line of its own without
// a terminal, and for how long once that is worth saying; a failed step
// ends naming the stage it failed in.
func TestStagesAndElapsedTime(t *testing.T) {
	var b bytes.Buffer
	u := New(&b, false, false)
	clock := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	u.now = func() time.Time { return clock }
	u.Stage("no step open: nothing")
	u.Start("Creating VM marina")
	u.Stage("waiting for ssh (essential requirement 1 of 2)")
	u.Stage("waiting for ssh (essential requirement 1 of 2)") // Lima retries: said once
	clock = clock.Add(42 * time.Second)
	u.Stage("waiting for boot scripts must have finished (final requirement 1 of 1)")
	clock = clock.Add(2 * time.Minute)
	u.Relabel("Created VM marina")
	u.End(true)
	u.Start("Looking at the VM")
	clock = clock.Add(time.Second)
	u.End(true)
	u.Start("Pulling")
	u.Stage("layer 3 of 7")
	clock = clock.Add(6 * time.Second)
	u.End(false)
	want := " • Creating VM marina …\n" +
		"   waiting for ssh (essential requirement 1 of 2)\n" +
		"   waiting for boot scripts must have finished (final requirement 1 of 1) · 42s\n" +
		" ✓ Created VM marina (2m42s)\n" +
		" • Looking at the VM …\n ✓ Looking at the VM\n" +
		" • Pulling …\n   layer 3 of 7\n ✗ Pulling: layer 3 of 7 (6s)\n"
	if b.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", b.String(), want)
	}

	// On a terminal the stage and the time are in the spinner's line.
	b.Reset()
	u = New(&b, true, false)
	clock = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	u.now = func() time.Time { return clock }
	u.Start("Starting VM marina")
	clock = clock.Add(12 * time.Second)
	u.Stage("waiting for ssh (essential requirement 1 of 2)")
	u.End(true)
	if out := b.String(); !strings.Contains(out, "\r\x1b[2K ⠋ Starting VM marina: waiting for ssh (essential requirement 1 of 2) 12s") || !strings.HasSuffix(out, " \x1b[32m✓\x1b[0m Starting VM marina (12s)\n") {
		t.Errorf("smart output: %q", out)
	}
}
