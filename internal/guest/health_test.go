package guest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/config"
)

// df -P's data line, as coreutils prints it; a file system name with a
// space; and what is not such a line.
func TestParseDF(t *testing.T) {
	for line, want := range map[string]Disk{
		"/dev/vda1        40470732 35721456   4732892      89% /":   {Known: true, Mount: "/", Used: 35721456, Avail: 4732892},
		"overlay 264212084 39778480 55722784 42% /var/lib/docker\n": {Known: true, Mount: "/var/lib/docker", Used: 39778480, Avail: 55722784},
		"my disk 65536 60416 5120 93% /mnt/a b":                     {Known: true, Mount: "/mnt/a b", Used: 60416, Avail: 5120},
		"":                                                          {},
		"df: /var/lib/docker: No such file or directory":            {},
		"Filesystem     1024-blocks     Used Available Capacity Mounted on": {},
		"/dev/vda1 40470732 -5 4732892 89% /":                               {},
	} {
		if got := parseDF(line); got != want {
			t.Errorf("%q: %+v, want %+v", line, got, want)
		}
	}
	d := Disk{Known: true, Used: 98, Avail: 2}
	if p := d.FreePercent(); p != 2 {
		t.Errorf("free %v", p)
	}
}

func TestParseHealth(t *testing.T) {
	out := "@@ lima0\n[]\n@@ docker\ninactive\n@@ inotify\n8192\n128\n@@ disk\n/dev/vda1 100 90 10 90% /\n@@ binfmt\nrosetta\n"
	st, _ := parseObserve(out)
	h := st.Health
	if h.Docker != "inactive" || h.InotifyWatches != 8192 || h.InotifyInstances != 128 || !h.Disk.Known || h.Disk.Avail != 10 || !h.RosettaBinfmt || h.Upstreams != nil {
		t.Errorf("%+v", h)
	}
	// What the VM says is untrusted: anything odd is "unknown", not text.
	st, _ = parseObserve("@@ docker\n\x1b[31mactive; rm -rf\n@@ inotify\nlots\n@@ binfmt\nrosetta x\n")
	if h := st.Health; h.Docker != "" || h.InotifyWatches != 0 || h.RosettaBinfmt || h.Disk.Known {
		t.Errorf("hostile: %+v", h)
	}
}

func TestParseUpstreams(t *testing.T) {
	got := parseUpstreams("registry-quayio ok\nregistry-lab fail dial: connect: Connection refused\x07\x1b[0m\nquay.io ok\nregistry-x fail\nregistry-y maybe\n../etc ok\n")
	if r := got["registry-quayio"]; !r.OK {
		t.Errorf("ok: %+v", r)
	}
	if r := got["registry-lab"]; r.OK || r.Detail != "dial: connect: Connection refused  [0m" {
		t.Errorf("fail: %+v", r)
	}
	if r := got["registry-x"]; r.OK || r.Detail != "no reason given" {
		t.Errorf("no reason: %+v", r)
	}
	for _, bad := range []string{"quay.io", "registry-y", "../etc"} {
		if _, ok := got[bad]; ok {
			t.Errorf("%q read", bad)
		}
	}
	long := parseUpstreams("registry-a fail " + strings.Repeat("é", 400))["registry-a"].Detail
	if len(long) > 310 || !strings.HasSuffix(long, "…") {
		t.Errorf("not cut: %d bytes", len(long))
	}
}

func TestUpstreamOf(t *testing.T) {
	for url, want := range map[string]string{
		"https://quay.io":                 "quay.io:443",
		"http://registry.local":           "registry.local:80",
		"https://lab-upstream:5443":       "lab-upstream:5443",
		"https://10.0.0.5:8443/v2/":       "10.0.0.5:8443",
		"https://registry-1.docker.io/x/": "registry-1.docker.io:443",
	} {
		u, err := UpstreamOf(config.Mirror{Name: "registry-a", RemoteURL: url})
		if err != nil || u.Host+":"+strconv.Itoa(u.Port) != want {
			t.Errorf("%s: %+v, %v", url, u, err)
		}
	}
	for _, url := range []string{"ftp://x", "https://", "https://x:0", "https://x:99999", "https://a_b", "https://$(id)", "https://[::1]:5000"} {
		if u, err := UpstreamOf(config.Mirror{Name: "registry-a", RemoteURL: url}); err == nil {
			t.Errorf("%s accepted: %+v", url, u)
		}
	}
	if _, _, err := probeScript(Probes{Upstreams: []Upstream{{Mirror: "quay.io", Host: "quay.io", Port: 443}}}); err == nil {
		t.Error("a mirror named like a host was probed")
	}
	if _, _, err := probeScript(Probes{Upstreams: []Upstream{{Mirror: "registry-a", Host: "x'; reboot; '", Port: 443}}}); err == nil {
		t.Error("a host with shell in it was probed")
	}
}

// The probes as the VM runs them, with docker, nsenter, unshare and mount
// played by stand-ins that run the dial in this machine's own namespaces:
// an open port answers, a closed one is refused, a stopped container is
// not probed, and the answers come back in their own section, in order,
// after the observation's.
func TestProbesRun(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("no timeout(1) here")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	open := l.Addr().(*net.TCPAddr).Port
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	bin := t.TempDir()
	for name, body := range map[string]string{
		// docker inspect -f … NAME: a pid, or 0 for the stopped one.
		"docker": `[ "$4" = registry-stopped ] && { echo 0; exit 0; }; echo 4242`,
		// nsenter -t PID -n -- CMD…, unshare -m -- CMD…: run CMD here.
		"nsenter": `while [ "$1" != -- ]; do shift; done; shift; exec "$@"`,
		"unshare": `while [ "$1" != -- ]; do shift; done; shift; exec "$@"`,
		"mount":   `exit 0`,
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	launch, collect, err := probeScript(Probes{Upstreams: []Upstream{
		{Mirror: "registry-open", Host: "127.0.0.1", Port: open},
		{Mirror: "registry-closed", Host: "127.0.0.1", Port: closedPort},
		{Mirror: "registry-stopped", Host: "127.0.0.1", Port: open},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", "set -u\n"+launch+"echo '@@ binfmt'\n"+collect)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sec := sections(string(out))
	if _, ok := sec["binfmt"]; !ok || !strings.HasPrefix(string(out), "@@ binfmt\n") {
		t.Errorf("the probes wrote before the observation's sections:\n%s", out)
	}
	got := parseUpstreams(sec["upstream"])
	if r := got["registry-open"]; !r.OK {
		t.Errorf("open port: %+v\n%s", r, out)
	}
	if r := got["registry-closed"]; r.OK || !strings.Contains(r.Detail, "Connection refused") {
		t.Errorf("closed port: %+v\n%s", r, out)
	}
	if r := got["registry-stopped"]; r.OK || r.Detail != "its container is not running" {
		t.Errorf("stopped: %+v\n%s", r, out)
	}
	if want := "registry-closed"; !strings.HasPrefix(sec["upstream"], want) {
		t.Errorf("answers not in the order asked (by name):\n%s", sec["upstream"])
	}
}
