package vm

import (
	"context"
	"slices"
	"testing"
)

// limactl start's log lines as Lima 2 writes them without a terminal;
// the boot stages are read from them, everything else is not a stage.
const limaStartLog = `time="2026-12-03T10:00:00Z" level=info msg="Starting the instance \"marina\" with VM driver \"vz\""
time="2026-12-03T10:00:00Z" level=info msg="Attempting to download the image" arch=aarch64 digest="sha256:0123" location="https://cloud-images.ubuntu.com/x.img"
time="2026-12-03T10:00:01Z" level=info msg="[hostagent] hostagent socket created at /Users/me/.marina/lima/marina/ha.sock"
time="2026-12-03T10:00:02Z" level=info msg="[hostagent] Waiting for the essential requirement 1 of 2: \"ssh\""
time="2026-12-03T10:00:12Z" level=info msg="[hostagent] Waiting for the essential requirement 1 of 2: \"ssh\""
time="2026-12-03T10:00:20Z" level=info msg="[hostagent] The essential requirement 1 of 2 is satisfied"
time="2026-12-03T10:00:20Z" level=info msg="[hostagent] Waiting for the essential requirement 2 of 2: \"user session is ready for ssh\""
time="2026-12-03T10:00:21Z" level=info msg="[hostagent] Forwarding \"/run/user/501/docker.sock\" (guest) to \"/Users/me/.marina.docker.sock\" (host)"
time="2026-12-03T10:00:22Z" level=info msg="[hostagent] Waiting for the final requirement 1 of 1: \"boot scripts must have finished\""
time="2026-12-03T10:02:22Z" level=warning msg="[hostagent] Waiting for the final requirement 1 of 1: \"a warning is no stage\""
time="2026-12-03T10:03:00Z" level=info msg="READY. Run ` + "`limactl shell marina`" + ` to open the shell."
`

func TestBootStagesThroughStart(t *testing.T) {
	l := fakeLimactl(t, "cat >&2 <<'EOF'\n"+limaStartLog+"EOF\n")
	var got []string
	l.Progress = func(s string) { got = append(got, s) }
	if err := l.Start(context.Background(), "marina", Edits{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"starting the VM",
		"downloading the image",
		"waiting for ssh (essential requirement 1 of 2)",
		"waiting for ssh (essential requirement 1 of 2)", // the UI says a repeat once
		"waiting for user session is ready for ssh (essential requirement 2 of 2)",
		"waiting for boot scripts must have finished (final requirement 1 of 1)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("stages:\n%q\nwant:\n%q", got, want)
	}
}

// Lines split across writes, and lines that are not Lima's, are read
// right.
func TestStageWriterSplitsLines(t *testing.T) {
	var got []string
	w := &stageWriter{fn: func(s string) { got = append(got, s) }}
	line := `level=info msg="[hostagent] Waiting for the optional requirement 1 of 1: \"the \\\"docker\\\" probe\""` + "\n"
	for _, chunk := range []string{"not lima\n", line[:20], line[20:], `level=info msg="unterminated`} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{`waiting for the "docker" probe (optional requirement 1 of 1)`}; !slices.Equal(got, want) {
		t.Errorf("stages %q, want %q", got, want)
	}
}

// A requirement's description comes from the VM's template and ends on
// the user's terminal: control characters (an escape sequence) are
// dropped.
func TestBootStageDropsControlCharacters(t *testing.T) {
	line := `level=info msg="[hostagent] Waiting for the optional requirement 1 of 1: \"docker\\x1b[2J\\r ready\""`
	if got, ok := BootStage(line); !ok || got != "waiting for docker[2J ready (optional requirement 1 of 1)" {
		t.Errorf("BootStage = %q, %v", got, ok)
	}
}
