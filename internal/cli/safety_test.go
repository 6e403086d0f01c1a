package cli

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeLima puts a limactl on LIMACTL that knows no instances, and gives
// marina the system PATH (ip, for the host route lookups on Linux).
func fakeLima(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "limactl")
	script := "#!/bin/sh\ncase \"$1\" in\nlist) exit 0 ;;\n--version) echo 'limactl version 2.1.4' ;;\n*) echo \"fake limactl: $*\" >&2; exit 3 ;;\nesac\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LIMACTL", bin)
	t.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
}

// shortHome is isolate with a home short enough for macOS's socket path
// limit, which config validation applies.
func shortHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("/tmp", "mh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	isolate(t)
	t.Setenv("HOME", home)
	t.Setenv("MARINA_HOME", filepath.Join(home, ".marina"))
	return home
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tree lists every file under root with its content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = string(b)
		} else if !info.IsDir() {
			out[p] = info.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A mirror named "../.." must not turn clean-cache into `rm -rf ~`.
func TestCleanCacheStaysInsideTheCache(t *testing.T) {
	for _, name := range []string{"../..", "..", "../.ssh"} {
		t.Run(name, func(t *testing.T) {
			home := shortHome(t)
			fakeLima(t)
			writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), "secret key")
			writeFile(t, filepath.Join(home, "Documents", "thesis.tex"), "years of work")
			writeFile(t, filepath.Join(home, ".marina", "lima", "marina", "diffdisk"), "the VM's disk")
			writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "registries:\n  mirrors:\n    - name: "+name+"\n      port: 5030\n      remoteURL: https://registry-1.docker.io\n")
			before := tree(t, home)
			_, errs, code := runCLI(t, "registry", "clean-cache")
			after := tree(t, home)
			for p, c := range before {
				if after[p] != c {
					t.Errorf("%s changed or went (exit %d, stderr %q)", p, code, errs)
				}
			}
			if code == 0 {
				t.Errorf("clean-cache accepted the mirror name %q", name)
			}
		})
	}
}

// The host part of a remoteURL must never reach a shell.
func TestHostileRemoteURLIsRefusedAtLoad(t *testing.T) {
	home := shortHome(t)
	fakeLima(t)
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "registries:\n  mirrors:\n    - name: evil\n      port: 5030\n      remoteURL: https://x&(touch$IFS'PWNED';id>&2)&x\n")
	_, errs, code := runCLI(t, "up", "--dry-run")
	if code == 0 || !strings.Contains(errs, "registries.mirrors[0].remoteURL") {
		t.Errorf("up --dry-run with a hostile remoteURL: exit %d\n%s", code, errs)
	}
}

// Credentials in a remoteURL that does not parse never reach a message.
func TestUnparsableRemoteURLKeepsItsPassword(t *testing.T) {
	home := shortHome(t)
	fakeLima(t)
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "registries:\n  mirrors:\n    - name: evil\n      port: 5030\n      remoteURL: https://bot:hunter2@quay.io/%zz\n")
	out, errs, code := runCLI(t, "up", "--dry-run")
	if code == 0 || strings.Contains(out+errs, "hunter2") {
		t.Errorf("exit %d, the password shows:\n%s%s", code, out, errs)
	}
}

// No network.cidr, valid or not, plans a change to the default route.
func TestNoDefaultRouteChange(t *testing.T) {
	for _, args := range [][]string{{"destroy", "--dry-run"}, {"down", "--remove-route", "--dry-run"}} {
		t.Run(args[0], func(t *testing.T) {
			home := shortHome(t)
			fakeLima(t)
			writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "network:\n  cidr: 0.0.0.0/0\n")
			// A record that names the default route, or a network the host
			// only reaches through its default route, is no reason either.
			writeFile(t, filepath.Join(home, ".marina", "routes.json"), `{"routes":[{"cidr":"0.0.0.0/0","gateway":"192.168.64.3"},{"cidr":"172.30.0.0/16","gateway":"192.168.64.3"}]}`)
			out, errs, _ := runCLI(t, args...)
			if strings.Contains(out+errs, "route del") || strings.Contains(out+errs, "route -n delete") || strings.Contains(out, "remove the host's route") {
				t.Errorf("%v plans a route change:\n%s%s", args, out, errs)
			}
		})
	}
}

// A typo elsewhere in the file never locks the user out of status, down,
// destroy or shell: status shows the VM with the config's problem (-v: in
// full), and exits 1 for it.
func TestParseErrorsDoNotLockOut(t *testing.T) {
	for name, body := range map[string]string{
		"typo":       "vm:\n  name: lab\n  cpu: 4\n",
		"tab":        "vm:\n  name: lab\n\tcpus: 4\n",
		"duplicate":  "vm:\n  name: lab\n  cpus: 4\n  cpus: 5\n",
		"klimax key": "vm:\n  name: lab\nnetwork:\n  kindBridgeCIDR: 172.30.0.0/16\n",
	} {
		t.Run(name, func(t *testing.T) {
			home := shortHome(t)
			fakeLima(t)
			writeFile(t, filepath.Join(home, ".marina", "config.yaml"), body)
			out, errs, code := runCLI(t, "status")
			if code != 1 || !strings.Contains(out, "lab: not created") || !regexp.MustCompile(`(?m)^✗ config +/.*config.yaml:\d+: `).MatchString(out) || !strings.Contains(errs, "the config is invalid") {
				t.Errorf("status: exit %d\n%s%s", code, out, errs)
			}
			out, errs, code = runCLI(t, "status", "-v")
			if code != 1 || !strings.Contains(out, "lab: not created") || !strings.Contains(out, "=== Config ===") {
				t.Errorf("status -v: exit %d\n%s%s", code, out, errs)
			}
			out, errs, code = runCLI(t, "down", "--dry-run")
			if code != 0 || !strings.Contains(out, "VM lab does not exist") {
				t.Errorf("down: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

// A mistyped subcommand fails, so that a script stops.
func TestUnknownSubcommandFails(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{{"cluster", "crate", "dev"}, {"registry", "clen-cache"}, {"kubeconfig", "merg"}, {"crate"}} {
		_, errs, code := runCLI(t, args...)
		if code == 0 || !strings.Contains(errs, "unknown command") {
			t.Errorf("marina %v: exit %d %q", args, code, errs)
		}
	}
	_, errs, _ := runCLI(t, "cluster", "crate", "dev")
	if !strings.Contains(errs, "create") {
		t.Errorf("no suggestion: %q", errs)
	}
}

// A kubeconfig entry marina did not write is never removed.
func TestKubeconfigRemoveLeavesUserEntries(t *testing.T) {
	home := isolate(t)
	kc := filepath.Join(home, ".kube", "config")
	body := `apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod
  cluster:
    server: https://prod.example.com
- name: dev-staging
  cluster:
    server: https://staging.example.com
users:
- name: prod
  user:
    token: very-secret
- name: dev-staging
  user:
    token: other-secret
contexts:
- name: prod
  context:
    cluster: prod
    user: prod
- name: dev-staging
  context:
    cluster: dev-staging
    user: dev-staging
`
	writeFile(t, kc, body)
	out, errs, code := runCLI(t, "kubeconfig", "remove", "prod")
	if b, _ := os.ReadFile(kc); string(b) != body {
		t.Errorf("kubeconfig remove prod changed the user's kubeconfig (exit %d, %q %q):\n%s", code, out, errs, b)
	}
	if code == 0 || strings.Contains(out, "Removed") {
		t.Errorf("kubeconfig remove prod: exit %d %q %q", code, out, errs)
	}
	out, errs, code = runCLI(t, "kubeconfig", "remove", "dev")
	if b, _ := os.ReadFile(kc); string(b) != body {
		t.Errorf("kubeconfig remove dev changed dev-staging:\n%s", b)
	}
	if code != 0 || strings.Contains(out, "Removed") || !strings.Contains(out, "nothing to remove") {
		t.Errorf("kubeconfig remove dev: exit %d %q %q", code, out, errs)
	}
}

// Another marina home's VM of the same name keeps its Docker socket.
func TestDestroyKeepsAnotherHomesSocket(t *testing.T) {
	home := shortHome(t)
	fakeLima(t)
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "network:\n  cidr: 172.31.0.0/16\n")
	sock := filepath.Join(home, ".marina.docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, errs, _ := runCLI(t, "destroy", "-y")
	if _, err := os.Lstat(sock); err != nil {
		t.Errorf("destroy removed a live socket it does not own (%v); stderr %q", err, errs)
	}
}

// Emptying more than one cache asks first; -y empties exactly the caches.
func TestCleanCacheAsksForMoreThanOne(t *testing.T) {
	home := shortHome(t)
	fakeLima(t)
	cache := filepath.Join(home, ".marina", "registry-cache")
	writeFile(t, filepath.Join(cache, "registry-a", "blob"), "a")
	writeFile(t, filepath.Join(cache, "registry-b", "blob"), "b")
	writeFile(t, filepath.Join(cache, "other", "keep"), "not a mirror's")
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "registries:\n  mirrors:\n    - name: registry-a\n      port: 5030\n      remoteURL: https://registry-1.docker.io\n    - name: registry-b\n      port: 5010\n      remoteURL: https://quay.io\n")
	before := tree(t, home)
	_, errs, code := runCLI(t, "registry", "clean-cache")
	if code == 0 || !strings.Contains(errs, "-y") {
		t.Errorf("clean-cache of two caches without a terminal: exit %d %q", code, errs)
	}
	if after := tree(t, home); len(after) != len(before) {
		t.Errorf("files went without a confirmation: %v", after)
	}
	_, errs, code = runCLI(t, "registry", "clean-cache", "-y")
	after := tree(t, home)
	if code != 0 || len(after) != len(before)-2 || after[filepath.Join(cache, "other", "keep")] == "" {
		t.Errorf("clean-cache -y: exit %d %q\n%v", code, errs, after)
	}
	for _, d := range []string{"registry-a", "registry-b"} {
		if st, err := os.Stat(filepath.Join(cache, d)); err != nil || !st.IsDir() {
			t.Errorf("the cache folder %s went: %v", d, err)
		}
	}
	// One named cache needs no question.
	writeFile(t, filepath.Join(cache, "registry-a", "blob"), "a")
	if _, errs, code := runCLI(t, "registry", "clean-cache", "registry-a"); code != 0 {
		t.Errorf("clean-cache registry-a: %d %q", code, errs)
	}
}

// A config path that is a device or a huge file is refused, not read
// until memory runs out.
func TestConfigReadsAreBounded(t *testing.T) {
	home := shortHome(t)
	fakeLima(t)
	big := filepath.Join(home, "big.yaml")
	writeFile(t, big, "vm:\n  name: lab\n"+strings.Repeat("# padding\n", 200_000))
	for _, p := range []string{"/dev/zero", big} {
		_, errs, code := runCLI(t, "--config", p, "status")
		if code == 0 || !strings.Contains(errs, p) {
			t.Errorf("status --config %s: exit %d %q", p, code, errs)
		}
	}
}

// A VM of the same name in another marina home keeps its socket: up here
// refuses to take it over.
func TestUpRefusesAnotherHomesSocket(t *testing.T) {
	home := shortHome(t)
	fakeLima(t)
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "registries:\n  mirrors: []\n")
	ln, err := net.Listen("unix", filepath.Join(home, ".marina.docker.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, errs, code := runCLI(t, "up", "--dry-run")
	if code == 0 || !strings.Contains(errs, "served by another VM") {
		t.Errorf("up next to another home's VM: exit %d %q", code, errs)
	}
}
