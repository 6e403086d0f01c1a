package cli

// The exit codes and empty lists through marina's own entry point, with
// limactl a script and the VM's Docker a stand-in Engine API on the
// socket Lima would forward: the production code path from the flags to
// the Docker client.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/session"
)

// limaVM makes limactl a script whose `list` reports VM lab as status
// (a Broken VM with errors); any other command fails. "" is no VM.
// "fail" makes `list` itself fail: marina cannot look at all.
func limaVM(t *testing.T, home, status string, errs ...string) {
	t.Helper()
	list := ""
	switch status {
	case "":
	case "fail":
		list = "echo 'limactl: cannot read the instances' >&2; exit 1"
	case "hostile": // it fails saying what would retitle and clear a terminal
		list = `printf 'limactl: \033]0;owned\007\033[2J\033[3J cannot read the instances\r\n' >&2; exit 1`
	default:
		in := map[string]any{"name": "lab", "status": status, "dir": filepath.Join(home, ".marina", "lima", "lab"),
			"vmType": "vz", "arch": "aarch64", "cpus": 4, "memory": 4 << 30, "disk": 100 << 30, "errors": errs}
		b, _ := json.Marshal(in)
		list = "echo '" + string(b) + "'"
	}
	bin := filepath.Join(t.TempDir(), "limactl")
	script := "#!/bin/sh\ncase \"$1\" in\nlist) " + list + " ;;\n--version) echo 'limactl version 2.1.4' ;;\n*) echo \"fake limactl: $*\" >&2; exit 1 ;;\nesac\n"
	writeFile(t, bin, script)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LIMACTL", bin)
	t.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
}

// labHome is a home whose config names VM lab, with body added.
func labHome(t *testing.T, body string) string {
	t.Helper()
	home := shortHome(t)
	writeFile(t, filepath.Join(home, ".marina", "config.yaml"), "vm:\n  name: lab\n"+body)
	return home
}

// engine serves the part of Docker's Engine API marina's listings use on
// the VM's socket in home: containers (kind nodes, mirrors) and their
// inspection. broken makes every listing fail as a daemon error would.
func engine(t *testing.T, home string, containers []map[string]any, broken bool) {
	t.Helper()
	sock := filepath.Join(home, ".lab.docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	api := regexp.MustCompile(`^/v[0-9.]+`)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.52")
		w.Header().Set("Content-Type", "application/json")
		path := api.ReplaceAllString(r.URL.Path, "")
		switch {
		case path == "/_ping":
			fmt.Fprint(w, "OK")
		case broken:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"message":"the daemon's disk is full"}`)
		case path == "/containers/json":
			var filters map[string]map[string]bool
			_ = json.Unmarshal([]byte(r.URL.Query().Get("filters")), &filters)
			out := []map[string]any{}
			for _, c := range containers {
				for label := range filters["label"] {
					if _, ok := c["Labels"].(map[string]string)[label]; ok {
						out = append(out, c)
						break
					}
				}
			}
			_ = json.NewEncoder(w).Encode(out)
		case strings.HasPrefix(path, "/containers/") && strings.HasSuffix(path, "/json"):
			id := strings.TrimSuffix(strings.TrimPrefix(path, "/containers/"), "/json")
			for _, c := range containers {
				if c["Id"] == id {
					_ = json.NewEncoder(w).Encode(map[string]any{"Id": id, "Name": c["Names"].([]string)[0],
						"HostConfig": map[string]any{"PortBindings": c["bindings"]}})
					return
				}
			}
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"message":"No such container: %s"}`, id)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"message":"not in the stand-in: %s"}`, path)
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// node is a kind control-plane container of cluster name, publishing its
// API on port.
func node(name, state string, port int) map[string]any {
	return map[string]any{
		"Id": name + "-cp", "Names": []string{"/" + name + "-control-plane"}, "State": state, "Image": "kindest/node",
		"Labels":   map[string]string{"io.x-k8s.kind.cluster": name, "io.x-k8s.kind.role": "control-plane"},
		"bindings": map[string]any{"6443/tcp": []map[string]string{{"HostIp": "0.0.0.0", "HostPort": fmt.Sprint(port)}}},
	}
}

// A list that finds nothing: [] in json and yaml, a line on stderr and
// nothing on stdout in text, exit 0.
func TestEmptyLists(t *testing.T) {
	home := labHome(t, "registries:\n  mirrors: []\n  local:\n    enabled: false\n")
	limaVM(t, home, "Running")
	engine(t, home, nil, false)
	for _, c := range []struct {
		args []string
		none string
	}{
		{[]string{"cluster", "list"}, "No clusters: `marina cluster create NAME` makes one.\n"},
		{[]string{"fleet", "list"}, "No fleets: `marina fleet apply -f FILE` makes one.\n"},
		{[]string{"registry", "list"}, "No mirrors: registries.mirrors in the config is empty (`marina config edit` adds one).\n"},
	} {
		name := strings.Join(c.args, " ")
		out, errs, code := runCLI(t, append(c.args, "-o", "json")...)
		if code != 0 || out != "[]\n" {
			t.Errorf("%s -o json: exit %d, stdout %q\n%s", name, code, out, errs)
		}
		out, errs, code = runCLI(t, append(c.args, "-o", "yaml")...)
		if code != 0 || out != "[]\n" {
			t.Errorf("%s -o yaml: exit %d, stdout %q\n%s", name, code, out, errs)
		}
		out, errs, code = runCLI(t, c.args...)
		if code != 0 || out != "" || errs != c.none {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want stderr %q", name, code, out, errs, c.none)
		}
	}
}

// A selector that matches nothing says so, not "create one".
func TestSelectorMatchesNothing(t *testing.T) {
	home := labHome(t, "")
	limaVM(t, home, "Running")
	// east is stopped: its nodes' labels cannot match anything.
	engine(t, home, []map[string]any{node("east", "exited", 7002)}, false)
	out, errs, code := runCLI(t, "cluster", "list", "-l", "env=prod")
	want := "No cluster's nodes match -l env=prod (`marina cluster list -o yaml` shows every cluster's labels).\n"
	if code != 0 || out != "" || errs != want {
		t.Errorf("cluster list -l env=prod: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if out, errs, code := runCLI(t, "cluster", "list", "-l", "env=prod", "-o", "json"); code != 0 || out != "[]\n" {
		t.Errorf("cluster list -l env=prod -o json: exit %d %q %s", code, out, errs)
	}
	// Without the selector, east is there.
	out, errs, code = runCLI(t, "cluster", "list", "-o", "json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 || len(rows) != 1 || rows[0]["name"] != "east" || rows[0]["apiPort"] != float64(7002) || rows[0]["state"] != "stopped" {
		t.Errorf("cluster list -o json: exit %d (%v)\n%s%s", code, err, out, errs)
	}
}

// When marina could not look, it exits 1 with the reason on stderr and no
// byte of json on stdout.
func TestCouldNotLook(t *testing.T) {
	t.Run("limactl fails", func(t *testing.T) {
		home := labHome(t, "")
		limaVM(t, home, "fail")
		for _, args := range [][]string{
			{"status"}, {"cluster", "list"}, {"registry", "list"}, {"dns", "list"}, {"fleet", "list"}, {"fleet", "describe", "demo"},
		} {
			for _, o := range []string{"json", "yaml", "text"} {
				out, errs, code := runCLI(t, append(args, "-o", o)...)
				if code != session.ExitFailed || out != "" || !strings.Contains(errs, "ERROR: list Lima instances") || !strings.Contains(errs, "cannot read the instances") {
					t.Errorf("%v -o %s: exit %d, stdout %q, stderr %q", args, o, code, out, errs)
				}
			}
		}
	})
	t.Run("what limactl says is cleaned", func(t *testing.T) {
		home := labHome(t, "")
		limaVM(t, home, "hostile")
		_, errs, code := runCLI(t, "cluster", "list")
		if code != session.ExitFailed || !strings.Contains(errs, "cannot read the instances") || strings.ContainsAny(errs, "\x1b\x07\r") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
	})
	t.Run("Docker fails", func(t *testing.T) {
		home := labHome(t, "")
		limaVM(t, home, "Running")
		engine(t, home, nil, true)
		for _, args := range [][]string{{"cluster", "list"}, {"registry", "list"}, {"fleet", "list"}} {
			out, errs, code := runCLI(t, append(args, "-o", "json")...)
			if code != session.ExitFailed || out != "" || !strings.Contains(errs, "the daemon's disk is full") {
				t.Errorf("%v -o json: exit %d, stdout %q, stderr %q", args, code, out, errs)
			}
		}
	})
}

// A command that needs the VM running exits 3 when it is not, with
// nothing on stdout and `marina up` on stderr; registry list reads its
// mirrors from the config and answers.
func TestVMNotRunning(t *testing.T) {
	for _, c := range []struct{ status, says string }{
		{"Stopped", "VM lab is Stopped: start it with `marina up`"},
		{"", "VM lab has not been created yet: run `marina up`"},
	} {
		home := labHome(t, "")
		limaVM(t, home, c.status)
		for _, args := range [][]string{
			{"cluster", "list", "-o", "json"}, {"dns", "list", "-o", "json"}, {"fleet", "list", "-o", "yaml"},
			{"fleet", "describe", "demo", "-o", "json"}, {"cluster", "label", "dev", "-l", "a=b"}, {"shell", "--", "true"},
		} {
			out, errs, code := runCLI(t, args...)
			if code != session.ExitNotRunning || out != "" || errs != "ERROR: "+c.says+"\n" {
				t.Errorf("VM %q, %v: exit %d, stdout %q, stderr %q", c.status, args, code, out, errs)
			}
		}
		out, errs, code := runCLI(t, "registry", "list", "-o", "json")
		var rows []struct{ Name, State string }
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 || len(rows) != 6 || rows[0].State != "VM not running" {
			t.Errorf("VM %q, registry list -o json: exit %d (%v)\n%s%s", c.status, code, err, out, errs)
		}
	}
}

// Whatever cobra or a flag's value refuses exits 2, says where the help
// is, and reaches nothing (limactl is not even asked).
func TestUsageErrorsExit2(t *testing.T) {
	home := labHome(t, "")
	limaVM(t, home, "fail") // anything that looks at the VM fails with 1
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"nosuch"}, `unknown command "nosuch" for "marina"`},
		{[]string{"clustr"}, "Did you mean this?\n\tcluster"},
		{[]string{"start"}, "unknown command \"start\" for \"marina\"\n\nDid you mean this?\n\tmarina up"},
		{[]string{"stop"}, "Did you mean this?\n\tmarina down"},
		{[]string{"create", "cluster"}, "Did you mean this?\n\tmarina cluster create NAME"},
		{[]string{"get", "clusters"}, "Did you mean this?\n\tmarina cluster list"},
		{[]string{"delete", "cluster", "dev"}, "Did you mean this?\n\tmarina cluster delete NAME"},
		{[]string{"cluster", "crate", "dev"}, `unknown command "crate" for "marina cluster"`},
		{[]string{"status", "--nope"}, "unknown flag: --nope"},
		{[]string{"--nope"}, "unknown flag: --nope"},
		{[]string{"status", "extra"}, `unknown command "extra" for "marina status"`},
		{[]string{"cluster", "create"}, "name the cluster: marina cluster create NAME"},
		{[]string{"cluster", "create", "a", "b"}, "give one cluster (2 given: a b): marina cluster create NAME"},
		{[]string{"cluster", "create", "x", "--workers", "two"}, `--workers "two": --workers takes a whole number from 0 to 9`},
		{[]string{"cluster", "create", "x", "--wait", "soon"}, `--wait "soon": --wait takes a duration such as 90s, 5m or 1h30m`},
		{[]string{"fleet", "describe"}, "name the fleet: marina fleet describe NAME"},
		{[]string{"fleet", "apply"}, "give the fleet manifest: marina fleet apply FILE (or -f FILE; - reads stdin)"},
		{[]string{"fleet", "apply", "a.yaml", "b.yaml"}, "give one manifest (2 given: a.yaml b.yaml)"},
		{[]string{"fleet", "apply", "a.yaml", "-f", "b.yaml"}, "give the manifest as FILE or with -f, not both"},
		{[]string{"cluster", "label"}, "name the cluster and the labels: marina cluster label NAME KEY=VALUE… KEY-…"},
		{[]string{"kubeconfig", "use"}, "name the cluster: marina kubeconfig use NAME"},
		{[]string{"status", "-o", "xml"}, `unknown output format "xml": use text, json or yaml`},
		{[]string{"cluster", "list", "-o", "table"}, `unknown output format "table"`},
		{[]string{"cluster", "list", "-l", "tier in (gold"}, `-l "tier in (gold" is not a label selector`},
		{[]string{"doctor", "--dry-run"}, "--dry-run goes with --fix"},
		{[]string{"completion", "bash", "extra"}, `unknown command "extra" for "marina completion bash"`},
	} {
		out, errs, code := runCLI(t, c.args...)
		if code != session.ExitUsage || out != "" || !strings.HasPrefix(errs, "ERROR: ") || !strings.Contains(errs, c.says) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errs, c.says)
		}
		// cobra's own refusals say where the help is.
		if !strings.Contains(c.says, "output format") && !strings.Contains(c.says, "selector") && !strings.Contains(c.says, "--fix") && !strings.Contains(errs, "--help' for usage.") {
			t.Errorf("%v: no pointer to the help: %q", c.args, errs)
		}
	}
	// Bare marina and a bare group print their help and succeed.
	for _, args := range [][]string{nil, {"cluster"}} {
		if out, errs, code := runCLI(t, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("marina %v: exit %d\n%s%s", args, code, out, errs)
		}
	}
}

// status exits 1 when it shows something broken, after printing its
// whole view in every format; a VM that is stopped or not created is no
// failure.
func TestStatusExitsNonZeroOnWhatIsBroken(t *testing.T) {
	home := labHome(t, "")
	limaVM(t, home, "Broken", "the hostagent died")
	out, errs, code := runCLI(t, "status")
	for _, want := range []string{"✗ VM       lab: Broken; the hostagent died\n", "- route    172.30.0.0/16 → "} {
		if !strings.Contains(out, want) {
			t.Errorf("status of a Broken VM lacks %q:\n%s", want, out)
		}
	}
	full, _, _ := runCLI(t, "status", "-v")
	for _, want := range []string{"=== VM ===\n", "  status:   Broken\n", "  problem:  the hostagent died\n", "=== Host route ===\n  172.30.0.0/16 → "} {
		if !strings.Contains(full, want) {
			t.Errorf("status -v of a Broken VM lacks %q:\n%s", want, full)
		}
	}
	if code != session.ExitFailed || errs != "ERROR: status shows 2 problems (the first: VM lab is Broken): `marina doctor` says how to fix each\n" {
		t.Errorf("status of a Broken VM: exit %d, stderr %q", code, errs)
	}
	for _, o := range []string{"json", "yaml"} {
		out, _, code := runCLI(t, "status", "-o", o)
		if code != session.ExitFailed || !strings.Contains(out, "the hostagent died") || !strings.Contains(out, "route") {
			t.Errorf("status -o %s of a Broken VM: exit %d\n%s", o, code, out)
		}
	}
	for _, status := range []string{"Stopped", ""} {
		home := labHome(t, "")
		limaVM(t, home, status)
		if out, errs, code := runCLI(t, "status"); code != 0 || errs != "" {
			t.Errorf("status of VM %q: exit %d\n%s%s", status, code, out, errs)
		}
	}
}

// A confirmation answered no did what was asked (nothing): "Cancelled."
// and exit 0, however deep the refusal was wrapped.
func TestDeclinedIsCancelled(t *testing.T) {
	for _, err := range []error{session.ErrCancelled, fmt.Errorf("destroy: %w", session.ErrCancelled)} {
		var out, errb bytes.Buffer
		if code := newRoot(&out, &errb).exit(err); code != session.ExitOK || errb.String() != "Cancelled.\n" || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q", err, code, errb.String())
		}
	}
}
