package registry

import (
	"net/netip"
	"slices"

	"github.com/bcollard/marina/internal/config"
)

// The VM's own Docker pulls Docker Hub images through the Docker Hub
// mirror, so that the kind node images (about 1 GB each) land in its cache
// and a VM made again after destroy reads them from there. dockerd's
// registry-mirrors applies to Docker Hub only and takes a URL it can reach
// from the VM itself: the mirror is published on the VM's loopback at
// HubAddr, a fixed address so that daemon.json (written by the
// provisioning script, which knows no config) never changes with the
// config. Docker speaks plain HTTP to any 127.0.0.0/8 registry without
// being told. 127.0.0.2 rather than 127.0.0.1: Lima mirrors the guest's
// 127.0.0.1 listeners to the Mac's, and this one is for the VM alone. With
// no Docker Hub mirror nothing listens there, and Docker pulls from
// Docker Hub itself, as it does when the mirror cannot serve an image.
var HubAddr = netip.MustParseAddrPort("127.0.0.2:5555")

// HubURL is HubAddr as daemon.json's registry-mirrors names it.
const HubURL = "http://127.0.0.2:5555"

// HubMirror is the mirror the VM's Docker pulls Docker Hub through: the
// first whose upstream is Docker Hub, as a node's containerd would choose
// (Route); "" when none is.
func HubMirror(mirrors []config.Mirror) string {
	p, err := Route(mirrors, "docker.io/library/busybox")
	if err != nil {
		return ""
	}
	return p.Mirror
}

// NodeRepos are the Docker Hub repositories of the node images k names
// (kind.nodeImages and marina's own pins): where a Docker Hub mirror's
// cache keeps them.
func NodeRepos(k config.Kind) []string {
	var repos []string
	for _, m := range []map[string]string{config.NodeImages, k.NodeImages} {
		for _, ref := range m {
			if p, err := Route(nil, ref); err == nil && p.Registry == "docker.io" && !slices.Contains(repos, p.Repo) {
				repos = append(repos, p.Repo)
			}
		}
	}
	slices.Sort(repos)
	return repos
}
