package sandbox

import (
	"os"
	"strings"

	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
)

// NetProxy routes a sandbox's network through bwrapkit's allowlist proxy (package
// netproxy), which runs outside; the zero value is none. It is attached to a run
// (Options.NetProxy), not resolved into the Policy: the proxy lives only as long as the
// run. The sandbox keeps its own empty network namespace; the proxy's unix socket and
// the bridge program are bound in read-only, and the command is started by the bridge,
// which makes a listener on the namespace's loopback (ProxyListen), hands it to the proxy
// over the socket (package netproxy/bridge) and execs the command in its own place: the proxy
// accepts on that listener from outside. The socket takes that one hand-over and is then
// closed, so the listener is the only way out: the namespace has no route, so a tool
// that ignores the proxy variables fails at once (no route, no resolver) instead of
// reaching anything.
type NetProxy struct {
	// Joined, instead of Socket and Bridge: the proxy makes its listener in the sandbox's
	// network namespace itself, from outside, through Options.NetJoiner (for a caller that
	// may enter it: netproxy.CanEnterNamespaces). The gate calls it once the sandbox is
	// verified and before the command may start; nothing is bound in and no bridge runs.
	Joined bool
	Socket string // the proxy's socket on the host
	// Bridge is the bridge program on the host: bwrapkit-helper beside bwrapkit, or
	// bwrapkit's own binary. Empty: the command is its own bridge (the doctor's probe), so
	// only the socket is bound.
	Bridge string
	// Refuse: the allowlist is empty, every host is refused. Tools are told not to retry
	// (npm and pip would otherwise retry a refusal for seconds to minutes).
	Refuse bool
}

// Joiner makes and serves the proxy's sockets in a sandbox's network namespace (netns,
// an open /proc/PID/ns/net of the sandbox's pid 1): netproxy.Proxy. It is an Options
// field, not part of NetProxy: the Policy holds only data its seal can see.
type Joiner interface {
	ServeNamespace(netns *os.File) error
}

// attached: the run has a proxy, by bridge or joined.
func (p NetProxy) attached() bool { return p.Socket != "" || p.Joined }

const (
	// ProxySocketInside and BridgeInside are where the socket and the bridge are bound.
	ProxySocketInside = "/run/bwrapkit/proxy.sock"
	BridgeInside      = "/run/bwrapkit/bwrapkit"
	// ProxyListen is the proxy's address on the sandbox's own loopback: the listener the
	// bridge makes and hands over.
	ProxyListen = bridge.Address
	// BridgeCommand is the bridge's subcommand (of bwrapkit and of bwrapkit-helper).
	BridgeCommand = bridge.Command
)

// binds are the proxy's two read-only binds (none without a proxy). A socket on a
// read-only bind still accepts connect(2): the kernel's read-only check covers files,
// directories and links, not sockets.
func (p NetProxy) binds() []string {
	if p.Socket == "" {
		return nil
	}
	if p.Bridge == "" {
		return []string{"--ro-bind", p.Socket, ProxySocketInside}
	}
	return []string{"--ro-bind", p.Bridge, BridgeInside, "--ro-bind", p.Socket, ProxySocketInside}
}

// wrap puts the bridge before the command (which the bridge execs).
func (p NetProxy) wrap(cmd []string) []string {
	if p.Socket == "" || p.Bridge == "" {
		return cmd
	}
	return append([]string{BridgeInside, BridgeCommand, "--socket", ProxySocketInside, "--listen", ProxyListen, "--"}, cmd...)
}

// env are the proxy variables, in every spelling the common tools read: curl reads only
// the lower-case http_proxy, Go and pip either case, npm its own npm_config_* (and git
// libcurl's). The sandbox's own loopback is never proxied.
func (p NetProxy) env() []string {
	if !p.attached() {
		return nil
	}
	url := "http://" + ProxyListen
	var env []string
	for _, name := range []string{"http_proxy", "https_proxy", "all_proxy"} {
		env = append(env, name+"="+url, strings.ToUpper(name)+"="+url)
	}
	env = append(env, "no_proxy=localhost,127.0.0.1,::1", "NO_PROXY=localhost,127.0.0.1,::1",
		"npm_config_proxy="+url, "npm_config_https_proxy="+url, "PIP_PROXY="+url)
	if p.Refuse {
		env = append(env, "npm_config_fetch_retries=0", "PIP_RETRIES=0")
	}
	return env
}
