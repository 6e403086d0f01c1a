package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Blob is one blob of an image: its config or a layer.
type Blob struct {
	Digest string
	Size   int64
}

// Client reads images through the mirrors, as the Mac reaches them: over
// the route, at a mirror container's address on the kind network, in
// plain HTTP. Whatever a mirror serves it keeps in its cache.
type Client struct{ puller *remote.Puller }

// NewClient reads the images of linux/arch (the VM's: the Mac's own
// architecture) through rt (nil: Go's default transport).
func NewClient(arch string, rt http.RoundTripper) (*Client, error) {
	platform := v1.Platform{OS: "linux", Architecture: arch}
	opts := []remote.Option{remote.WithPlatform(platform)}
	if rt != nil {
		opts = append(opts, remote.WithTransport(rt))
	}
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	return &Client{puller: p}, nil
}

// ref is p's name in the mirror at addr.
func ref(addr string, p Pull) (name.Reference, error) {
	sep := ":"
	if sha256Digest.MatchString(p.Ref) {
		sep = "@"
	}
	r, err := name.ParseReference(addr+"/"+p.Repo+sep+p.Ref, name.Insecure, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Image, err)
	}
	return r, nil
}

// Blobs fetches p's manifest through the mirror at addr (for a
// multi-platform index, the index and the image of the client's platform)
// and lists the image's blobs: its config, then its layers.
func (c *Client) Blobs(ctx context.Context, addr string, p Pull) ([]Blob, error) {
	r, err := ref(addr, p)
	if err != nil {
		return nil, err
	}
	desc, err := c.puller.Get(ctx, r)
	if err != nil {
		return nil, err
	}
	img, err := desc.Image() // of the client's platform, for an index
	if err != nil {
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	out := []Blob{{Digest: m.Config.Digest.String(), Size: m.Config.Size}}
	for _, l := range m.Layers {
		out = append(out, Blob{Digest: l.Digest.String(), Size: l.Size})
	}
	return out, nil
}

// Fetch reads blob b of p's repository through the mirror at addr to its
// end, checking its digest as it goes: the mirror keeps it.
func (c *Client) Fetch(ctx context.Context, addr string, p Pull, b Blob) error {
	r, err := ref(addr, p)
	if err != nil {
		return err
	}
	d := r.Context().Digest(b.Digest)
	l, err := c.puller.Layer(ctx, d)
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return fmt.Errorf("blob %s: %w", b.Digest, err)
	}
	return nil
}
