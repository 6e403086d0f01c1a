package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// entry is a route as `route -n get` reports it.
type entry struct {
	dst    netip.Prefix
	gw     netip.Addr // invalid for an interface route
	ifname string
	mtu    int
	// kernel is the kernel's own route of an interface's network: macOS
	// shows such a route as cloning (CLONING), one a person or a program
	// added as PRCLONING.
	kernel bool
}

// table is the routing table route(8) reads and changes. Its errors are
// syscall.Errno values with BSD's meaning: ESRCH is "not in table".
type table interface {
	get(addr netip.Addr) (entry, error)
	add(p netip.Prefix, gw netip.Addr) error
	change(p netip.Prefix, gw netip.Addr) error
	del(p netip.Prefix, gw netip.Addr) error
}

// Exit statuses of route.c (sysexits.h).
const (
	exUsage  = 64
	exNoHost = 68
	exNoPerm = 77
)

const usageLine = "usage: route [-dnqtv] command [[modifiers] args]\n"

// run is route(8) with args (without the program name), as user euid.
func run(args []string, t table, euid int, stdout, stderr io.Writer) int {
	usage := func(bad string) int {
		if bad != "" {
			fmt.Fprintf(stderr, "route: bad keyword: %s\n", bad)
		}
		fmt.Fprint(stderr, usageLine)
		return exUsage
	}
	// Options, as getopt("nqdtv") reads them: -n is what marina passes and
	// what this stand-in does anyway (it never resolves names).
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		for _, c := range args[0][1:] {
			if c != 'n' {
				fmt.Fprintf(stderr, "route: illegal option -- %c\n", c)
				fmt.Fprint(stderr, "route (the marina lab's stand-in) implements -n only\n")
				fmt.Fprint(stderr, usageLine)
				return exUsage
			}
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return usage("")
	}
	cmd := args[0]
	switch cmd {
	case "add", "change", "delete", "get":
	case "flush", "monitor":
		fmt.Fprintf(stderr, "route: %s is not implemented by the marina lab's stand-in (lab/route)\n", cmd)
		return exUsage
	default:
		return usage(cmd)
	}
	// newroute: only get is allowed to anyone.
	if cmd != "get" && euid != 0 {
		fmt.Fprint(stderr, "route: must be root to alter routing table\n")
		return exNoPerm
	}
	var (
		forceNet, forceHost bool
		dest, gateway       string
	)
	for _, a := range args[1:] {
		switch {
		case a == "-net":
			forceNet = true
		case a == "-host":
			forceHost = true
		case a == "-inet":
		case strings.HasPrefix(a, "-"):
			if a == "-interface" || a == "-iface" || a == "-netmask" || a == "-ifscope" {
				fmt.Fprintf(stderr, "route: %s is not implemented by the marina lab's stand-in (lab/route)\n", a)
				return exUsage
			}
			return usage(a[1:])
		case dest == "":
			dest = a
		case gateway == "":
			gateway = a
		default:
			fmt.Fprintf(stderr, "route: a netmask argument (%s) is not implemented by the marina lab's stand-in (lab/route)\n", a)
			return exUsage
		}
	}
	if dest == "" {
		return usage("")
	}
	p, isHost, err := parseDest(dest, forceNet, forceHost)
	if err != nil {
		fmt.Fprintf(stderr, "route: bad address: %s\n", dest)
		return exNoHost
	}
	var gw netip.Addr
	if gateway != "" {
		if gw, err = netip.ParseAddr(gateway); err != nil || !gw.Is4() {
			fmt.Fprintf(stderr, "route: bad address: %s\n", gateway)
			return exNoHost
		}
	}
	switch cmd {
	case "get":
		e, err := lookup(t, p, isHost)
		if err != nil {
			fmt.Fprintf(stderr, "route: writing to routing socket: %s\n", bsdError(err))
			return 0
		}
		printGet(stdout, p.Addr(), e)
		return 0
	case "add":
		err = needGateway(gw, func() error { return t.add(p, gw) })
	case "change":
		err = needGateway(gw, func() error { return t.change(p, gw) })
	case "delete":
		err = t.del(p, gw)
	}
	if err != nil {
		fmt.Fprintf(stderr, "route: writing to routing socket: %s\n", bsdError(err))
	}
	// The destination as typed, up to its "/": getaddr cut it there.
	kind := "net"
	if isHost {
		kind = "host"
	}
	fmt.Fprintf(stdout, "%s %s %s", cmd, kind, strings.SplitN(dest, "/", 2)[0])
	if gateway != "" {
		fmt.Fprintf(stdout, ": gateway %s", gateway)
	}
	if err != nil {
		fmt.Fprintf(stdout, ": %s\n", bsdError(err))
	} else {
		fmt.Fprint(stdout, "\n")
	}
	return 0
}

// needGateway: a route without a gateway would be an interface route
// (-interface), which this stand-in does not make.
func needGateway(gw netip.Addr, f func() error) error {
	if !gw.IsValid() {
		return syscall.EINVAL
	}
	return f()
}

// lookup is RTM_GET: the route the kernel uses for a host address; for a
// network, only a route of exactly that network.
func lookup(t table, p netip.Prefix, isHost bool) (entry, error) {
	e, err := t.get(p.Addr())
	if err != nil {
		return entry{}, err
	}
	if !isHost && e.dst != p {
		return entry{}, syscall.ESRCH
	}
	return e, nil
}

// parseDest reads a destination as route.c's getaddr does for IPv4:
// "default", A.B.C.D/BITS, or an address that is a host unless -net says
// otherwise or its host part is zero (then its mask stops at its last
// non-zero byte, as inet_makenetandmask computes it).
func parseDest(s string, forceNet, forceHost bool) (p netip.Prefix, isHost bool, err error) {
	if s == "default" {
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), false, nil
	}
	if addr, bits, ok := strings.Cut(s, "/"); ok {
		a, err := netip.ParseAddr(addr)
		n, nerr := strconv.Atoi(bits)
		if err != nil || !a.Is4() || nerr != nil || n < 0 || n > 32 {
			return netip.Prefix{}, false, errors.New("bad address")
		}
		if forceHost {
			return netip.PrefixFrom(a, 32), true, nil
		}
		// The kernel keeps only the network's bits.
		return netip.PrefixFrom(a, n).Masked(), false, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Prefix{}, false, errors.New("bad address")
	}
	b := a.As4()
	zeros := 0
	for i := 3; i >= 0 && b[i] == 0; i-- {
		zeros++
	}
	if forceHost || (!forceNet && zeros == 0) {
		return netip.PrefixFrom(a, 32), true, nil
	}
	if zeros == 4 {
		return netip.PrefixFrom(a, 0), false, nil
	}
	return netip.PrefixFrom(a, 32-8*zeros), false, nil
}

// Route flags, as route.c's routeflags names them (bit n-1 for "\n").
var flagNames = []struct {
	bit  uint
	name string
}{
	{0, "UP"}, {1, "GATEWAY"}, {2, "HOST"}, {6, "DONE"}, {8, "CLONING"},
	{11, "STATIC"}, {16, "PRCLONING"}, {30, "GLOBAL"},
}

// flags are the flags macOS shows for e: every route is up, done and
// static; the kernel's interface routes clone, others are PRCLONING; the
// default route is GLOBAL (as in the captures in internal/host/testdata).
func flags(e entry) string {
	set := map[string]bool{"UP": true, "DONE": true, "STATIC": true}
	set["GATEWAY"] = e.gw.IsValid()
	set["HOST"] = e.dst.Bits() == 32
	set["CLONING"] = e.kernel
	set["PRCLONING"] = !e.kernel && e.dst.Bits() < 32
	set["GLOBAL"] = e.dst.Bits() == 0
	var on []string
	for _, f := range flagNames {
		if set[f.name] {
			on = append(on, f.name)
		}
	}
	return "<" + strings.Join(on, ",") + ">"
}

// printGet is route.c's print_getmsg for e, asked about "to", with -n.
func printGet(w io.Writer, to netip.Addr, e entry) {
	name := func(a netip.Addr) string {
		if a.IsUnspecified() {
			return "default"
		}
		return a.String()
	}
	fmt.Fprintf(w, "   route to: %s\n", name(to))
	fmt.Fprintf(w, "destination: %s\n", name(e.dst.Addr()))
	// A host route carries no netmask; a zero mask prints as "default".
	if e.dst.Bits() < 32 {
		fmt.Fprintf(w, "       mask: %s\n", name(maskOf(e.dst.Bits())))
	}
	if e.gw.IsValid() {
		fmt.Fprintf(w, "    gateway: %s\n", e.gw)
	}
	if e.ifname != "" {
		fmt.Fprintf(w, "  interface: %s\n", e.ifname)
	}
	fmt.Fprintf(w, "      flags: %s\n", flags(e))
	fmt.Fprint(w, " recvpipe  sendpipe  ssthresh  rtt,msec    rttvar  hopcount      mtu     expire\n")
	// "%8u%c " per metric, the last "%8d%c\n"; %c is ' ' (no lock).
	for _, v := range []int{0, 0, 0, 0, 0, 0, e.mtu} {
		fmt.Fprintf(w, "%8d  ", v)
	}
	fmt.Fprintf(w, "%8d \n", 0)
}

func maskOf(bits int) netip.Addr {
	var b [4]byte
	for i := 0; i < bits; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom4(b)
}

// bsdError is how route(8) words err: route_strerror for its three, and
// macOS strerror(3) for the rest.
func bsdError(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ESRCH:
			return "not in table"
		case syscall.EBUSY:
			return "entry in use"
		case syscall.ENOBUFS:
			return "routing table overflow"
		case syscall.EEXIST:
			return "File exists"
		case syscall.ENETUNREACH:
			return "Network is unreachable"
		case syscall.EHOSTUNREACH:
			return "No route to host"
		case syscall.EINVAL:
			return "Invalid argument"
		case syscall.EPERM:
			return "Operation not permitted"
		case syscall.EACCES:
			return "Permission denied"
		}
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}
