package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bcollard/marina/internal/addons"
	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kindcluster"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/machine"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/slot"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// marina doctor: every part of the lab checked in order, each with what
// was found and, when it is not right, the command that fixes it. It reads
// what status reads (session.ObserveWith: one guest round trip, with the
// doctor's probes in it) and judges it; --fix makes the repairs that are
// safe.

// Status is one check's outcome.
type Status string

// The outcomes of a check. A check that cannot run because one it needs
// failed (no guest checks with the VM stopped) is skipped, and says which.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Check is one check; its JSON is a contract.
type Check struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Finding string `json:"finding"`
	// Fix is the command that fixes what is not right ("" when OK).
	Fix string `json:"fix"`

	repair repairKind // what --fix can do about it
}

// Summary counts the outcomes.
type Summary struct {
	OK   int    `json:"ok"`
	Warn int    `json:"warn"`
	Fail int    `json:"fail"`
	Skip int    `json:"skip"`
	Line string `json:"line"`
}

// Report is what marina doctor prints.
type Report struct {
	Checks  []Check `json:"checks"`
	Summary Summary `json:"summary"`
	// Repairs are what --fix did (with --dry-run: would do).
	Repairs []string `json:"repairs,omitempty"`
}

// Failed reports whether a check failed: marina doctor then exits 1.
func (r Report) Failed() bool { return r.Summary.Fail > 0 }

// Options are the flags of marina doctor.
type Options struct {
	// Fix makes the safe repairs the checks name, then checks again.
	Fix bool
	// DryRun, with Fix, lists the repairs and makes none.
	DryRun bool
	// Before, when set, gets the first report (its Repairs are the ones
	// about to be made) before --fix makes them.
	Before func(Report)
}

// The safe repairs: nothing else is ever changed by doctor.
type repairKind int

const (
	repairNone repairKind = iota
	// repairNet installs the VM's network script, unit and drop-in where
	// they differ and runs the script (what up does).
	repairNet
	// repairRoute adds the host's route, or moves marina's own to lima0.
	repairRoute
	// repairKubeconfig exports a cluster's kubeconfig again.
	repairKubeconfig
)

// The values kind's known-issues page gives for its nodes (too few
// watches or instances: "too many open files" in pods).
const (
	inotifyWatches   = 524288
	inotifyInstances = 512
)

// Disk thresholds of the file system holding the VM's Docker data.
const (
	diskWarnPercent = 10.0
	diskFailPercent = 2.0
)

const fixCommand = "marina doctor --fix"

// Run runs the checks; with opts.Fix it makes the safe repairs they
// name and checks again, returning that second report.
func Run(ctx context.Context, e *session.Env, opts Options) (Report, error) {
	d, err := openDoctor(e)
	if err != nil {
		return Report{}, err
	}
	defer d.s.Close()
	r := d.run(ctx)
	if !opts.Fix {
		return r, nil
	}
	todo := d.plan()
	for _, rp := range todo {
		r.Repairs = append(r.Repairs, rp.what)
	}
	if opts.DryRun || len(todo) == 0 {
		return r, nil
	}
	if opts.Before != nil {
		opts.Before(r)
	}
	done := d.repair(ctx, todo)
	again := d.run(ctx)
	again.Repairs = done
	return again, nil
}

// doctor is one marina doctor: the session and what a run found.
type doctor struct {
	s      *session.Session
	config Check // the config's check, made once
	cfgOK  bool  // s.Config is valid (read, or the defaults)
	cidr   netip.Prefix

	// Set by run, for plan.
	o     *session.Observed
	made  status.MadeRecord
	route host.RouteStatus
	fixes []Check
	stale []cluster.Info // clusters whose kubeconfig is missing or stale
	// throughVM names the failed checks of what traffic from this host
	// into the kind network passes (forwarding, marina's rules): what
	// goes that way is not checked while they fail.
	throughVM []string
	// shadows are the routes inside the kind network that go elsewhere.
	shadows []host.Route
	// What the checks found, for the checks after them.
	inst      *vm.Instance     // the VM, nil when there is none
	vmErr     error            // looking the VM up failed
	probeErrs map[string]error // mirrors whose upstream cannot be probed
	// result is the check called name, once it has run.
	result func(name string) Check
}

// reaches reports whether this host's packets to addr, in the kind
// network, go to the VM: marina's route is there and no other route
// inside the network takes addr elsewhere.
func (d *doctor) reaches(addr netip.Addr) bool {
	if d.route.State != host.Present {
		return false
	}
	for _, r := range d.shadows {
		if r.Dest.Contains(addr) {
			return false
		}
	}
	return true
}

func dnsServer(cidr netip.Prefix) netip.Addr {
	_, server := dns.Addrs(cidr)
	return server
}

// openDoctor reads the config as far as it can: doctor runs with a config
// marina up would refuse, and without one (the defaults).
func openDoctor(e *session.Env) (*doctor, error) {
	s, err := session.Read(e, session.Needs{Config: session.Lenient})
	if err != nil {
		return nil, err
	}
	d := &doctor{s: s}
	switch {
	case s.ConfigMissing:
		d.cfgOK = true
		d.config = warn(checkConfig, "no config file at "+e.Paths.Config+": checking against the defaults", "marina up (writes the default config)")
	case s.ConfigErr != nil:
		// Not even vm.name: nothing can be looked up.
		d.config = fail(checkConfig, oneLine(s.ConfigErr.Error()), "marina config edit")
	case s.File.Err != nil:
		d.config = fail(checkConfig, oneLine(s.File.Err.Error()), "marina config edit")
	default:
		d.cfgOK = true
		d.config = ok(checkConfig, e.Paths.Config+" is valid")
	}
	if d.cfgOK {
		d.cidr = s.Config.Network.Prefix()
	}
	return d, nil
}

func ok(name, finding string) Check {
	return Check{Name: name, Status: OK, Finding: finding}
}
func warn(name, finding, fix string) Check {
	return Check{Name: name, Status: Warn, Finding: finding, Fix: fix}
}
func fail(name, finding, fix string) Check {
	return Check{Name: name, Status: Fail, Finding: finding, Fix: fix}
}
func skip(name, why string) Check {
	return Check{Name: name, Status: Skip, Finding: "skipped: " + why}
}

// oneLine joins a multi-line message into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// run makes every check once, in the table's order (checks.go).
func (d *doctor) run(ctx context.Context) Report {
	s, e := d.s, d.s.Env
	d.o, d.fixes, d.stale, d.throughVM, d.shadows = nil, nil, nil, nil, nil
	d.inst, d.vmErr, d.probeErrs = nil, nil, nil
	d.route = host.RouteStatus{}
	d.made = status.LoadMade(e.Paths, session.HostOwn(s.File.Config, s.File.Err == nil))
	checks := d.runTable(ctx)
	for _, c := range checks {
		if c.repair != repairNone {
			d.fixes = append(d.fixes, c)
		}
	}
	return summarize(checks)
}

func summarize(checks []Check) Report {
	r := Report{Checks: checks}
	for _, c := range checks {
		switch c.Status {
		case OK:
			r.Summary.OK++
		case Warn:
			r.Summary.Warn++
		case Fail:
			r.Summary.Fail++
		case Skip:
			r.Summary.Skip++
		}
	}
	sm := &r.Summary
	parts := []string{fmt.Sprintf("%d OK", sm.OK)}
	if sm.Warn > 0 {
		parts = append(parts, ui.Plural(sm.Warn, "warning"))
	}
	if sm.Fail > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", sm.Fail))
	}
	if sm.Skip > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", sm.Skip))
	}
	sm.Line = strings.Join(parts, ", ")
	return r
}

// lookVM finds limactl, asks its version and looks the VM up.
func (d *doctor) lookVM(ctx context.Context) (Check, *vm.Instance, error) {
	s := d.s
	if s.Name == "" {
		return skip(checkLima, "the config names no VM (see config)"), nil, nil
	}
	l, err := s.Deps.VM()
	if err != nil {
		return fail(checkLima, oneLine(err.Error()), "brew install lima"), nil, nil
	}
	s.VM = l
	var ver string
	var verErr, getErr error
	var inst *vm.Instance
	var wg sync.WaitGroup
	wg.Go(func() { ver, verErr = l.Version(ctx) })
	wg.Go(func() { inst, getErr = l.Get(ctx, s.Name) })
	wg.Wait()
	if verErr != nil {
		return fail(checkLima, oneLine(verErr.Error()), "brew upgrade lima"), nil, nil
	}
	c := ok(checkLima, fmt.Sprintf("Lima %s (marina needs %d.%d or later)", ver, vm.MinLima[0], vm.MinLima[1]))
	if getErr != nil {
		return c, nil, getErr
	}
	s.Instance = inst
	s.Guest = s.Deps.Guest(s.Name)
	if inst != nil && s.Docker == nil {
		if s.Docker, err = s.Deps.Docker(s.Socket()); err != nil {
			return c, inst, err
		}
	}
	return c, inst, nil
}

// judgeVM is the VM's check: there, and running.
func judgeVM(name string, lima Check, in *vm.Instance, err error) Check {
	switch {
	case lima.Status == Skip:
		return skip(checkVM, "the config names no VM (see config)")
	case lima.Status != OK:
		return skip(checkVM, "limactl is needed (see limactl)")
	case err != nil:
		return fail(checkVM, "cannot look VM "+name+" up: "+oneLine(err.Error()), "marina status")
	case in == nil:
		return fail(checkVM, "VM "+name+" does not exist", "marina up")
	case in.Status == vm.StatusRunning:
		var what []string
		for _, w := range []string{in.VMType, in.Arch} {
			if w != "" {
				what = append(what, w)
			}
		}
		if in.CPUs > 0 {
			what = append(what, ui.Plural(in.CPUs, "CPU"))
		}
		f := "VM " + name + " is running"
		if len(what) > 0 {
			f += " (" + strings.Join(what, ", ") + ")"
		}
		return ok(checkVM, f)
	case in.Status == vm.StatusStopped:
		return fail(checkVM, "VM "+name+" is stopped", "marina up")
	case in.Status == vm.StatusBroken:
		return fail(checkVM, "Lima reports VM "+name+" as Broken"+machine.BrokenDetail(in)+": `marina destroy` and then `marina up` rebuild it (clusters in it are lost)", "marina destroy && marina up")
	}
	return fail(checkVM, fmt.Sprintf("VM %s is %q", name, in.Status), "wait for Lima to finish with it, then: marina up")
}

// judgeGuest is the guest channel's check: ssh answers, lima0 has an
// address.
func judgeGuest(o *session.Observed) Check {
	switch {
	case errors.Is(o.GuestErr, guest.ErrNoLima0):
		return fail(checkGuest, "the guest answers over ssh, but "+oneLine(o.GuestErr.Error()), "marina down && marina up")
	case o.GuestErr != nil:
		return fail(checkGuest, "the guest does not answer: "+oneLine(o.GuestErr.Error()), "marina down && marina up")
	}
	f := fmt.Sprintf("the guest answers over ssh; lima0 %s, this host %s on it", o.Guest.Lima0, o.Mac)
	if n := len(o.Guest.Lima0All); n > 1 {
		return warn(checkGuest, fmt.Sprintf("%s; lima0 has %d IPv4 addresses (%v): marina uses the first", f, n, o.Guest.Lima0All), "marina down && marina up")
	}
	return ok(checkGuest, f)
}

// judgeDocker is Docker's check, over the forwarded socket; the guest says
// whether the daemon itself runs.
//
// A VM provisioned by another marina is a warning here, where Docker's
// version is known.
func judgeDocker(o *session.Observed, sock, marina string) Check {
	if o.DockerErr == nil {
		f := fmt.Sprintf("Docker %s answers on unix://%s", o.DockerVersion, sock)
		if o.GuestErr == nil {
			if behind := o.Guest.Provisioning.Behind(marina, o.DockerVersion); behind != "" {
				fix := "marina up (provisions the VM again in place; `marina up --dry-run` lists what changes)"
				if !o.Guest.Provisioning.Upgradable() {
					fix = "marina destroy && marina up (the VM runs another Ubuntu release, which marina cannot provision in place; its clusters are lost, the registry cache on the Mac is kept)"
				}
				return warn(checkDocker, f+"; the VM is "+behind, fix)
			}
		}
		return ok(checkDocker, f)
	}
	if o.GuestErr == nil && o.Guest.Health.Docker != "" && o.Guest.Health.Docker != "active" {
		return fail(checkDocker, fmt.Sprintf("Docker is not running in the VM (docker.service is %s)", o.Guest.Health.Docker), "marina shell -- sudo systemctl start docker")
	}
	return fail(checkDocker, fmt.Sprintf("Docker does not answer on unix://%s: %s", sock, oneLine(o.DockerErr.Error())), "marina down && marina up (Lima forwards the socket again)")
}

// judgeKindNetwork compares the kind network with marina's.
func judgeKindNetwork(spec docker.NetworkSpec, have *docker.NetworkState) Check {
	if have == nil {
		return fail(checkKindNetwork, "there is no Docker network "+spec.Name, "marina up")
	}
	if diff := spec.Differences(have); len(diff) > 0 {
		who := "made by marina with other settings"
		if !have.Managed {
			who = "not made by marina"
		}
		return fail(checkKindNetwork, fmt.Sprintf("the Docker network %s is not marina's (%s): %s", spec.Name, who, strings.Join(diff, "; ")),
			"marina up (it prints the steps that recreate the network; the clusters on it are lost)")
	}
	return ok(checkKindNetwork, fmt.Sprintf("%s on %s, gateway %s, dynamic range %s, lima0 trusted, %s", spec.Subnet, have.Options["com.docker.network.bridge.name"], have.Gateway, have.IPRange, ui.Plural(have.Containers, "container")))
}

// judgeArea is one area of the guest's routing checks: forwarding,
// marina's rules, or what keeps them across boots. blocked, when set, is
// the fix to make first, before the network script can run again.
func judgeArea(area guest.Area, cs []guest.Check, err error, readErr string, blocked string) Check {
	name := map[guest.Area]string{guest.AreaForwarding: checkForwarding, guest.AreaFirewall: checkFirewall, guest.AreaBoot: checkBoot}[area]
	if err != nil {
		return fail(name, oneLine(err.Error()), "marina up")
	}
	if area == guest.AreaFirewall && readErr != "" {
		return fail(name, "cannot read the VM's firewall: "+oneLine(readErr), "marina shell -- sudo iptables -S")
	}
	var bad []string
	rules, jumps := 0, 0
	for _, c := range cs {
		if c.Area != area {
			continue
		}
		if c.Rule {
			rules++
		}
		if c.Jump {
			jumps++
		}
		if !c.OK {
			bad = append(bad, c.What+" ("+c.Note+")")
		}
	}
	if len(bad) == 0 {
		switch area {
		case guest.AreaForwarding:
			return ok(name, "net.ipv4.ip_forward is 1")
		case guest.AreaFirewall:
			return ok(name, fmt.Sprintf("marina's chains hold their %s, and %s into them come first in DOCKER-USER and nat POSTROUTING; FORWARD's policy is DROP", ui.Plural(rules, "rule"), ui.Plural(jumps, "jump")))
		}
		return ok(name, guest.ScriptPath+", "+guest.UnitName+" and the docker.service drop-in are installed; the unit is enabled")
	}
	what := map[guest.Area]string{
		guest.AreaForwarding: "the VM does not forward IPv4",
		guest.AreaFirewall:   fmt.Sprintf("%d of marina's firewall checks fail", len(bad)),
		guest.AreaBoot:       "the rules would not come back after a reboot or a Docker restart",
	}[area]
	c := fail(name, what+": "+strings.Join(bad, "; "), fixCommand+" (re-runs "+guest.ScriptPath+" in the VM; `marina up` does too)")
	if blocked != "" {
		c.Fix = blocked
		return c
	}
	c.repair = repairNet
	return c
}

// judgeRoute is the host route's check: the route of the whole network,
// and every route inside it.
func (d *doctor) judgeRoute(o *session.Observed) (Check, host.RouteStatus) {
	s, cidr := d.s, d.cidr
	if o.RouteErr != nil {
		return fail(checkRoute, "cannot read this host's route to "+cidr.String()+": "+oneLine(o.RouteErr.Error()), "marina status"), host.RouteStatus{}
	}
	mine := d.made.Gateways(cidr)
	via := o.Guest.Lima0.Addr()
	rs := host.Classify(cidr, via, o.Route, mine...)
	shadows := host.Shadows(cidr, via, o.Overlapping, mine...)
	d.shadows = shadows
	var taken []string
	for _, r := range shadows {
		taken = append(taken, r.String())
	}
	line := rs.String()
	switch rs.State {
	case host.Present:
		if o.OverlapErr != nil {
			return warn(checkRoute, line+"; but the host's routing table could not be listed, so a route inside "+cidr.String()+" would go unseen: "+oneLine(o.OverlapErr.Error()), "marina doctor (again), or look with `netstat -rn -f inet`"), rs
		}
		if len(shadows) == 0 {
			return ok(checkRoute, line+"; no other route inside it"), rs
		}
		return d.shadowed(line+", but "+strings.Join(taken, "; ")+" take part of it: those addresses do not reach the VM", shadows), rs
	case host.Shadowed:
		if len(shadows) == 0 {
			shadows = []host.Route{*rs.Found}
		}
		return d.shadowed(line, shadows), rs
	case host.Missing, host.WrongGateway:
		if len(taken) > 0 {
			line += "; and " + strings.Join(taken, "; ") + " inside it"
		}
		if fix := s.Host.RouteFix(rs); fix != nil {
			c := fail(checkRoute, line, fixCommand+" (runs: sudo "+run.Quote(fix)+")")
			c.repair = repairRoute
			return c, rs
		}
		return fail(checkRoute, line, "marina up"), rs
	case host.Foreign:
		return fail(checkRoute, line, "if it is a leftover: sudo "+run.Quote(s.Host.DeleteCommand(cidr, rs.Found.Gateway))+"; else choose another network.cidr (marina config edit)"), rs
	}
	return fail(checkRoute, line, "marina up"), rs
}

// shadowed fails the route check for routes that take part of the kind
// network elsewhere: marina leaves them alone (a VPN's, most likely).
func (d *doctor) shadowed(line string, shadows []host.Route) Check {
	var dels []string
	for i, r := range shadows {
		if i == 3 {
			dels = append(dels, "…")
			break
		}
		dels = append(dels, "sudo "+run.Quote(d.s.Host.DeleteCommand(r.Dest, r.Gateway)))
	}
	return fail(checkRoute, line+" (a VPN?)", "disconnect the VPN that routes them, or remove a leftover: "+strings.Join(dels, "; ")+"; or choose another network.cidr (marina config edit)")
}

// judgeDNS is the local DNS's check, from status's DNS section.
func judgeDNS(st status.DNSStatus) Check {
	var bad []string
	fix := "marina up"
	switch host.ResolverState(st.Resolver) {
	case host.ResolverOK:
	case host.ResolverForeign:
		bad = append(bad, st.Note)
		fix = "if it is a leftover: sudo rm " + run.ShellQuote(st.ResolverPath) + "; then: marina up"
	default:
		note := st.Note
		if note == "" {
			note = st.ResolverPath + " " + st.Resolver
		}
		bad = append(bad, "resolver file: "+note)
	}
	var running []string
	for _, c := range st.Containers {
		if c.State != "running" {
			bad = append(bad, fmt.Sprintf("%s at %s is %s", c.Name, c.IP, c.State))
		} else {
			running = append(running, c.Name)
		}
	}
	if st.Lookup.Rcode != "NXDOMAIN" {
		bad = append(bad, st.Lookup.Line()+" (want NXDOMAIN: the zone served from etcd)")
		if len(running) == len(st.Containers) && len(bad) == 1 {
			fix = "marina shell -- docker logs --tail 50 " + st.Containers[len(st.Containers)-1].Name
		}
	}
	if len(bad) > 0 {
		return fail(checkDNS, strings.Join(bad, "; "), fix)
	}
	return ok(checkDNS, fmt.Sprintf("%s present; %s running; %s", st.ResolverPath, strings.Join(running, " and "), st.Lookup.Line()))
}

// judgeRecords turns a passing DNS check into a warning when etcd holds
// values that are no DNS record: each stops the ExternalDNS of the
// cluster whose zone holds it (the only user that can write there), and
// marina's own view skips it.
func judgeRecords(c Check, h guest.Health, domain string) Check {
	if c.Status != OK || !h.RecordsRead {
		return c
	}
	_, malformed, err := dns.ParseRange(h.Records, domain)
	if err != nil || len(malformed) == 0 {
		return c
	}
	return warn(checkDNS, fmt.Sprintf("%s; etcd holds %s that no DNS record can be read from: %s (each stops the ExternalDNS of the cluster whose zone holds it)", c.Finding, ui.Plural(len(malformed), "value"), strings.Join(malformed, ", ")),
		"find which workload of that cluster holds its ExternalDNS's credentials (Secret external-dns/"+dns.ExternalDNSSecret+"); `marina cluster delete` of the cluster removes the values with its names")
}

// judgeMirrors is one check per configured mirror, and one per mirror
// container no longer in the config.
func (d *doctor) judgeMirrors(o *session.Observed, probeErrs map[string]error, guestOK bool) []Check {
	s := d.s
	cfg := s.Config.Registries
	if len(cfg.Mirrors) == 0 && len(o.Mirrors) == 0 {
		return []Check{ok(checkMirrors, "no mirrors are configured")}
	}
	// Out of date mirrors, judged as up judges them.
	reasons := map[string]string{}
	if key, err := session.LoadLabelKey(s.Paths); err == nil {
		if specs, err := registry.All(cfg, vm.GuestCacheDir, key.Key); err == nil {
			reasons = machine.OutOfDate(specs, o.Mirrors, o.Guest.RegistrySums)
		}
	}
	byName := map[string]docker.Container{}
	for _, c := range o.Mirrors {
		byName[c.Labels[registry.LabelMirror]] = c
	}
	var out []Check
	for _, m := range cfg.Mirrors {
		name := "mirror " + m.Name
		c, found := byName[m.Name]
		delete(byName, m.Name)
		switch {
		case !found:
			out = append(out, fail(name, "there is no container for mirror "+m.Name+" ("+m.RemoteURL+")", "marina up"))
			continue
		case c.State != "running":
			out = append(out, fail(name, fmt.Sprintf("its container %s is %s", c.Name, c.State), "marina up (starts it again)"))
			continue
		}
		where := fmt.Sprintf("port %d", m.Port)
		if c.IP != "" {
			where = fmt.Sprintf("%s:%d", c.IP, m.Port)
		}
		var up guest.UpstreamResult
		var probed bool
		if guestOK {
			up, probed = o.Guest.Health.Upstreams[m.Name]
		}
		u, _ := guest.UpstreamOf(m)
		target := fmt.Sprintf("%s:%d", u.Host, u.Port)
		switch {
		case probeErrs[m.Name] != nil:
			out = append(out, warn(name, "running at "+where+"; its upstream was not probed: "+probeErrs[m.Name].Error(), "marina config edit"))
		case !guestOK:
			out = append(out, warn(name, "running at "+where+"; its upstream was not probed: the guest does not answer (see guest)", "marina down && marina up"))
		case !probed:
			out = append(out, warn(name, "running at "+where+"; the VM said nothing about its upstream "+target, "marina doctor (again)"))
		case !up.OK:
			// Offline is no failure: the mirror serves its cache, and
			// asks its upstream again at the next pull that needs it.
			out = append(out, warn(name, fmt.Sprintf("running at %s, serving from its cache: its upstream %s does not answer from its container (%s), so images not in the cache cannot be pulled", where, target, up.Detail),
				fmt.Sprintf("nothing, if this Mac is offline: it pulls again once the network is back; otherwise the VM must reach %s: check its network and DNS (`marina shell -- getent hosts %s`), a proxy or a VPN in the way", target, u.Host)))
		case reasons[m.Name] != "":
			out = append(out, warn(name, fmt.Sprintf("running at %s, its upstream %s answers; but %s", where, target, reasons[m.Name]), "marina up (recreates it)"))
		default:
			out = append(out, ok(name, fmt.Sprintf("running at %s; its upstream %s answers from its container", where, target)))
		}
	}
	if cfg.Local.Enabled {
		c, found := byName[registry.LocalName]
		delete(byName, registry.LocalName)
		out = append(out, judgeLocal(cfg.Local, c, found, reasons[registry.LocalName]))
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := byName[n]
		shown := n
		if config.CheckMirrorName(n) != nil {
			shown = fmt.Sprintf("%q", n) // a label anyone with the socket can write
		}
		out = append(out, warn("mirror "+shown, "container "+c.Name+" is a mirror no longer in the config", "marina up (removes it)"))
	}
	return out
}

// judgeLocal is the push registry's check: its container runs, as up
// made it.
func judgeLocal(l config.Local, c docker.Container, found bool, outOfDate string) Check {
	const name = "push registry"
	host := registry.LocalHost(l.Port)
	switch {
	case !found:
		return fail(name, "there is no container for the push registry ("+host+")", "marina up")
	case c.State != "running":
		return fail(name, fmt.Sprintf("its container %s is %s", c.Name, c.State), "marina up (starts it again)")
	case outOfDate != "":
		return warn(name, fmt.Sprintf("running at %s; but %s", host, outOfDate), "marina up (recreates it)")
	}
	return ok(name, "running at "+host+" (from the Mac, the VM's Docker and every node), storing in "+registry.LocalData+" in the VM")
}

// clusterTimeout bounds each request of a cluster's checks.
const clusterTimeout = 5 * time.Second

// judgeClusters is one check per cluster, all at once.
func (d *doctor) judgeClusters(ctx context.Context, cs []cluster.Info) []Check {
	if len(cs) == 0 {
		return []Check{ok(checkClusters, "no clusters")}
	}
	out := make([]Check, len(cs))
	stale := make([]bool, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { out[i], stale[i] = d.judgeCluster(ctx, c) })
	}
	wg.Wait()
	for i, c := range cs {
		if stale[i] {
			d.stale = append(d.stale, c)
		}
	}
	return out
}

// judgeCluster checks one cluster: its nodes run, its kubeconfig names the
// API server of the mode it was made in, the API answers there with a
// certificate the kubeconfig verifies, and MetalLB has marina's pool.
// stale is set when exporting the kubeconfig again repairs it.
func (d *doctor) judgeCluster(ctx context.Context, c cluster.Info) (Check, bool) {
	s := d.s
	name := "cluster " + c.Name
	if c.Slot == 0 {
		return skip(name, "publishes no marina API port (700N): not a cluster marina made"), false
	}
	if !c.Running() {
		var down []string
		for _, n := range c.Nodes {
			if n.State != "running" {
				down = append(down, n.Name)
			}
		}
		if len(down) == len(c.Nodes) && kindcluster.StoppedByMarina(s, c.Name) {
			return skip(name, "stopped with marina cluster stop: `marina cluster start "+c.Name+"` starts it"), false
		}
		return fail(name, "its nodes do not all run: "+strings.Join(down, ", ")+" not running", "marina cluster start "+c.Name), false
	}
	want := s.ClusterServer(c)
	merge := "marina kubeconfig merge " + c.Name
	path, err := s.Paths.Kubeconfig(c.Name)
	if err != nil {
		return fail(name, oneLine(err.Error()), merge), false
	}
	kc, err := kubeconfig.ReadFile(path, c.Name)
	if err != nil {
		cc := fail(name, oneLine(err.Error()), fixCommand+" (or: "+merge+")")
		cc.repair = repairKubeconfig
		return cc, true
	}
	if err := kubeconfig.CheckFile(path, c.Name, s.KubeOwner(true)); err != nil {
		return fail(name, oneLine(err.Error()), merge), false
	}
	server, err := kubeconfig.Server(kc)
	if err != nil {
		cc := fail(name, path+" cannot be read: "+oneLine(err.Error()), fixCommand+" (or: "+merge+")")
		cc.repair = repairKubeconfig
		return cc, true
	}
	if server != want {
		cc := fail(name, fmt.Sprintf("%s names %s, but the cluster's API server is at %s (lima0 moved?)", path, server, want), fixCommand+" (or: "+merge+")")
		cc.repair = repairKubeconfig
		return cc, true
	}
	// On lima0 the API port is reached through the VM's forwarding, as
	// the kind network is; on the loopback, through Lima's port mirroring.
	if len(d.throughVM) > 0 && !c.Loopback() {
		return skip(name, "its API server at "+server+" is reached over the route into the VM, which does not carry it now (see "+strings.Join(d.throughVM, ", ")+")"), false
	}
	k, err := s.Deps.Kube(kc, clusterTimeout)
	if err != nil {
		return fail(name, path+": "+oneLine(err.Error()), merge), false
	}
	cctx, cancel := context.WithTimeout(ctx, 2*clusterTimeout)
	defer cancel()
	ver, err := k.ServerVersion(cctx)
	if err != nil {
		if certError(err) {
			return fail(name, "the API server at "+server+" has a certificate "+path+" does not verify: "+oneLine(err.Error()), merge), false
		}
		return fail(name, "the API server does not answer at "+server+": "+oneLine(err.Error()), "marina shell -- docker logs --tail 50 "+c.Name+"-control-plane"), false
	}
	found := fmt.Sprintf("API %s answers at %s, its certificate verified", ver, server)
	addrs, has, err := addons.PoolAddresses(cctx, k, addons.PoolName)
	recreate := "marina cluster delete " + c.Name + " && marina cluster create " + c.Name + " (its workloads are lost)"
	switch {
	case err != nil:
		return fail(name, found+"; MetalLB's pool "+addons.PoolName+" cannot be read: "+oneLine(err.Error()), "marina shell -- docker logs --tail 50 "+c.Name+"-control-plane"), false
	case !has:
		return fail(name, found+"; MetalLB has no IPAddressPool "+addons.PoolName+": LoadBalancer Services get no address", recreate), false
	}
	if d.cfgOK {
		if want, err := slot.MetalLBRanges(d.cidr, c.Slot); err == nil && !slices.Equal(want, addrs) {
			return warn(name, fmt.Sprintf("%s; MetalLB's pool %s holds %s, not slot %d's %s", found, addons.PoolName, strings.Join(addrs, ", "), c.Slot, strings.Join(want, ", ")), recreate), false
		}
	}
	return ok(name, fmt.Sprintf("%s; MetalLB pool %s: %s", found, addons.PoolName, strings.Join(addrs, ", "))), false
}

// certError reports whether err is a TLS certificate that did not verify.
func certError(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}

// judgeInotify compares the VM's inotify limits with kind's.
func judgeInotify(h guest.Health) Check {
	if h.InotifyWatches == 0 || h.InotifyInstances == 0 {
		return warn(checkInotify, "the VM's inotify limits could not be read", "marina shell -- sysctl fs.inotify")
	}
	f := fmt.Sprintf("fs.inotify.max_user_watches %d, max_user_instances %d", h.InotifyWatches, h.InotifyInstances)
	if h.InotifyWatches >= inotifyWatches && h.InotifyInstances >= inotifyInstances {
		return ok(checkInotify, f)
	}
	return warn(checkInotify, fmt.Sprintf("%s: kind needs %d and %d (pods fail with \"too many open files\")", f, inotifyWatches, inotifyInstances),
		fmt.Sprintf("marina shell -- sudo sysctl -w fs.inotify.max_user_watches=%d fs.inotify.max_user_instances=%d", inotifyWatches, inotifyInstances))
}

// judgeDisk is the free space of the file system holding Docker's data.
func judgeDisk(h guest.Health) Check {
	if !h.Disk.Known {
		return warn(checkDisk, "the free space of "+guest.DockerDataRoot+" in the VM could not be read", "marina shell -- df -h "+guest.DockerDataRoot)
	}
	free := h.Disk.FreePercent()
	f := fmt.Sprintf("%.1f%% free on %s (%s of %s), which holds %s", free, h.Disk.Mount, kib(h.Disk.Avail), kib(h.Disk.Used+h.Disk.Avail), guest.DockerDataRoot)
	// Not docker system prune: it removes stopped containers, a stopped
	// cluster's nodes among them, and networks without one, kind's too.
	fix := "free space: marina shell -- sudo docker image prune -a (images no container uses, stopped ones included), and the images a cluster's nodes pulled: marina shell -- sudo docker exec NODE crictl rmi --prune; or raise vm.disk (marina config edit), then: marina down && marina up"
	switch {
	case free < diskFailPercent:
		return fail(checkDisk, f+fmt.Sprintf(": under %.0f%%, images and containers fail to write", diskFailPercent), fix)
	case free < diskWarnPercent:
		return warn(checkDisk, f+fmt.Sprintf(": under %.0f%%", diskWarnPercent), fix)
	}
	return ok(checkDisk, f)
}

func kib(n int64) string {
	const gib = 1 << 20
	if n >= gib {
		return fmt.Sprintf("%.1f GiB", float64(n)/gib)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/1024)
}

const rosettaInstall = "softwareupdate --install-rosetta --agree-to-license"

// judgeRosettaHost is Rosetta 2 on the Mac: needed only with vm.rosetta.
func judgeRosettaHost(goos, arch string, installed, want bool) Check {
	switch {
	case goos != "darwin":
		return ok(checkRosettaHost, "N/A: not a Mac")
	case arch != "arm64":
		return ok(checkRosettaHost, "N/A: not an Apple silicon Mac")
	case installed:
		return ok(checkRosettaHost, "Rosetta 2 is installed ("+host.RosettaRuntime+")")
	case want:
		return fail(checkRosettaHost, "vm.rosetta is set, but Rosetta 2 is not installed ("+host.RosettaRuntime+" is missing)", rosettaInstall)
	}
	return ok(checkRosettaHost, "Rosetta 2 is not installed; vm.rosetta is off, so nothing needs it")
}

// judgeRosettaVM is Rosetta's binfmt entry in the guest against
// vm.rosetta. created says whether the VM was made with Rosetta (its
// lima.yaml agrees with the config on it).
func judgeRosettaVM(goos, arch string, binfmt, want, created bool) Check {
	switch {
	case goos != "darwin" || arch != "arm64":
		return ok(checkRosettaVM, "N/A: Rosetta runs on Apple silicon Macs only")
	case want && binfmt:
		return ok(checkRosettaVM, "vm.rosetta is set and "+guest.RosettaBinfmt+" is registered: x86_64 binaries run through Rosetta")
	case want && created:
		return fail(checkRosettaVM, "vm.rosetta is set, but "+guest.RosettaBinfmt+" is missing: x86_64 images do not run", "marina down && marina up (Lima registers it at boot; Rosetta must be installed, see rosetta-host)")
	case want:
		return fail(checkRosettaVM, "vm.rosetta is set, but the VM was created without Rosetta ("+guest.RosettaBinfmt+" is missing)", "marina destroy && marina up (the clusters in the VM are lost)")
	case binfmt:
		return warn(checkRosettaVM, "vm.rosetta is off, but "+guest.RosettaBinfmt+" is registered: the VM was created with Rosetta", "set vm.rosetta: true (marina config edit), or: marina destroy && marina up")
	}
	return ok(checkRosettaVM, "vm.rosetta is off and no Rosetta binfmt entry is registered")
}

// rosettaAtCreation reports whether the VM's lima.yaml has Rosetta as the
// config asks for it now (no creation drift on it).
func (d *doctor) rosettaAtCreation(in *vm.Instance) bool {
	if in == nil || !d.cfgOK {
		return false
	}
	created, err := fileutil.ReadRegular(filepath.Join(in.Dir, "lima.yaml"), session.MaxLimaYAML)
	if err != nil {
		return false
	}
	now, err := machine.Template(d.s.Env, d.s.Config)
	if err != nil {
		return false
	}
	drift, err := vm.TemplateDrift(created, now)
	if err != nil {
		return false
	}
	for _, x := range drift {
		if strings.Contains(x, "Rosetta") {
			return false
		}
	}
	return true
}

// judgeLocalNetwork is macOS's Local Network privacy setting: with it off
// for the terminal, connections from it to the vzNAT network and what is
// routed there fail ("no route to host"), though the route is there.
func judgeLocalNetwork(gw netip.Addr, err error, term string) Check {
	if host.Reached(err) {
		return ok(checkLocalNetwork, "this host reaches the kind bridge's gateway "+gw.String())
	}
	app := "your terminal app"
	if t := termApp(term); t != "" {
		app = t
	}
	if host.Blocked(err) {
		return fail(checkLocalNetwork, fmt.Sprintf("the route is there, but this host cannot connect to the kind bridge's gateway %s (%s): macOS's Local Network privacy setting keeps %s off the local networks", gw, oneLine(err.Error()), app),
			"System Settings → Privacy & Security → Local Network: turn it on for "+app+", then open a new terminal")
	}
	return warn(checkLocalNetwork, fmt.Sprintf("this host cannot connect to the kind bridge's gateway %s: %s", gw, oneLine(err.Error())), "marina status")
}

// termApp names the terminal from TERM_PROGRAM (macOS terminals set it).
func termApp(v string) string {
	switch v {
	case "Apple_Terminal":
		return "Terminal"
	case "iTerm.app":
		return "iTerm"
	case "vscode":
		return "Visual Studio Code"
	case "":
		return ""
	}
	clean := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, v)
	if len(clean) > 40 {
		clean = clean[:40]
	}
	return clean
}

// repairStep is one safe repair.
type repairStep struct {
	kind repairKind
	what string
}

// plan lists the safe repairs the last run named, each once.
func (d *doctor) plan() []repairStep {
	var out []repairStep
	seen := map[repairKind]bool{}
	var net []string
	for _, c := range d.fixes {
		if c.repair == repairNet {
			net = append(net, c.Name)
		}
	}
	for _, c := range d.fixes {
		if seen[c.repair] {
			continue
		}
		seen[c.repair] = true
		switch c.repair {
		case repairNet:
			out = append(out, repairStep{repairNet, "install and run the VM's network script (" + guest.ScriptPath + ", " + guest.UnitName + ", the docker.service drop-in): " + strings.Join(net, ", ")})
		case repairRoute:
			out = append(out, repairStep{repairRoute, fmt.Sprintf("route %s to the VM: sudo %s", d.route.Want, run.Quote(d.s.Host.RouteFix(d.route)))})
		case repairKubeconfig:
			out = append(out, repairStep{repairKubeconfig, "export the kubeconfigs of " + strings.Join(cluster.Names(d.stale), ", ") + " again (API servers at " + strings.Join(d.servers(), ", ") + ")"})
		}
	}
	return out
}

func (d *doctor) servers() []string {
	var out []string
	for _, c := range d.stale {
		out = append(out, d.s.ClusterServer(c))
	}
	return out
}

// repair makes the repairs, each on its own: one that fails does not stop
// the others. It returns what it did.
func (d *doctor) repair(ctx context.Context, todo []repairStep) []string {
	s, o := d.s, d.o
	var done []string
	for _, rp := range todo {
		var err error
		switch rp.kind {
		case repairNet:
			err = machine.InstallGuest(ctx, s, machine.GuestWrites{Net: guest.KindNet(d.cidr, o.Mac, s.Config.Network.PodRouting), Rules: true})
		case repairRoute:
			var made *host.Made
			if made, err = host.LoadMade(s.Paths.Routes(), session.HostOwn(s.Config, true)); err == nil {
				err = machine.AddRoute(ctx, s, made, d.route, s.Host.RouteFix(d.route))
			}
		case repairKubeconfig:
			err = kindcluster.FollowLima0(ctx, s, d.stale)
		}
		if err != nil {
			s.UI.Warnf("%s: %s", rp.what, err)
			done = append(done, rp.what+": failed: "+oneLine(err.Error()))
			continue
		}
		done = append(done, rp.what)
	}
	return done
}
