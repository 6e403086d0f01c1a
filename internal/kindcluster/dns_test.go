package kindcluster

import (
	"context"
	"strings"
	"testing"

	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session/sessiontest"
	"github.com/bcollard/marina/internal/vm"
)

// cluster delete removes the cluster's names from etcd in the same round
// trip, and says so when it could not.
func TestDeleteForgetsTheNames(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	f.DNSWarm()
	f.Cluster("dev", 1, "https://127.0.0.1:7001")
	f.Scripts["kind delete cluster"] = vm.Result{Stdout: []byte("@@ dns-forget dev.demo.internal failed\n")}
	if _, err := Delete(context.Background(), f.Env, DeleteOptions{Names: []string{"dev"}}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	body := f.Bodies["kind delete cluster"]
	if !strings.Contains(body, "etcd_call kv/deleterange") || strings.Index(body, "kind_delete dev") > strings.Index(body, "deleterange") {
		t.Errorf("the delete script does not remove the names after the cluster:\n%s", body)
	}
	// Its etcd user and role go with it, after its names.
	if i := strings.Index(body, `{"name":"externaldns-dev"}`); i < strings.Index(body, "deleterange") || !strings.Contains(body, "auth/user/delete") || !strings.Contains(body, "auth/role/delete") {
		t.Errorf("the delete script does not remove dev's etcd user after its names:\n%s", body)
	}
	if got := f.Called("guest."); len(got) != 1 {
		t.Errorf("%d guest round trips: %v", len(got), got)
	}
	if !strings.Contains(f.Stderr.String(), "dev.demo.internal could not be removed from the local DNS") {
		t.Errorf("no warning:\n%s", f.Stderr.String())
	}
}

func guestAddons(domain string) guest.Addons { return guest.Addons{DNS: domain, Auth: true} }

// A create before up ran the local DNS fails before kind runs: its
// ExternalDNS would never become available, and the cluster be rolled back.
func TestCreateNeedsTheLocalDNS(t *testing.T) {
	f := sessiontest.New(t)
	f.Config(nil)
	_, err := create(f, CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "run `marina up` first") {
		t.Fatalf("create without the local DNS: %v", err)
	}
	if got := f.Called("guest.run"); len(got) != 0 {
		t.Errorf("it ran %v", got)
	}
}

// A create gives the cluster its etcd user in kind's round trip, before
// kind runs (its ExternalDNS could not start without), and applies
// ExternalDNS with it.
func TestCreateGivesTheClusterItsEtcdUser(t *testing.T) {
	f := createFixture(t, nil)
	if _, err := create(f, CreateOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, f.Stderr.String())
	}
	var body string
	for name, b := range f.Bodies {
		if strings.HasPrefix(name, "kind create cluster") {
			body = b
		}
	}
	user, kind := strings.Index(body, `{"name":"externaldns-c1"}`), strings.Index(body, "kind create cluster --name c1")
	if user < 0 || kind < user {
		t.Errorf("c1's etcd user at %d, kind at %d in:\n%s", user, kind, body)
	}
	if got := f.Called("kube c1 apply-external-dns"); len(got) != 1 {
		t.Errorf("ExternalDNS applied %d times", len(got))
	}
}
