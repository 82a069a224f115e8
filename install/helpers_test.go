package install

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"

	"github.com/mholt/archives"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

// systemBwrap is the real bwrap the live tests install: Debian's bubblewrap package.
const systemBwrap = "/usr/bin/bwrap"

// realBinary is a real, runnable bwrap and its pin.
type realBinary struct {
	data    []byte
	version string
}

// loadBwrap reads the real bwrap, skipping (or failing under BWRAPKIT_TEST_REQUIRE_LIVE=1)
// when the host has none.
func loadBwrap(t testing.TB) realBinary {
	t.Helper()
	data, err := os.ReadFile(systemBwrap)
	if err != nil {
		livetest.Skip(t, "no real bwrap to install: "+err.Error())
	}
	features, err := sandbox.Probe(context.Background(), systemBwrap)
	if err != nil {
		livetest.Skip(t, "the real bwrap does not run: "+err.Error())
	}
	return realBinary{data: data, version: features.Version}
}

// variant is the same program with trailing bytes: the loader ignores them, so it runs,
// but it has another hash, standing for another release.
func (b realBinary) variant() realBinary {
	return realBinary{data: append(bytes.Clone(b.data), []byte("bwrapkit-test-variant\x00")...), version: b.version}
}

func (b realBinary) artifact(sources ...Source) Artifact {
	sum := sha256.Sum256(b.data)
	return Artifact{Version: b.version, Arch: "amd64", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b.data)), Sources: sources}
}

func requireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to %s", why)
	}
}

// entry is one archive member as the test wants it, hostile names and types included.
type entry struct {
	name     string
	data     []byte
	typeflag byte // tar.TypeReg when zero
	link     string
}

// buildArchive writes entries in format: tar, tar.gz, tar.xz, tar.zst, zip, or raw (the
// first entry's bytes alone).
func buildArchive(t testing.TB, format string, entries ...entry) []byte {
	t.Helper()
	var out bytes.Buffer
	switch format {
	case "raw":
		return entries[0].data
	case "zip":
		writeZip(t, &out, entries)
		return out.Bytes()
	}
	var compressed io.WriteCloser = nopCloser{&out}
	compressions := map[string]archives.Compressor{"tar.gz": archives.Gz{}, "tar.xz": archives.Xz{}, "tar.zst": archives.Zstd{}}
	if compression, ok := compressions[format]; ok {
		var err error
		if compressed, err = compression.OpenWriter(&out); err != nil {
			t.Fatal(err)
		}
	} else if format != "tar" {
		t.Fatalf("unknown format %q", format)
	}
	writeTar(t, compressed, entries)
	if err := compressed.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func writeTar(t testing.TB, out io.Writer, entries []entry) {
	t.Helper()
	writer := tar.NewWriter(out)
	for _, e := range entries {
		header := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.link, Mode: 0o755, ModTime: time.Unix(0, 0)}
		switch e.typeflag {
		case 0, tar.TypeReg:
			header.Typeflag = tar.TypeReg
			header.Size = int64(len(e.data))
		}
		if err := writer.WriteHeader(header); err != nil {
			t.Fatal(err)
		}
		if _, err := writer.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeZip(t testing.TB, out io.Writer, entries []entry) {
	t.Helper()
	writer := zip.NewWriter(out)
	for _, e := range entries {
		header := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		data := e.data
		switch e.typeflag {
		case tar.TypeSymlink:
			header.SetMode(fs.ModeSymlink | 0o777)
			data = []byte(e.link)
		case tar.TypeDir:
			header.Name = strings.TrimSuffix(e.name, "/") + "/"
			header.SetMode(fs.ModeDir | 0o755)
		default:
			header.SetMode(0o755)
		}
		member, err := writer.CreateHeader(header)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := member.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
}

// serveBytes serves data at /name on a loopback server.
func serveBytes(t testing.TB, name string, data []byte) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+name {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, name, time.Unix(0, 0), bytes.NewReader(data))
	}))
	t.Cleanup(server.Close)
	return server.URL + "/" + name
}

// writeFile puts data in a fresh directory and returns its path.
func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// testOptions installs into home with a short stall limit, as every test wants.
func testOptions(home string, artifact Artifact) Options {
	return Options{Home: home, Artifact: artifact, Method: Pinned, StallLimit: 5 * time.Second}
}

func mustInstall(t testing.TB, opts Options) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	result, err := Install(ctx, opts)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	return result
}

// snapshot describes every entry under dir: type, size and hash or link target. Times
// are left out: only content and layout count as state.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			tree[rel] = "link " + target
		case d.IsDir():
			tree[rel] = "dir " + info.Mode().String()
		default:
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			tree[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:8])
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return tree
}

// assertUnchanged fails when the home differs from before or holds a temp file.
func assertUnchanged(t testing.TB, home string, before map[string]string) {
	t.Helper()
	after := snapshot(t, home)
	if diff := diffTrees(before, after); diff != "" {
		t.Errorf("home changed by a failed install:\n%s", diff)
	}
	assertNoTemp(t, home)
}

func assertNoTemp(t testing.TB, home string) {
	t.Helper()
	for path := range snapshot(t, home) {
		base := filepath.Base(path)
		if strings.HasPrefix(base, tempPrefix) || strings.HasPrefix(base, spoolPrefix) || strings.HasPrefix(base, linkTempPrefix) {
			t.Errorf("temp file left behind: %s", path)
		}
	}
}

func diffTrees(before, after map[string]string) string {
	var lines []string
	for path, was := range before {
		if now, ok := after[path]; !ok {
			lines = append(lines, "- "+path+" "+was)
		} else if now != was {
			lines = append(lines, "~ "+path+" "+was+" -> "+now)
		}
	}
	for path, now := range after {
		if _, ok := before[path]; !ok {
			lines = append(lines, "+ "+path+" "+now)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// assertActive checks that bin/bwrap is a link into versions/ whose file has the pin.
func assertActive(t testing.TB, home string, artifact Artifact) {
	t.Helper()
	target, err := os.Readlink(filepath.Join(home, "bin", "bwrap"))
	if err != nil {
		t.Fatalf("bin/bwrap: %v", err)
	}
	if want := filepath.Join("..", "versions", artifact.ID(), "bwrap"); target != want {
		t.Fatalf("bin/bwrap -> %s, want %s", target, want)
	}
	sum, size, err := hashFile(filepath.Join(home, "bin", target))
	if err != nil || sum != artifact.SHA256 || size != artifact.Size {
		t.Fatalf("active bwrap: sha256 %s size %d err %v; want %s %d", sum, size, err, artifact.SHA256, artifact.Size)
	}
	info, err := os.Stat(filepath.Join(home, "bin", "bwrap"))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("active bwrap mode: %v %v", info, err)
	}
}

// installedHome is a home with a previous install of prior in it, the state a failing
// install must leave untouched.
func installedHome(t testing.TB, prior realBinary) (string, map[string]string) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	artifact := prior.artifact(Source{URL: writeFile(t, "bwrap", prior.data)})
	mustInstall(t, testOptions(home, artifact))
	return home, snapshot(t, home)
}

func mustJSON(t testing.TB, value any) string {
	t.Helper()
	data, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
