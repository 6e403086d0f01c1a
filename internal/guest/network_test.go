package guest

import (
	"encoding/json"
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
		"-A MARINA-FORWARD -d 172.30.255.52/32 -i lima0 -o br-kind -j DROP",
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
		call, err := putCall(f, "reload")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(apply, call) {
			t.Errorf("apply script does not install %s flagging reload", f.Path)
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

// runNetworkScript runs the rendered network script against the fake
// iptables (main_test.go) starting from state, and returns the state after.
func runNetworkScript(t *testing.T, script string, state iptState) iptState {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fakes := map[string]string{
		"iptables": "#!/bin/sh\nexec " + run.ShellQuote(exe) + " \"$@\"\n",
		"ip":       "#!/bin/sh\necho '3: lima0    inet 192.168.64.3/24 brd 192.168.64.255 scope global lima0'\n",
		"sysctl":   "#!/bin/sh\nexit 0\n",
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stateFile := filepath.Join(dir, "state.json")
	b, _ := json.Marshal(state)
	if err := os.WriteFile(stateFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(dir, "marina-network")
	if err := os.WriteFile(scriptFile, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", scriptFile)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "MARINA_FAKE_IPTABLES="+stateFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("network script: %v\n%s", err, out)
	}
	var after iptState
	if b, err = os.ReadFile(stateFile); err == nil {
		err = json.Unmarshal(b, &after)
	}
	if err != nil {
		t.Fatal(err)
	}
	return after
}

// dump is `iptables -S` of one table of the fake.
func (s *iptState) dump(table string) string {
	var heads, rules []string
	for _, c := range s.Tables[table] {
		if c.Policy != "" {
			heads = append(heads, "-P "+c.Name+" "+c.Policy)
		} else {
			heads = append(heads, "-N "+c.Name)
		}
		rules = append(rules, c.Rules...)
	}
	return strings.Join(append(heads, rules...), "\n") + "\n"
}

// A guest as Docker leaves it after a restart, with rules marina installed
// for a Mac address that has since changed.
func dockerRestartedGuest() iptState {
	return iptState{Tables: map[string][]*iptChain{
		"nat": {
			{Name: "PREROUTING", Policy: "ACCEPT"}, {Name: "INPUT", Policy: "ACCEPT"}, {Name: "OUTPUT", Policy: "ACCEPT"},
			{Name: "POSTROUTING", Policy: "ACCEPT", Rules: []string{
				"-A POSTROUTING -s 172.30.0.0/16 ! -o br-kind -j MASQUERADE",
				"-A POSTROUTING -j MARINA-POSTROUTING",
			}},
			{Name: "MARINA-POSTROUTING", Rules: []string{"-A MARINA-POSTROUTING -s 172.30.0.0/16 -d 192.168.60.1/32 -o lima0 -j ACCEPT"}},
		},
		"filter": {
			{Name: "INPUT", Policy: "ACCEPT"}, {Name: "FORWARD", Policy: "ACCEPT", Rules: []string{"-A FORWARD -j DOCKER-USER"}}, {Name: "OUTPUT", Policy: "ACCEPT"},
			{Name: "DOCKER-USER"},
		},
	}}
}

// The proof that the rules are one list: the network script, run for real
// against a stand-in iptables, leaves exactly the rules Checks (what
// status reads) wants — none missing, none extra, jumps first — whichever
// side gains, loses or changes a rule. A second run changes nothing.
func TestInstalledRulesAreTheCheckedRules(t *testing.T) {
	files, err := testNet.Files()
	if err != nil {
		t.Fatal(err)
	}
	after := runNetworkScript(t, files[0].Content, dockerRestartedGuest())

	var sums []string
	for _, f := range files {
		sums = append(sums, f.Sum()+" "+f.Path)
	}
	observe := "@@ forward\n1\n@@ files\n" + strings.Join(sums, "\n") + "\n@@ enabled\nenabled\n" +
		"@@ nat\n" + after.dump("nat") + "@@ filter\n" + after.dump("filter")
	st := parseNetState(sections(observe))
	cs, err := testNet.Checks(st)
	if err != nil {
		t.Fatal(err)
	}
	if bad := failing(cs); len(bad) > 0 {
		t.Errorf("after the script ran, status finds:\n%s\niptables -S:\n%s%s", strings.Join(bad, "\n"), after.dump("nat"), after.dump("filter"))
	}
	// And the other way round, without Checks: marina's chains hold
	// exactly Rules(), in order.
	want := map[string][]string{}
	for _, r := range testNet.Rules() {
		chain := strings.Fields(r.Spec)[1]
		want[r.Table+" "+chain] = append(want[r.Table+" "+chain], r.Spec)
	}
	for key, rules := range want {
		table, chain, _ := strings.Cut(key, " ")
		if got := after.chain(table, chain); got == nil || strings.Join(got.Rules, "\n") != strings.Join(rules, "\n") {
			t.Errorf("%s after the script:\n%v\nwant Rules():\n%s", key, got, strings.Join(rules, "\n"))
		}
	}

	again := runNetworkScript(t, files[0].Content, after)
	if len(again.Log) != len(after.Log) {
		t.Errorf("a second run changed the rules again: %q", again.Log[len(after.Log):])
	}
}
