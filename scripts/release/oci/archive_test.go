package oci

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

type member struct {
	name string
	data []byte
	mod  time.Time
}

// writeTar writes members in the given order, directories for names ending in "/".
func writeTar(t *testing.T, path string, members []member) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Mode: 0o600, Size: int64(len(m.data)), ModTime: m.mod, Typeflag: tar.TypeReg, Uid: 1000}
		if strings.HasSuffix(m.name, "/") {
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o700
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(m.data)
	}
	tw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// image returns the members of a one-layer image holding /usr/local/bin/app and /data, in
// the order podman writes them (blobs first).
func image(t *testing.T, app []byte, mod time.Time) []member {
	t.Helper()
	return imageWith(t, app, mod, "")
}

// imageWith is image with the config's diff_id replaced when diffID is set.
func imageWith(t *testing.T, app []byte, mod time.Time, diffID string) []member {
	t.Helper()
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	lw.WriteHeader(&tar.Header{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: 65532, Gid: 65532})
	lw.WriteHeader(&tar.Header{Name: "usr/local/bin/app", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(app))})
	lw.Write(app)
	lw.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(layer.Bytes())
	zw.Close()
	config, _ := json.Marshal(map[string]any{"created": "2026-01-02T03:04:05Z", "os": "linux", "architecture": "arm64",
		"config": map[string]any{"User": "65532:65532", "Entrypoint": []string{"/usr/local/bin/app"}, "Volumes": map[string]any{"/data": map[string]any{}}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{cmp.Or(diffID, digest(layer.Bytes()))}}})
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaManifest,
		"config": map[string]any{"mediaType": mediaConfig, "digest": digest(config), "size": len(config)},
		"layers": []any{map[string]any{"mediaType": mediaLayerGz, "digest": digest(gz.Bytes()), "size": gz.Len()}}})
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{map[string]any{"mediaType": mediaManifest,
		"digest": digest(manifest), "size": len(manifest), "annotations": map[string]string{"org.opencontainers.image.ref.name": "localhost/app:1"}}}})
	blob := func(b []byte) member { return member{name: "blobs/sha256/" + digest(b)[7:], data: b, mod: mod} }
	return []member{{name: "blobs/", mod: mod}, {name: "blobs/sha256/", mod: mod}, blob(gz.Bytes()), blob(config), blob(manifest),
		{name: "index.json", data: index, mod: mod}, {name: "oci-layout", data: []byte(`{"imageLayoutVersion": "1.0.0"}`), mod: mod}}
}

// TestNormalizeIsReproducible: two archives of the same image that differ in entry order,
// modification times, owners and modes normalize to the same bytes, which ReadArchive
// accepts.
func TestNormalizeIsReproducible(t *testing.T) {
	dir := t.TempDir()
	app := []byte("#!binary\n")
	a, b := image(t, app, time.Unix(1, 0)), image(t, app, time.Now())
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	writeTar(t, filepath.Join(dir, "a.tar"), a)
	writeTar(t, filepath.Join(dir, "b.tar"), b)
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, n := range []string{"a", "b"} {
		if err := normalize(filepath.Join(dir, n+".tar"), filepath.Join(dir, n+".oci.tar"), created); err != nil {
			t.Fatal(err)
		}
	}
	x, _ := os.ReadFile(filepath.Join(dir, "a.oci.tar"))
	y, _ := os.ReadFile(filepath.Join(dir, "b.oci.tar"))
	if !bytes.Equal(x, y) {
		t.Fatal("the same image normalized to different bytes")
	}
	img, err := ReadArchive(filepath.Join(dir, "a.oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(app)
	if got := img.Files["/usr/local/bin/app"]; got.SHA256 != hex.EncodeToString(sum[:]) || got.Mode != 0o755 {
		t.Errorf("/usr/local/bin/app = %+v", got)
	}
	if got := img.Files["/data"]; !got.Dir || got.UID != 65532 {
		t.Errorf("/data = %+v, want a directory of uid 65532", got)
	}
	if img.Name != "localhost/app:1" || img.Architecture != "arm64" || img.User != "65532:65532" || fmt.Sprint(img.Volumes) != "[/data]" {
		t.Errorf("image %+v", img)
	}
	tr := tar.NewReader(bytes.NewReader(x))
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(created) || h.Uid != 0 || (h.Mode != 0o644 && h.Mode != 0o755) {
			t.Errorf("%s: mtime %v uid %d mode %o", h.Name, h.ModTime, h.Uid, h.Mode)
		}
	}
	if names[0] != "oci-layout" || names[1] != "index.json" {
		t.Errorf("entry order %v: oci-layout and index.json first", names)
	}
}

// TestReadArchiveRefuses: every kind of damage ReadArchive must catch, each on an
// otherwise valid archive.
func TestReadArchiveRefuses(t *testing.T) {
	mod := time.Unix(0, 0)
	tests := []struct {
		name   string
		damage func([]member) []member
		want   string
	}{
		{"a byte of the layer changed", func(ms []member) []member {
			ms[2].data = bytes.Clone(ms[2].data)
			ms[2].data[len(ms[2].data)/2] ^= 1
			return ms
		}, "has SHA-256"},
		{"the config missing", func(ms []member) []member { return append(ms[:3:3], ms[4:]...) }, "is missing"},
		{"an extra entry", func(ms []member) []member { return append(ms, member{name: "extra", data: []byte("x"), mod: mod}) }, "unexpected entry"},
		{"an entry twice", func(ms []member) []member { return append(ms, ms[len(ms)-1]) }, "appears twice"},
		{"two manifests", func(ms []member) []member {
			var idx map[string]any
			json.Unmarshal(ms[5].data, &idx)
			m := idx["manifests"].([]any)
			idx["manifests"] = append(m, m[0])
			ms[5].data, _ = json.Marshal(idx)
			return ms
		}, "exactly one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.tar")
			writeTar(t, path, tc.damage(image(t, []byte("app"), mod)))
			if _, err := ReadArchive(path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadArchive: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Every blob intact, but the layer is not the one the config names.
	path := filepath.Join(t.TempDir(), "diffid.tar")
	writeTar(t, path, imageWith(t, []byte("app"), mod, digest([]byte("another layer"))))
	if _, err := ReadArchive(path); err == nil || !strings.Contains(err.Error(), "unpacks to") {
		t.Errorf("ReadArchive of a layer that is not the config's: %v", err)
	}
}
