package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// ImageID is the id Docker holds ref under (with its containerd image
// store: the digest of the image's index or manifest), "" when Docker has
// no image by that name.
func (c *Client) ImageID(ctx context.Context, ref string) (string, error) {
	r, err := c.api.ImageInspect(ctx, ref)
	if errdefs.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return r.ID, nil
}

// ImageNames lists the names (repository:tag) of the images Docker holds,
// sorted.
func (c *Client) ImageNames(ctx context.Context) ([]string, error) {
	r, err := c.api.ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var out []string
	for _, s := range r.Items {
		for _, t := range s.RepoTags {
			if t != "<none>:<none>" && t != "" {
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// LoadArchive loads an image archive (docker save's, or an OCI layout's
// tar) into Docker and returns the names it loaded; an image without a
// name comes back as its id.
func (c *Client) LoadArchive(ctx context.Context, r io.Reader) ([]string, error) {
	resp, err := c.api.ImageLoad(ctx, r, client.ImageLoadWithQuiet(true))
	if err != nil {
		return nil, fmt.Errorf("load the archive into the VM's Docker: %w", err)
	}
	defer resp.Close()
	return loaded(resp)
}

// loaded reads an image load's message stream: one JSON object per line,
// whose stream says what was loaded and whose error says why not.
func loaded(r io.Reader) ([]string, error) {
	dec := json.NewDecoder(r)
	var names []string
	for {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read Docker's answer to the load: %w", err)
		}
		if m.Error != "" {
			return nil, fmt.Errorf("Docker could not load the archive: %s", strings.TrimSpace(m.Error))
		}
		for _, line := range strings.Split(m.Stream, "\n") {
			if n, ok := strings.CutPrefix(line, "Loaded image: "); ok {
				names = append(names, strings.TrimSpace(n))
			} else if id, ok := strings.CutPrefix(line, "Loaded image ID: "); ok {
				names = append(names, strings.TrimSpace(id))
			}
		}
	}
	if len(names) == 0 {
		return nil, errors.New("Docker loaded no image from the archive: is it a `docker save` archive or an OCI layout's tar?")
	}
	return names, nil
}
