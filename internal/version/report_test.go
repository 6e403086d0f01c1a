package version

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/vm"
)

// A limactl that does not answer does not hold marina version up: it is
// reported as such once the short wait is over.
func TestVersionDoesNotWaitForAHungLimactl(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "limactl")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	find := func() (*vm.Limactl, error) {
		return &vm.Limactl{Bin: bin, LimaHome: t.TempDir(), Run: run.Runner{}}, nil
	}
	v := GetReport(context.Background(), find, 100*time.Millisecond)
	if l := v.Limactl; l.Path != bin || l.Version != "" || !strings.Contains(l.Note, "`"+bin+" --version` did not answer within 100ms") {
		t.Errorf("a hung limactl: %+v", l)
	}
	if v.Pins.Kind == "" || v.Version == "" {
		t.Errorf("the rest of the report is missing: %+v", v)
	}
}
