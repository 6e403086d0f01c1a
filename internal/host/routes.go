package host

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/bcollard/marina/internal/run"
)

// A route that covers only part of the kind network sends that part
// elsewhere, whatever the route of the whole network says: route(8)'s
// `get` (Lookup) asks about one address only, so a VPN's 172.30.5.0/24
// inside a 172.30.0.0/16 goes unseen there. Overlapping reads the whole
// routing table for that.

// netstatPath is netstat(1) on a Mac, by its full path; the lab puts its
// stand-in (lab/netstat) there in the Mac user's mount namespace.
var netstatPath = "/usr/sbin/netstat"

// Overlapping lists the host's IPv4 routes whose destination overlaps
// want: those inside it (more specific) and those holding it (the default
// route among them).
func (h *Host) Overlapping(ctx context.Context, want netip.Prefix) ([]Route, error) {
	if h.styleErr != nil {
		return nil, h.styleErr
	}
	all, err := h.tool().list(ctx, h.Run)
	if err != nil {
		return nil, err
	}
	return overlapping(want, all), nil
}

func overlapping(want netip.Prefix, all []Route) []Route {
	var out []Route
	for _, r := range all {
		if r.Dest.IsValid() && r.Dest.Overlaps(want) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// Shadows are the routes inside want, more specific than it, that send
// their addresses somewhere else than the VM: not through via (lima0's
// address), nor, when via is not known, through a gateway marina routed
// want through (mine). Each makes part of the kind network unreachable
// from this host.
func Shadows(want netip.Prefix, via netip.Addr, routes []Route, mine ...netip.Addr) []Route {
	var out []Route
	for _, r := range routes {
		if !r.Dest.IsValid() || r.Dest.Bits() <= want.Bits() || !want.Contains(r.Dest.Addr()) {
			continue
		}
		if r.Gateway.IsValid() && (r.Gateway == via || (!via.IsValid() && slices.Contains(mine, r.Gateway))) {
			continue // to the VM all the same
		}
		out = append(out, r)
	}
	return out
}

// listIP reads the main routing table with ip(8).
func listIP(ctx context.Context, r run.Runner) ([]Route, error) {
	out, err := r.Output(ctx, run.Cmd{Args: []string{"ip", "-4", "-j", "route", "show"}})
	if err != nil {
		return nil, err
	}
	return ParseIPRoutes(string(out))
}

// listNetstat reads the routing table with macOS netstat(1).
func listNetstat(ctx context.Context, r run.Runner) ([]Route, error) {
	out, err := r.Output(ctx, run.Cmd{Args: []string{netstatPath, "-rn", "-f", "inet"}})
	if err != nil {
		return nil, err
	}
	return ParseNetstat(string(out))
}

// ParseNetstat reads the IPv4 table of macOS `netstat -rn [-f inet]`,
// with or without the Refs and Use columns (macOS before 11.3 printed
// them). Link-layer entries (flag L: the ARP cache of a connected network)
// are left out: the interface route they hang from is listed. A line that
// cannot be read is an error: a table read in part could hide the very
// route that matters.
func ParseNetstat(out string) ([]Route, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var (
		routes  []Route
		inInet  bool
		cols    map[string]int
		lineNum int
	)
	for sc.Scan() {
		lineNum++
		line := strings.TrimRight(sc.Text(), " \t\r")
		switch {
		case line == "Internet:":
			inInet, cols = true, nil
			continue
		case strings.HasSuffix(line, ":") && !strings.Contains(line, " "):
			inInet = false // Internet6:, or another family
			continue
		case !inInet || strings.TrimSpace(line) == "":
			continue
		}
		f := strings.Fields(line)
		if cols == nil {
			if f[0] != "Destination" {
				return nil, fmt.Errorf("cannot read `netstat -rn` output: line %d: %q where the column header belongs", lineNum, line)
			}
			cols = map[string]int{}
			for i, name := range f {
				cols[name] = i
			}
			for _, need := range []string{"Gateway", "Flags", "Netif"} {
				if _, ok := cols[need]; !ok {
					return nil, fmt.Errorf("cannot read `netstat -rn` output: no %s column in %q", need, line)
				}
			}
			continue
		}
		// Every column read must be there, whichever order the header
		// gave them in.
		if len(f) <= max(cols["Destination"], cols["Gateway"], cols["Flags"], cols["Netif"]) {
			return nil, fmt.Errorf("cannot read `netstat -rn` output: line %d: %q has too few columns", lineNum, line)
		}
		flags := f[cols["Flags"]]
		if strings.Contains(flags, "L") {
			continue
		}
		dest, err := parseNetname(f[cols["Destination"]])
		if err != nil {
			return nil, fmt.Errorf("cannot read `netstat -rn` output: line %d: %w", lineNum, err)
		}
		r := Route{Dest: dest, Interface: f[cols["Netif"]], Cloned: strings.Contains(flags, "W")}
		if gw, err := netip.ParseAddr(f[cols["Gateway"]]); err == nil && gw.Is4() {
			r.Gateway = gw // else link#N, or an interface: an interface route
		}
		if !slices.Contains(routes, r) {
			routes = append(routes, r) // interface-scoped copies (flag I) print twice
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read `netstat -rn` output: %w", err)
	}
	if cols == nil {
		return nil, fmt.Errorf("cannot read `netstat -rn` output: no IPv4 routing table (\"Internet:\") in %q", run.Tail(out, 3))
	}
	return routes, nil
}

// parseNetname reads a destination as netstat prints it (network_cmds
// netstat.tproj, netname and domask): "default"; a host's four octets; or
// a network's address without its trailing zero octets, followed by
// "/BITS" unless its mask is the classful one of its address (class A /8,
// B /16, C and above /24): "172.30" is 172.30.0.0/16, "172.30.5/24"
// 172.30.5.0/24, "10" 10.0.0.0/8, "0/1" the lower half of a split-tunnel
// default.
func parseNetname(s string) (netip.Prefix, error) {
	if s == "default" {
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), nil
	}
	addr, bitsText, hasBits := strings.Cut(s, "/")
	parts := strings.Split(addr, ".")
	if len(parts) > 4 {
		return netip.Prefix{}, fmt.Errorf("destination %q is not an IPv4 network", s)
	}
	var b [4]byte
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 || p == "" || (len(p) > 1 && p[0] == '0') {
			return netip.Prefix{}, fmt.Errorf("destination %q is not an IPv4 network", s)
		}
		b[i] = byte(n)
	}
	a := netip.AddrFrom4(b)
	bits := 32
	switch {
	case hasBits:
		n, err := strconv.Atoi(bitsText)
		if err != nil || n < 0 || n > 32 {
			return netip.Prefix{}, fmt.Errorf("destination %q has a bad mask", s)
		}
		bits = n
	case len(parts) == 4:
	case b[0] < 128:
		bits = 8
	case b[0] < 192:
		bits = 16
	default:
		bits = 24
	}
	return netip.PrefixFrom(a, bits).Masked(), nil
}
