//go:build linux

// Command lab-node is what runs inside the lab's stand-in for a kindest/node
// image (lab/node/pack builds the image): the real kind CLI creates, and
// talks to, nodes made from it, and each control-plane node serves a real
// etcd and kube-apiserver v1.36.1. There is no kubelet, containerd or
// systemd: this program plays the parts of them that kind and kubeadm's
// clients observe.
//
// One binary, chosen by the name it runs as (or by its first argument):
//
//	entrypoint   PID 1: says what kind waits for ("Reached target …
//	             Multi-User System."), restarts the control plane after a
//	             container restart, reaps orphans, ends on SIGTERM.
//	kubeadm      init: PKI, etcd, kube-apiserver, admin.conf and the
//	             objects kubeadm and a kubelet would have made (Node, the
//	             coredns ConfigMap …); join: registers the joining Node;
//	             version; reset.
//	systemctl    accepts what kind and kubeadm users run; nothing to manage.
//	containerd   `config dump` prints /etc/containerd/config.toml.
//	pack-image   (on the lab host) writes a root file system as an OCI archive.
//	push-image   (on the lab host) uploads such an archive to a registry.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// kubeVersion is the version of the binaries the image carries.
const kubeVersion = "v1.36.1"

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if name == "lab-node" {
		if len(args) == 0 {
			fatalf("usage: lab-node entrypoint|kubeadm|systemctl|containerd|pack-image|push-image ARGS…")
		}
		name, args = args[0], args[1:]
	}
	var err error
	switch name {
	case "entrypoint":
		err = entrypoint(args)
	case "kubeadm":
		err = kubeadm(args)
	case "systemctl":
		err = systemctl(args)
	case "containerd":
		err = containerd(args)
	case "pack-image":
		err = packImage(args)
	case "push-image":
		err = pushImage(args)
	default:
		err = fmt.Errorf("lab-node: unknown command %q", name)
	}
	if err != nil {
		fatalf("%s: %v", name, err)
	}
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(1)
}

// systemctl accepts the unit commands kind and kubeadm users run. Nothing
// here is a unit: the control plane is started by kubeadm init and by the
// entrypoint after a restart.
func systemctl(args []string) error {
	var verb string
	for _, a := range args {
		if len(a) > 0 && a[0] != '-' {
			verb = a
			break
		}
	}
	switch verb {
	case "", "daemon-reload", "enable", "disable", "start", "restart", "reload", "stop", "mask", "unmask", "reset-failed":
		return nil
	case "is-active", "status":
		fmt.Println("inactive")
		os.Exit(3)
	case "is-enabled":
		fmt.Println("disabled")
		os.Exit(1)
	}
	return fmt.Errorf("unsupported in the lab's node image: systemctl %v", args)
}

// containerd answers `containerd config dump` (kind reads the snapshotter
// from it) with the node's config file; no containerd runs.
func containerd(args []string) error {
	if len(args) >= 2 && args[0] == "config" && args[1] == "dump" {
		b, err := os.ReadFile("/etc/containerd/config.toml")
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(b)
		return err
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		fmt.Println("containerd (lab stand-in: not running)")
		return nil
	}
	return fmt.Errorf("unsupported in the lab's node image: containerd %v", args)
}
