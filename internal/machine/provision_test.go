package machine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
	"gopkg.in/yaml.v3"
)

// olderVM makes the fixture's VM one an earlier marina provisioned: no
// record, its lima.yaml holding that marina's script, and daemon.json
// without the Docker Hub mirror when restart is set.
func olderVM(f *sessiontest.World, restart bool) string {
	f.T.Helper()
	lima := madeWith(f, true)
	b, err := os.ReadFile(lima)
	if err != nil {
		f.T.Fatal(err)
	}
	old := strings.Replace(string(b), guest.RecordPath, "/var/lib/marina/old-record", 1)
	if old == string(b) {
		f.T.Fatal("the template's script writes no record")
	}
	if err := os.WriteFile(lima, []byte(old), 0o644); err != nil {
		f.T.Fatal(err)
	}
	p := guest.Provisioned("v9.9.9", "marina", "29.1.0")
	p.Record = nil
	if restart {
		p.DaemonSum = strings.Repeat("a", 64)
	}
	f.Provisioning = &p
	return lima
}

func provisionScript(t *testing.T, lima string) string {
	t.Helper()
	b, err := os.ReadFile(lima)
	if err != nil {
		t.Fatal(err)
	}
	var y struct {
		Provision []struct{ Script string } `yaml:"provision"`
		CPUs      int                       `yaml:"cpus"`
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	if len(y.Provision) != 1 || y.CPUs == 0 {
		t.Fatalf("lima.yaml lost its settings:\n%s", b)
	}
	return y.Provision[0].Script
}

// A VM an earlier marina provisioned, whose files this marina's script
// does not change in a way that restarts Docker: up provisions it again
// without asking, gives its lima.yaml the new script for the next boots,
// and a second up changes nothing.
func TestUpProvisionsAnOlderVMInPlace(t *testing.T) {
	f := sessiontest.New(t)
	lima := olderVM(f, false)
	r, err := Up(context.Background(), f.Env, UpOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := planned(r); !strings.Contains(p, "provision VM marina again with this marina's script, in place: provisioned by an earlier marina, which kept no record; kind → "+vm.KindVersion) || strings.Contains(p, "restart Docker") {
		t.Errorf("dry run:\n%s", p)
	}
	if len(f.Called("guest.run provision")) != 0 {
		t.Fatal("the dry run provisioned the VM")
	}
	note := f.Env.Paths.Provisioned()
	if _, err := os.Stat(note); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dry run noted the VM's provisioning: %v", err)
	}
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	// marina version reads, on the Mac, that this marina provisioned it.
	seen, err := guest.LoadSeen(note)
	if err != nil || seen == nil || seen.VM != "marina" || seen.Marina != "v9.9.9" || seen.Behind() {
		t.Errorf("up's note: %+v %v", seen, err)
	}
	if len(f.Called("guest.run provision the VM again")) != 1 {
		t.Fatalf("up did not provision the VM again:\n%s", f.Log())
	}
	body := f.Bodies["provision the VM again"]
	if !strings.Contains(body, "SocketUser=marina\n") || strings.Contains(body, "{{") {
		t.Errorf("the script run in the VM does not have the Lima user filled in:\n%s", body)
	}
	if got := provisionScript(t, lima); got != guest.Provision("v9.9.9") {
		t.Errorf("lima.yaml keeps the old script:\n%s", got)
	}
	f.Calls = nil
	r, err = Up(context.Background(), f.Env, UpOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := planned(r); strings.Contains(p, "provision") {
		t.Errorf("a second up still plans:\n%s", p)
	}
	// A warm up leaves the note as it was (an old date tells a rewrite);
	// destroy removes it with the VM.
	seen.At = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := guest.SaveSeen(note, *seen); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(note)
	f.Provisioning = nil // the VM now reports this marina's record
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(note); string(after) != string(before) {
		t.Errorf("a warm up rewrote the note:\n%s\n%s", before, after)
	}
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(note); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("destroy left up's note: %v", err)
	}
}

// Bringing the VM up to date restarts its Docker: without a terminal up
// says how and changes nothing, a dry run lists the restart, "no" keeps
// the VM as it is, and --yes provisions it, starts again the node
// containers that ran, and looks again.
func TestUpAsksBeforeADockerRestart(t *testing.T) {
	f := sessiontest.New(t)
	lima := olderVM(f, true)
	f.Cluster("dev", 1, "https://192.168.64.3:7001")
	before := provisionScript(t, lima)

	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Stderr.String(), "run `marina up --yes` to do it") || len(f.Called("guest.run provision")) != 0 || provisionScript(t, lima) != before {
		t.Fatalf("without a terminal up provisioned the VM or did not say how:\n%s\n%s", f.Stderr.String(), f.Log())
	}
	r, err := Up(context.Background(), f.Env, UpOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := planned(r); !strings.Contains(p, "Docker's daemon.json") || !strings.Contains(p, "restart Docker in VM marina: every container stops and starts") {
		t.Errorf("dry run:\n%s", p)
	}
	f.Env.TTY, f.Env.Stdin = true, strings.NewReader("n\n")
	if _, err := Up(context.Background(), f.Env, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Stderr.String(), "Bring VM marina up to date now") || len(f.Called("guest.run provision")) != 0 {
		t.Fatalf("no at the prompt:\n%s", f.Stderr.String())
	}

	f.Calls = nil
	f.Env.TTY = false
	// Docker's restart stops the nodes; they come back only when marina
	// starts them.
	exitNodesOn(f, "guest.run provision the VM again")
	if _, err := Up(context.Background(), f.Env, UpOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	f.Before = nil
	inOrder(t, f.Log(), "guest.observe", "guest.run provision the VM again", "docker.start dev-cp", "guest.observe", "kube dev nodes")
	if provisionScript(t, lima) != guest.Provision("v9.9.9") {
		t.Error("lima.yaml keeps the old script")
	}
}

// A VM of another Ubuntu release is not provisioned in place: up says so
// and how to get a new VM, and goes on.
func TestUpSaysAVMTooOldToProvision(t *testing.T) {
	f := sessiontest.New(t)
	olderVM(f, false)
	f.Provisioning.OSVersion = "22.04"
	if _, err := Up(context.Background(), f.Env, UpOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Stderr.String(), "VM marina runs ubuntu 22.04, and marina provisions Ubuntu 24.04 only") || !strings.Contains(f.Stderr.String(), "`marina destroy && marina up` makes a new VM") || len(f.Called("guest.run provision")) != 0 {
		t.Errorf("%s\n%s", f.Stderr.String(), f.Log())
	}
}

// A script that fails after Docker restarted (kind's download, say) still
// gets the clusters that ran started again, and the error says it is safe
// to run again.
func TestUpResumesWhenProvisioningFails(t *testing.T) {
	f := sessiontest.New(t)
	olderVM(f, true)
	f.Cluster("dev", 1, "https://192.168.64.3:7001")
	exitNodesOn(f, "guest.run provision the VM again")
	f.Fail = map[string]error{"guest.run provision the VM again": errors.New("marina: the kind download does not match its sha256")}
	_, err := Up(context.Background(), f.Env, UpOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "it is safe to run again: `marina up`") {
		t.Fatalf("error = %v", err)
	}
	if len(f.Called("docker.start dev-cp")) != 1 {
		t.Errorf("dev was not started again:\n%s", f.Log())
	}
}

// destroy leaves up's note when it names another VM (vm.name changed
// since): that VM is still there.
func TestDestroyKeepsAnotherVMsNote(t *testing.T) {
	f := sessiontest.New(t)
	note := f.Env.Paths.Provisioned()
	if err := os.MkdirAll(filepath.Dir(note), 0o755); err != nil {
		t.Fatal(err)
	}
	other := guest.Seen{VM: "other", Marina: "v1.0.0", Script: guest.ProvisionDigest(), At: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	if err := guest.SaveSeen(note, other); err != nil {
		t.Fatal(err)
	}
	if _, err := Destroy(context.Background(), f.Env, DestroyOptions{Yes: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	if len(f.Called("vm.delete marina")) != 1 {
		t.Fatalf("destroy did not delete VM marina:\n%s", f.Log())
	}
	if got, err := guest.LoadSeen(note); err != nil || got == nil || *got != other {
		t.Errorf("destroy of VM marina took the note of VM other: %+v %v", got, err)
	}
}
