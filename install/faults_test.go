package install

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Every fault test starts from a home holding a previous install and checks, after the
// failure, that the home is exactly as it was and holds no temp file.

// faultCase runs an install of the variant pin from sources that are expected to fail.
func faultInstall(t *testing.T, opts func(*Options), sources ...Source) (error, string, map[string]string) {
	t.Helper()
	bwrap := loadBwrap(t)
	home, before := installedHome(t, bwrap)
	options := testOptions(home, bwrap.variant().artifact(sources...))
	if opts != nil {
		opts(&options)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Install(ctx, options)
	if err == nil {
		t.Fatal("install succeeded, want a failure")
	}
	assertUnchanged(t, home, before)
	return err, home, before
}

func assertFetchError(t *testing.T, err error, unreachable bool, wants ...string) {
	t.Helper()
	var fetchErr *FetchError
	if !errors.As(err, &fetchErr) {
		t.Fatalf("error %v (%T) is not a *FetchError", err, err)
	}
	if fetchErr.Unreachable() != unreachable {
		t.Errorf("Unreachable() = %v, want %v: %v", fetchErr.Unreachable(), unreachable, err)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestFaultWrongPin(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	var laterRequests atomic.Int64
	later := countingServerAtomic(t, bwrap.variant().data, &laterRequests)
	// The first source serves the real bwrap, not the pinned variant.
	err, _, _ := faultInstall(t, nil,
		Source{URL: serveBytes(t, "bwrap.tar.gz", buildArchive(t, "tar.gz", entry{name: "bwrap", data: bwrap.data})), Member: "bwrap"},
		Source{URL: later})
	assertFetchError(t, err, false, "pin mismatch", "an attack or a bad manifest")
	if laterRequests.Load() != 0 {
		t.Error("after a pin mismatch another source was tried")
	}
}

func TestFaultTruncatedBody(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	data := bwrap.variant().data
	url := hijackServer(t, func(conn net.Conn, _ *bufio.ReadWriter) {
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(data))
		conn.Write(data[:len(data)/2])
		conn.Close()
	})
	err, _, _ := faultInstall(t, nil, Source{URL: url})
	assertFetchError(t, err, true, url, "transfer broke off", "unexpected EOF")
}

func TestFaultConnectionReset(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	archive := buildArchive(t, "tar.gz", entry{name: "bwrap", data: bwrap.variant().data})
	url := hijackServer(t, func(conn net.Conn, _ *bufio.ReadWriter) {
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(archive))
		conn.Write(archive[:len(archive)/3])
		time.Sleep(50 * time.Millisecond)
		// Linger 0 makes close send RST instead of FIN: the client sees a reset.
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	err, _, _ := faultInstall(t, nil, Source{URL: url, Member: "bwrap"})
	assertFetchError(t, err, true, url, "connection reset by peer")
}

func TestFaultServerNeverAnswers(t *testing.T) {
	t.Parallel()
	url := silentServer(t)
	t.Run("stall limit", func(t *testing.T) {
		t.Parallel()
		started := time.Now()
		err, _, _ := faultInstall(t, func(o *Options) { o.StallLimit = 300 * time.Millisecond }, Source{URL: url})
		assertFetchError(t, err, true, url, "stalled", "no bytes for 300ms")
		if elapsed := time.Since(started); elapsed > 20*time.Second {
			t.Errorf("a stalled download took %s", elapsed)
		}
	})
	t.Run("overall timeout", func(t *testing.T) {
		t.Parallel()
		bwrap := loadBwrap(t)
		home, before := installedHome(t, bwrap)
		options := testOptions(home, bwrap.variant().artifact(Source{URL: url}))
		options.StallLimit = time.Hour
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		defer cancel()
		started := time.Now()
		_, err := Install(ctx, options)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), url) {
			t.Fatalf("install against a silent server: %v, want the deadline and the URL", err)
		}
		if elapsed := time.Since(started); elapsed > 5*time.Second {
			t.Errorf("the deadline was overrun: %s", elapsed)
		}
		var fetchErr *FetchError
		if errors.As(err, &fetchErr) {
			t.Error("a deadline must not look like unreachable sources (auto would fall back)")
		}
		assertUnchanged(t, home, before)
	})
}

func TestFaultNotFoundThenNextSource(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	next := bwrap.variant()
	missing := strings.Replace(serveBytes(t, "present", []byte("x")), "/present", "/absent", 1)
	good := serveBytes(t, "bwrap.tar.zst", buildArchive(t, "tar.zst", entry{name: "bwrap", data: next.data}))
	home, _ := installedHome(t, bwrap)
	artifact := next.artifact(Source{URL: missing}, Source{URL: "file:///nonexistent/bwrap"}, Source{URL: good, Member: "bwrap"})
	var notes recordedNotes
	options := testOptions(home, artifact)
	options.Progress = &notes
	mustInstall(t, options)
	assertActive(t, home, artifact)
	assertNoTemp(t, home)
	if !notes.contains("404 Not Found") || !notes.contains("no such file") {
		t.Errorf("the skipped sources were not reported: %q", notes.lines)
	}

	// All unreachable: every failure is in the error, and auto may fall back.
	err, _, _ := faultInstall(t, nil, Source{URL: missing}, Source{URL: "http://127.0.0.1:1/bwrap"})
	assertFetchError(t, err, true, "404 Not Found", "connection refused")
}

func TestFaultBadMembers(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	data := bwrap.variant().data
	for _, tc := range []struct {
		name    string
		format  string
		entries []entry
		want    string
	}{
		{"missing", "tar.gz", []entry{{name: "README", data: []byte("no binary here")}, {name: "bin/bwrap", data: data}}, `no member "bwrap"`},
		{"symlink", "tar.gz", []entry{{name: "bwrap", typeflag: tar.TypeSymlink, link: "/etc/shadow"}}, "symbolic link"},
		{"symlink zip", "zip", []entry{{name: "bwrap", typeflag: tar.TypeSymlink, link: "/etc/shadow"}}, "is a link"},
		{"hardlink", "tar.xz", []entry{{name: "other", data: data}, {name: "bwrap", typeflag: tar.TypeLink, link: "other"}}, "hard link"},
		{"directory", "tar.zst", []entry{{name: "bwrap/", typeflag: tar.TypeDir}, {name: "bwrap/bwrap", data: data}}, "is a directory"},
		{"directory zip", "zip", []entry{{name: "bwrap", typeflag: tar.TypeDir}}, "is a directory"},
		{"fifo", "tar", []entry{{name: "bwrap", typeflag: tar.TypeFifo}}, "not a regular file"},
		{"not an archive", "raw", []entry{{data: []byte("<html>mirror error page</html>")}}, "not a tar, tar.gz"},
		{"gzip of garbage", "raw", []entry{{data: append([]byte{0x1f, 0x8b, 0x08}, make([]byte, 64)...)}}, "reading archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := serveBytes(t, "bwrap.archive", buildArchive(t, tc.format, tc.entries...))
			err, _, _ := faultInstall(t, nil, Source{URL: url, Member: "bwrap"})
			assertFetchError(t, err, false, tc.want)
		})
	}
}

// TestFaultTraversalNames: entries named to escape are only ever compared, never used as
// paths, so nothing lands outside the home even when the member is among them.
func TestFaultTraversalNames(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	next := bwrap.variant()
	hostile := []entry{
		{name: "../bwrap", data: []byte("escaped one level")},
		{name: "../../escape", data: []byte("escaped two levels")},
		{name: "/tmp/absolute-escape", data: []byte("absolute")},
		{name: "../bin/bwrap", typeflag: tar.TypeSymlink, link: "/etc/passwd"},
	}
	for _, format := range []string{"tar.gz", "zip"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir() // home's grandparent: nothing may appear here but the home
			home := filepath.Join(root, "parent", "home")
			if err := os.MkdirAll(filepath.Dir(home), 0o755); err != nil {
				t.Fatal(err)
			}
			rootBefore := snapshot(t, root)

			// Without the member: an error, and nothing written anywhere.
			url := serveBytes(t, "bwrap."+format, buildArchive(t, format, hostile...))
			_, err := Install(context.Background(), testOptions(home, next.artifact(Source{URL: url, Member: "bwrap"})))
			assertFetchError(t, err, false, `no member "bwrap"`)
			assertOnlyHomeChanged(t, root, home, rootBefore)

			// With the member after them: installed, and still nothing outside the home.
			url = serveBytes(t, "bwrap2."+format, buildArchive(t, format, append(hostile, entry{name: "bwrap", data: next.data})...))
			artifact := next.artifact(Source{URL: url, Member: "bwrap"})
			mustInstall(t, testOptions(home, artifact))
			assertActive(t, home, artifact)
			assertOnlyHomeChanged(t, root, home, rootBefore)
		})
	}
}

func assertOnlyHomeChanged(t *testing.T, root, home string, before map[string]string) {
	t.Helper()
	rel, _ := filepath.Rel(root, home)
	after := snapshot(t, root)
	for path := range after {
		if path != rel && !strings.HasPrefix(path, rel+string(filepath.Separator)) && before[path] == "" {
			t.Errorf("written outside the home: %s", filepath.Join(root, path))
		}
	}
	for _, escaped := range []string{"/tmp/absolute-escape", filepath.Join(filepath.Dir(home), "bwrap"), filepath.Join(root, "escape")} {
		if _, err := os.Lstat(escaped); err == nil {
			t.Errorf("an archive entry escaped to %s", escaped)
		}
	}
}

// TestFaultMemberTooLarge: the server offers far more than the pin; the install reads at
// most size+1 bytes of it and hangs up.
func TestFaultMemberTooLarge(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	const offered = 256 << 20
	var written atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 64<<10)
		for written.Load() < offered {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(server.Close)
	url := server.URL + "/bwrap"
	err, _, _ := faultInstall(t, nil, Source{URL: url})
	assertFetchError(t, err, false, "larger than the pinned")
	// Let the handler notice the hang-up, then check how much it got out: the pin plus
	// what loopback socket buffers hold, nowhere near what was offered.
	deadline := time.Now().Add(10 * time.Second)
	for previous := int64(-1); written.Load() != previous && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		previous = written.Load()
	}
	t.Logf("the server got %d bytes out before the hang-up; the pin is %d", written.Load(), len(bwrap.data))
	if got := written.Load(); got > 16<<20 {
		t.Errorf("the server wrote %d bytes before the install hung up; the pin is %d", got, len(bwrap.data))
	}
}

// TestFaultFullDisk installs into a nearly full tmpfs: the write fails, and the error
// names the disk, not a source.
func TestFaultFullDisk(t *testing.T) {
	requireRoot(t, "mount a size-limited tmpfs as the home")
	bwrap := loadBwrap(t)
	home := mountTmpfs(t, "size=512k")
	mustInstall(t, testOptions(home, bwrap.artifact(Source{URL: writeFile(t, "bwrap", bwrap.data)})))
	var stat unix.Statfs_t
	if err := unix.Statfs(home, &stat); err != nil {
		t.Fatal(err)
	}
	free := int64(stat.Bavail) * stat.Bsize
	if free < 16<<10 {
		t.Fatalf("only %d bytes free after the first install", free)
	}
	// Leave 8 KiB: far less than the binary needs.
	if err := os.WriteFile(filepath.Join(home, "ballast"), make([]byte, free-8<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, home)
	next := bwrap.variant()
	for _, format := range []string{"raw", "zip"} {
		url := serveBytes(t, "bwrap."+format, buildArchive(t, format, entry{name: "bwrap", data: next.data}))
		member := "bwrap"
		if format == "raw" {
			member = ""
		}
		_, err := Install(context.Background(), testOptions(home, next.artifact(Source{URL: url, Member: member})))
		var local *LocalError
		if !errors.As(err, &local) || !strings.Contains(err.Error(), "no space left on device") {
			t.Errorf("%s into a full home: %v, want a *LocalError naming the full disk", format, err)
		}
		assertUnchanged(t, home, before)
	}
}

// mountTmpfs mounts a fresh tmpfs with the given options and unmounts it at cleanup.
func mountTmpfs(t *testing.T, options string) string {
	t.Helper()
	dir := t.TempDir()
	var flags uintptr
	var data []string
	for _, option := range strings.Split(options, ",") {
		switch option {
		case "ro":
			flags |= unix.MS_RDONLY
		case "noexec":
			flags |= unix.MS_NOEXEC
		default:
			data = append(data, option)
		}
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, strings.Join(data, ",")); err != nil {
		t.Skipf("cannot mount tmpfs (%v): this container lacks CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// hijackServer hands each connection to handle after reading the request, for answers
// net/http would not send.
func hijackServer(t *testing.T, handle func(net.Conn, *bufio.ReadWriter)) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, buffered, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		handle(conn, buffered)
	}))
	t.Cleanup(server.Close)
	return server.URL + "/bwrap"
}

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			conns = append(conns, conn)
		}
	}()
	t.Cleanup(func() {
		listener.Close()
		<-done
		for _, conn := range conns {
			conn.Close()
		}
	})
	return "http://" + listener.Addr().String() + "/bwrap"
}

func countingServerAtomic(t *testing.T, data []byte, requests *atomic.Int64) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Write(data)
	}))
	t.Cleanup(server.Close)
	return server.URL + "/bwrap"
}

func countingServer(t *testing.T, data []byte, requests *int) string {
	t.Helper()
	var count atomic.Int64
	t.Cleanup(func() { *requests = int(count.Load()) })
	return countingServerAtomic(t, data, &count)
}

// recordedNotes keeps progress lines for assertions.
type recordedNotes struct{ lines []string }

func (r *recordedNotes) Note(message string)                   { r.lines = append(r.lines, message) }
func (r *recordedNotes) Transfer(string, int64) io.WriteCloser { return nopCloser{io.Discard} }
func (r *recordedNotes) contains(part string) bool {
	return strings.Contains(strings.Join(r.lines, "\n"), part)
}

// TestFaultNotABwrap: bytes that match their pin but are not a usable bwrap are placed,
// probed, and taken away again.
func TestFaultNotABwrap(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	trueData, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip("no /bin/true to pin")
	}
	mislabelled := bwrap.variant()
	mislabelled.version = "0.12.0"
	for _, tc := range []struct {
		name   string
		binary realBinary
		want   string
	}{
		{"impostor", realBinary{data: trueData, version: "0.12.0"}, "lacks options bwrapkit needs"},
		{"not executable here", realBinary{data: []byte("#!/nonexistent/interpreter\n"), version: "0.12.0"}, "does not run on this host"},
		{"version mislabelled", mislabelled, "reports version " + bwrap.version + ", the manifest says 0.12.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home, before := installedHome(t, bwrap)
			artifact := tc.binary.artifact(Source{URL: writeFile(t, "bwrap", tc.binary.data)})
			_, err := Install(context.Background(), testOptions(home, artifact))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("install: %v, want %q", err, tc.want)
			}
			assertUnchanged(t, home, before)
		})
	}
}
