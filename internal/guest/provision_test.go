package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/vm"
)

// The provisioning script is valid bash and pins what it installs.
func TestProvisionScript(t *testing.T) {
	s := Provision("v9.9.9")
	for _, want := range []string{
		"firewall-backend\": \"iptables\"",
		"Pin: version 5:29.*",
		"Docker version 29\\.",
		"SocketUser={{.User}}",
		vm.KindSHA256AMD64, vm.KindSHA256ARM64,
		"releases/download/v0.33.0/kind-linux-",
		"fs.inotify.max_user_watches = 524288",
		"net.ipv4.ip_forward = 1",
		vm.DockerKeyFingerprint,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("provision script lacks %q", want)
		}
	}
	if strings.Contains(s, ">>") {
		t.Error("provision script appends to a file: a second boot would duplicate lines")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	f := filepath.Join(t.TempDir(), "p.sh")
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", f).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v\n%s", err, out)
	}
}

// only_key, the provisioning script's check of Docker's apt keyring, run
// against real keyrings: exactly the expected key passes; the same key with
// another one beside it, or another key alone, does not.
func TestProvisionKeyCheck(t *testing.T) {
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Skip("gpg is not installed (lab/lab up installs it)")
	}
	script := Provision("v9.9.9")
	fn := regexp.MustCompile(`(?s)only_key\(\) \{.*?\n\}\n`).FindString(script)
	if fn == "" {
		t.Fatal("the provisioning script has no only_key function")
	}
	dir := t.TempDir()
	gpg := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("gpg", append([]string{"--batch", "--homedir", dir, "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %v: %v", args, err)
		}
		return out
	}
	gpg("--quick-gen-key", "docker <a@example.com>", "ed25519", "sign", "never")
	gpg("--quick-gen-key", "intruder <b@example.com>", "ed25519", "sign", "never")
	fprs := regexp.MustCompile(`(?m)^fpr:+([0-9A-F]{40}):`).FindAllStringSubmatch(string(gpg("--with-colons", "--list-keys")), -1)
	if len(fprs) < 2 {
		t.Fatalf("fingerprints: %v", fprs)
	}
	docker, intruder := fprs[0][1], fprs[1][1]
	// Give the docker key a subkey, as Docker's own has.
	gpg("--quick-add-key", docker, "ed25519", "sign", "never")
	write := func(name string, ids ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, gpg(append([]string{"--armor", "--export"}, ids...)...), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(file, want string) bool {
		cmd := exec.Command("bash", "-c", fn+`only_key "$1" "$2"`, "_", file, want)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+t.TempDir())
		return cmd.Run() == nil
	}
	if !check(write("one", docker), docker) {
		t.Error("the expected key alone was refused")
	}
	if check(write("two", docker, intruder), docker) {
		t.Error("a keyring with another key beside the expected one passed")
	}
	// The same with the other key first: the check must count keys, not
	// only look at the last one.
	both := filepath.Join(dir, "intruder-first")
	if err := os.WriteFile(both, append(gpg("--armor", "--export", intruder), gpg("--armor", "--export", docker)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if check(both, docker) {
		t.Error("a keyring with another key before the expected one passed")
	}
	if check(write("other", intruder), docker) {
		t.Error("another key passed")
	}
	if check(filepath.Join(dir, "missing"), docker) {
		t.Error("a missing keyring passed")
	}
}
