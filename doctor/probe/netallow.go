package probe

import (
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
)

// NetAllowObservation is what a tool inside saw of the allowlist proxy: one request to
// an allowed host and one to a denied host, both through the proxy's bound socket.
type NetAllowObservation struct {
	Allowed HTTPResult `json:"allowed"`
	Denied  HTTPResult `json:"denied"`
	Error   string     `json:"error"` // the bridge could not be set up
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

// observeNetAllow: args SOCKET LISTEN ALLOWED_URL DENIED_URL [OP:PATH...]. The file
// operations (as probe "fs" does them) come first; then the probe is its own bridge, as
// run's is: it makes the listener on the sandbox's loopback (LISTEN), hands it to the
// proxy outside (bridge.HandOver), and asks through it as a client would.
func observeNetAllow(args []string) NetAllowObservation {
	if len(args) < 4 {
		return NetAllowObservation{Error: "usage: net-allow SOCKET LISTEN ALLOWED_URL DENIED_URL [OP:PATH...]"}
	}
	var fs *FSObservation
	if len(args) > 4 {
		ops := observeFS(args[4:])
		fs = &ops
	}
	observation := observeURLs(args[:4])
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
	proxy := &url.URL{Scheme: "http", Host: args[1]}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 5 * time.Second}
	return NetAllowObservation{Allowed: get(client, args[2]), Denied: get(client, args[3])}
}

func get(client *http.Client, target string) HTTPResult {
	result := HTTPResult{URL: target}
	began := time.Now()
	defer func() { result.Millis = time.Since(began).Milliseconds() }()
	response, err := client.Get(target)
	if err != nil {
		result.Error = err.Error()
		result.Millis = time.Since(began).Milliseconds()
		return result
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(response.Body, 512))
	result.Status, result.Body = response.StatusCode, string(body)
	result.Millis = time.Since(began).Milliseconds()
	return result
}
