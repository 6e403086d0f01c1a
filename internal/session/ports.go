package session

import (
	"context"
	"io"
	"net/netip"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kube"
	"github.com/bcollard/marina/internal/vm"
)

// The narrow interfaces below are everything commands do to the world
// outside marina's own files. The CLI wires today's real types
// (internal/cli/wiring.go); tests wire scripted fakes.

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
	Stop(ctx context.Context, id string) error
	// Started is when container id last started, by the VM's clock.
	Started(ctx context.Context, id string) (time.Time, error)
	// Memory is what container id uses now, as docker stats shows it.
	Memory(ctx context.Context, id string) (uint64, error)
	// Named is the container called name, nil when there is none.
	Named(ctx context.Context, name string) (*docker.Container, error)
	// Endpoints and Reattach convert a network in place (migrate).
	Endpoints(ctx context.Context, network string) ([]docker.Endpoint, error)
	Reattach(ctx context.Context, spec docker.NetworkSpec, eps []docker.Endpoint, say func(string)) error
	EnsureImage(ctx context.Context, ref string) error
	// ImageID is the id Docker holds ref under, "" when it has none.
	ImageID(ctx context.Context, ref string) (string, error)
	// ImageNames are the names of Docker's images (completion).
	ImageNames(ctx context.Context) ([]string, error)
	// LoadArchive loads an image archive and returns the names loaded.
	LoadArchive(ctx context.Context, r io.Reader) ([]string, error)
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
	// Sudoers is the sudoers drop-in that lets user run marina's route
	// commands (through lima0's /24) without a password.
	Sudoers(user string, cidr netip.Prefix, lima0 netip.Addr, resolver string, pods ...netip.Prefix) (string, error)
	// OS is the host's operating system, as runtime.GOOS names it.
	OS() string
	// Rosetta reports whether Rosetta 2 is installed on the host.
	Rosetta() bool
}

// Kube is one cluster's API: the generic operations add-ons need
// (addons.Cluster), and marina's own on nodes and the echo workload.
type Kube interface {
	addons.Cluster
	NodeLabels(ctx context.Context, node string) (map[string]string, error)
	LabelNodes(ctx context.Context, set map[string]string, remove []string) error
	Nodes(ctx context.Context) ([]kube.NodeInfo, error)
	// Back reports whether a cluster whose nodes restarted (at since or
	// later) is back: its nodes and the pods of namespaces Ready, those
	// of the restarted nodes since then (kube.Back).
	Back(ctx context.Context, since time.Time, nodes int, restarted, namespaces []string) (bool, string, error)
	DeployEcho(ctx context.Context, e kube.Echo) error
	EchoAddress(ctx context.Context, ns string) (netip.Addr, error)
	DeleteNamespace(ctx context.Context, ns string) error
	// ServerVersion is the API server's version (GET /version).
	ServerVersion(ctx context.Context) (string, error)
	// Ready waits until the API server serves requests (GET /readyz).
	Ready(ctx context.Context) error
	// LoadBalancers lists its LoadBalancer Services.
	LoadBalancers(ctx context.Context) ([]kube.LoadBalancer, error)
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
	// Manifest is add-on name's pinned manifest of version
	// (addons.Fetch).
	Manifest func(ctx context.Context, name, version string) ([]byte, error)
	// Calls counts the guest round trips made so far.
	Calls func() int64
	// Pick asks on the terminal which of items to take (ui.Pick): the
	// chosen indexes, or ui.ErrCancelled.
	Pick func(question string, items []string) ([]int, error)
}
