package docker

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Endpoint is one container's place on a network, as recorded before the
// network is made again: enough to put it back with the same address and
// names, and in the same running state.
type Endpoint struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// IP is its address on the network; unset for a stopped container that
	// had a dynamic one (Docker gives it a new one when it starts anyway).
	IP      netip.Addr `json:"ip,omitzero"`
	Aliases []string   `json:"aliases,omitempty"`
	Running bool       `json:"running,omitempty"`
}

// Endpoints lists every container attached to the network name, running
// or not (a network's own inspect shows only the running ones).
func (c *Client) Endpoints(ctx context.Context, name string) ([]Endpoint, error) {
	res, err := c.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("network", name)})
	if err != nil {
		return nil, fmt.Errorf("list the containers on Docker network %s: %w", name, err)
	}
	var out []Endpoint
	for _, s := range res.Items {
		in, err := c.api.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
		if errdefs.IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("inspect container %s: %w", s.ID, err)
		}
		ct := in.Container
		if ct.NetworkSettings == nil || ct.NetworkSettings.Networks[name] == nil {
			continue
		}
		es := ct.NetworkSettings.Networks[name]
		ep := Endpoint{ID: ct.ID, Name: strings.TrimPrefix(ct.Name, "/"), IP: es.IPAddress}
		ep.Running = ct.State != nil && (ct.State.Running || ct.State.Restarting)
		if !ep.IP.IsValid() && es.IPAMConfig != nil {
			ep.IP = es.IPAMConfig.IPv4Address
		}
		for _, a := range es.Aliases {
			// Docker answers for the name and the short ID by itself.
			if a != ep.Name && !strings.HasPrefix(ct.ID, a) {
				ep.Aliases = append(ep.Aliases, a)
			}
		}
		out = append(out, ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Reattach makes the network of spec again with eps on it: the running
// ones are stopped, every one is disconnected, the network is removed and
// created as spec says, every one is connected with its own address and
// aliases, and the ones that were running are started again, control
// planes first. Each step checks where it is, so a Reattach stopped
// anywhere completes when called again with the same eps. say reports
// each step.
func (c *Client) Reattach(ctx context.Context, spec NetworkSpec, eps []Endpoint, say func(string)) error {
	for _, ep := range eps {
		if ep.IP.IsValid() && !spec.Subnet.Contains(ep.IP) {
			return fmt.Errorf("container %s has %s, outside %s: the network's subnet would change, which would change its address", ep.Name, ep.IP, spec.Subnet)
		}
	}
	for _, ep := range eps {
		in, err := c.api.ContainerInspect(ctx, ep.ID, client.ContainerInspectOptions{})
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("inspect container %s: %w", ep.Name, err)
		}
		if in.Container.State != nil && (in.Container.State.Running || in.Container.State.Restarting) {
			say("stopping " + ep.Name)
			if _, err := c.api.ContainerStop(ctx, ep.ID, client.ContainerStopOptions{}); err != nil {
				return fmt.Errorf("stop container %s: %w", ep.Name, err)
			}
		}
	}
	have, err := c.InspectNetwork(ctx, spec.Name)
	if err != nil {
		return err
	}
	remake := have == nil || !have.Managed || len(spec.Differences(have)) > 0
	if have != nil && remake {
		for _, ep := range eps {
			say("disconnecting " + ep.Name)
			_, err := c.api.NetworkDisconnect(ctx, have.ID, client.NetworkDisconnectOptions{Container: ep.ID, Force: true})
			if err != nil && !errdefs.IsNotFound(err) && !notConnected(err) {
				return fmt.Errorf("disconnect container %s from Docker network %s: %w", ep.Name, spec.Name, err)
			}
		}
		say("removing network " + spec.Name)
		if _, err := c.api.NetworkRemove(ctx, have.ID, client.NetworkRemoveOptions{}); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove Docker network %s: %w (a container marina did not record is still on it: `docker network inspect %s` names it)", spec.Name, err, spec.Name)
		}
	}
	if remake {
		say("creating network " + spec.Name)
		if err := c.CreateNetwork(ctx, spec); err != nil {
			return err
		}
	}
	for _, ep := range eps {
		in, err := c.api.ContainerInspect(ctx, ep.ID, client.ContainerInspectOptions{})
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("inspect container %s: %w", ep.Name, err)
		}
		if ns := in.Container.NetworkSettings; ns != nil && ns.Networks[spec.Name] != nil {
			continue
		}
		es := &network.EndpointSettings{Aliases: ep.Aliases}
		if ep.IP.IsValid() {
			es.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ep.IP}
		}
		say(fmt.Sprintf("connecting %s at %s", ep.Name, orNone(ep.IP.String(), ep.IP.IsValid())))
		if _, err := c.api.NetworkConnect(ctx, spec.Name, client.NetworkConnectOptions{Container: ep.ID, EndpointConfig: es}); err != nil {
			return fmt.Errorf("connect container %s to Docker network %s at %s: %w", ep.Name, spec.Name, ep.IP, err)
		}
	}
	run := make([]Endpoint, 0, len(eps))
	for _, ep := range eps {
		if ep.Running {
			run = append(run, ep)
		}
	}
	// Control planes first: the other nodes' kubelets wait for them.
	sort.SliceStable(run, func(i, j int) bool {
		return strings.HasSuffix(run[i].Name, "-control-plane") && !strings.HasSuffix(run[j].Name, "-control-plane")
	})
	for _, ep := range run {
		say("starting " + ep.Name)
		if _, err := c.api.ContainerStart(ctx, ep.ID, client.ContainerStartOptions{}); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("start container %s: %w", ep.Name, err)
		}
	}
	return nil
}

// notConnected is Docker's answer to disconnecting a container that is
// not on the network (a run stopped after that step).
func notConnected(err error) bool {
	return strings.Contains(err.Error(), "is not connected")
}
