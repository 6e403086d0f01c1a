package version

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A limactl that does not answer does not hold marina version up: it is
// reported as such once the short wait is over.
func TestVersionDoesNotWaitForAHungLimactl(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "limactl")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	wait := limactlWait
	limactlWait = 100 * time.Millisecond
	t.Cleanup(func() { limactlWait = wait })
	env := map[string]string{"HOME": t.TempDir(), "LIMACTL": bin}
	v := GetReport(context.Background(), func(k string) string { return env[k] })
	if l := v.Limactl; l.Path != bin || l.Version != "" || !strings.Contains(l.Note, "`"+bin+" --version` did not answer within 100ms") {
		t.Errorf("a hung limactl: %+v", l)
	}
	if v.Pins.Kind == "" || v.Version == "" {
		t.Errorf("the rest of the report is missing: %+v", v)
	}
}
