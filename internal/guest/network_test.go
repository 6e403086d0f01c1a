package guest

import (
	"encoding/base64"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/run"
)

var testNet = Net{Kind: netip.MustParsePrefix("172.30.0.0/16"), Bridge: "br-kind", Mac: netip.MustParseAddr("192.168.64.1")}

// What `iptables -S` prints in a guest where the rules are installed for
// the Mac at mac, with Docker's own rules around them.
func observed(mac string, extraNat ...string) string {
	nat := []string{
		"-P POSTROUTING ACCEPT",
		"-N MARINA-POSTROUTING",
		"-A POSTROUTING -j MARINA-POSTROUTING",
		"-A POSTROUTING -s 172.30.0.0/16 ! -o br-kind -j MASQUERADE",
		"-A MARINA-POSTROUTING -s 172.30.0.0/16 -d " + mac + "/32 -o lima0 -j ACCEPT",
	}
	nat = append(nat, extraNat...)
	filter := []string{
		"-P FORWARD DROP",
		"-N DOCKER-USER",
		"-N MARINA-FORWARD",
		"-A FORWARD -j DOCKER-USER",
		"-A DOCKER-USER -j MARINA-FORWARD",
		"-A MARINA-FORWARD -s " + mac + "/32 -d 172.30.0.0/16 -i lima0 -o br-kind -j ACCEPT",
		"-A MARINA-FORWARD -s 172.30.0.0/16 -d " + mac + "/32 -i br-kind -o lima0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
		"-A MARINA-FORWARD -i lima0 -o br-kind -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
		"-A MARINA-FORWARD -i lima0 -o br-kind -j DROP",
	}
	files, _ := testNet.Files()
	var sums []string
	for _, f := range files {
		sums = append(sums, f.Sum()+" "+f.Path)
	}
	return "@@ forward\n1\n@@ files\n" + strings.Join(sums, "\n") + "\n@@ enabled\nenabled\n@@ nat\n" + strings.Join(nat, "\n") + "\n@@ filter\n" + strings.Join(filter, "\n") + "\n"
}

func failing(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if !c.OK {
			out = append(out, c.What+": "+c.Note)
		}
	}
	return out
}

func TestChecksAllGood(t *testing.T) {
	st := parseNetState(sections(observed("192.168.64.1")))
	cs, err := testNet.Checks(st)
	if err != nil {
		t.Fatal(err)
	}
	if bad := failing(cs); len(bad) > 0 {
		t.Errorf("failing checks on a correct guest: %q", bad)
	}
}

func TestChecksFindEachProblem(t *testing.T) {
	good := observed("192.168.64.1")
	cases := []struct {
		name string
		out  string
		want string
	}{
		{"forwarding off", strings.Replace(good, "@@ forward\n1", "@@ forward\n0", 1), "IPv4 forwarding"},
		{"the Mac moved", observed("192.168.60.1"), "stale rule: -t nat -A MARINA-POSTROUTING -s 172.30.0.0/16 -d 192.168.60.1/32"},
		{"a whole network let in", strings.Replace(good, "-s 192.168.64.1/32 -d 172.30.0.0/16", "-s 192.168.64.0/24 -d 172.30.0.0/16", 1), "stale rule: -t filter -A MARINA-FORWARD -s 192.168.64.0/24"},
		{"no drop for other hosts", strings.Replace(good, "-A MARINA-FORWARD -i lima0 -o br-kind -j DROP\n", "", 1), "nothing else on the VM's network"},
		{"FORWARD policy ACCEPT", strings.Replace(good, "-P FORWARD DROP", "-P FORWARD ACCEPT", 1), "the VM forwards nothing"},
		{"Docker's MASQUERADE above the jump", strings.Replace(good, "-A POSTROUTING -j MARINA-POSTROUTING\n-A POSTROUTING -s 172.30.0.0/16 ! -o br-kind -j MASQUERADE",
			"-A POSTROUTING -s 172.30.0.0/16 ! -o br-kind -j MASQUERADE\n-A POSTROUTING -j MARINA-POSTROUTING", 1), "jump into marina's rules: -t nat"},
		{"jump twice", observed("192.168.64.1", "-A POSTROUTING -j MARINA-POSTROUTING"), "jump into marina's rules: -t nat"},
		{"return path missing", strings.Replace(good, "-m conntrack --ctstate RELATED,ESTABLISHED", "-m conntrack --ctstate ESTABLISHED", 1), "replies from the kind network"},
		{"unit not enabled", strings.Replace(good, "@@ enabled\nenabled", "@@ enabled\ndisabled", 1), "marina-network.service enabled"},
		{"script edited", regexp.MustCompile(`[0-9a-f]{64} /usr/local/sbin/marina-network`).ReplaceAllString(good, strings.Repeat("0", 64)+" /usr/local/sbin/marina-network"), "installed /usr/local/sbin/marina-network"},
		{"drop-in missing", regexp.MustCompile(`[0-9a-f]{64} /etc/systemd/system/docker.service.d`).ReplaceAllString(good, "- /etc/systemd/system/docker.service.d"), "installed /etc/systemd/system/docker.service.d/marina-network.conf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs, err := testNet.Checks(parseNetState(sections(c.out)))
			if err != nil {
				t.Fatal(err)
			}
			bad := failing(cs)
			if len(bad) == 0 {
				t.Fatal("no check failed")
			}
			found := false
			for _, b := range bad {
				found = found || strings.HasPrefix(b, c.want)
			}
			if !found {
				t.Errorf("failing checks %q lack %q", bad, c.want)
			}
		})
	}
}

func TestNetRejectsBadInput(t *testing.T) {
	mac := testNet.Mac
	for _, n := range []Net{
		{Kind: netip.MustParsePrefix("172.30.1.0/16"), Bridge: "br-kind", Mac: mac},
		{Kind: netip.MustParsePrefix("fd00::/64"), Bridge: "br-kind", Mac: mac},
		{Kind: netip.MustParsePrefix("172.30.0.0/16"), Bridge: "br kind; rm -rf /", Mac: mac},
		{Kind: netip.MustParsePrefix("172.30.0.0/16"), Bridge: "a-very-long-bridge-name", Mac: mac},
		{Kind: netip.MustParsePrefix("172.30.0.0/16"), Bridge: "br-kind"},
		{Kind: netip.MustParsePrefix("172.30.0.0/16"), Bridge: "br-kind", Mac: netip.MustParseAddr("0.0.0.0")},
		{Kind: netip.MustParsePrefix("172.30.0.0/16"), Bridge: "br-kind", Mac: netip.MustParseAddr("172.30.0.5")},
	} {
		if _, err := n.Files(); err == nil {
			t.Errorf("accepted %+v", n)
		}
		if err := n.Apply(NewBatch()); err == nil {
			t.Errorf("Apply accepted %+v", n)
		}
	}
}

// The rendered files carry what the guest needs and nothing interpreted by
// the apply script's shell.
func TestFilesAndApplyScript(t *testing.T) {
	files, err := testNet.Files()
	if err != nil {
		t.Fatal(err)
	}
	script := files[0].Content
	for _, want := range []string{"iptables -w -P FORWARD DROP", "first nat POSTROUTING MARINA-POSTROUTING", "first filter DOCKER-USER MARINA-FORWARD"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	// The script installs exactly the rules the checks look for, in order.
	var specs []string
	for _, r := range testNet.Rules() {
		specs = append(specs, "'"+r.Spec+"'")
	}
	if got := regexp.MustCompile(`'-A MARINA-[A-Z]+ [^']*'`).FindAllString(script, -1); strings.Join(got, "\n") != strings.Join(specs, "\n") {
		t.Errorf("script rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(specs, "\n"))
	}
	if !strings.Contains(files[2].Content, "ExecStartPost=-"+ScriptPath) {
		t.Errorf("drop-in: %s", files[2].Content)
	}
	b := NewBatch()
	if err := testNet.Apply(b); err != nil {
		t.Fatal(err)
	}
	apply := b.Script()
	for _, f := range files {
		enc := base64.StdEncoding.EncodeToString([]byte(f.Content))
		if !strings.Contains(apply, "put "+run.ShellQuote(f.Path)+" "+f.Mode+" "+enc+" && reload=1") {
			t.Errorf("apply script does not install %s", f.Path)
		}
	}
	dir := t.TempDir()
	for i, s := range []string{script, apply} {
		p := filepath.Join(dir, "s"+string(rune('0'+i)))
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bash", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v\n%s", err, out)
		}
	}
}
