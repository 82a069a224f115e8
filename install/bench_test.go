package install

import (
	"archive/tar"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mholt/archives"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// benchBinary prefers the static build: it is what users download.
func benchBinary(b *testing.B) (realBinary, string) {
	for _, name := range []string{filepath.Join(livetest.CachedBwraps(), "bwrap-0.12.0"), systemBwrap} {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		features, err := sandbox.Probe(context.Background(), name)
		if err != nil {
			continue
		}
		return realBinary{data: data, version: features.Version}, name
	}
	b.Skip("no real bwrap to install")
	return realBinary{}, ""
}

// BenchmarkInstallArtifact installs the real artifact, tar.gz over loopback, into a fresh
// home each time: download, extraction, verification, probe and placement.
func BenchmarkInstallArtifact(b *testing.B) {
	bwrap, name := benchBinary(b)
	b.Logf("artifact: %s (%d bytes)", name, len(bwrap.data))
	archive := filepath.Join(b.TempDir(), "bwrap.tar.gz")
	if err := os.WriteFile(archive, buildArchive(b, "tar.gz", entry{name: "bwrap", data: bwrap.data}), 0o644); err != nil {
		b.Fatal(err)
	}
	benchInstall(b, bwrap.artifact(Source{URL: serveFile(b, archive), Member: "bwrap"}))
}

// BenchmarkInstallLarge installs from a 100 MB tar.gz of incompressible filler whose
// member comes last: the whole stream passes through, and memory must stay flat.
func BenchmarkInstallLarge(b *testing.B) {
	bwrap, _ := benchBinary(b)
	archive := filepath.Join(b.TempDir(), "large.tar.gz")
	writeLargeArchive(b, archive, 100<<20, bwrap.data)
	info, _ := os.Stat(archive)
	b.Logf("archive: %d bytes", info.Size())
	benchInstall(b, bwrap.artifact(Source{URL: serveFile(b, archive), Member: "bwrap"}))
}

func benchInstall(b *testing.B, artifact Artifact) {
	homes := b.TempDir()
	ctx := context.Background()
	started := time.Now()
	installs := 0
	for b.Loop() {
		home, err := os.MkdirTemp(homes, "home")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Install(ctx, Options{Home: home, Artifact: artifact, Method: Pinned}); err != nil {
			b.Fatal(err)
		}
		installs++
	}
	b.ReportMetric(float64(time.Since(started).Milliseconds())/float64(installs), "wall-ms/op")
	b.ReportMetric(peakRSS(b, artifact), "peak-RSS-MB")
}

// peakRSS runs one install in a child process and returns its peak resident set: the
// benchmark process's own RSS carries the test framework and earlier iterations.
func peakRSS(b *testing.B, artifact Artifact) float64 {
	cmd := helperCommand(b, helperRequest{Home: filepath.Join(b.TempDir(), "home"), Artifact: artifact, StallLimit: DefaultStallLimit, Timeout: 5 * time.Minute})
	if output, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("helper install: %v: %s", err, output)
	}
	usage := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return float64(usage.Maxrss) / 1024 // Linux reports kilobytes
}

func serveFile(b *testing.B, name string) string {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, name)
	}))
	b.Cleanup(server.Close)
	return server.URL + "/" + filepath.Base(name)
}

// writeLargeArchive writes a tar.gz of random filler files totalling size bytes, then
// the member. Random bytes do not compress, so the archive is about size bytes too.
func writeLargeArchive(b *testing.B, name string, size int64, member []byte) {
	file, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	compressed, err := archives.Gz{CompressionLevel: 1}.OpenWriter(file)
	if err != nil {
		b.Fatal(err)
	}
	writer := tar.NewWriter(compressed)
	random := rand.NewChaCha8([32]byte{}) // seeded: the same archive every run
	const fillerSize = 4 << 20
	for i := int64(0); i*fillerSize < size; i++ {
		header := &tar.Header{Name: "filler/" + strconv.FormatInt(i, 10), Mode: 0o644, Size: fillerSize, Typeflag: tar.TypeReg}
		if err := writer.WriteHeader(header); err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyN(writer, random, fillerSize); err != nil {
			b.Fatal(err)
		}
	}
	if err := writer.WriteHeader(&tar.Header{Name: "bwrap", Mode: 0o755, Size: int64(len(member)), Typeflag: tar.TypeReg}); err != nil {
		b.Fatal(err)
	}
	if _, err := writer.Write(member); err != nil {
		b.Fatal(err)
	}
	if err := writer.Close(); err != nil {
		b.Fatal(err)
	}
	if err := compressed.Close(); err != nil {
		b.Fatal(err)
	}
}
