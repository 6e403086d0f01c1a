package session

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/vm"
)

// ConfigNeed is how much of the config a command reads.
type ConfigNeed int

const (
	// VMOnly reads vm.name alone and warns about the rest of the file
	// (status, down, destroy, shell, cluster list: they must work with a
	// config marina up would refuse).
	VMOnly ConfigNeed = iota
	// VMOnlyQuiet is VMOnly that leaves the problems to the caller.
	VMOnlyQuiet
	// Strict needs the whole config valid: the command acts on settings.
	Strict
	// StrictOrDefault is Strict, with the defaults when there is no file
	// (marina up).
	StrictOrDefault
	// NoConfig reads no config and looks at no VM (cluster verify).
	NoConfig
	// Lenient reads what it can and never fails: the defaults when there
	// is no file, vm.name alone when the rest is not valid (File.Err),
	// and nothing when even vm.name cannot be read (ConfigErr). Doctor
	// reports on the config rather than stopping at it.
	Lenient
)

// Needs says what a command needs from Open.
type Needs struct {
	Config ConfigNeed
	// Running fails unless the VM runs.
	Running bool
	// Lima0 reads lima0's address (one guest round trip).
	Lima0 bool
	// Clusters lists the clusters Docker shows.
	Clusters bool
	// Observe says the command observes the guest first thing (Observe):
	// its round trip starts while Lima is asked about the VM, and the
	// observation takes its answer when the VM runs.
	Observe bool
	// Upstreams has that observation probe each mirror's upstream too
	// (up: whether the VM is offline).
	Upstreams bool
}

// Session is one command's view of the world, opened once: the config as
// far as the command reads it, the VM, and the parts to reach the guest,
// Docker, the host and each cluster.
type Session struct {
	*Env
	Name string // the VM's
	// File is the config as read; Config is the whole valid config (for
	// VMOnly reads, only when File.Err is nil).
	File          config.Lenient
	Config        config.Config
	ConfigMissing bool // StrictOrDefault or Lenient found no file: Config is the defaults
	// ConfigErr is why a Lenient read found no vm.name (Name is "").
	ConfigErr error

	VM       VM
	Instance *vm.Instance // nil when the VM does not exist
	Guest    Guest
	Docker   Docker // set when the VM exists; it connects on first use
	Host     Host
	Lima0    netip.Addr
	Clusters []cluster.Info

	// early is the guest's observation Needs.Observe started, nil once
	// taken or when the VM does not run; stopEarly ends it.
	early     chan observed
	stopEarly context.CancelFunc
	// earlyProbes are the upstreams the early observation probed.
	earlyProbes guest.Probes
}

// observed is one observation of the guest.
type observed struct {
	state guest.State
	err   error
}

// Open reads the config, looks the VM up and reads what need asks for;
// lima0's address and the clusters are read at the same time. The caller
// closes the session.
func Open(ctx context.Context, e *Env, need Needs) (*Session, error) {
	s, err := Read(e, need)
	if err != nil {
		return nil, err
	}
	if err := s.Attach(ctx, need); err != nil {
		return nil, err
	}
	return s, nil
}

// Read is the first half of Open: the config, as far as need reads it, and
// nothing else yet. A command that checks its own input against the config
// before it reaches for the VM (fleet apply) reads once, then Attaches.
func Read(e *Env, need Needs) (*Session, error) {
	s := &Session{Env: e, Host: e.Deps.Host()}
	if err := s.readConfig(need.Config); err != nil {
		// No config yet is no VM yet: for a command that needs one, that
		// is the VM not running (exit 3), as the README's codes say.
		if need.Running && errors.Is(err, config.ErrNotFound) && !e.Paths.Named {
			return nil, NotRunning(config.Default().VM.Name, nil)
		}
		return nil, err
	}
	return s, nil
}

// DialDocker connects to the VM's Docker over its forwarded socket without
// asking Lima about the VM: completion must answer fast, and quietly when
// the VM is down.
func (s *Session) DialDocker() error {
	var err error
	s.Docker, err = s.Deps.Docker(s.Socket())
	return err
}

// Attach is the second half of Open: the VM, the guest and Docker, as far
// as need asks.
func (s *Session) Attach(ctx context.Context, need Needs) error {
	e := s.Env
	if need.Config == NoConfig {
		return nil
	}
	var err error
	if s.VM, err = e.Deps.VM(); err != nil {
		return err
	}
	s.Guest = e.Deps.Guest(s.Name)
	if need.Observe && s.Name != "" {
		// On a Mac both cost tens of milliseconds: the guest's round trip
		// need not wait for Lima's answer. It fails at once when the VM
		// does not run, and is then not used.
		var ectx context.Context
		ectx, s.stopEarly = context.WithCancel(ctx)
		s.early = make(chan observed, 1)
		if need.Upstreams {
			s.earlyProbes = UpstreamProbes(s.Config)
		}
		go func() {
			st, err := guestObserve(ectx, s.Guest, s.earlyProbes)
			s.early <- observed{st, err}
		}()
	}
	if s.Instance, err = s.VM.Get(ctx, s.Name); err != nil {
		s.DropEarly()
		return err
	}
	if !s.Running() {
		s.DropEarly()
	}
	if need.Running && !s.Running() {
		return NotRunning(s.Name, s.Instance)
	}
	if s.Instance != nil {
		if s.Docker, err = e.Deps.Docker(s.Socket()); err != nil {
			return err
		}
	}
	if !s.Running() {
		return nil
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
		wg.Go(func() { s.Clusters, dErr = s.ListClusters(ctx) })
	}
	wg.Wait()
	if err := errors.Join(gErr, dErr); err != nil {
		s.Close()
		return err
	}
	return nil
}

func (s *Session) readConfig(need ConfigNeed) error {
	switch need {
	case NoConfig:
		return nil
	case Strict, StrictOrDefault:
		// Only marina's own config file may be missing (up writes it); a
		// file --config names must be there, and config.Read says so.
		if _, serr := os.Stat(s.Paths.Config); need == StrictOrDefault && !s.Paths.Named && errors.Is(serr, os.ErrNotExist) {
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
		s.WarnHost(s.File)
		return nil
	}
	v, err := s.VMName(need == VMOnly)
	if errors.Is(err, config.ErrNotFound) && !s.Paths.Named {
		// No config yet: nothing is made, and marina up would make the VM
		// of the defaults' name. Commands that only look (status, down,
		// destroy) say so; those that need the VM stop at Attach.
		cfg := config.Default()
		s.Config, s.Name = cfg, cfg.VM.Name
		s.File, s.ConfigMissing = config.Lenient{Name: s.Name, Config: cfg}, true
		return nil
	}
	if need == Lenient && err != nil {
		s.ConfigErr = err
		return nil
	}
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
	s.DropEarly()
	if s.Docker != nil {
		s.Docker.Close()
	}
}

// DropEarly stops the observation Needs.Observe started, if it was not
// taken: a command that changes the VM before it observes it calls it.
func (s *Session) DropEarly() {
	if s.stopEarly != nil {
		s.stopEarly()
	}
	s.early = nil
}

// takeEarly is the observation Needs.Observe started, once, if it
// probed the upstreams p asks for and nothing more; otherwise it is
// dropped.
func (s *Session) takeEarly(p guest.Probes) (observed, bool) {
	if s.early == nil {
		return observed{}, false
	}
	if !slices.Equal(p.Upstreams, s.earlyProbes.Upstreams) || p.Records != "" || p.Sizes != "" {
		s.DropEarly()
		return observed{}, false
	}
	o := <-s.early
	s.early = nil
	return o, true
}

// Running reports whether the VM runs.
func (s *Session) Running() bool {
	return s.Instance != nil && s.Instance.Status == vm.StatusRunning
}

// Socket is the VM's forwarded Docker socket (the name was validated with
// the config).
func (s *Session) Socket() string {
	files, _ := s.Paths.VM(s.Name)
	return files.DockerSocket
}

// ListClusters reads the clusters from their node containers.
func (s *Session) ListClusters(ctx context.Context) ([]cluster.Info, error) {
	nodes, err := s.Docker.KindNodes(ctx, cluster.KindLabel, cluster.RoleLabel)
	if err != nil {
		return nil, fmt.Errorf("%w\nIs the VM's Docker up? `marina status` shows it", err)
	}
	return cluster.Group(nodes), nil
}

// DockerCause is ListClusters' error without its hint, which sends the
// user to marina status: status itself, and destroy, say what they do
// about it.
func DockerCause(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

// Server is the API server address a kubeconfig of a new cluster in slot
// n uses: lima0's in direct mode, the Mac's loopback when Lima mirrors the
// port.
func (s *Session) Server(n int) string {
	return apiServer(s.Lima0, !s.Config.Network.DisablePortMirroring, n)
}

// ClusterServer is the API server address c's kubeconfig uses: the one of
// the mode c was created in (its published address), never the config's
// now. A cluster published on every address is reached on lima0 whether
// or not Lima mirrors ports; one on the VM's loopback only on the Mac's.
func (s *Session) ClusterServer(c cluster.Info) string {
	return apiServer(s.Lima0, c.Loopback(), c.Slot)
}

func apiServer(lima0 netip.Addr, loopback bool, n int) string {
	h := lima0
	if loopback {
		h = netip.MustParseAddr("127.0.0.1")
	}
	return "https://" + netip.AddrPortFrom(h, uint16(slot.APIPort(n))).String()
}

// Kube opens cluster name's API from its own kubeconfig; timeout bounds
// each request.
func (s *Session) Kube(name string, timeout time.Duration) (Kube, error) {
	path, err := s.Paths.Kubeconfig(name)
	if err != nil {
		return nil, err
	}
	kc, err := kubeconfig.ReadFile(path, name)
	if err != nil {
		return nil, err
	}
	// Another home's file of the name would reach another VM's cluster.
	if err := kubeconfig.CheckFile(path, name, s.KubeOwner(true)); err != nil {
		return nil, err
	}
	k, err := s.Deps.Kube(kc, timeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// NotRunning is the error of commands that need the VM up: marina exits
// ExitNotRunning, and a command that prints data prints none.
func NotRunning(name string, in *vm.Instance) error {
	if in == nil {
		return &ExitError{Code: ExitNotRunning, Err: fmt.Errorf("VM %s has not been created yet: run `marina up`", name)}
	}
	return &ExitError{Code: ExitNotRunning, Err: fmt.Errorf("VM %s is %s: start it with `marina up`", name, in.Status)}
}

// Member is s for one of several jobs at once (a fleet's creates), on e
// (see Env.Member).
func (s *Session) Member(e *Env) *Session {
	c := *s
	c.Env = e
	return &c
}
