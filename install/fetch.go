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

// open starts fetching a source: https, http, file URL or absolute plain path.
func open(ctx context.Context, client *http.Client, rawURL string, limit int64) (*download, error) {
	if strings.HasPrefix(rawURL, "/") {
		return openFile(rawURL, rawURL, limit)
	}
	parsed, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if parsed.Scheme == "file" {
		return openFile(rawURL, parsed.Path, limit)
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

func openFile(rawURL, name string, limit int64) (*download, error) {
	file, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		// A FIFO or device could block forever or never end.
		file.Close()
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return &download{url: rawURL, body: file, total: info.Size(), limit: limit}, nil
}

// ReadManifest reads a manifest from a file, an http(s) URL or a file URL, at most 1 MiB.
func ReadManifest(ctx context.Context, location string) ([]byte, error) {
	const limit = 1 << 20
	var stream *download
	var err error
	if strings.Contains(location, "://") {
		stream, err = open(ctx, newHTTPClient(), location, limit)
	} else {
		// Not os.ReadFile: a FIFO such as /dev/stdin is refused, stdin is never read.
		stream, err = openFile(location, location, limit)
	}
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	return readAtMost(stream, limit, location)
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
