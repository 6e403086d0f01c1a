package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doctor exits 1 when a check failed, after printing every check; -o json
// lists every check, skipped ones included, as data.
func TestDoctorExitCodeAndJSON(t *testing.T) {
	home := isolate(t)
	// A limactl older than marina supports.
	bin := filepath.Join(home, "limactl")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'limactl version 1.2.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LIMACTL", bin)
	out, errs, code := runCLI(t, "doctor", "-o", "json")
	if code != 1 {
		t.Fatalf("doctor with an old limactl: exit %d\n%s\n%s", code, out, errs)
	}
	var rep struct {
		Checks  []struct{ Name, Status, Finding, Fix string }
		Summary struct {
			Fail int
			Line string
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var names []string
	for _, c := range rep.Checks {
		names = append(names, c.Name+"="+c.Status)
	}
	want := "config=warn limactl=fail vm=skip guest=skip docker=skip kind-network=skip forwarding=skip firewall=skip boot=skip route=skip dns=skip pod-routing=ok mirrors=skip clusters=skip inotify=skip disk=skip rosetta-host=ok rosetta-vm=skip local-network=skip"
	if strings.Join(names, " ") != want {
		t.Errorf("checks:\n%s\nwant\n%s", strings.Join(names, " "), want)
	}
	if rep.Checks[1].Fix != "brew upgrade lima" || !strings.Contains(rep.Checks[1].Finding, "1.2.0 is too old") || rep.Summary.Fail != 1 {
		t.Errorf("limactl: %+v, summary %+v", rep.Checks[1], rep.Summary)
	}

	out, _, code = runCLI(t, "doctor")
	if code != 1 {
		t.Errorf("text: exit %d", code)
	}
	for _, line := range []string{
		"[FAIL] limactl        Lima 1.2.0 is too old",
		"                      Fix: brew upgrade lima",
		"[SKIP] guest          skipped: limactl is needed (see limactl)",
		"2 OK, 1 warning, 1 failed, 15 skipped",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("text output lacks %q:\n%s", line, out)
		}
	}
	if _, errs, code := runCLI(t, "doctor", "--dry-run"); code != 2 || !strings.Contains(errs, "--dry-run goes with --fix") {
		t.Errorf("--dry-run alone: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(home, ".marina")); !os.IsNotExist(err) {
		t.Errorf("doctor wrote to ~/.marina (%v)", err)
	}
}

func TestDoctorUnknownOutput(t *testing.T) {
	isolate(t)
	if _, errs, code := runCLI(t, "doctor", "-o", "xml"); code != 2 || !strings.Contains(errs, `unknown output format "xml"`) {
		t.Errorf("-o xml: %d %q", code, errs)
	}
}
