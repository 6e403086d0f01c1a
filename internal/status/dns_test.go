package status

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/session/sessiontest"
)

// dns flush runs Apple's two commands as root, in order, each said before
// sudo runs (host.Privileged); a failure stops it; --dry-run runs nothing;
// off a Mac it says why and runs nothing.
func TestFlushDNS(t *testing.T) {
	f := sessiontest.New(t)
	if _, err := FlushDNS(context.Background(), f.Env, FlushDNSOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "host.privileged /usr/bin/dscacheutil -flushcache,host.privileged /usr/bin/killall -HUP mDNSResponder"
	if got := strings.Join(f.Called("host."), ","); got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
	if len(f.Called("guest.")) != 0 || len(f.Called("vm.")) != 0 {
		t.Errorf("flush reached for the VM:\n%s", f.Log())
	}

	f = sessiontest.New(t)
	f.Fail["host.privileged /usr/bin/dscacheutil"] = errBoom
	if _, err := FlushDNS(context.Background(), f.Env, FlushDNSOptions{}); !errors.Is(err, errBoom) {
		t.Errorf("error = %v", err)
	}
	if got := f.Called("host.privileged /usr/bin/killall"); len(got) != 0 {
		t.Errorf("went on after a failure: %v", got)
	}

	f = sessiontest.New(t)
	res, err := FlushDNS(context.Background(), f.Env, FlushDNSOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Called("host."); len(got) != 0 || !strings.Contains(sessiontest.Said(res), "run `sudo /usr/bin/killall -HUP mDNSResponder`") {
		t.Errorf("dry run ran %v, planned:\n%s", got, sessiontest.Said(res))
	}

	f = sessiontest.New(t)
	f.HostStyle = host.Linux
	if _, err := FlushDNS(context.Background(), f.Env, FlushDNSOptions{}); err == nil || !strings.Contains(err.Error(), "this host is not a Mac") {
		t.Errorf("on Linux: %v", err)
	}
	if got := f.Called("host."); len(got) != 0 {
		t.Errorf("on Linux ran %v", got)
	}
}
