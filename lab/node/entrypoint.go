//go:build linux

package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// sigRTMin3 is SIGRTMIN+3, systemd's "halt" and the stop signal of kind's
// real node image.
const sigRTMin3 = syscall.Signal(37)

// entrypoint is PID 1 of a node container. kind waits (30 s) for a line
// matching "Reached target .*Multi-User System.*" in the container's log.
func entrypoint(_ []string) error {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, sigRTMin3, syscall.SIGCHLD)

	fmt.Println("lab-node: the marina lab's stand-in for systemd in a kind node")
	// After a container restart (a VM reboot), bring back what kubeadm init
	// started, as the kubelet restarts static pods.
	if err := startControlPlane(); err != nil {
		fmt.Fprintln(os.Stderr, "lab-node: restarting the control plane:", err)
	}
	fmt.Println("[  OK  ] Reached target multi-user.target - Multi-User System.")

	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Printf("lab-node: %v: stopping\n", s)
		shutdown()
		return nil
	}
	return nil
}

// reap collects every exited child: orphans (the servers kubeadm init
// started, whatever docker exec left behind) are PID 1's to reap.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// shutdown asks every other process in the container to end, then makes
// sure they have.
func shutdown() {
	// The API server before its etcd, or it drains for long.
	stopControlPlane()
	_ = syscall.Kill(-1, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		reap()
		if syscall.Kill(-1, 0) == syscall.ESRCH {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-1, syscall.SIGKILL)
	reap()
}
