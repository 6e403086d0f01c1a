// Package status is marina status (one observation of the VM, its
// network, mirrors, local DNS and clusters, as values the CLI renders),
// and the local DNS's dns list and dns flush.
package status

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/docker/go-units"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/vm"
)

// Status is what marina status reports; its JSON form is a stable contract.
type Status struct {
	VM    VMStatus     `json:"vm"`
	Route RouteStatus  `json:"route"`
	Guest *GuestStatus `json:"guestNetwork,omitempty"`
	DNS   *DNSStatus   `json:"dns,omitempty"`
	// Clusters are the VM's kind clusters, as Docker shows them: an empty
	// list when it runs none, absent when the VM does not run or Docker
	// could not list them (the VM's errors say why).
	Clusters *[]ClusterStatus `json:"clusters,omitempty"`
	// Mirrors are the config's mirrors and their containers' states
	// (running VM whose Docker answered only). One that does not run is
	// a warning, not a problem: a mirror whose upstream cannot be reached
	// restarts until it can, and the nodes then pull from the upstream.
	Mirrors *[]MirrorState `json:"mirrors,omitempty"`
	// Push is the push registry (registries.local), when it is on.
	Push *PushState `json:"push,omitempty"`
	// Pods is network.podRouting's section, when it is on.
	Pods *PodsStatus `json:"podRouting,omitempty"`
	// ConfigError is why the config could not be read whole: the VM is
	// still shown (vm.name is read alone), its networking is not.
	ConfigError string `json:"configError,omitempty"`
}

// VMStatus is the VM section.
type VMStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"` // Running, Stopped, Broken, … or NotCreated
	VMType string `json:"vmType,omitempty"`
	Arch   string `json:"arch,omitempty"`
	CPUs   int    `json:"cpus,omitempty"`
	Memory string `json:"memory,omitempty"`
	Disk   string `json:"disk,omitempty"`
	Dir    string `json:"dir,omitempty"`
	// Lima0 is the guest's vzNAT address with its prefix (running VM only).
	Lima0 string `json:"lima0,omitempty"`
	// DockerSocket is the forwarded socket; Docker is the daemon version
	// answering on it.
	DockerSocket string `json:"dockerSocket"`
	Docker       string `json:"docker,omitempty"`
	// ProvisionedBy is the marina version the VM's provisioning record
	// names; Behind how the VM's provisioning differs from this marina's
	// ("" when it is this marina's).
	ProvisionedBy string `json:"provisionedBy,omitempty"`
	Behind        string `json:"behind,omitempty"`
	// Upgrade is what brings it to this marina's, when Behind is set.
	Upgrade string   `json:"upgrade,omitempty"`
	Errors  []string `json:"errors,omitempty"`
}

// UpgradeFix is what brings a VM provisioned by another marina to this
// one's: up in place, or a new VM for another Ubuntu release.
func UpgradeFix(p guest.Provisioning) string {
	if !p.Upgradable() {
		return fmt.Sprintf("it runs %s %s, which marina cannot provision in place: `marina destroy && marina up` makes a new VM (its clusters are lost; the registry cache on the Mac is kept)", p.OS, p.OSVersion)
	}
	return "`marina up` provisions it again in place (`marina up --dry-run` lists what changes)"
}

// RouteStatus is the host route section.
type RouteStatus struct {
	CIDR string `json:"cidr"`
	// State is present, missing, wrong gateway, shadowed or foreign.
	State string `json:"state,omitempty"`
	// Via and Interface are the route the host uses now.
	Via       string `json:"via,omitempty"`
	Interface string `json:"interface,omitempty"`
	// Want is the gateway the route must have: the VM's lima0 address.
	Want  string `json:"want,omitempty"`
	Line  string `json:"line"`
	Error string `json:"error,omitempty"`
}

// GuestStatus is the guest network section (running VM only).
type GuestStatus struct {
	KindNetwork *KindNetworkStatus `json:"kindNetwork"`
	Checks      []CheckStatus      `json:"checks"`
	OK          bool               `json:"ok"`
}

// KindNetworkStatus is the Docker network the clusters share.
type KindNetworkStatus struct {
	Present    bool              `json:"present"`
	Subnet     string            `json:"subnet,omitempty"`
	Gateway    string            `json:"gateway,omitempty"`
	IPRange    string            `json:"ipRange,omitempty"`
	Options    map[string]string `json:"options,omitempty"`
	Containers int               `json:"containers"`
	Problems   []string          `json:"problems,omitempty"`
}

// CheckStatus is one probe of the guest's routing.
type CheckStatus struct {
	What string `json:"what"`
	OK   bool   `json:"ok"`
	Rule string `json:"detail"`
}

// ClusterStatus is one cluster of the clusters section.
type ClusterStatus struct {
	Name string `json:"name"`
	// Slot is N of its API port 700N; 0 when it publishes none (marina did
	// not make it).
	Slot  int `json:"slot"`
	Nodes int `json:"nodes"`
	// State is running, partial (the control plane runs, a worker does
	// not) or stopped.
	State string `json:"state"`
}

// MirrorState is one mirror of the config and its container's state:
// running, restarting, exited, … or missing.
type MirrorState struct {
	Name  string `json:"name"`
	Port  int    `json:"port"`
	State string `json:"state"`
	// NodeImageBytes is how much of the Docker Hub mirror's cache is kind
	// node images, which the VM's Docker pulls through it; read on the Mac
	// with host storage (registry list measures a cache in the VM too).
	NodeImageBytes int64 `json:"nodeImageBytes,omitempty"`
}

// PushState is the push registry: its one name and its container's state
// (running, …, or missing).
type PushState struct {
	Host  string `json:"host"`
	State string `json:"state"`
}

// NotCreated is the status of a VM that does not exist.
const NotCreated = "NotCreated"

// Problems are what status shows as broken, each in a few words: a VM that
// Lima reports Broken, the VM's errors (the guest or Docker did not
// answer), an invalid config, a host route that is not present while the
// VM runs, and any ✗ of the guest network and the local DNS. marina status
// exits 1 when there is one. A VM that is stopped or not created is a
// state, not a problem.
func (s Status) Problems() []string {
	var p []string
	if s.VM.Status == vm.StatusBroken {
		p = append(p, "VM "+s.VM.Name+" is Broken")
	}
	p = append(p, s.VM.Errors...)
	if s.ConfigError != "" {
		p = append(p, "the config is invalid")
	}
	if s.Route.Error != "" {
		p = append(p, "host route: "+s.Route.Error)
	}
	if s.VM.Status == vm.StatusRunning && s.Route.State != "" && s.Route.State != string(host.Present) {
		p = append(p, "host route: "+s.Route.Line)
	}
	if g := s.Guest; g != nil && !g.OK {
		p = append(p, "guest network: "+strings.Join(g.Failing(), ", "))
	}
	if d := s.DNS; d != nil && !d.OK {
		p = append(p, "local DNS: "+strings.Join(d.Failing(), ", "))
	}
	if r := s.Pods; r != nil && !r.OK {
		p = append(p, "pod routing: "+strings.Join(r.Failing(), ", "))
	}
	return p
}

// Failing names what is ✗ in the guest network section, in its order.
func (g *GuestStatus) Failing() []string {
	var out []string
	if kn := g.KindNetwork; kn == nil || !kn.Present || len(kn.Problems) > 0 {
		out = append(out, "kind network")
	}
	for _, c := range g.Checks {
		if !c.OK {
			out = append(out, c.What)
		}
	}
	return out
}

// Failing names what is ✗ in the local DNS section, in its order.
func (d *DNSStatus) Failing() []string {
	var out []string
	if d.Resolver != string(host.ResolverOK) {
		out = append(out, "resolver file "+d.Resolver)
	}
	for _, c := range d.Containers {
		if c.State != "running" {
			out = append(out, c.Name+" "+c.State)
		}
	}
	if d.Lookup.Rcode != "NXDOMAIN" {
		out = append(out, "lookup "+cmp.Or(d.Lookup.Error, d.Lookup.Rcode))
	}
	return out
}

// Get observes everything it can and never stops at the first
// failure: each problem lands next to what was learned.
func Get(ctx context.Context, e *session.Env) (Status, error) {
	// The config's problems show in their own section, not as warnings.
	ses, err := session.Open(ctx, e, session.Needs{Config: session.VMOnlyQuiet, Observe: true})
	if err != nil {
		return Status{}, err
	}
	defer ses.Close()
	s, _ := Of(ctx, ses, guest.Probes{})
	return s, nil
}

// Of is the status of ses's lab (opened VMOnlyQuiet), its one observation
// carrying probes too (the dashboard's): that observation is returned for
// them, with the clusters status listed; nil when the VM does not run.
func Of(ctx context.Context, ses *session.Session, probes guest.Probes) (Status, *session.Observed) {
	file, in := ses.File, ses.Instance
	s := Status{VM: VMStatus{Name: ses.Name, Status: NotCreated, DockerSocket: ses.Socket()}}
	// The networking sections need the whole config; the VM section only
	// its name, so that a broken config still shows the VM.
	var cidr netip.Prefix
	if file.Err != nil {
		s.ConfigError = file.Err.Error()
		s.Route.Line = "unknown (the config is invalid: `marina config edit` fixes it)"
	} else {
		cidr = file.Config.Network.Prefix()
		s.Route.CIDR = cidr.String()
	}
	// What marina made on the host, read once for the route and the
	// resolver file.
	made := LoadMade(ses.Paths, session.HostOwn(file.Config, file.Err == nil))
	if in == nil {
		s.route(ctx, ses, cidr, nil, made)
		return s, nil
	}
	v := &s.VM
	v.Status, v.VMType, v.Arch, v.CPUs, v.Dir = in.Status, in.VMType, in.Arch, in.CPUs, in.Dir
	v.Memory = units.BytesSize(float64(in.Memory))
	v.Disk = units.BytesSize(float64(in.Disk))
	v.Errors = append(v.Errors, in.Errors...)
	if !ses.Running() {
		s.route(ctx, ses, cidr, nil, made)
		return s, nil
	}
	// The clusters come from Docker alone, at the same time as the
	// observation: no guest round trip more, no wait more.
	var clusters []cluster.Info
	var clErr error
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		clusters, clErr = ses.ListClusters(ctx)
	}()
	pods := file.Err == nil && file.Config.Network.PodRouting
	o := session.ObserveWith(ctx, ses, cidr, session.ObserveOptions{PodRoutes: pods, Probes: probes})
	<-listed
	o.Clusters, o.ClustersErr = clusters, clErr
	s.guestNetwork(o, cidr, ses.Marina, pods)
	s.clusters(o, clusters, clErr)
	if pods && clErr == nil {
		s.Pods = PodsOf(o, clusters, o.Guest.Lima0.Addr(), made.Made)
	}
	if cidr.IsValid() && o.DockerErr == nil {
		s.DNSSection(ctx, ses, o, cidr, made)
		s.mirrors(file.Config.Registries.Mirrors, o.Mirrors)
		s.nodeImages(ses, file.Config)
		s.push(file.Config.Registries.Local, o.Mirrors)
	}
	s.route(ctx, ses, cidr, o, made)
	return s, o
}

// guestNetwork fills the VM's address, Docker and the guest network
// section from one observation.
func (s *Status) guestNetwork(o *session.Observed, cidr netip.Prefix, marina string, pods bool) {
	v := &s.VM
	if o.GuestErr != nil {
		v.Errors = append(v.Errors, o.GuestErr.Error())
	} else {
		v.Lima0 = o.Guest.Lima0.String()
		if r := o.Guest.Provisioning.Record; r != nil {
			v.ProvisionedBy = r.Marina
		}
		if v.Behind = o.Guest.Provisioning.Behind(marina, o.DockerVersion); v.Behind != "" {
			v.Upgrade = UpgradeFix(o.Guest.Provisioning)
		}
	}
	v.Docker = o.DockerVersion
	if o.DockerErr != nil {
		v.Errors = append(v.Errors, o.DockerErr.Error())
	}
	if !cidr.IsValid() || o.GuestErr != nil {
		return
	}
	gs := &GuestStatus{}
	s.Guest = gs
	spec := docker.KindNetworkSpec(cidr, guest.HostIf)
	kn := &KindNetworkStatus{}
	gs.KindNetwork = kn
	switch have := o.Network; {
	case o.DockerErr != nil:
		kn.Problems = append(kn.Problems, "unknown: Docker did not answer")
	case have == nil:
		kn.Problems = append(kn.Problems, "missing: `marina up` creates it")
	default:
		kn.Present = true
		kn.Subnet, kn.Gateway, kn.IPRange = have.Subnet.String(), have.Gateway.String(), have.IPRange.String()
		kn.Options, kn.Containers = have.Options, have.Containers
		kn.Problems = spec.Differences(have)
	}
	gs.OK = kn.Present && len(kn.Problems) == 0
	checks, err := guest.KindNet(cidr, o.Mac, pods).Checks(o.Guest.Net)
	if err != nil {
		v.Errors = append(v.Errors, err.Error())
	}
	if o.Guest.Net.Err != "" {
		v.Errors = append(v.Errors, "reading the VM's firewall: "+o.Guest.Net.Err)
	}
	for _, c := range checks {
		gs.Checks = append(gs.Checks, CheckStatus{What: c.What, OK: c.OK, Rule: c.Note})
		gs.OK = gs.OK && c.OK
	}
}

// clusters fills the clusters section from what Docker listed; a failure
// joins the VM's errors, unless Docker did not answer the observation
// either (that error is there already).
func (s *Status) clusters(o *session.Observed, infos []cluster.Info, err error) {
	if err != nil {
		if o.DockerErr == nil {
			s.VM.Errors = append(s.VM.Errors, "listing the clusters: "+session.DockerCause(err).Error())
		}
		return
	}
	list := make([]ClusterStatus, len(infos))
	for i, c := range infos {
		list[i] = ClusterStatus{Name: c.Name, Slot: c.Slot, Nodes: len(c.Nodes), State: "stopped"}
		switch {
		case c.Running():
			list[i].State = "running"
		case c.APIRunning():
			// Its API answers; a worker does not run.
			list[i].State = "partial"
		}
	}
	s.Clusters = &list
}

// mirrors fills the mirrors section from the containers Docker listed
// with marina's mirror label.
func (s *Status) mirrors(want []config.Mirror, have []docker.Container) {
	state := map[string]string{}
	for _, c := range have {
		state[c.Labels[registry.LabelMirror]] = c.State
	}
	list := make([]MirrorState, len(want))
	for i, m := range want {
		list[i] = MirrorState{Name: m.Name, Port: m.Port, State: cmp.Or(state[m.Name], "missing")}
	}
	s.Mirrors = &list
}

// nodeImages gives the Docker Hub mirror its share of node images, when
// its cache is on the Mac.
func (s *Status) nodeImages(ses *session.Session, cfg config.Config) {
	hub := registry.HubMirror(cfg.Registries.Mirrors)
	if s.Mirrors == nil || hub == "" || cfg.Registries.CacheStorage != config.CacheHost {
		return
	}
	n, err := registry.HostCache{Root: ses.Paths.RegistryCache()}.RepoBytes(hub, registry.NodeRepos(cfg.Kind))
	if err != nil {
		return // registry list says why
	}
	for i := range *s.Mirrors {
		if m := &(*s.Mirrors)[i]; m.Name == hub {
			m.NodeImageBytes = n
		}
	}
}

// push fills the push registry's section when it is on: up runs it with
// the mirrors' label.
func (s *Status) push(l config.Local, have []docker.Container) {
	if !l.Enabled {
		return
	}
	p := &PushState{Host: registry.LocalHost(l.Port), State: "missing"}
	for _, c := range have {
		if c.Labels[registry.LabelMirror] == registry.LocalName {
			p.State = c.State
		}
	}
	s.Push = p
}

// route fills the host route section; o is the running VM's observation,
// nil when the VM is not running (the route is then looked up here and
// judged without a gateway to compare with).
func (s *Status) route(ctx context.Context, ses *session.Session, cidr netip.Prefix, o *session.Observed, made MadeRecord) {
	if !cidr.IsValid() {
		return
	}
	r := &s.Route
	var via netip.Addr
	var found *host.Route
	var err error
	if o != nil {
		if o.GuestErr == nil {
			via = o.Guest.Lima0.Addr()
			r.Want = via.String()
		}
		found, err = o.Route, o.RouteErr
	} else {
		found, err = ses.Host.Lookup(ctx, cidr)
	}
	if err != nil {
		r.Line, r.Error = cidr.String()+" → unknown", err.Error()
		return
	}
	if made.Err != nil {
		r.Error = made.Err.Error()
	}
	rs := host.Classify(cidr, via, found, made.Gateways(cidr)...)
	r.State, r.Line = string(rs.State), rs.String()
	if found != nil {
		r.Interface = found.Interface
		if found.Gateway.IsValid() {
			r.Via = found.Gateway.String()
		}
	}
}

// MadeRecord is marina's record of what it made on the host, as read:
// empty, with the reason, when it could not be read.
type MadeRecord struct {
	*host.Made
	Err error
}

func LoadMade(p config.Paths, own host.Own) MadeRecord {
	m, err := host.LoadMade(p.Routes(), own)
	if err != nil {
		return MadeRecord{&host.Made{}, err}
	}
	return MadeRecord{m, nil}
}
