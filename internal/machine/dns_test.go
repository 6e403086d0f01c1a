package machine

import (
	"slices"
	"testing"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
)

func TestPlanDNS(t *testing.T) {
	specs, err := dns.Specs(config.Default(), []byte("a key of at least 16 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	sum := specs[1].FileSum()
	ct := func(id, name, role, digest, state string) docker.Container {
		return docker.Container{ID: id, Name: name, State: state, Labels: map[string]string{dns.LabelRole: role, dns.LabelConfig: digest}}
	}
	etcd := ct("e", dns.EtcdName, dns.RoleEtcd, specs[0].Digest, "running")
	server := ct("s", dns.ServerName, dns.RoleServer, specs[1].Digest, "running")
	names := func(ss []dns.Spec) (out []string) {
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	ids := func(cs []docker.Container) (out []string) {
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, c := range []struct {
		what         string
		have         []docker.Container
		sum          string
		create, gone []string
		writes       bool
	}{
		{"current", []docker.Container{etcd, server}, sum, nil, nil, false},
		{"nothing yet", nil, "", []string{dns.EtcdName, dns.ServerName}, nil, true},
		{"Corefile changed in the VM", []docker.Container{etcd, server}, "other", []string{dns.ServerName}, []string{"s"}, true},
		{"stale digest", []docker.Container{etcd, ct("s", dns.ServerName, dns.RoleServer, "old", "running")}, sum, []string{dns.ServerName}, []string{"s"}, false},
		{"exited", []docker.Container{ct("e", dns.EtcdName, dns.RoleEtcd, specs[0].Digest, "exited"), server}, sum, []string{dns.EtcdName}, []string{"e"}, false},
		{"renamed", []docker.Container{ct("e", "etcd-old", dns.RoleEtcd, specs[0].Digest, "running"), server}, sum, []string{dns.EtcdName}, []string{"e"}, false},
		{"unknown role", []docker.Container{etcd, server, ct("x", "marina-dns-x", "cache", "", "running")}, sum, nil, []string{"x"}, false},
		{"two for one role", []docker.Container{etcd, server, ct("e2", dns.EtcdName+"-2", dns.RoleEtcd, specs[0].Digest, "running")}, sum, nil, []string{"e2"}, false},
	} {
		p := planDNS(specs, c.have, c.sum, "e")
		if !slices.Equal(names(p.create), c.create) || !slices.Equal(ids(p.remove), c.gone) || p.writes != c.writes {
			t.Errorf("%s: create %v remove %v writes %v; want %v %v %v", c.what, names(p.create), ids(p.remove), p.writes, c.create, c.gone, c.writes)
		}
		// etcd's users are set up again whenever its container is new.
		if want := slices.Contains(c.create, dns.EtcdName); p.auth != want {
			t.Errorf("%s: auth %v, want %v", c.what, p.auth, want)
		}
	}
	// The container the users were set up in is kept: none to set up;
	// another one, or none recorded: set up.
	have := []docker.Container{etcd, server}
	for authed, want := range map[string]bool{"e": false, "other": true, "": true} {
		if p := planDNS(specs, have, sum, authed); p.auth != want {
			t.Errorf("set up in %q: auth %v, want %v", authed, p.auth, want)
		}
	}
}

// Emptying a cluster's zone under an earlier domain must never empty the
// current zone or another cluster's names.
func TestOldZone(t *testing.T) {
	for _, c := range []struct{ name, was, now, want string }{
		{"dev", "demo.internal", "lab.internal", "dev.demo.internal"},
		{"dev", "", "lab.internal", ""},
		{"dev", "lab.internal", "lab.internal", ""},
		{"demo", "internal", "demo.internal", ""},     // the whole current zone
		{"x", "internal", "a.x.internal", ""},         // above the current zone
		{"c", "x.demo.internal", "demo.internal", ""}, // inside it: cluster x's namespace c
		{"dev", "old.example", "demo.internal", "dev.old.example"},
	} {
		if got := oldZone(c.name, c.was, c.now); got != c.want {
			t.Errorf("oldZone(%q, %q, %q) = %q, want %q", c.name, c.was, c.now, got, c.want)
		}
	}
}
