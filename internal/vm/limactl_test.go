package vm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/run"
)

// fakeLimactl writes an executable that prints out and exits with code,
// standing in for limactl at the process boundary.
func fakeLimactl(t *testing.T, script string) *Limactl {
	t.Helper()
	p := filepath.Join(t.TempDir(), "limactl")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Limactl{Bin: p, LimaHome: t.TempDir(), Run: run.Runner{}}
}

func TestVersionCheck(t *testing.T) {
	cases := []struct {
		out, want, err string
	}{
		{"limactl version 2.1.4", "2.1.4", ""},
		{"limactl version 2.0.0-beta.1", "2.0.0", ""},
		{"limactl version 1.2.1", "", "Lima 1.2.1 is too old: marina needs Lima 2.0 or later"},
		{"something else", "", "cannot read a version"},
	}
	for _, c := range cases {
		l := fakeLimactl(t, "echo '"+c.out+"'\n")
		got, err := l.Version(context.Background())
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("%q: Version = %q, %v", c.out, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error = %v, want %q", c.out, err, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), "brew") {
			t.Errorf("%q: error gives no fix: %v", c.out, err)
		}
	}
}

func TestFindLimactl(t *testing.T) {
	env := map[string]string{"LIMACTL": "/opt/lima/bin/limactl"}
	if p, err := FindLimactl(func(k string) string { return env[k] }); err != nil || p != "/opt/lima/bin/limactl" {
		t.Errorf("LIMACTL not honoured: %q, %v", p, err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err := FindLimactl(func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "brew install lima") {
		t.Errorf("missing limactl: %v", err)
	}
}

func TestParseList(t *testing.T) {
	out := `{"name":"other","status":"Stopped","dir":"/x/other","cpus":2,"memory":4294967296,"disk":107374182400}

{"name":"marina","status":"Running","dir":"/x/marina","vmType":"vz","arch":"aarch64","cpus":4,"memory":10737418240,"disk":42949672960,"sshConfigFile":"/x/marina/ssh.config","config":{"huge":"` + strings.Repeat("y", 200000) + `"},"unknownField":1}
`
	insts, err := ParseList([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 2 {
		t.Fatalf("%d instances", len(insts))
	}
	m := insts[1]
	if m.Name != "marina" || m.Status != StatusRunning || m.CPUs != 4 || m.Memory != 10<<30 || m.Disk != 40<<30 || m.VMType != "vz" || m.Arch != "aarch64" {
		t.Errorf("marina = %+v", m)
	}
	if _, err := ParseList([]byte("{not json\n")); err == nil {
		t.Error("garbage accepted")
	}
}

func TestGetReadsListAndFindsByName(t *testing.T) {
	l := fakeLimactl(t, `echo '{"name":"other","status":"Running"}'
echo '{"name":"marina","status":"Stopped"}'
`)
	in, err := l.Get(context.Background(), "marina")
	if err != nil || in == nil || in.Status != StatusStopped {
		t.Fatalf("Get = %+v, %v", in, err)
	}
	in, err = l.Get(context.Background(), "nope")
	if err != nil || in != nil {
		t.Errorf("Get of a missing instance = %+v, %v", in, err)
	}
}

func TestLimactlGetsLimaHomeAndArgs(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	l := fakeLimactl(t, `echo "$LIMA_HOME $*" >>`+rec+"\n")
	l.LimaHome = "/Users/me/.marina/lima"
	ctx := context.Background()
	if err := l.Start(ctx, "marina", Edits{CPUs: 6, Memory: "16GiB"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Stop(ctx, "marina"); err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(ctx, "marina"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(rec)
	want := "/Users/me/.marina/lima start --tty=false --cpus=6 --set=.memory = \"16GiB\" marina\n" +
		"/Users/me/.marina/lima stop --tty=false marina\n" +
		"/Users/me/.marina/lima delete --tty=false --force marina\n"
	if string(b) != want {
		t.Errorf("limactl calls:\n%s\nwant:\n%s", b, want)
	}
}

func TestLimactlFailureCarriesStderr(t *testing.T) {
	l := fakeLimactl(t, "echo 'level=fatal msg=\"disk full\"' >&2\nexit 1\n")
	err := l.Stop(context.Background(), "marina")
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "stop VM marina") {
		t.Errorf("error = %v", err)
	}
}
