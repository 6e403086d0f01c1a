package cli

import (
	"context"
	"net/netip"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// limactl is the limactl marina runs on limaHome, found as marina finds it
// ($LIMACTL, else the PATH): for the VM's commands, migrate's look at
// klimax's Lima, and marina version.
func limactl(getenv func(string) string, limaHome string, log func(string, ...any)) (*vm.Limactl, error) {
	bin, err := vm.FindLimactl(getenv)
	if err != nil {
		return nil, err
	}
	return &vm.Limactl{Bin: bin, LimaHome: limaHome, Run: run.Runner{Log: log}}, nil
}

// production wires the real parts (the composition root): limactl, ssh into the guest, the moby
// client, route(8) through sudo, client-go.
func production(e *session.Env) session.Deps {
	var l *vm.Limactl
	var g *vm.SSHGuest // one per process, so the round-trip count covers the command
	return session.Deps{
		Pick: func(question string, items []string) ([]int, error) {
			return ui.Pick(e.Stdin, e.Stderr, question, items)
		},
		VM: func() (session.VM, error) {
			var err error
			if l, err = limactl(e.Getenv, e.Paths.LimaHome(), e.UI.Debugf); err != nil {
				return nil, err
			}
			if w := e.UI.Writer("lima: "); w != nil {
				l.Stream = w
			}
			l.Progress = e.UI.Stage
			return l, nil
		},
		VMAt: func(limaHome string) (session.VM, error) {
			return limactl(e.Getenv, limaHome, e.UI.Debugf)
		},
		Guest: func(name string) session.Guest {
			if g == nil {
				files, _ := e.Paths.VM(name) // validated with the config
				g = &vm.SSHGuest{Name: name, Dir: files.InstanceDir, Limactl: l, Log: e.UI.Debugf}
			}
			return sshGuest{g}
		},
		Docker: func(sock string) (session.Docker, error) { return docker.Dial(sock) },
		Host: func() session.Host {
			h := host.New(run.Runner{Log: e.UI.Debugf}, e.TTY, e.Stdin, e.Stderr)
			h.UI = e.UI
			return macHost{h}
		},
		Kube: func(kc []byte, timeout time.Duration) (session.Kube, error) {
			k, err := kube.Open(kc, timeout)
			if err != nil {
				return nil, err
			}
			return kubeCluster{k}, nil
		},
		Manifest: func(ctx context.Context, name, version string) ([]byte, error) {
			return addons.Fetch(ctx, e.Paths.Cache(), name, version)
		},
		Calls: func() int64 {
			if g == nil {
				return 0
			}
			return g.Calls()
		},
	}
}

type sshGuest struct{ *vm.SSHGuest }

func (g sshGuest) Observe(ctx context.Context) (guest.State, error) {
	return guest.Observe(ctx, g.SSHGuest)
}

func (g sshGuest) ObserveWith(ctx context.Context, p guest.Probes) (guest.State, error) {
	return guest.ObserveWith(ctx, g.SSHGuest, p)
}

type macHost struct{ *host.Host }

func (macHost) SourceFor(addr netip.Addr) (netip.Addr, error) { return host.SourceFor(addr) }

func (macHost) Dial(ctx context.Context, addr netip.AddrPort) error {
	return host.Dial(ctx, addr, 2*time.Second)
}

func (macHost) OS() string { return runtime.GOOS }

func (macHost) Rosetta() bool { return host.RosettaInstalled() }

func (macHost) ClientIP(ctx context.Context, lb netip.Addr) (string, string, error) {
	return kube.ClientIP(ctx, lb)
}

func (macHost) Query(ctx context.Context, server netip.Addr, name string) (dns.Answer, error) {
	return dns.Query(ctx, server, name, false)
}

type kubeCluster struct{ *kube.Cluster }

// Do runs an add-on's operation on the cluster.
func (k kubeCluster) Do(ctx context.Context, op addons.Op) error { return op.Run(ctx, k.Cluster) }

func (k kubeCluster) Wait(ctx context.Context, w addons.Wait) error { return w.Do(ctx, k.Cluster) }

func (k kubeCluster) Get(ctx context.Context, r schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return k.Cluster.Get(ctx, r, ns, name)
}
