// Command netstat is the lab's stand-in for macOS netstat(1) (Apple's
// network_cmds, netstat.tproj), as far as marina uses it: `netstat -rn
// [-f inet]`, the IPv4 routing table in the format macOS 11.3 and later
// print (no Refs and Use columns), read from the lab's Linux routing
// table (the main table of the current network namespace) over netlink.
//
// The lab installs it at /usr/sbin/netstat in the mount namespace of its
// Mac user (lab/lab mac-user), next to the route(8) stand-in, so that
// marina's macOS code that lists the routes overlapping the kind network
// (internal/host, ParseNetstat) runs unchanged against it.
//
// Only unicast routes of the main table are shown; there are no cloned
// (W) or link-layer (L) entries, which Linux does not keep as routes.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], kernel{}, os.Stdout, os.Stderr))
}

// table is what the stand-in reads: the IPv4 routes.
type table interface {
	routes() ([]entry, error)
}

const usageLine = "usage: netstat -rn [-f inet] (the marina lab's stand-in implements only this)\n"

// run is netstat with args (without the program name).
func run(args []string, t table, stdout, stderr io.Writer) int {
	var r, n bool
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-f":
			if i+1 >= len(args) {
				fmt.Fprint(stderr, "netstat: option requires an argument -- f\n", usageLine)
				return 64
			}
			i++
			if args[i] != "inet" {
				fmt.Fprintf(stderr, "netstat: the marina lab's stand-in shows the inet family only, not %s\n", args[i])
				return 64
			}
		case len(a) > 1 && a[0] == '-':
			for _, c := range a[1:] {
				switch c {
				case 'r':
					r = true
				case 'n':
					n = true
				default:
					fmt.Fprintf(stderr, "netstat: illegal option -- %c\n%s", c, usageLine)
					return 64
				}
			}
		default:
			fmt.Fprint(stderr, usageLine)
			return 64
		}
	}
	if !r || !n {
		fmt.Fprint(stderr, usageLine)
		return 64
	}
	es, err := t.routes()
	if err != nil {
		fmt.Fprintf(stderr, "netstat: sysctl: %v\n", err)
		return 1
	}
	printTable(stdout, es)
	return 0
}
