package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// SourceError is why one source did not deliver the binary.
type SourceError struct {
	URL string
	// Unreachable is true when the bytes could not be fetched (connection refused, HTTP
	// error status, stall, truncated or reset transfer). Otherwise the bytes were wrong.
	Unreachable bool
	Err         error
}

func (e *SourceError) Error() string { return e.URL + ": " + e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// StallError says a download delivered no bytes for Limit.
type StallError struct {
	URL   string
	Limit time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("download of %s stalled: no bytes for %s", e.URL, e.Limit)
}

// HTTPStatusError is a non-200 answer.
type HTTPStatusError struct {
	URL    string
	Status string
}

func (e *HTTPStatusError) Error() string { return "HTTP " + e.Status }

// newHTTPClient honours the usual proxy variables and follows redirects; every wait is
// bounded by the caller's context and the stall watchdog, not by client timeouts.
func newHTTPClient() *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = http.ProxyFromEnvironment
	// Bytes on the wire are the bytes hashed and counted: no transparent decompression.
	transport.DisableCompression = true
	return &http.Client{Transport: transport}
}

// download is a metered source stream: every read tells the watchdog and the progress
// meter, and the first transport error is kept so a failure can be blamed on the network
// rather than on the archive that was being read.
type download struct {
	url     string
	body    io.ReadCloser
	total   int64 // -1 when unknown
	read    int64
	limit   int64 // bytes beyond this are refused
	readErr error
	onRead  func(chunk []byte)
	onEOF   func()
}

func (d *download) Read(p []byte) (int, error) {
	n, err := d.body.Read(p)
	d.read += int64(n)
	if n > 0 && d.onRead != nil {
		d.onRead(p[:n])
	}
	switch {
	case errors.Is(err, io.EOF):
		if d.onEOF != nil {
			d.onEOF()
		}
	case err != nil && d.readErr == nil:
		d.readErr = err
	}
	if d.read > d.limit {
		return n, contentErrorf("%s is larger than %d bytes", d.url, d.limit)
	}
	return n, err
}

func (d *download) Close() error { return d.body.Close() }

// location is where a manifest or a source is: an http(s) URL, or a file on this host
// (an absolute plain path, a file URL, or, for --manifest only, a relative path).
type location struct {
	remote bool
	path   string // the file's path when !remote
}

// parseLocation decides by the URL's scheme, never by looking for "://": "./a:b.json" is
// a file, "file:///srv/m.json" is a file, "https://host/m.json" is remote.
func parseLocation(raw string) (location, error) {
	if strings.HasPrefix(raw, "/") {
		return location{path: raw}, nil
	}
	parsed, err := url.Parse(raw)
	if err != nil {
		return location{}, fmt.Errorf("%q is neither a URL nor a path: %w", raw, err)
	}
	switch parsed.Scheme {
	case "":
		return location{path: raw}, nil
	case "file":
		if parsed.Host != "" && parsed.Host != "localhost" {
			return location{}, fmt.Errorf("url %q names a remote host; a file URL must be file:///absolute/path", raw)
		}
		return location{path: parsed.Path}, nil
	case "http", "https":
		return location{remote: true}, nil
	}
	return location{}, fmt.Errorf("url %q: scheme %q is not https, http or file", raw, parsed.Scheme)
}

// open starts fetching a source: https, http, file URL or absolute plain path.
func open(ctx context.Context, client *http.Client, rawURL string, limit int64) (*download, error) {
	where, err := parseLocation(rawURL)
	if err != nil {
		return nil, err
	}
	if !where.remote {
		return openFile(ctx, rawURL, where.path, limit)
	}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	response, err := client.Do(request)
	if err != nil {
		return nil, err
	}
	if response.StatusCode != http.StatusOK {
		response.Body.Close()
		return nil, &HTTPStatusError{URL: rawURL, Status: response.Status}
	}
	if response.ContentLength > limit {
		response.Body.Close()
		return nil, contentErrorf("%s is %d bytes, more than the %d allowed", rawURL, response.ContentLength, limit)
	}
	return &download{url: rawURL, body: response.Body, total: response.ContentLength, limit: limit}, nil
}

// openFile opens a local source through safefile: a symlink, FIFO or device planted in a
// mirror directory is refused at once (a *safefile.Error, which ends the install: it is
// bad input, not an unreachable source), never followed or blocked on.
func openFile(ctx context.Context, rawURL, name string, limit int64) (*download, error) {
	file, err := safefile.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	return &download{url: rawURL, body: contextReader{ctx, file}, total: info.Size(), limit: limit}, nil
}

// contextReader ends a long local read at the deadline or a signal: a file read never
// blocks for long, so checking between reads bounds it.
type contextReader struct {
	ctx  context.Context
	file *os.File
}

func (r contextReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.file.Read(p)
}

func (r contextReader) Close() error { return r.file.Close() }

// ManifestReadError says --manifest could not be read. Remote is true for an http(s)
// URL, whose failure is the network's; a local file's failure is the caller's input.
type ManifestReadError struct {
	Location string
	Remote   bool
	Err      error
}

func (e *ManifestReadError) Error() string { return e.Err.Error() }
func (e *ManifestReadError) Unwrap() error { return e.Err }

// maxManifestSize bounds a manifest: the default one is under 2 KB.
const maxManifestSize = 1 << 20

// ReadManifest reads a manifest from a file, an http(s) URL or a file URL, at most 1 MiB.
// A file is read through safefile: /dev/stdin, a FIFO or a symlink is refused at once.
func ReadManifest(ctx context.Context, manifest string) ([]byte, error) {
	where, err := parseLocation(manifest)
	if err != nil {
		return nil, &ManifestReadError{Location: manifest, Err: err}
	}
	if !where.remote {
		if err := ctx.Err(); err != nil {
			return nil, &ManifestReadError{Location: manifest, Err: err}
		}
		data, err := safefile.ReadFile(where.path, maxManifestSize)
		if err != nil {
			return nil, &ManifestReadError{Location: manifest, Err: err}
		}
		return data, nil
	}
	stream, err := open(ctx, newHTTPClient(), manifest, maxManifestSize)
	if err != nil {
		return nil, &ManifestReadError{Location: manifest, Remote: true, Err: err}
	}
	defer stream.Close()
	data, err := readAtMost(stream, maxManifestSize, manifest)
	if err != nil {
		return nil, &ManifestReadError{Location: manifest, Remote: true, Err: err}
	}
	return data, nil
}

func readAtMost(r io.Reader, limit int64, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, nil
}
