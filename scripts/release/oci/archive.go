package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Save writes image ref as an OCI archive at dst (layers gzip-compressed, as registries
// expect) whose bytes depend only on the image: podman's archive is rewritten with its
// entries in a fixed order (oci-layout, index.json, then blobs by digest), every
// modification time set to mtime, owner root and modes 0644/0755.
func (p *Podman) Save(ctx context.Context, ref, dst string, mtime time.Time) error {
	dir, err := os.MkdirTemp(p.dir, "save-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "image.tar")
	if _, err := p.Run(ctx, "save", "--quiet", "--format", "oci-archive", "--output", tmp, ref); err != nil {
		return err
	}
	return normalize(tmp, dst, mtime)
}

type entry struct {
	name string
	dir  bool
	data []byte
}

// maxArchiveEntry bounds one blob read into memory (an image layer holds one static binary).
const maxArchiveEntry = 512 << 20

// eachEntry calls fn with every entry of the tar file at name, in order, and the reader of its
// contents; it stops at fn's first error.
func eachEntry(name string, fn func(h *tar.Header, r io.Reader) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}

func normalize(src, dst string, mtime time.Time) error {
	var entries []entry
	err := eachEntry(src, func(h *tar.Header, r io.Reader) error {
		name := strings.TrimSuffix(path.Clean(h.Name), "/")
		switch h.Typeflag {
		case tar.TypeDir:
			entries = append(entries, entry{name: name, dir: true})
		case tar.TypeReg:
			data, err := io.ReadAll(io.LimitReader(r, maxArchiveEntry+1))
			if err != nil {
				return err
			}
			if len(data) > maxArchiveEntry {
				return fmt.Errorf("%s: entry %s is larger than %d bytes", src, name, maxArchiveEntry)
			}
			entries = append(entries, entry{name: name, data: data})
		default:
			return fmt.Errorf("%s: entry %s has unexpected type %c", src, name, h.Typeflag)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rank := func(name string) int {
		switch name {
		case "oci-layout":
			return 0
		case "index.json":
			return 1
		}
		return 2
	}
	sort.Slice(entries, func(i, j int) bool {
		if ri, rj := rank(entries[i].name), rank(entries[j].name); ri != rj {
			return ri < rj
		}
		return entries[i].name < entries[j].name
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, ModTime: mtime.UTC().Truncate(time.Second), Format: tar.FormatUSTAR}
		if e.dir {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, e.name+"/", 0o755
		} else {
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// Image is what an OCI archive holds, as ReadArchive found it.
type Image struct {
	// Name is the reference the archive names its image by (podman load gives it that name).
	Name string
	// ManifestDigest is the digest a registry knows the image by: what a task definition
	// or `podman pull NAME@DIGEST` pins.
	ManifestDigest string
	// ConfigDigest is the image ID `podman images` shows once it is loaded.
	ConfigDigest string
	// OS and Architecture are the image's platform.
	OS, Architecture string
	// Created is the image's creation time.
	Created time.Time
	// User, Entrypoint, Cmd, WorkingDir, Env and Volumes are the image's run configuration.
	User       string
	Entrypoint []string
	Cmd        []string
	WorkingDir string
	Env        []string
	Volumes    []string
	// BaseName and BaseDigest are the base image the builder recorded (annotations
	// org.opencontainers.image.base.*).
	BaseName, BaseDigest string
	// LayerBytes is the compressed size of the layers: what a pull transfers.
	LayerBytes int64
	// Files are the regular files and directories of the image's file system, by absolute
	// path (the last layer that has a path wins).
	Files map[string]File
}

// File is one regular file or directory in an image.
type File struct {
	// Dir is true for a directory (SHA256 and Size are then empty).
	Dir      bool
	SHA256   string
	Size     int64
	Mode     int64
	UID, GID int
}

var (
	blobName   = regexp.MustCompile(`^blobs/sha256/([0-9a-f]{64})$`)
	digestForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

const (
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayerGz  = "application/vnd.oci.image.layer.v1.tar+gzip"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

// ReadArchive reads the OCI archive at path and checks it whole: only the OCI layout's
// entries, each once; every blob's SHA-256 equal to its name; one image manifest in
// index.json, with its config and layers present at their recorded sizes; every layer's
// uncompressed digest equal to the config's diff_id. It returns the image with the SHA-256
// of every regular file in it.
func ReadArchive(path string) (*Image, error) {
	blobs := map[string]int64{}  // digest hex → size
	small := map[string][]byte{} // blobs and files up to 1 MiB: index, manifest, config
	seen := map[string]bool{}
	err := eachEntry(path, func(h *tar.Header, r io.Reader) error {
		name := strings.TrimSuffix(h.Name, "/")
		if seen[name] {
			return fmt.Errorf("%s: entry %s appears twice", path, name)
		}
		seen[name] = true
		if h.Typeflag == tar.TypeDir {
			if name != "blobs" && name != "blobs/sha256" {
				return fmt.Errorf("%s: unexpected directory %s", path, name)
			}
			return nil
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("%s: entry %s is not a regular file", path, name)
		}
		hash := sha256.New()
		var head bytes.Buffer
		n, err := io.Copy(io.MultiWriter(hash, &limitedBuffer{buf: &head, max: 1 << 20}), r)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", path, name, err)
		}
		if n <= 1<<20 {
			small[name] = head.Bytes()
		}
		switch m := blobName.FindStringSubmatch(name); {
		case m != nil:
			if got := hex.EncodeToString(hash.Sum(nil)); got != m[1] {
				return fmt.Errorf("%s: blob %s has SHA-256 %s", path, m[1], got)
			}
			blobs[m[1]] = n
		case name == "oci-layout" || name == "index.json":
		default:
			return fmt.Errorf("%s: unexpected entry %s", path, name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var layout struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(small["oci-layout"], &layout); err != nil || layout.Version != "1.0.0" {
		return nil, fmt.Errorf("%s: oci-layout is not version 1.0.0", path)
	}
	var index struct {
		SchemaVersion int          `json:"schemaVersion"`
		Manifests     []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(small["index.json"], &index); err != nil {
		return nil, fmt.Errorf("%s: index.json: %v", path, err)
	}
	if index.SchemaVersion != 2 || len(index.Manifests) != 1 || index.Manifests[0].MediaType != mediaManifest {
		return nil, fmt.Errorf("%s: index.json must name exactly one OCI image manifest", path)
	}
	blob := func(d descriptor, what string) ([]byte, error) {
		if !digestForm.MatchString(d.Digest) {
			return nil, fmt.Errorf("%s: %s digest %q", path, what, d.Digest)
		}
		size, ok := blobs[d.Digest[7:]]
		if !ok {
			return nil, fmt.Errorf("%s: %s %s is missing", path, what, d.Digest)
		}
		if size != d.Size {
			return nil, fmt.Errorf("%s: %s %s has %d bytes, its descriptor says %d", path, what, d.Digest, size, d.Size)
		}
		return small["blobs/sha256/"+d.Digest[7:]], nil
	}
	img := &Image{Name: index.Manifests[0].Annotations["org.opencontainers.image.ref.name"], ManifestDigest: index.Manifests[0].Digest, Files: map[string]File{}}
	raw, err := blob(index.Manifests[0], "manifest")
	if err != nil {
		return nil, err
	}
	var manifest struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Config        descriptor        `json:"config"`
		Layers        []descriptor      `json:"layers"`
		Annotations   map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil || manifest.SchemaVersion != 2 || manifest.Config.MediaType != mediaConfig {
		return nil, fmt.Errorf("%s: the manifest is not an OCI image manifest", path)
	}
	img.BaseName, img.BaseDigest = manifest.Annotations["org.opencontainers.image.base.name"], manifest.Annotations["org.opencontainers.image.base.digest"]
	raw, err = blob(manifest.Config, "config")
	if err != nil {
		return nil, err
	}
	img.ConfigDigest = manifest.Config.Digest
	var config struct {
		Created      time.Time `json:"created"`
		OS           string    `json:"os"`
		Architecture string    `json:"architecture"`
		Config       struct {
			User       string              `json:"User"`
			Entrypoint []string            `json:"Entrypoint"`
			Cmd        []string            `json:"Cmd"`
			WorkingDir string              `json:"WorkingDir"`
			Env        []string            `json:"Env"`
			Volumes    map[string]struct{} `json:"Volumes"`
		} `json:"config"`
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, fmt.Errorf("%s: config: %v", path, err)
	}
	img.OS, img.Architecture, img.Created = config.OS, config.Architecture, config.Created
	img.User, img.Entrypoint, img.Cmd, img.WorkingDir, img.Env = config.Config.User, config.Config.Entrypoint, config.Config.Cmd, config.Config.WorkingDir, config.Config.Env
	for v := range config.Config.Volumes {
		img.Volumes = append(img.Volumes, v)
	}
	sort.Strings(img.Volumes)
	if len(config.RootFS.DiffIDs) != len(manifest.Layers) {
		return nil, fmt.Errorf("%s: %d layers but %d diff_ids", path, len(manifest.Layers), len(config.RootFS.DiffIDs))
	}
	for i, l := range manifest.Layers {
		if _, err := blob(l, "layer"); err != nil {
			return nil, err
		}
		if l.MediaType != mediaLayerGz && l.MediaType != mediaLayer {
			return nil, fmt.Errorf("%s: layer %s has media type %s", path, l.Digest, l.MediaType)
		}
		img.LayerBytes += l.Size
		diffID, err := readLayer(path, l, img.Files)
		if err != nil {
			return nil, err
		}
		if diffID != config.RootFS.DiffIDs[i] {
			return nil, fmt.Errorf("%s: layer %s unpacks to %s, the config says %s", path, l.Digest, diffID, config.RootFS.DiffIDs[i])
		}
	}
	return img, nil
}

// readLayer finds layer l in the archive again, unpacks it, records its regular files in
// files (a later layer's file replaces an earlier one's) and returns its uncompressed digest.
func readLayer(archive string, l descriptor, files map[string]File) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("%s: layer %s: %w", archive, l.Digest, err)
		}
		if h.Name != "blobs/sha256/"+l.Digest[7:] {
			continue
		}
		var r io.Reader = tr
		if l.MediaType == mediaLayerGz {
			zr, err := gzip.NewReader(tr)
			if err != nil {
				return "", fmt.Errorf("%s: layer %s: %w", archive, l.Digest, err)
			}
			defer zr.Close()
			r = zr
		}
		diff := sha256.New()
		lr := tar.NewReader(io.TeeReader(r, diff))
		for {
			fh, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return "", fmt.Errorf("%s: layer %s: %w", archive, l.Digest, err)
			}
			name := "/" + strings.TrimPrefix(path.Clean("/"+fh.Name), "/")
			if fh.Typeflag == tar.TypeDir {
				files[name] = File{Dir: true, Mode: fh.Mode, UID: fh.Uid, GID: fh.Gid}
				continue
			}
			if fh.Typeflag != tar.TypeReg {
				delete(files, name)
				continue
			}
			h := sha256.New()
			n, err := io.Copy(h, lr)
			if err != nil {
				return "", fmt.Errorf("%s: layer %s: %s: %w", archive, l.Digest, name, err)
			}
			files[name] = File{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n, Mode: fh.Mode, UID: fh.Uid, GID: fh.Gid}
		}
		// The tar reader stops at the end-of-archive marker; the diff ID covers the padding too.
		if _, err := io.Copy(diff, r); err != nil {
			return "", fmt.Errorf("%s: layer %s: %w", archive, l.Digest, err)
		}
		return "sha256:" + hex.EncodeToString(diff.Sum(nil)), nil
	}
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
