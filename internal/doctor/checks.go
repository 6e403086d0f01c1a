package doctor

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/status"
	"github.com/bcollard/marina/internal/ui"
)

// The check names, in order (a mirror's and a cluster's carry its name).
const (
	checkConfig       = "config"
	checkLima         = "limactl"
	checkVM           = "vm"
	checkGuest        = "guest"
	checkDocker       = "docker"
	checkKindNetwork  = "kind-network"
	checkForwarding   = "forwarding"
	checkFirewall     = "firewall"
	checkBoot         = "boot"
	checkRoute        = "route"
	checkDNS          = "dns"
	checkMirrors      = "mirrors"
	checkClusters     = "clusters"
	checkInotify      = "inotify"
	checkDisk         = "disk"
	checkRosettaHost  = "rosetta-host"
	checkRosettaVM    = "rosetta-vm"
	checkLocalNetwork = "local-network"
	checkPods         = "pod-routing"
)

// check is one row of doctor's table: what it reports, what it needs, and
// its judge. The table is in the order the report prints; help text, skips
// and the JSON list all follow from it.
type check struct {
	// names are the checks it reports when it is skipped (a few rows
	// judge more than one); names[0] is its name in other rows' needs.
	names []string
	// about says what each of names checks, for marina doctor --help.
	about []string
	// needs are the checks that must have passed (OK or warned) for this
	// one to run; the first that did not gives its skip.
	needs []need
	// after are the checks whose findings its judge reads: they run
	// first, wherever they print.
	after []string
	// async runs the judge beside the rows after it: the DNS lookup and
	// the clusters' API calls each take a network round trip.
	async bool
	judge func(d *doctor, ctx context.Context) []Check
}

// need is a check that must have passed, and what a skip adds to its
// reason (what is not known without it).
type need struct {
	name, note string
}

func needs(names ...string) []need {
	out := make([]need, len(names))
	for i, n := range names {
		out[i] = need{name: n}
	}
	return out
}

// withNote is needs with a note on the last one.
func withNote(note string, names ...string) []need {
	out := needs(names...)
	out[len(out)-1].note = note
	return out
}

// failed says why a check that others need did not pass, as their skip
// gives it.
var failed = map[string]func(d *doctor) string{
	checkConfig: func(*doctor) string { return "the config is not valid" },
	checkVM:     func(d *doctor) string { return "VM " + d.s.Name + " is not running" },
	checkGuest:  func(*doctor) string { return "the guest does not answer" },
	checkDocker: func(*doctor) string { return "Docker does not answer" },
}

// table is every check, in the order the report prints.
var table = []check{
	{names: []string{checkConfig}, about: []string{"the config file, or the defaults"},
		judge: func(d *doctor, _ context.Context) []Check { return []Check{d.config} }},
	{names: []string{checkLima}, about: []string{"limactl"},
		judge: func(d *doctor, ctx context.Context) []Check {
			var lima Check
			lima, d.inst, d.vmErr = d.lookVM(ctx)
			return []Check{lima}
		}},
	{names: []string{checkVM}, about: []string{"the VM"},
		judge: func(d *doctor, _ context.Context) []Check {
			return []Check{judgeVM(d.s.Name, d.result(checkLima), d.inst, d.vmErr)}
		}},
	{names: []string{checkGuest}, about: []string{"the guest channel"}, needs: needs(checkVM),
		judge: func(d *doctor, ctx context.Context) []Check {
			d.observe(ctx)
			return []Check{judgeGuest(d.o)}
		}},
	{names: []string{checkDocker}, about: []string{"Docker"}, needs: needs(checkVM), after: []string{checkGuest},
		judge: func(d *doctor, _ context.Context) []Check { return []Check{judgeDocker(d.o, d.s.Socket(), d.s.Marina)} }},
	{names: []string{checkKindNetwork}, about: []string{"the kind network"}, needs: needs(checkVM, checkConfig, checkDocker),
		judge: func(d *doctor, _ context.Context) []Check {
			c := judgeKindNetwork(docker.KindNetworkSpec(d.cidr, guest.HostIf), d.o.Network)
			// Without marina's kind network nothing on it is reached from
			// here: the DNS and the clusters' checks would blame themselves.
			if c.Status == Fail {
				d.throughVM = append(d.throughVM, checkKindNetwork)
			}
			return []Check{c}
		}},
	{names: []string{checkForwarding, checkFirewall, checkBoot}, about: []string{"forwarding in the VM", "marina's firewall rules in the VM", "the boot unit and Docker drop-in"},
		needs: needs(checkVM, checkConfig, checkGuest), judge: (*doctor).judgeRouting},
	{names: []string{checkRoute}, about: []string{"the host's route; routes inside it (VPNs)"},
		needs: withNote("lima0's address is not known", checkVM, checkConfig, checkGuest),
		judge: func(d *doctor, _ context.Context) []Check {
			c, rs := d.judgeRoute(d.o)
			d.route = rs
			return []Check{c}
		}},
	{names: []string{checkDNS}, about: []string{"the local DNS"}, needs: needs(checkVM, checkConfig, checkDocker),
		after: []string{checkKindNetwork, checkForwarding, checkRoute, checkLocalNetwork}, async: true, judge: (*doctor).judgeLookup},
	{names: []string{checkPods}, about: []string{"routed pod and service ranges"},
		needs: needs(checkConfig), after: []string{checkGuest, checkDocker, checkRoute}, judge: (*doctor).judgePods},
	{names: []string{checkMirrors}, about: []string{"each registry mirror and its upstream"}, needs: needs(checkVM, checkConfig, checkDocker),
		judge: func(d *doctor, _ context.Context) []Check {
			return d.judgeMirrors(d.o, d.probeErrs, d.o.GuestErr == nil)
		}},
	{names: []string{checkClusters}, about: []string{"each cluster's API, kubeconfig, pool"},
		needs: append(withNote("the API servers' address is not known", checkVM, checkGuest), need{name: checkDocker}),
		after: []string{checkLocalNetwork}, async: true,
		judge: func(d *doctor, ctx context.Context) []Check {
			if d.o.ClustersErr != nil {
				return []Check{fail(checkClusters, "cannot list the clusters: "+oneLine(d.o.ClustersErr.Error()), "marina cluster list")}
			}
			return d.judgeClusters(ctx, d.o.Clusters)
		}},
	{names: []string{checkInotify}, about: []string{"the VM's inotify limits"}, needs: needs(checkVM, checkGuest),
		judge: func(d *doctor, _ context.Context) []Check { return []Check{judgeInotify(d.o.Guest.Health)} }},
	{names: []string{checkDisk}, about: []string{"the VM's free disk"}, needs: needs(checkVM, checkGuest),
		judge: func(d *doctor, _ context.Context) []Check { return []Check{judgeDisk(d.o.Guest.Health)} }},
	{names: []string{checkRosettaHost}, about: []string{"Rosetta on the host"},
		judge: func(d *doctor, _ context.Context) []Check {
			s := d.s
			return []Check{judgeRosettaHost(s.Host.OS(), s.Env.HostArch, s.Host.Rosetta(), d.cfgOK && s.Config.VM.Rosetta)}
		}},
	{names: []string{checkRosettaVM}, about: []string{"Rosetta in the VM"}, needs: needs(checkVM, checkGuest),
		judge: func(d *doctor, _ context.Context) []Check {
			s := d.s
			return []Check{judgeRosettaVM(s.Host.OS(), s.Env.HostArch, d.o.Guest.Health.RosettaBinfmt, d.cfgOK && s.Config.VM.Rosetta, d.rosettaAtCreation(d.inst))}
		}},
	{names: []string{checkLocalNetwork}, about: []string{"macOS's Local Network privacy setting"}, needs: needs(checkVM),
		after: []string{checkKindNetwork, checkRoute}, judge: (*doctor).judgeReach},
}

// Info is one check as marina doctor --help lists it.
type Info struct {
	Name, About string
	// Needs are the checks that must pass for it to run.
	Needs []string
}

// Checks lists the checks in the order doctor makes them.
func Checks() []Info {
	var out []Info
	for _, c := range table {
		var needs []string
		for _, n := range c.needs {
			needs = append(needs, n.name)
		}
		for i, n := range c.names {
			out = append(out, Info{Name: n, About: c.about[i], Needs: needs})
		}
	}
	return out
}

// runTable makes every check of the table once: a row runs when the rows
// it reads have run, and is skipped when one it needs did not pass. The
// report keeps the table's order.
func (d *doctor) runTable(ctx context.Context) []Check {
	index := map[string]int{}
	for i, c := range table {
		for _, n := range c.names {
			index[n] = i
		}
	}
	out := make([][]Check, len(table))
	done := make([]chan struct{}, len(table))
	for i := range done {
		done[i] = make(chan struct{})
	}
	started := make([]bool, len(table))
	d.result = func(name string) Check {
		<-done[index[name]]
		for _, c := range out[index[name]] {
			if c.Name == name {
				return c
			}
		}
		return out[index[name]][0]
	}
	var eval func(i int)
	eval = func(i int) {
		if started[i] {
			return
		}
		started[i] = true
		row := table[i]
		for _, a := range row.after {
			eval(index[a])
			<-done[index[a]]
		}
		for _, n := range row.needs {
			eval(index[n.name])
			if why, ok := d.passed(n); !ok {
				for _, name := range row.names {
					out[i] = append(out[i], skip(name, why))
				}
				close(done[i])
				return
			}
		}
		if row.async {
			go func() {
				out[i] = row.judge(d, ctx)
				close(done[i])
			}()
			return
		}
		out[i] = row.judge(d, ctx)
		close(done[i])
	}
	for i := range table {
		eval(i)
	}
	var checks []Check
	for i := range table {
		<-done[i]
		checks = append(checks, out[i]...)
	}
	return checks
}

// passed reports whether the check n names passed; when it did not, why
// the rows that need it are skipped.
func (d *doctor) passed(n need) (string, bool) {
	c := d.result(n.name)
	var why string
	switch c.Status {
	case OK, Warn:
		return "", true
	case Skip:
		// Skipped itself: for the same reason.
		why = strings.TrimPrefix(c.Finding, "skipped: ")
	default:
		why = failed[n.name](d) + " (see " + n.name + ")"
	}
	if n.note != "" {
		why += ": " + n.note
	}
	return why, false
}

// observe is the one look at the guest (with doctor's probes), Docker and
// the host.
func (d *doctor) observe(ctx context.Context) {
	s := d.s
	var probes guest.Probes
	d.probeErrs = map[string]error{}
	if d.cfgOK {
		for _, m := range s.Config.Registries.Mirrors {
			u, err := guest.UpstreamOf(m)
			if err != nil {
				d.probeErrs[m.Name] = err
				continue
			}
			probes.Upstreams = append(probes.Upstreams, u)
		}
		// The local DNS's records, read as root, for values that are none.
		if etcd, _, ok, err := session.DNSEtcd(s.Config, s.Paths); err == nil && ok {
			probes.Records, _ = guest.DNSRecordsProbe(etcd, s.Config.DNS.Domain)
		}
	}
	d.o = session.ObserveWith(ctx, s, d.cidr, session.ObserveOptions{Probes: probes, Routes: true, Clusters: true, PodRoutes: d.cfgOK && s.Config.Network.PodRouting})
	if d.o.GuestErr == nil {
		s.Lima0 = d.o.Guest.Lima0.Addr()
	}
}

// judgeRouting is the guest's routing: forwarding, marina's rules, what
// keeps them.
func (d *doctor) judgeRouting(_ context.Context) []Check {
	o := d.o
	net := guest.KindNet(d.cidr, o.Mac, d.s.Config.Network.PodRouting)
	cs, err := net.Checks(o.Guest.Net)
	// The script needs Docker's DOCKER-USER chain and the kind network's
	// bridge: without them, --fix cannot run it yet.
	blocked := ""
	switch {
	case o.DockerErr != nil:
		blocked = "start Docker first (see docker), then: " + fixCommand
	case o.Network == nil:
		blocked = "marina up (it creates the kind network, then installs the rules)"
	}
	var out []Check
	for _, area := range []guest.Area{guest.AreaForwarding, guest.AreaFirewall, guest.AreaBoot} {
		c := judgeArea(area, cs, err, o.Guest.Net.Err, blocked)
		if c.Status != OK && area != guest.AreaBoot {
			d.throughVM = append(d.throughVM, c.Name)
		}
		out = append(out, c)
	}
	return out
}

// judgePods judges network.podRouting: the host's routes of the pod
// space, the VM's service, and each cluster's ranges routed to its running
// nodes (the values status shows).
func (d *doctor) judgePods(_ context.Context) []Check {
	o := d.o
	// Off, it needs nothing more than the config: it says so.
	switch {
	case !d.s.Config.Network.PodRouting:
		return []Check{ok(checkPods, "off (network.podRouting: false): only the kind network is routed")}
	case o == nil || o.GuestErr != nil || d.result(checkVM).Status != OK:
		return []Check{skip(checkPods, "the VM's routes are not known (see vm, guest)")}
	case o.DockerErr != nil:
		return []Check{skip(checkPods, "Docker does not answer (see docker)")}
	case o.PodRoutesErr != nil:
		return []Check{fail(checkPods, "cannot list this host's routes: "+oneLine(o.PodRoutesErr.Error()), "")}
	case o.ClustersErr != nil:
		return []Check{skip(checkPods, "the clusters could not be listed (see clusters)")}
	}
	p := status.PodsOf(o, o.Clusters, o.Guest.Lima0.Addr(), d.made.Made)
	switch {
	case p == nil:
		return []Check{skip(checkPods, "the guest did not answer (see guest)")}
	case len(p.Conflicts) > 0:
		return []Check{fail(checkPods, "a route of someone else's owns part of the pod space: "+strings.Join(p.Conflicts, "; "),
			"disconnect the VPN that owns it, or set network.podRouting: false (marina config edit); then marina up")}
	case !p.OK:
		return []Check{fail(checkPods, strings.Join(p.Failing(), "; "), "marina up")}
	}
	return []Check{ok(checkPods, fmt.Sprintf("%d host routes to the VM; the pods and services of %s routed to their running nodes", p.Total, ui.Plural(len(p.Clusters), "cluster")))}
}

// judgeReach is the reach test (at most 3 s), made before the DNS lookup
// and the API calls: when macOS keeps this terminal off the local
// networks, those fail the same way, and would each point elsewhere.
func (d *doctor) judgeReach(ctx context.Context) []Check {
	s := d.s
	var gw netip.Addr
	if d.cfgOK {
		gw = docker.KindNetworkSpec(d.cidr, guest.HostIf).Gateway
	}
	var local Check
	switch {
	case s.Host.OS() != "darwin":
		local = ok(checkLocalNetwork, "N/A: macOS only (its Local Network privacy setting)")
	case !d.cfgOK:
		local = skip(checkLocalNetwork, "the config is not valid (see config)")
	case !d.reaches(gw):
		local = skip(checkLocalNetwork, "needs the host's route (see route)")
	case slices.Contains(d.throughVM, checkKindNetwork):
		local = skip(checkLocalNetwork, "needs marina's kind network (see kind-network)")
	default:
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		local = judgeLocalNetwork(gw, s.Host.Dial(dctx, netip.AddrPortFrom(gw, 9)), s.Env.Getenv("TERM_PROGRAM"))
		cancel()
		if local.Status == Fail {
			d.throughVM = append(d.throughVM, checkLocalNetwork)
		}
	}
	return []Check{local}
}

// judgeLookup asks the local DNS from this host, over the route.
func (d *doctor) judgeLookup(ctx context.Context) []Check {
	s := d.s
	switch {
	case !d.reaches(dnsServer(d.cidr)):
		return []Check{skip(checkDNS, "the lookup goes over the host's route (see route)")}
	case len(d.throughVM) > 0:
		return []Check{skip(checkDNS, "the lookup goes over the route into the kind network, which does not carry it now (see "+strings.Join(d.throughVM, ", ")+")")}
	}
	st := &status.Status{}
	st.DNSSection(ctx, s, d.o, d.cidr, d.made)
	return []Check{judgeRecords(judgeDNS(*st.DNS), d.o.Guest.Health, s.Config.DNS.Domain)}
}
