package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Container is the part of a container marina reads.
type Container struct {
	ID     string
	Name   string
	State  string // running, exited, restarting, created…
	Image  string
	Labels map[string]string
	// IP is the container's address on the kind network, when it has one.
	IP string
}

// ListLabeled returns every container (running or not) carrying label.
func (c *Client) ListLabeled(ctx context.Context, label string) ([]Container, error) {
	res, err := c.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]Container, 0, len(res.Items))
	for _, s := range res.Items {
		ct := Container{ID: s.ID, State: string(s.State), Image: s.Image, Labels: s.Labels}
		if len(s.Names) > 0 {
			ct.Name = strings.TrimPrefix(s.Names[0], "/")
		}
		if s.NetworkSettings != nil {
			if n, ok := s.NetworkSettings.Networks[KindNetwork]; ok && n != nil && n.IPAddress.IsValid() {
				ct.IP = n.IPAddress.String()
			}
		}
		out = append(out, ct)
	}
	return out, nil
}

// RunSpec is a long-running container on the kind network.
type RunSpec struct {
	Name   string
	Image  string
	Labels map[string]string
	Binds  []string
	// Cmd replaces the image's command when set.
	Cmd []string
	// User is the user:group the container runs as; "" is the image's.
	User string
	// IP is a fixed address on the kind network (outside Docker's dynamic
	// range), when set.
	IP netip.Addr
	// Publish publishes the container's TCP port Port at Publish, an
	// address of the VM's, when set.
	Port    int
	Publish netip.AddrPort
}

// Run creates and starts spec's container, restarted by Docker whenever it
// stops (and when the VM boots).
func (c *Client) Run(ctx context.Context, spec RunSpec) error {
	var nc *network.NetworkingConfig
	if spec.IP.IsValid() {
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			KindNetwork: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: spec.IP}},
		}}
	}
	hc := &container.HostConfig{
		Binds:         spec.Binds,
		NetworkMode:   container.NetworkMode(KindNetwork),
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways},
	}
	cfg := &container.Config{Image: spec.Image, Labels: spec.Labels, Cmd: spec.Cmd, User: spec.User}
	if spec.Publish.IsValid() {
		p, err := network.ParsePort(strconv.Itoa(spec.Port) + "/tcp")
		if err != nil {
			return err
		}
		cfg.ExposedPorts = network.PortSet{p: {}}
		hc.PortBindings = network.PortMap{p: {{HostIP: spec.Publish.Addr(), HostPort: strconv.Itoa(int(spec.Publish.Port()))}}}
	}
	res, err := c.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:             spec.Name,
		Config:           cfg,
		NetworkingConfig: nc,
		HostConfig:       hc,
	})
	if err != nil {
		return fmt.Errorf("create container %s: %w", spec.Name, err)
	}
	if _, err := c.api.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", spec.Name, err)
	}
	return nil
}

// Remove deletes a container, stopping it first; a missing one is fine.
func (c *Client) Remove(ctx context.Context, id string) error {
	_, err := c.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// Start starts the stopped container id (a running one stays as it is).
func (c *Client) Start(ctx context.Context, id string) error {
	if _, err := c.api.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	return nil
}

// Stop stops container id as docker stop does: its stop signal, then
// SIGKILL after its own timeout (Docker's 10 s when it sets none). A
// stopped container stays as it is, and Docker's restart policy leaves a
// container stopped this way stopped, across a restart of Docker too.
func (c *Client) Stop(ctx context.Context, id string) error {
	if _, err := c.api.ContainerStop(ctx, id, client.ContainerStopOptions{}); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

// Started is when container id last started, by the VM's clock.
func (c *Client) Started(ctx context.Context, id string) (time.Time, error) {
	res, err := c.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("inspect container %s: %w", id, err)
	}
	if res.Container.State == nil {
		return time.Time{}, fmt.Errorf("container %s has no state", id)
	}
	t, err := time.Parse(time.RFC3339Nano, res.Container.State.StartedAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("container %s: its start time %q: %w", id, res.Container.State.StartedAt, err)
	}
	return t, nil
}

// Memory is the memory container id uses now, as docker stats shows it:
// the cgroup's usage less its inactive file cache, which the kernel
// takes back first.
func (c *Client) Memory(ctx context.Context, id string) (uint64, error) {
	res, err := c.api.ContainerStats(ctx, id, client.ContainerStatsOptions{})
	if err != nil {
		return 0, fmt.Errorf("read the stats of container %s: %w", id, err)
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&st); err != nil {
		return 0, fmt.Errorf("read the stats of container %s: %w", id, err)
	}
	return MemoryUsed(st.MemoryStats), nil
}

// MemoryUsed is docker stats' memory figure: usage less the inactive
// file cache (total_inactive_file under cgroup v1, inactive_file under v2).
func MemoryUsed(m container.MemoryStats) uint64 {
	for _, k := range []string{"total_inactive_file", "inactive_file"} {
		if v, ok := m.Stats[k]; ok && v < m.Usage {
			return m.Usage - v
		}
	}
	return m.Usage
}

// EnsureImage pulls ref unless the daemon already has it.
func (c *Client) EnsureImage(ctx context.Context, ref string) error {
	if _, err := c.api.ImageInspect(ctx, ref); err == nil {
		return nil
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("inspect image %s: %w", ref, err)
	}
	resp, err := c.api.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err == nil {
		defer resp.Close()
		err = resp.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("pull %s: %w (the VM needs to reach its registry once for it)", ref, err)
	}
	return nil
}

// Node is a kind node container.
type Node struct {
	Container
	Cluster string // its kind cluster
	Role    string // control-plane or worker
	// APIPorts are the VM ports that publish the node's 6443/tcp.
	APIPorts []int
	// APIHosts are the addresses each of APIPorts is published on, by
	// port ("" or 0.0.0.0: every address of the VM).
	APIHosts map[int]string
}

// KindNodes lists kind's node containers, with the ports publishing each
// control plane's API server read from its HostConfig (a container that
// never started has its bindings only there).
func (c *Client) KindNodes(ctx context.Context, clusterLabel, roleLabel string) ([]Node, error) {
	cs, err := c.ListLabeled(ctx, clusterLabel)
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, ct := range cs {
		nodes[i] = Node{Container: ct, Cluster: ct.Labels[clusterLabel], Role: ct.Labels[roleLabel]}
		if nodes[i].Role != "control-plane" {
			continue
		}
		wg.Go(func() {
			res, err := c.api.ContainerInspect(ctx, ct.ID, client.ContainerInspectOptions{})
			if errdefs.IsNotFound(err) {
				return // deleted since the list
			}
			if err != nil {
				errs[i] = fmt.Errorf("inspect %s: %w", ct.Name, err)
				return
			}
			if res.Container.HostConfig == nil {
				return
			}
			for port, bs := range res.Container.HostConfig.PortBindings {
				if port.Num() != 6443 || port.Proto() != network.TCP {
					continue
				}
				for _, b := range bs {
					if p, err := strconv.Atoi(b.HostPort); err == nil {
						nodes[i].APIPorts = append(nodes[i].APIPorts, p)
						if nodes[i].APIHosts == nil {
							nodes[i].APIHosts = map[int]string{}
						}
						if b.HostIP.IsValid() {
							nodes[i].APIHosts[p] = b.HostIP.String()
						}
					}
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return nodes, nil
}

// Named returns the container called name, running or not, or nil when
// there is none.
func (c *Client) Named(ctx context.Context, name string) (*Container, error) {
	res, err := c.api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect container %s: %w", name, err)
	}
	ct := res.Container
	out := &Container{ID: ct.ID, Name: strings.TrimPrefix(ct.Name, "/")}
	if ct.State != nil {
		out.State = string(ct.State.Status)
	}
	if ct.Config != nil {
		out.Image, out.Labels = ct.Config.Image, ct.Config.Labels
	}
	// A name Docker matched another way (an ID prefix) is not this one.
	if out.Name != name {
		return nil, nil
	}
	return out, nil
}
