package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/vm"
)

// The observation's provisioning section, run by bash against files a
// test writes where the VM keeps them: what it reads back is checked for
// its kind, and a hostile record reads as unknown values, not as text
// marina would print or trust.
func TestObserveProvisioning(t *testing.T) {
	dir := t.TempDir()
	rec, osr := filepath.Join(dir, "provisioned"), filepath.Join(dir, "os-release")
	script := strings.NewReplacer(RecordPath, rec, osRelease, osr).Replace(provisionObserve)
	observe := func(record, release string) Provisioning {
		t.Helper()
		for p, c := range map[string]string{rec: record, osr: release} {
			_ = os.Remove(p)
			if c != "" {
				if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		cmd := exec.Command("bash", "-c", "set -u\ndeclare -A sum=(["+daemonPath+"]="+sha(DaemonJSON)+")\n"+script)
		cmd.Env = append(os.Environ(), "SUDO_USER=ada")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v", err)
		}
		return parseProvisioning(strings.TrimPrefix(string(out), "@@ provision\n"))
	}

	p := observe("", "NAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\nID=ubuntu\n")
	if p.Record != nil || p.User != "ada" || p.OS != "ubuntu" || p.OSVersion != "24.04" || !p.Upgradable() || p.Current() || p.DaemonChanged() {
		t.Errorf("no record: %+v", p)
	}
	// The socket's drop-in is missing: provisioning writes it, which
	// restarts Docker.
	if !p.RestartsDocker("29.1.0") {
		t.Error("a missing socket drop-in does not restart Docker")
	}

	good := "marina=v1.2.3\nscript=" + ProvisionDigest() + "\ndocker=29.1.0\nkind=" + vm.KindVersion + "\nkubectl=v1.36.1\n"
	p = observe(good, "ID=ubuntu\nVERSION_ID=22.04\n")
	if p.Record == nil || *p.Record != (Record{Marina: "v1.2.3", Script: ProvisionDigest(), Docker: "29.1.0", Kind: vm.KindVersion, Kubectl: "v1.36.1"}) || !p.Current() || p.Upgradable() {
		t.Errorf("a record of this script: %+v %+v", p, p.Record)
	}

	p = observe("marina=$(reboot)\nscript=../../etc\ndocker=29 \x1b[31m\nkind=v0.33.0; rm -rf /\nkubectl=`id`\n", "ID=\"ubuntu; x\"\n")
	if p.Record == nil || *p.Record != (Record{}) || p.OS != "" || p.Current() {
		t.Errorf("a hostile record was read as %+v %+v", p, p.Record)
	}
	if got := p.Behind("v2.0.0", "29.1.0"); !strings.Contains(got, "provisioned by marina (unknown) (this is v2.0.0)") {
		t.Errorf("Behind = %q", got)
	}
}

// A kubectl of the pinned minor is kept, so it is no difference; another
// minor, or none, is.
func TestDifferencesKubectl(t *testing.T) {
	p := Provisioned("v1", "ada", "29.1.0")
	p.Record.Script = "old"
	for have, differs := range map[string]bool{vm.KubectlVersion: false, KubectlMinor(vm.KubectlVersion) + ".0": false, "v1.30.2": true, "": true} {
		p.Record.Kubectl = have
		got := strings.Join(p.Differences("v1", "29.1.0"), "; ")
		if strings.Contains(got, "kubectl") != differs {
			t.Errorf("kubectl %q: differences %q", have, got)
		}
	}
	if got := KubectlMinor("v1.36.4"); got != "v1.36" {
		t.Errorf("KubectlMinor = %q", got)
	}
}

// Provisioning again restarts Docker when its major, daemon.json or the
// socket's drop-in differ, and only then.
func TestRestartsDocker(t *testing.T) {
	p := Provisioned("v1", "ada", "29.1.0")
	if p.RestartsDocker("29.1.0") || !p.Current() || p.Behind("v1", "29.1.0") != "" {
		t.Errorf("a current VM: %+v", p)
	}
	if !p.RestartsDocker("28.5.1") {
		t.Error("another Docker major does not restart Docker")
	}
	q := p
	q.DaemonSum = sha("{}\n")
	if !q.RestartsDocker("29.1.0") {
		t.Error("another daemon.json does not restart Docker")
	}
	q = p
	q.User = "bob"
	if !q.RestartsDocker("29.1.0") {
		t.Error("a drop-in for another user does not restart Docker")
	}
}

// The script run again has the Lima user filled in, and a user the VM
// reported that is not a user name is refused.
func TestReprovision(t *testing.T) {
	s, err := Reprovision("v1", "ada")
	if err != nil || !s.Root || !strings.Contains(s.Body, "SocketUser=ada\n") || strings.Contains(s.Body, "{{") {
		t.Fatalf("%v\n%s", err, s.Body)
	}
	for _, u := range []string{"", "root;reboot", "$(id)", "Ada", strings.Repeat("a", 40)} {
		if _, err := Reprovision("v1", u); err == nil {
			t.Errorf("user %q was accepted", u)
		}
	}
	// Lima fills in only {{.User}}: the script holds no other action.
	if n := strings.Count(Provision("v1"), "{{"); n != strings.Count(Provision("v1"), userMark) {
		t.Errorf("the script holds %d template actions, %d of them {{.User}}", n, strings.Count(Provision("v1"), userMark))
	}
}
