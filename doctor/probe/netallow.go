package probe

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
)

// NetAllowObservation is what a tool inside saw of the allowlist proxy: one request to
// an allowed host and one to a denied host, both through the proxy's bound socket.
type NetAllowObservation struct {
	Allowed HTTPResult `json:"allowed"`
	Denied  HTTPResult `json:"denied"`
	// AlsoDenied are the further denied URLs, in the order asked: the allowed host on
	// another port, a denied host on the allowed port.
	AlsoDenied []HTTPResult `json:"also_denied,omitempty"`
	Error      string       `json:"error"` // the bridge could not be set up
	// FS is the file operations asked for after the URLs, done first (the run shares them
	// with workdir-vetting, which judges them by the host's project).
	FS *FSObservation `json:"fs,omitempty"`
}

// HTTPResult is one request's outcome.
type HTTPResult struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Body   string `json:"body"` // the first 512 bytes
	Error  string `json:"error"`
	Millis int64  `json:"ms"`
}

// observeNetAllow: args SOCKET LISTEN ALLOWED_URL DENIED_URL [DENIED_URL...]
// [OP:PATH...]. The file operations (as probe "fs" does them) come first; then the probe
// is its own bridge, as run's is: it makes the listener on the sandbox's loopback
// (LISTEN), hands it to the proxy outside (bridge.HandOver), and asks through it as a
// client would.
func observeNetAllow(args []string) NetAllowObservation {
	if len(args) < 4 {
		return NetAllowObservation{Error: "usage: net-allow SOCKET LISTEN ALLOWED_URL DENIED_URL [DENIED_URL...] [OP:PATH...]"}
	}
	urls := 4
	for urls < len(args) && strings.HasPrefix(args[urls], "http://") {
		urls++
	}
	var fs *FSObservation
	if len(args) > urls {
		ops := observeFS(args[urls:])
		fs = &ops
	}
	observation := observeURLs(args[:urls])
	observation.FS = fs
	return observation
}

func observeURLs(args []string) NetAllowObservation {
	listener, err := bridge.ListenInside(args[1])
	if err != nil {
		return NetAllowObservation{Error: err.Error()}
	}
	if err := bridge.HandOver(args[0], listener); err != nil {
		return NetAllowObservation{Error: "the hand-over to the proxy: " + err.Error()}
	}
	observation := NetAllowObservation{Allowed: get(args[1], args[2]), Denied: get(args[1], args[3])}
	for _, target := range args[4:] {
		observation.AlsoDenied = append(observation.AlsoDenied, get(args[1], target))
	}
	return observation
}

// httpBound bounds one request through the proxy, from the dial to the body.
const httpBound = 5 * time.Second

// get asks proxy for target as an HTTP/1.1 client configured with an HTTP proxy does: the
// absolute URL in the request line. Written out rather than net/http's client: that would
// link all of HTTP (and TLS) into the probe, which bwrapkit-helper carries, and the probe
// needs one plain GET.
func get(proxy, target string) HTTPResult {
	result := HTTPResult{URL: target}
	began := time.Now()
	defer func() { result.Millis = time.Since(began).Milliseconds() }()
	status, body, err := request(proxy, target, began.Add(httpBound))
	if err != nil {
		result.Error = err.Error()
		return result
	}
	result.Status, result.Body = status, body
	return result
}

// request makes the GET and reads the status and the body's first 512 bytes.
func request(proxy, target string, deadline time.Time) (int, string, error) {
	host, ok := strings.CutPrefix(target, "http://")
	if !ok {
		return 0, "", fmt.Errorf("not an http URL: %q", target)
	}
	host, _, _ = strings.Cut(host, "/")
	conn, err := dialTCP(proxy, time.Until(deadline))
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return 0, "", err
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: bwrapkit-probe\r\nConnection: close\r\n\r\n", target, host); err != nil {
		return 0, "", err
	}
	return readResponse(bufio.NewReader(conn))
}

// readResponse reads an HTTP/1.1 response's status and the first 512 bytes of its body,
// whether it is sized (Content-Length), chunked or ends with the connection.
func readResponse(r *bufio.Reader) (int, string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, "", fmt.Errorf("the status line: %w", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/1.") {
		return 0, "", fmt.Errorf("not an HTTP/1 status line: %q", strings.TrimSpace(line))
	}
	status, err := strconv.Atoi(fields[1])
	if err != nil {
		return 0, "", fmt.Errorf("the status %q: %w", fields[1], err)
	}
	length, chunked := int64(-1), false
	for {
		header, err := r.ReadString('\n')
		if err != nil {
			return status, "", fmt.Errorf("the headers: %w", err)
		}
		header = strings.TrimRight(header, "\r\n")
		if header == "" {
			break
		}
		name, value, _ := strings.Cut(header, ":")
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length":
			if length, err = strconv.ParseInt(value, 10, 64); err != nil || length < 0 {
				return status, "", fmt.Errorf("the content length %q", value)
			}
		case "transfer-encoding":
			chunked = strings.EqualFold(value, "chunked")
		}
	}
	var body io.Reader = r
	switch {
	case chunked:
		body = &chunks{r: r}
	case length >= 0:
		body = io.LimitReader(r, length)
	}
	data, err := io.ReadAll(io.LimitReader(body, 512))
	return status, string(data), err
}

// chunks reads a chunked body's data.
type chunks struct {
	r    *bufio.Reader
	left int64 // of the current chunk; -1 after the last
}

func (c *chunks) Read(p []byte) (int, error) {
	for c.left == 0 {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		switch {
		case err != nil || n < 0:
			return 0, fmt.Errorf("a chunk size %q", size)
		case n == 0:
			c.left = -1
		default:
			c.left = n
		}
	}
	if c.left < 0 {
		return 0, io.EOF
	}
	n, err := c.r.Read(p[:min(int64(len(p)), c.left)])
	c.left -= int64(n)
	if c.left == 0 {
		// The CRLF after the chunk's data.
		if _, crlfErr := c.r.Discard(2); crlfErr != nil && err == nil {
			err = crlfErr
		}
	}
	return n, err
}
