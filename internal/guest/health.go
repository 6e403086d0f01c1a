package guest

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/vm"
)

// What the observation reads of the guest's health besides its routing:
// cheap reads every observation makes (status and up see them too), and
// the probes only doctor asks for, which cost time (ObserveWith).

// DockerDataRoot is where the VM's Docker keeps images and containers.
const DockerDataRoot = "/var/lib/docker"

// RosettaBinfmt is the binfmt_misc entry Lima registers for Rosetta
// (vmOpts.vz.rosetta.binfmt).
const RosettaBinfmt = "/proc/sys/fs/binfmt_misc/rosetta"

// healthObserve prints Docker's unit state, the inotify limits, the file
// system holding Docker's data and whether Rosetta's binfmt entry is there.
const healthObserve = `echo "@@ docker"
systemctl is-active docker 2>/dev/null || true
echo "@@ inotify"
for f in /proc/sys/fs/inotify/max_user_watches /proc/sys/fs/inotify/max_user_instances; do
	if read -r v 2>/dev/null < "$f"; then echo "$v"; fi
done
echo "@@ disk"
l=
while IFS= read -r x; do l=$x; done < <(df -P -k ` + DockerDataRoot + ` 2>/dev/null)
echo "$l"
echo "@@ binfmt"
if [ -e ` + RosettaBinfmt + ` ]; then echo rosetta; fi
`

// Health is the guest's state beyond its routing.
type Health struct {
	// Docker is `systemctl is-active docker`: active, inactive, failed…
	// ("" when the guest said nothing).
	Docker string
	// Inotify are fs.inotify.max_user_watches and max_user_instances (0
	// when unread).
	InotifyWatches, InotifyInstances int
	// Disk is the file system holding DockerDataRoot (Known false when
	// df said nothing readable).
	Disk Disk
	// RosettaBinfmt is set when Lima's Rosetta binfmt entry is registered.
	RosettaBinfmt bool
	// Upstreams are the doctor's probes of each mirror's upstream, by
	// mirror name (only when asked for: ObserveWith).
	Upstreams map[string]UpstreamResult
	// Records is etcd's answer for every record of the local DNS, when
	// RecordsRead (only when asked for, and only when etcd answered root).
	Records     []byte
	RecordsRead bool
	// Sizes are SizesProbe's measures (folder → bytes), when asked for.
	Sizes map[string]int64
}

// Disk is one file system's size, as df reports it in KiB.
type Disk struct {
	Known       bool
	Mount       string
	Used, Avail int64 // KiB
}

// FreePercent is the share of the file system still free, as df counts
// it (Avail over Used+Avail: the blocks reserved for root count as
// neither).
func (d Disk) FreePercent() float64 {
	if d.Used+d.Avail <= 0 {
		return 0
	}
	return 100 * float64(d.Avail) / float64(d.Used+d.Avail)
}

var unitState = regexp.MustCompile(`^[a-z-]{1,20}$`)

func parseHealth(sec map[string]string) Health {
	h := Health{}
	if s := strings.TrimSpace(sec["docker"]); unitState.MatchString(s) {
		h.Docker = s
	}
	if f := strings.Fields(sec["inotify"]); len(f) == 2 {
		h.InotifyWatches, _ = strconv.Atoi(f[0])
		h.InotifyInstances, _ = strconv.Atoi(f[1])
	}
	h.Disk = parseDF(sec["disk"])
	h.RosettaBinfmt = strings.TrimSpace(sec["binfmt"]) == "rosetta"
	if s, ok := sec["upstream"]; ok {
		h.Upstreams = parseUpstreams(s)
	}
	if s, ok := sec["dns-records"]; ok {
		h.Records, h.RecordsRead = []byte(s), true
	}
	if s, ok := sec["sizes"]; ok {
		h.Sizes = ParseSizes(s)
	}
	return h
}

// parseDF reads df -P's data line: the file system's name (which may hold
// spaces), 1024-blocks, used, available, capacity ("42%") and the mount
// point (which may too). The capacity column is found by its "%".
func parseDF(line string) Disk {
	f := strings.Fields(strings.TrimSpace(line))
	for i := 4; i < len(f); i++ {
		if !strings.HasSuffix(f[i], "%") {
			continue
		}
		used, err1 := strconv.ParseInt(f[i-2], 10, 64)
		avail, err2 := strconv.ParseInt(f[i-1], 10, 64)
		if err1 != nil || err2 != nil || used < 0 || avail < 0 {
			return Disk{}
		}
		return Disk{Known: true, Used: used, Avail: avail, Mount: printable(strings.Join(f[i+1:], " "), 200)}
	}
	return Disk{}
}

// Probes are what doctor asks the observation to find out as well, in
// the same round trip.
type Probes struct {
	// Upstreams are dialled from inside each mirror's container network
	// namespace, with the container's own resolver: where the mirror
	// itself reaches its upstream from.
	Upstreams []Upstream
	// Records is DNSRecordsProbe's part: every record of the local DNS,
	// read as root, "" for none.
	Records string
	// Sizes is SizesProbe's part: folders measured, "" for none.
	Sizes string
}

// SizesProbe is the observation's part that runs script (MeasureDirs' and
// MeasureRepos'), its lines read into Health.Sizes.
func SizesProbe(script string) string {
	if script == "" {
		return ""
	}
	return "echo '@@ sizes'\n( " + script + ") 2>/dev/null || true\n"
}

// Upstream is one mirror's upstream: its container and the address its
// remoteURL names.
type Upstream struct {
	Mirror string
	Host   string
	Port   int
}

// UpstreamResult is what one probe found.
type UpstreamResult struct {
	OK bool
	// Detail is why it failed, as the guest said it (cleaned up: it came
	// from the VM).
	Detail string
}

// UpstreamOf is the address a mirror's remoteURL names.
func UpstreamOf(m config.Mirror) (Upstream, error) {
	u, err := url.Parse(m.RemoteURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return Upstream{}, fmt.Errorf("mirror %s: remoteURL %q is not an http(s) URL", m.Name, m.RemoteURL)
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return Upstream{}, fmt.Errorf("mirror %s: remoteURL %q has a bad port", m.Name, m.RemoteURL)
		}
	}
	up := Upstream{Mirror: m.Name, Host: u.Hostname(), Port: port}
	return up, up.check()
}

var upstreamHost = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

func (u Upstream) check() error {
	switch {
	case config.CheckMirrorName(u.Mirror) != nil:
		return fmt.Errorf("refusing to probe the upstream of %q: not a mirror name", u.Mirror)
	case !upstreamHost.MatchString(u.Host) || len(u.Host) > 253:
		return fmt.Errorf("refusing to probe %q: not a host name or an IPv4 address", u.Host)
	case u.Port < 1 || u.Port > 65535:
		return fmt.Errorf("refusing to probe %s port %d", u.Host, u.Port)
	}
	return nil
}

// probeFunc dials HOST:PORT from the network namespace of container
// MIRROR, with copies of the container's resolv.conf and hosts laid over
// the VM's in a mount namespace of its own (Docker's DNS on the kind
// network answers for the names its containers see), and prints "MIRROR
// ok" or "MIRROR fail WHY". Copies, because mount(8) would resolve
// /proc/PID/root/… to the VM's own files.
const probeFunc = `marina_probe() {
	local pid out rc d
	# Bounded: a stuck dockerd must not hold the whole observation.
	if ! pid=$(timeout 3 docker inspect -f '{{.State.Pid}}' "$1" 2>&1); then
		echo "$1 fail docker inspect: $(printf '%s' "$pid" | tr -s '\n' ' ' | head -c 200)"
		return 0
	fi
	if [ "${pid:-0}" = 0 ]; then
		echo "$1 fail its container is not running"
		return 0
	fi
	d=$(mktemp -d) || return 0
	cat "/proc/$pid/root/etc/resolv.conf" >"$d/resolv.conf" 2>/dev/null
	cat "/proc/$pid/root/etc/hosts" >"$d/hosts" 2>/dev/null
	# shellcheck disable=SC2016 # expanded by the inner bash
	out=$(timeout 3 nsenter -t "$pid" -n -- unshare -m -- bash -c '[ -s "$1/resolv.conf" ] && mount --bind "$1/resolv.conf" /etc/resolv.conf; [ -s "$1/hosts" ] && mount --bind "$1/hosts" /etc/hosts; exec 3<>"/dev/tcp/$2/$3"' dial "$d" "$2" "$3" 2>&1)
	rc=$?
	rm -rf "$d"
	case $rc in
	0) echo "$1 ok" ;;
	124) echo "$1 fail no answer within 3 s" ;;
	*) echo "$1 fail $(printf '%s' "$out" | tr -s '\n' ' ' | head -c 300)" ;;
	esac
}
`

// probeScript is the doctor's part of the observation: launch starts
// every probe in the background before the rest of the observation runs,
// collect waits for them and prints their answers in the order asked.
func probeScript(p Probes) (launch, collect string, err error) {
	if len(p.Upstreams) == 0 {
		return "", "", nil
	}
	ups := append([]Upstream(nil), p.Upstreams...)
	sort.Slice(ups, func(i, j int) bool { return ups[i].Mirror < ups[j].Mirror })
	var b strings.Builder
	b.WriteString(probeFunc)
	// Without a folder (a full disk) no probe runs, and each mirror's
	// upstream is then unknown rather than a path under /.
	b.WriteString("marina_probes=$(mktemp -d) || marina_probes=\n")
	for i, u := range ups {
		if err := u.check(); err != nil {
			return "", "", err
		}
		fmt.Fprintf(&b, "[ -z \"$marina_probes\" ] || marina_probe %s %s %d >\"$marina_probes/%03d\" 2>&1 </dev/null &\n", run.ShellQuote(u.Mirror), run.ShellQuote(u.Host), u.Port, i)
	}
	return b.String(), "wait\necho \"@@ upstream\"\nif [ -n \"$marina_probes\" ]; then cat \"$marina_probes\"/* 2>/dev/null; rm -rf \"$marina_probes\"; fi\n", nil
}

// parseUpstreams reads the probes' answers; a name that is no mirror name
// is skipped (it came from the VM).
func parseUpstreams(sec string) map[string]UpstreamResult {
	out := map[string]UpstreamResult{}
	for _, line := range strings.Split(sec, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) < 2 || config.CheckMirrorName(f[0]) != nil {
			continue
		}
		switch f[1] {
		case "ok":
			out[f[0]] = UpstreamResult{OK: true}
		case "fail":
			why := "no reason given"
			if len(f) == 3 && strings.TrimSpace(f[2]) != "" {
				why = printable(f[2], 300)
			}
			out[f[0]] = UpstreamResult{Detail: why}
		}
	}
	return out
}

// printable is s from the VM made safe to print: control characters go,
// and it is cut at n bytes.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > n {
		cut := 0
		for i := range s {
			if i > n {
				break
			}
			cut = i
		}
		s = s[:cut] + "…"
	}
	return s
}

// observeBody is the observation with p's probes: they run while the
// rest of it does.
func observeBody(p Probes) (string, error) {
	launch, collect, err := probeScript(p)
	if err != nil {
		return "", err
	}
	if launch == "" && p.Records == "" && p.Sizes == "" {
		return observeScript, nil
	}
	return "set -u\n" + launch + observeScript + collect + p.Sizes + p.Records, nil
}

// ObserveWith is Observe with p's probes in the same round trip.
func ObserveWith(ctx context.Context, g vm.Guest, p Probes) (State, error) {
	body, err := observeBody(p)
	if err != nil {
		return State{}, err
	}
	res, err := g.Run(ctx, vm.Script{Name: "observe the VM", Body: body, Root: true})
	if err != nil {
		return State{}, err
	}
	return parseObserve(string(res.Stdout))
}
