package vm

import (
	"context"
	"path/filepath"
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
	b, err := Template(TemplateInput{Config: c, Paths: paths, HostArch: arch, Provision: testProvision})
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

// testProvision stands in for guest.Provision(), which this package cannot
// import (guest imports vm); golden_test.go renders with the real one.
const testProvision = "#!/bin/bash\nset -eu\n# provision {{.User}}\n"

// A template without a provisioning script would boot a VM with neither
// Docker nor kind: refused, with what to pass.
func TestTemplateNeedsAProvisioningScript(t *testing.T) {
	paths := config.Paths{Home: "/Users/me", Dir: "/Users/me/.marina"}
	for _, p := range []string{"", " \n\t"} {
		_, err := Template(TemplateInput{Config: config.Default(), Paths: paths, HostArch: "arm64", Provision: p})
		if err == nil || !strings.Contains(err.Error(), "guest.Provision()") {
			t.Errorf("Provision %q: err = %v, want a refusal naming guest.Provision()", p, err)
		}
	}
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
	// The push registry's port comes first, forwarded to the Mac's
	// 127.0.0.1 at the same port; then the ignore rule, which, as Lima
	// filled it in, matches every other listener on every address:
	// 127.0.0.1 API servers are not mirrored.
	if len(y.PortForwards) < 3 {
		t.Fatalf("port forwards = %+v", y.PortForwards)
	}
	if reg := y.PortForwards[0]; reg.Ignore || reg.GuestIP.String() != "127.0.0.1" || reg.GuestPortRange != [2]int{5001, 5001} || reg.HostIP.String() != "127.0.0.1" || reg.HostPortRange != [2]int{5001, 5001} {
		t.Errorf("first rule = %+v, want 127.0.0.1:5001 forwarded to the Mac's 127.0.0.1:5001", reg)
	}
	ig := y.PortForwards[1]
	if !ig.Ignore || ig.GuestIP.String() != "0.0.0.0" || ig.GuestIPMustBeZero == nil || *ig.GuestIPMustBeZero ||
		ig.GuestPortRange != [2]int{1, 65535} || ig.Proto != limatype.ProtoAny {
		t.Errorf("first rule = %+v, want ignore-all (0.0.0.0, mustBeZero=false, 1-65535, any)", ig)
	}
	sock := y.PortForwards[2]
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
	// The script it is given, run by root on every boot, with Lima's own
	// {{.User}} filled in by Lima.
	want := strings.ReplaceAll(testProvision, "{{.User}}", *y.User.Name)
	if len(y.Provision) != 1 || y.Provision[0].Mode != limatype.ProvisionModeSystem || y.Provision[0].Script == nil || *y.Provision[0].Script != want {
		t.Errorf("provision = %+v, want one system script, exactly %q", y.Provision, want)
	}
	if r := rosetta(t, y); r.Enabled != nil && *r.Enabled {
		t.Error("rosetta is on though the config leaves it off")
	}
	// Lima's host resolver is on (its default) and gives containers the
	// Mac as host.docker.internal.
	if y.HostResolver.Enabled == nil || !*y.HostResolver.Enabled || y.HostResolver.Hosts["host.docker.internal"] != "host.lima.internal" {
		t.Errorf("hostResolver = %+v", y.HostResolver)
	}
}

// The VM's kubectl is of the default node version's minor.
func TestKubectlFollowsTheDefaultNode(t *testing.T) {
	minor := func(v string) string { return strings.Join(strings.SplitN(v, ".", 3)[:2], ".") }
	if minor(KubectlVersion) != minor(config.DefaultNodeVersion) {
		t.Errorf("kubectl %s in the VM, but clusters default to Kubernetes %s: pin kubectl of its minor", KubectlVersion, config.DefaultNodeVersion)
	}
}

func TestTemplateLoopbackModeMirrorsPorts(t *testing.T) {
	y, _ := render(t, func(c *config.Config) { c.Network.DisablePortMirroring = false }, "arm64")
	for _, r := range y.PortForwards {
		if r.Ignore {
			t.Errorf("loopback mode has an ignore rule: %+v", r)
		}
	}
	if y.PortForwards[1].HostSocket != "/Users/me/.marina.docker.sock" {
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
