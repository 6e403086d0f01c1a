package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/vm"
)

// The narrow interfaces below are everything commands do to the world
// outside marina's own files. Production wires today's real types
// (wiring.go); tests wire scripted fakes.

// VM is Lima, through limactl.
type VM interface {
	Version(ctx context.Context) (string, error)
	Get(ctx context.Context, name string) (*vm.Instance, error)
	Create(ctx context.Context, name string, template []byte) error
	Start(ctx context.Context, name string, edits vm.Edits) error
	Stop(ctx context.Context, name string) error
	Delete(ctx context.Context, name string) error
	Shell(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
}

// Guest is the command channel into the running VM: each call is one
// round trip.
type Guest interface {
	Observe(ctx context.Context) (guest.State, error)
	// ObserveWith is Observe with doctor's probes in the same round trip.
	ObserveWith(ctx context.Context, p guest.Probes) (guest.State, error)
	Run(ctx context.Context, s vm.Script) (vm.Result, error)
}

// Docker is the VM's Docker Engine, over the forwarded socket.
type Docker interface {
	Version(ctx context.Context) (string, error)
	WaitReady(ctx context.Context, timeout time.Duration) (string, error)
	InspectNetwork(ctx context.Context, name string) (*docker.NetworkState, error)
	CreateNetwork(ctx context.Context, spec docker.NetworkSpec) error
	ListLabeled(ctx context.Context, label string) ([]docker.Container, error)
	KindNodes(ctx context.Context, clusterLabel, roleLabel string) ([]docker.Node, error)
	Remove(ctx context.Context, id string) error
	Start(ctx context.Context, id string) error
	// Named is the container called name, nil when there is none.
	Named(ctx context.Context, name string) (*docker.Container, error)
	// Endpoints and Reattach convert a network in place (migrate).
	Endpoints(ctx context.Context, network string) ([]docker.Endpoint, error)
	Reattach(ctx context.Context, spec docker.NetworkSpec, eps []docker.Endpoint, say func(string)) error
	EnsureImage(ctx context.Context, ref string) error
	Run(ctx context.Context, spec docker.RunSpec) error
	Close() error
}

// Host is the Mac: its routing table, the privileged change of it, and
// what it sees when it calls into the kind network.
type Host interface {
	Lookup(ctx context.Context, want netip.Prefix) (*host.Route, error)
	Privileged(ctx context.Context, argv []string) error
	RouteFix(s host.RouteStatus) []string
	RouteRemove(s host.RouteStatus) []string
	DeleteCommand(p netip.Prefix, gw netip.Addr) []string
	// SourceFor is the Mac's own address towards addr.
	SourceFor(addr netip.Addr) (netip.Addr, error)
	// ClientIP calls the echo server at lb: what it saw, and the address
	// the Mac sent from.
	ClientIP(ctx context.Context, lb netip.Addr) (seen, mine string, err error)
	// Query asks the DNS server at server for name's addresses.
	Query(ctx context.Context, server netip.Addr, name string) (dns.Answer, error)
	// Overlapping lists the host's routes that overlap p: inside it, or
	// holding it.
	Overlapping(ctx context.Context, p netip.Prefix) ([]host.Route, error)
	// Dial opens a TCP connection to addr and closes it (nil: it opened).
	Dial(ctx context.Context, addr netip.AddrPort) error
	// FlushDNS is the commands that empty the Mac's DNS cache, run as
	// root.
	FlushDNS() ([][]string, error)
	// OS is the host's operating system, as runtime.GOOS names it.
	OS() string
	// Rosetta reports whether Rosetta 2 is installed on the host.
	Rosetta() bool
}

// Kube is one cluster's API.
type Kube interface {
	ApplyMetalLB(ctx context.Context, manifest []byte) error
	// ApplyExternalDNS applies its manifest with its etcd user in a Secret.
	ApplyExternalDNS(ctx context.Context, manifest []byte, etcd dns.Creds) error
	Wait(ctx context.Context, w addons.Wait) error
	Pool(ctx context.Context, name string, ranges []string) error
	CoreDNS(ctx context.Context, resolvers []config.DNSResolver) error
	NodeLabels(ctx context.Context, node string) (map[string]string, error)
	LabelNodes(ctx context.Context, set map[string]string, remove []string) error
	Nodes(ctx context.Context) ([]kube.NodeInfo, error)
	ApplyMetricsServer(ctx context.Context, manifest []byte, insecureTLS bool) error
	DeployEcho(ctx context.Context, e kube.Echo) error
	EchoAddress(ctx context.Context, ns string) (netip.Addr, error)
	DeleteNamespace(ctx context.Context, ns string) error
	// ServerVersion is the API server's version (GET /version).
	ServerVersion(ctx context.Context) (string, error)
	// Ready waits until the API server serves requests (GET /readyz).
	Ready(ctx context.Context) error
	// MetalLBPool reads the addresses of MetalLB's IPAddressPool name;
	// found is false when there is none.
	MetalLBPool(ctx context.Context, name string) (addrs []string, found bool, err error)
}

// Deps makes the outside world's parts for one process.
type Deps struct {
	VM func() (VM, error)
	// VMAt is limactl on another LIMA_HOME (klimax's, for migrate).
	VMAt   func(limaHome string) (VM, error)
	Guest  func(name string) Guest
	Docker func(sock string) (Docker, error)
	Host   func() Host
	Kube   func(kc []byte, timeout time.Duration) (Kube, error)
	// MetalLB is the pinned MetalLB manifest of version.
	MetalLB func(ctx context.Context, version string) ([]byte, error)
	// MetricsServer is the pinned metrics-server manifest of version.
	MetricsServer func(ctx context.Context, version string) ([]byte, error)
	// Calls counts the guest round trips made so far.
	Calls func() int64
}

// configNeed is how much of the config a command reads.
type configNeed int

const (
	// vmOnly reads vm.name alone and warns about the rest of the file
	// (status, down, destroy, shell, cluster list: they must work with a
	// config marina up would refuse).
	vmOnly configNeed = iota
	// vmOnlyQuiet is vmOnly that leaves the problems to the caller.
	vmOnlyQuiet
	// strict needs the whole config valid: the command acts on settings.
	strict
	// strictOrDefault is strict, with the defaults when there is no file
	// (marina up).
	strictOrDefault
	// noConfig reads no config and looks at no VM (cluster verify).
	noConfig
)

// Needs says what a command needs from Open.
type Needs struct {
	Config configNeed
	// Running fails unless the VM runs.
	Running bool
	// Lima0 reads lima0's address (one guest round trip).
	Lima0 bool
	// Clusters lists the clusters Docker shows.
	Clusters bool
}

// Session is one command's view of the world, opened once: the config as
// far as the command reads it, the VM, and the parts to reach the guest,
// Docker, the host and each cluster.
type Session struct {
	*Env
	Name string // the VM's
	// File is the config as read; Config is the whole valid config (for
	// vmOnly reads, only when File.Err is nil).
	File          config.Lenient
	Config        config.Config
	ConfigMissing bool // strictOrDefault found no file: Config is the defaults

	VM       VM
	Instance *vm.Instance // nil when the VM does not exist
	Guest    Guest
	Docker   Docker // set when the VM exists; it connects on first use
	Host     Host
	Lima0    netip.Addr
	Clusters []cluster.Info
}

// Open reads the config, looks the VM up and reads what need asks for;
// lima0's address and the clusters are read at the same time. The caller
// closes the session.
func Open(ctx context.Context, e *Env, need Needs) (*Session, error) {
	s := &Session{Env: e, Host: e.deps.Host()}
	if err := s.readConfig(need.Config); err != nil {
		// No config yet is no VM yet: for a command that needs one, that
		// is the VM not running (exit 3), as the README's codes say.
		if need.Running && errors.Is(err, config.ErrNotFound) && !e.Paths.Named {
			return nil, &ExitError{Code: ExitNotRunning, Err: err}
		}
		return nil, err
	}
	if need.Config == noConfig {
		return s, nil
	}
	var err error
	if s.VM, err = e.deps.VM(); err != nil {
		return nil, err
	}
	if s.Instance, err = s.VM.Get(ctx, s.Name); err != nil {
		return nil, err
	}
	if need.Running && !s.Running() {
		return nil, notRunning(s.Name, s.Instance)
	}
	s.Guest = e.deps.Guest(s.Name)
	if s.Instance != nil {
		if s.Docker, err = e.deps.Docker(s.socket()); err != nil {
			return nil, err
		}
	}
	if !s.Running() {
		return s, nil
	}
	var wg sync.WaitGroup
	var gErr, dErr error
	if need.Lima0 {
		wg.Go(func() {
			var st guest.State
			st, gErr = s.Guest.Observe(ctx)
			s.Lima0 = st.Lima0.Addr()
		})
	}
	if need.Clusters {
		wg.Go(func() { s.Clusters, dErr = s.listClusters(ctx) })
	}
	wg.Wait()
	if err := errors.Join(gErr, dErr); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Session) readConfig(need configNeed) error {
	switch need {
	case noConfig:
		return nil
	case strict, strictOrDefault:
		// Only marina's own config file may be missing (up writes it); a
		// file --config names must be there, and config.Read says so.
		if _, serr := os.Stat(s.Paths.Config); need == strictOrDefault && !s.Paths.Named && errors.Is(serr, os.ErrNotExist) {
			cfg := config.Default()
			if probs := config.Validate(cfg, s.Paths); len(probs) > 0 {
				return &config.Error{File: s.Paths.Config + " (defaults)", Problems: probs}
			}
			s.File, s.ConfigMissing = config.Lenient{Name: cfg.VM.Name, Config: cfg}, true
		} else {
			f, err := config.Read(s.Paths)
			if err != nil {
				return err
			}
			s.File = f
		}
		s.Config, s.Name = s.File.Config, s.File.Name
		// Settings this Mac cannot honour (vm.rosetta off Apple silicon)
		// are said once, here.
		s.warnHost(s.File)
		return nil
	}
	v, err := s.VMName(need == vmOnly)
	if err != nil {
		return err
	}
	s.File, s.Name = v, v.Name
	if v.Err == nil {
		s.Config = v.Config
	}
	return nil
}

// Close lets go of the session's connections.
func (s *Session) Close() {
	if s.Docker != nil {
		s.Docker.Close()
	}
}

// Running reports whether the VM runs.
func (s *Session) Running() bool {
	return s.Instance != nil && s.Instance.Status == vm.StatusRunning
}

// socket is the VM's forwarded Docker socket (the name was validated with
// the config).
func (s *Session) socket() string {
	files, _ := s.Paths.VM(s.Name)
	return files.DockerSocket
}

// listClusters reads the clusters from their node containers.
func (s *Session) listClusters(ctx context.Context) ([]cluster.Info, error) {
	nodes, err := s.Docker.KindNodes(ctx, cluster.KindLabel, cluster.RoleLabel)
	if err != nil {
		return nil, fmt.Errorf("%w\nIs the VM's Docker up? `marina status` shows it", err)
	}
	return cluster.Group(nodes), nil
}

// server is the API server address a kubeconfig of a new cluster in slot
// n uses: lima0's in direct mode, the Mac's loopback when Lima mirrors the
// port.
func (s *Session) server(n int) string {
	return apiServer(s.Lima0, !s.Config.Network.DisablePortMirroring, n)
}

// clusterServer is the API server address c's kubeconfig uses: the one of
// the mode c was created in (its published address), never the config's
// now. A cluster published on every address is reached on lima0 whether
// or not Lima mirrors ports; one on the VM's loopback only on the Mac's.
func (s *Session) clusterServer(c cluster.Info) string {
	return apiServer(s.Lima0, c.Loopback(), c.Slot)
}

func apiServer(lima0 netip.Addr, loopback bool, n int) string {
	h := lima0
	if loopback {
		h = netip.MustParseAddr("127.0.0.1")
	}
	return "https://" + netip.AddrPortFrom(h, uint16(slot.APIPort(n))).String()
}

// kube opens cluster name's API from its own kubeconfig; timeout bounds
// each request.
func (s *Session) kube(name string, timeout time.Duration) (Kube, error) {
	path, err := s.Paths.Kubeconfig(name)
	if err != nil {
		return nil, err
	}
	kc, err := kubeconfig.ReadFile(path, name)
	if err != nil {
		return nil, err
	}
	// Another home's file of the name would reach another VM's cluster.
	if err := kubeconfig.CheckFile(path, name, s.kubeOwner(true)); err != nil {
		return nil, err
	}
	k, err := s.deps.Kube(kc, timeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// notRunning is the error of commands that need the VM up: marina exits
// ExitNotRunning, and a command that prints data prints none.
func notRunning(name string, in *vm.Instance) error {
	if in == nil {
		return &ExitError{Code: ExitNotRunning, Err: fmt.Errorf("VM %s does not exist: create it with `marina up`", name)}
	}
	return &ExitError{Code: ExitNotRunning, Err: fmt.Errorf("VM %s is %s: start it with `marina up`", name, in.Status)}
}
