// Package guest holds what marina runs inside the VM: the scripts that look
// at the guest and change it, batched so each costs one round trip.
package guest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/vm"
)

// State is what one observation of the guest learns.
type State struct {
	// Lima0 is the vzNAT address the Mac routes to, with its real prefix.
	Lima0 netip.Prefix
	// Lima0All lists every IPv4 address on lima0 (normally one).
	Lima0All []netip.Prefix
	// Net is the routing state: forwarding, marina's rules and files.
	Net NetState
	// RegistrySums maps each mirror config file in the VM to its sha256.
	RegistrySums map[string]string
	// DNSSum is the sha256 of marina-dns's Corefile, "" when there is none.
	DNSSum string
	// EtcdAuth is the id of the etcd container whose users marina set up
	// (EtcdAuth), "" when none was.
	EtcdAuth string
	// Addons maps each cluster with an addons record to what it says.
	Addons map[string]Addons
	// Health is Docker's unit, the inotify limits, the disk, Rosetta's
	// binfmt entry, and the doctor's probes when asked for.
	Health Health
	// Provisioning is the provisioning record and what decides whether
	// provisioning again restarts Docker.
	Provisioning Provisioning
	// Podnet is network.podRouting's section as the guest printed it
	// (internal/podnet reads it).
	Podnet string
}

// observeScript prints one section per concern, each headed "@@ name".
// Everything marina needs to know about the guest comes back in this one
// round trip. It starts as few programs as it can, since each costs
// milliseconds in a VM (tens of them in the lab): bash's own read, globs
// and parameter expansion instead of cat, head, find, basename and tail,
// and one sha256sum for every file whose digest a section reports.
const observeScript = `set -u
echo "@@ lima0"
ip -4 -j addr show dev lima0 2>/dev/null || echo '[]'
` + sumsObserve + networkObserve + registryObserve + dnsObserve + healthObserve + provisionObserve + podnetObserve

// podnetObserve reports what network.podRouting installed (the paths are
// internal/podnet's, which tests that they agree): its files' digests,
// its service, and the VM's routes it made (proto 200).
const podnetObserve = `echo "@@ podnet"
for f in /usr/local/sbin/marina-podnet /etc/systemd/system/marina-podnet.service /etc/marina/podnet/*.conf; do
	if [ -n "${sum[$f]:-}" ]; then echo "file ${sum[$f]} $f"; fi
done
echo "active $(systemctl is-active marina-podnet.service 2>/dev/null)"
ip -4 route show proto 200 root 10.0.0.0/8 2>/dev/null | while read -r r; do echo "route $r"; done
`

// sumsObserve reads the sha256 of every file a section reports into sum,
// by path, with one sha256sum.
const sumsObserve = `declare -A sum=()
have=()
for f in ` + ScriptPath + " " + UnitPath + " " + DropInPath + " " + daemonPath + " " + socketPath + " " + registry.ConfigDir + "/*.yml " + registry.ConfigDir + "/*.auth " + dns.CorefilePath + ` /usr/local/sbin/marina-podnet /etc/systemd/system/marina-podnet.service /etc/marina/podnet/*.conf; do
	if [ -f "$f" ]; then have+=("$f"); fi
done
if [ ${#have[@]} -gt 0 ]; then
	while read -r h f; do sum["$f"]=$h; done < <(sha256sum -- "${have[@]}" 2>/dev/null)
fi
`

// containerID is what a Docker container id looks like: the file it is
// read from is in the VM.
var containerID = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ErrNoLima0 is the observation's error when the guest answered but lima0
// has no IPv4 address (the rest of State is read all the same).
var ErrNoLima0 = errors.New("the VM's lima0 interface has no IPv4 address")

// Observe looks at the guest in one round trip. When lima0 has no address
// the error says so and the rest of State is still filled in.
func Observe(ctx context.Context, g vm.Guest) (State, error) {
	res, err := g.Run(ctx, vm.Script{Name: "observe the VM", Body: observeScript, Root: true})
	if err != nil {
		return State{}, err
	}
	return parseObserve(string(res.Stdout))
}

func sections(out string) map[string]string {
	m := map[string]string{}
	var name string
	var b strings.Builder
	flush := func() {
		if name != "" {
			m[name] = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(out, "\n") {
		if strings.HasPrefix(line, "@@ ") {
			flush()
			name = strings.TrimSpace(strings.TrimPrefix(line, "@@ "))
			continue
		}
		b.WriteString(line)
	}
	flush()
	return m
}

func parseObserve(out string) (State, error) {
	sec := sections(out)
	st := State{Net: parseNetState(sec), RegistrySums: parseSums(sec["registry"]), Addons: parseAddons(sec["addons"]), Health: parseHealth(sec), Provisioning: parseProvisioning(sec["provision"]), Podnet: sec["podnet"]}
	st.DNSSum = parseSums(sec["dns"])[dns.CorefilePath]
	if id := strings.TrimSpace(sec["etcd-auth"]); containerID.MatchString(id) {
		st.EtcdAuth = id
	}
	addrs, err := ParseAddrs(sec["lima0"])
	if err != nil {
		return st, err
	}
	st.Lima0All = addrs
	if len(addrs) == 0 {
		return st, fmt.Errorf("%w: the vzNAT network is not up (check `marina shell -- ip addr show lima0`; restarting with `marina down && marina up` usually brings it back)", ErrNoLima0)
	}
	st.Lima0 = addrs[0]
	return st, nil
}

// ParseAddrs reads the IPv4 addresses from `ip -4 -j addr show` output.
func ParseAddrs(js string) ([]netip.Prefix, error) {
	js = strings.TrimSpace(js)
	if js == "" {
		return nil, nil
	}
	var links []struct {
		AddrInfo []struct {
			Family    string `json:"family"`
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
			Scope     string `json:"scope"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(js), &links); err != nil {
		return nil, fmt.Errorf("read the VM's addresses (`ip -j addr`): %w", err)
	}
	var out []netip.Prefix
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a.Family != "inet" || a.Scope == "host" {
				continue
			}
			ip, err := netip.ParseAddr(a.Local)
			if err != nil {
				return nil, fmt.Errorf("read the VM's addresses: bad address %q", a.Local)
			}
			p, err := ip.Prefix(a.PrefixLen)
			if err != nil {
				return nil, fmt.Errorf("read the VM's addresses: bad prefix /%d", a.PrefixLen)
			}
			out = append(out, netip.PrefixFrom(ip, p.Bits()))
		}
	}
	return out, nil
}

// ObserveScript is the observation's script, for the packages whose files
// it reads to check it names them (internal/podnet).
func ObserveScript() string { return observeScript }
