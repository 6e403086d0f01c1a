//go:build linux

package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// pushImage uploads an image archive that pack-image wrote to a registry
// over plain HTTP, by the distribution API (blobs, then the manifest):
// push-image -archive FILE -registry HOST:PORT -name REPO:TAG. The lab
// fills its stand-in upstream registry this way before any VM runs, with a
// registry binary on this machine's loopback.
func pushImage(args []string) error {
	fs := flag.NewFlagSet("push-image", flag.ContinueOnError)
	archive := fs.String("archive", "", "image archive (pack-image's)")
	registry := fs.String("registry", "", "registry host:port (plain HTTP)")
	name := fs.String("name", "", "repository:tag to push as")
	if err := fs.Parse(args); err != nil {
		return err
	}
	repo, tag, ok := strings.Cut(*name, ":")
	if *archive == "" || *registry == "" || !ok || repo == "" || tag == "" {
		return errors.New("usage: push-image -archive FILE -registry HOST:PORT -name REPO:TAG")
	}
	files, err := readArchive(*archive)
	if err != nil {
		return err
	}
	var index struct {
		Manifests []struct {
			Digest    string `json:"digest"`
			MediaType string `json:"mediaType"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		return fmt.Errorf("%s: index.json does not name one manifest", *archive)
	}
	m := index.Manifests[0]
	manifest, ok := files[blobPath(m.Digest)]
	if !ok {
		return fmt.Errorf("%s: manifest %s missing", *archive, m.Digest)
	}
	var parts struct {
		Config struct{ Digest string }   `json:"config"`
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal(manifest, &parts); err != nil {
		return fmt.Errorf("%s: manifest: %w", *archive, err)
	}
	base := "http://" + *registry + "/v2/" + repo
	digests := []string{parts.Config.Digest}
	for _, l := range parts.Layers {
		digests = append(digests, l.Digest)
	}
	for _, d := range digests {
		b, ok := files[blobPath(d)]
		if !ok {
			return fmt.Errorf("%s: blob %s missing", *archive, d)
		}
		if err := pushBlob(base, d, b); err != nil {
			return err
		}
	}
	return put(base+"/manifests/"+tag, m.MediaType, manifest)
}

func blobPath(digest string) string {
	return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:")
}

// readArchive reads every regular file of a (small enough) tar archive.
func readArchive(file string) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out[strings.TrimPrefix(h.Name, "./")] = b
	}
}

// pushBlob uploads one blob unless the registry has it (a monolithic
// upload: POST for a session, PUT with the digest).
func pushBlob(base, digest string, b []byte) error {
	resp, err := http.Head(base + "/blobs/" + digest)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	resp, err = http.Post(base+"/blobs/uploads/", "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusAccepted || loc == "" {
		return fmt.Errorf("starting the upload of %s: %s", digest, resp.Status)
	}
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	target, err := u.Parse(loc)
	if err != nil {
		return err
	}
	q := target.Query()
	q.Set("digest", digest)
	target.RawQuery = q.Encode()
	return put(target.String(), "application/octet-stream", b)
}

func put(u, ctype string, b []byte) error {
	req, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("PUT %s: %s %s", u, resp.Status, msg)
	}
	return nil
}
