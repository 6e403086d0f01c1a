// Command route is the lab's stand-in for macOS route(8) (Apple's
// network_cmds, route.tproj/route.c) over the lab's Linux routing table:
// `route -n get ADDR`, `route -n add|change -net CIDR GATEWAY` and
// `route -n delete -net CIDR [GATEWAY]`, the commands marina runs on a Mac,
// with route(8)'s output, messages and exit statuses, applied to the
// kernel over netlink.
//
// The lab installs it at /sbin/route in the mount namespace of its Mac
// user (lab/lab mac-user), where sudo may run it without a password, so
// marina's macOS route code runs unchanged against it (lab/README.md).
//
// As on a Mac, every add, change, delete and get exits 0 once its
// arguments are read, even when the kernel refused it: the refusal is
// only in what it prints ("route: writing to routing socket: File
// exists"). Changes need root ("must be root to alter routing table",
// exit 77); get does not.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], kernel{}, os.Geteuid(), os.Stdout, os.Stderr))
}
