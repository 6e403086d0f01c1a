//go:build linux

package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// epoch is every timestamp in the image: the same root file system gives
// the same image, and so the same digest, on every run.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// packImage writes a root file system as an image archive that `docker
// load` and `ctr images import` read (an OCI layout, with the manifest.json
// docker save adds): pack-image -rootfs DIR -name REPO:TAG -out FILE
// [-base DIR] [-config JSON]. The image has one layer, DIR, or two with
// -base: the base folder's, then DIR's, so that images on one base share
// its layer wherever they are stored. -config replaces the image's run
// configuration (entrypoint, command, environment, labels…), which is the
// kind node's by default.
func packImage(args []string) error {
	fs := flag.NewFlagSet("pack-image", flag.ContinueOnError)
	rootfs := fs.String("rootfs", "", "root file system folder")
	name := fs.String("name", "", "image name (repo:tag)")
	out := fs.String("out", "", "archive to write")
	base := fs.String("base", "", "a base root file system folder, the image's first layer")
	runConfig := fs.String("config", "", "the image's run configuration, as JSON (default: the kind node's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rootfs == "" || *name == "" || *out == "" {
		return errors.New("usage: pack-image -rootfs DIR -name REPO:TAG -out FILE [-base DIR] [-config JSON]")
	}
	var layers [][]byte
	var diffIDs []string
	for _, dir := range []string{*base, *rootfs} {
		if dir == "" {
			continue
		}
		var layer bytes.Buffer
		if err := tarFolder(&layer, dir); err != nil {
			return err
		}
		layers = append(layers, layer.Bytes())
		diffIDs = append(diffIDs, sha(layer.Bytes()))
	}

	var run any = map[string]any{
		"Entrypoint": []string{"/usr/local/bin/entrypoint"},
		"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "container=docker"},
		"StopSignal": "SIGRTMIN+3",
		"Labels": map[string]string{
			"org.opencontainers.image.description": "marina lab stand-in for kindest/node (lab/node)",
			"marina-lab.image":                     "kind-node",
		},
	}
	if *runConfig != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(*runConfig), &m); err != nil {
			return fmt.Errorf("-config: %w", err)
		}
		run = m
	}
	cfg, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config":       run,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
		"history":      []map[string]string{{"created": epoch.Format(time.RFC3339), "created_by": "lab/node/pack"}},
	})
	if err != nil {
		return err
	}
	cfgDigest := sha(cfg)
	var descs []map[string]any
	for i, l := range layers {
		descs = append(descs, map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": diffIDs[i], "size": len(l)})
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfgDigest, "size": len(cfg)},
		"layers":        descs,
	})
	if err != nil {
		return err
	}
	manifestDigest := sha(manifest)
	repo, tag, _ := strings.Cut(*name, ":")
	// The name as containerd keeps it: docker.io/library/ for an
	// official image, docker.io/ for another on Docker Hub.
	full := *name
	switch first := strings.Split(repo, "/")[0]; {
	case !strings.Contains(repo, "/"):
		full = "docker.io/library/" + *name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		full = "docker.io/" + *name
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []map[string]any{{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifestDigest, "size": len(manifest),
			"annotations": map[string]string{"io.containerd.image.name": full, "org.opencontainers.image.ref.name": tag},
		}},
	})
	if err != nil {
		return err
	}
	blob := func(d string) string { return "blobs/sha256/" + strings.TrimPrefix(d, "sha256:") }
	var layerFiles []string
	for _, d := range diffIDs {
		layerFiles = append(layerFiles, blob(d))
	}
	dockerManifest, err := json.Marshal([]map[string]any{{
		"Config": blob(cfgDigest), "RepoTags": []string{*name}, "Layers": layerFiles,
	}})
	if err != nil {
		return err
	}

	f, err := os.Create(*out + ".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(*out + ".tmp")
	tw := tar.NewWriter(f)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: epoch})
	}
	file := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	steps := []func() error{
		func() error { return dir("blobs/") },
		func() error { return dir("blobs/sha256/") },
		func() error { return file(blob(cfgDigest), cfg) },
	}
	for i := range layers {
		steps = append(steps, func() error { return file(blob(diffIDs[i]), layers[i]) })
	}
	for _, step := range append(steps,
		func() error { return file(blob(manifestDigest), manifest) },
		func() error { return file("index.json", index) },
		func() error { return file("manifest.json", dockerManifest) },
		func() error { return file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)) },
		tw.Close,
		f.Close,
	) {
		if err := step(); err != nil {
			f.Close()
			return err
		}
	}
	if err := os.Rename(*out+".tmp", *out); err != nil {
		return err
	}
	size := 0
	for _, l := range layers {
		size += len(l)
	}
	fmt.Printf("%s %s (%d MB in %d layers)\n", *name, manifestDigest, size>>20, len(layers))
	return nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// tarFolder writes root's tree as a layer: sorted, owned by root, every
// time set to epoch.
func tarFolder(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.ModTime, h.AccessTime, h.ChangeTime = epoch, time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		h.PAXRecords = nil
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
