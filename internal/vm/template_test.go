package vm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lima-vm/lima/v2/pkg/limatype"
	"github.com/lima-vm/lima/v2/pkg/limayaml"

	"github.com/bcollard/marina/internal/config"
)

func render(t *testing.T, change func(*config.Config), arch string) (*limatype.LimaYAML, []byte) {
	t.Helper()
	c := config.Default()
	if change != nil {
		change(&c)
	}
	paths := config.Paths{Home: "/Users/me", Dir: "/Users/me/.marina", Config: "/Users/me/.marina/config.yaml"}
	b, err := Template(TemplateInput{Config: c, Paths: paths, HostArch: arch})
	if err != nil {
		t.Fatal(err)
	}
	// Lima's own loader fills defaults exactly as limactl would, and its
	// validator is the one limactl start runs.
	y, err := limayaml.Load(context.Background(), b, filepath.Join(t.TempDir(), "lima.yaml"))
	if err != nil {
		t.Fatalf("Lima cannot load the template: %v\n%s", err, b)
	}
	if err := limayaml.Validate(y, false); err != nil {
		t.Fatalf("Lima rejects the template: %v\n%s", err, b)
	}
	return y, b
}

func TestTemplatePassesLimaAndMirrorsNothing(t *testing.T) {
	y, _ := render(t, nil, "arm64")
	if *y.VMType != limatype.VZ {
		t.Errorf("vmType = %s, want vz", *y.VMType)
	}
	if *y.CPUs != 4 || *y.Memory != "10GiB" || *y.Disk != "40GiB" {
		t.Errorf("resources = %d, %s, %s", *y.CPUs, *y.Memory, *y.Disk)
	}
	// One vzNAT network, which Lima names lima0.
	if len(y.Networks) != 1 || y.Networks[0].VZNAT == nil || !*y.Networks[0].VZNAT || y.Networks[0].Interface != "lima0" {
		t.Fatalf("networks = %+v, want one vzNAT network on lima0", y.Networks)
	}
	// The ignore rule comes first and, as Lima filled it in, matches every
	// listener on every address: 127.0.0.1 API servers are not mirrored.
	if len(y.PortForwards) < 2 {
		t.Fatalf("port forwards = %+v", y.PortForwards)
	}
	ig := y.PortForwards[0]
	if !ig.Ignore || ig.GuestIP.String() != "0.0.0.0" || ig.GuestIPMustBeZero == nil || *ig.GuestIPMustBeZero ||
		ig.GuestPortRange != [2]int{1, 65535} || ig.Proto != limatype.ProtoAny {
		t.Errorf("first rule = %+v, want ignore-all (0.0.0.0, mustBeZero=false, 1-65535, any)", ig)
	}
	sock := y.PortForwards[1]
	if sock.GuestSocket != "/var/run/docker.sock" || sock.HostSocket != "/Users/me/.marina.docker.sock" {
		t.Errorf("socket rule = %s → %s", sock.GuestSocket, sock.HostSocket)
	}
	// The registry cache: the Mac's folder, writable, over virtiofs.
	if len(y.Mounts) != 1 {
		t.Fatalf("mounts = %+v", y.Mounts)
	}
	m := y.Mounts[0]
	if m.Location != "/Users/me/.marina/registry-cache" || *m.MountPoint != GuestCacheDir || !*m.Writable {
		t.Errorf("mount = %s → %s writable=%v", m.Location, *m.MountPoint, *m.Writable)
	}
	if *y.MountType != limatype.VIRTIOFS {
		t.Errorf("mountType = %s", *y.MountType)
	}
	if *y.Containerd.System || *y.Containerd.User {
		t.Error("Lima's containerd is on; Docker brings its own")
	}
	// Per architecture: the dated release pinned by digest first, then
	// Lima's own fallback to the current release (dated ones get deleted).
	if len(y.Images) != 4 {
		t.Fatalf("images = %+v", y.Images)
	}
	for i, img := range y.Images {
		pinned := i < 2
		if !strings.Contains(img.Location, "/releases/noble/") || !strings.HasSuffix(img.Location, "-server-cloudimg-"+map[limatype.Arch]string{limatype.AARCH64: "arm64", limatype.X8664: "amd64"}[img.Arch]+".img") {
			t.Errorf("image %d: %s (%s) is not Ubuntu 24.04 LTS for its architecture", i, img.Location, img.Arch)
		}
		if pinned != strings.HasPrefix(string(img.Digest), "sha256:") || pinned != strings.Contains(img.Location, "/release-2026") {
			t.Errorf("image %d: %s digest %q: want the dated release pinned first, the current one after", i, img.Location, img.Digest)
		}
	}
	if len(y.Provision) != 1 || y.Provision[0].Mode != limatype.ProvisionModeSystem {
		t.Errorf("provision = %+v", y.Provision)
	}
	if r := rosetta(t, y); r.Enabled != nil && *r.Enabled {
		t.Error("rosetta is on though the config leaves it off")
	}
}

func TestTemplateLoopbackModeMirrorsPorts(t *testing.T) {
	y, _ := render(t, func(c *config.Config) { c.Network.DisablePortMirroring = false }, "arm64")
	for _, r := range y.PortForwards {
		if r.Ignore {
			t.Errorf("loopback mode has an ignore rule: %+v", r)
		}
	}
	if y.PortForwards[0].HostSocket != "/Users/me/.marina.docker.sock" {
		t.Errorf("socket forward missing: %+v", y.PortForwards)
	}
}

func TestTemplateGuestCacheHasNoMount(t *testing.T) {
	y, _ := render(t, func(c *config.Config) { c.Registries.CacheStorage = config.CacheGuest }, "arm64")
	if len(y.Mounts) != 0 {
		t.Errorf("guest cache storage still mounts %+v", y.Mounts)
	}
}

func TestTemplateRosettaOnlyOnAppleSilicon(t *testing.T) {
	on := func(c *config.Config) { c.VM.Rosetta = true }
	y, _ := render(t, on, "arm64")
	if r := rosetta(t, y); r.Enabled == nil || !*r.Enabled || r.BinFmt == nil || !*r.BinFmt {
		t.Errorf("rosetta not enabled on arm64: %+v", r)
	}
	y, _ = render(t, on, "amd64")
	if r := rosetta(t, y); r.Enabled != nil && *r.Enabled {
		t.Error("rosetta enabled on an Intel Mac")
	}
}

func TestTemplateResources(t *testing.T) {
	y, _ := render(t, func(c *config.Config) { c.VM.CPUs, c.VM.Memory, c.VM.Disk = 6, "16GiB", "100GiB" }, "arm64")
	if *y.CPUs != 6 || *y.Memory != "16GiB" || *y.Disk != "100GiB" {
		t.Errorf("resources = %d, %s, %s", *y.CPUs, *y.Memory, *y.Disk)
	}
}

// rosetta reads vmOpts.vz.rosetta the way Lima's vz driver does.
func rosetta(t *testing.T, y *limatype.LimaYAML) limatype.Rosetta {
	t.Helper()
	var o limatype.VZOpts
	if err := limayaml.Convert(y.VMOpts[limatype.VZ], &o, "vmOpts.vz"); err != nil {
		t.Fatal(err)
	}
	return o.Rosetta
}

// The provisioning script is valid bash and pins what it installs.
func TestProvisionScript(t *testing.T) {
	s, err := ProvisionScript()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"firewall-backend\": \"iptables\"",
		"Pin: version 5:29.*",
		"Docker version 29\\.",
		"SocketUser={{.User}}",
		kindSHA256, kindSHA256A,
		"releases/download/v0.33.0/kind-linux-",
		"fs.inotify.max_user_watches = 524288",
		"net.ipv4.ip_forward = 1",
		dockerKeyFingerprint,
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
	script, err := ProvisionScript()
	if err != nil {
		t.Fatal(err)
	}
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
	if check(write("other", intruder), docker) {
		t.Error("another key passed")
	}
	if check(filepath.Join(dir, "missing"), docker) {
		t.Error("a missing keyring passed")
	}
}
