package host

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// RosettaRuntime is the file Rosetta 2 installs on a Mac
// (`softwareupdate --install-rosetta` puts it there).
const RosettaRuntime = "/Library/Apple/usr/libexec/oah/libRosettaRuntime"

// RosettaInstalled reports whether Rosetta 2 is installed on this host.
func RosettaInstalled() bool {
	_, err := os.Stat(RosettaRuntime)
	return err == nil
}

// Dial opens a TCP connection to addr and closes it at once, waiting at
// most timeout: nil when it opened.
func Dial(ctx context.Context, addr netip.AddrPort, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return err
	}
	return c.Close()
}

// Reached reports whether a Dial's result shows that the packets got
// there and back: a connection, or a refusal (a closed port answers).
func Reached(err error) bool { return err == nil || errors.Is(err, syscall.ECONNREFUSED) }

// Blocked reports whether a Dial's failure is what macOS gives a program
// its Local Network privacy setting keeps off the local networks: "no
// route to host" at once although a route is there. No answer at all has
// other causes (a firewall drops it), and is not taken for it.
func Blocked(err error) bool {
	return err != nil && !Reached(err) && errors.Is(err, syscall.EHOSTUNREACH)
}
