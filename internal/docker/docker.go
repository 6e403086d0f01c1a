// Package docker talks to the VM's Docker Engine through its API, over the
// socket Lima forwards to the Mac.
package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/client"
)

// Client is an Engine API client bound to one forwarded socket.
type Client struct {
	api  *client.Client
	Sock string
}

// Dial prepares a client for the unix socket at sock; it does not connect.
func Dial(sock string) (*Client, error) {
	api, err := client.New(client.WithHost("unix://" + sock))
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", sock, err)
	}
	return &Client{api: api, Sock: sock}, nil
}

// Close releases the client's connections.
func (c *Client) Close() error { return c.api.Close() }

// Version returns the daemon's version, failing fast when it is not there.
func (c *Client) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := c.api.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", fmt.Errorf("docker on %s: %w", c.Sock, err)
	}
	return v.Version, nil
}

// WaitReady polls the daemon until it answers or timeout passes, and
// returns its version. The error carries the last failure seen.
func (c *Client) WaitReady(ctx context.Context, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		v, err := c.Version(ctx)
		if err == nil {
			return v, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("Docker did not answer on %s within %s: %w", c.Sock, timeout, last)
		case <-tick.C:
		}
	}
}
