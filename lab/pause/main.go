// Command lab-pause is the pause process of the lab node image's pod
// sandboxes, standing in for registry.k8s.io/pause (which Kubernetes builds
// from its pause.c). The sandbox's container holds the pod's namespaces
// open; its one process has nothing to do but stay alive, leave when told,
// and, being PID 1 of the pod when the pod shares a PID namespace, reap
// the orphans the kernel hands it.
//
// Only the standard library, so CGO_ENABLED=0 builds it static for a
// FROM-scratch image.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is what -v prints; the build may set it with
// -ldflags "-X main.version=…".
var version = "lab"

func main() {
	// -v: the version check image builders and people run.
	for _, a := range os.Args[1:] {
		if a == "-v" {
			fmt.Printf("lab-pause %s\n", version)
			return
		}
	}

	// PID 1 gets no default action for SIGINT and SIGTERM from the kernel:
	// without a handler the runtime could only stop the sandbox with
	// SIGKILL. Asking for SIGCHLD too is what wakes us to reap.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)

	// Children that died before the handler was in place sent their
	// SIGCHLD to nobody.
	reap()
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "lab-pause: %v, exiting\n", s)
		os.Exit(0)
	}
}

// reap collects every child that has exited, without blocking. Signals
// coalesce (one SIGCHLD may stand for many deaths), hence the loop; it
// stops at 0 (children left, none dead) or an error (ECHILD: no children).
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
