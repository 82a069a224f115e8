package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/bwrapkit/bwrapkit/netproxy"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// parseNetAllow checks --net-allow (and the policy's net_allow) before anything runs.
func parseNetAllow(request sandbox.Request) (netproxy.Allowlist, error) {
	allow, err := netproxy.ParseAllowlist(request.NetAllow)
	if err != nil {
		return nil, usagef("--net-allow %v", err)
	}
	if request.Network && len(allow) > 0 {
		return nil, usagef("--net-allow %s: --net already gives the host's whole network; use one or the other", strings.Join(request.NetAllow, " "))
	}
	return allow, nil
}

// runProxy is the allowlist proxy of one run: with a bridge, its socket in a private
// directory of its own (0700, made fresh), which serves the bridge's one hand-over and is
// removed right after it (or at stop); without (a caller that may enter the sandbox's
// namespace), no socket at all. Then the proxy serves the sandbox's listener until stop.
type runProxy struct {
	proxy    *netproxy.Proxy
	dir      string
	listener net.Listener
}

// startProxy starts the proxy for a run without --net, and says how to attach it. The
// bridge inside is bridge, bwrapkit's helper or its own binary (see ownPrograms), already
// checked to be out of the sandbox's reach.
func startProxy(allow netproxy.Allowlist, bridge string, getenv func(string) string) (*runProxy, sandbox.NetProxy, error) {
	if netproxy.CanEnterNamespaces() {
		// Root (CAP_SYS_ADMIN): the proxy makes the sandbox's sockets itself, from outside,
		// once the gate has verified the sandbox; no socket, no bridge inside.
		proxy := &netproxy.Proxy{Allow: allow, Resolver: true}
		return &runProxy{proxy: proxy}, sandbox.NetProxy{Joined: true, Refuse: len(allow) == 0}, nil
	}
	if bridge == "" {
		return nil, sandbox.NetProxy{}, errors.New("the network proxy needs bwrapkit's own path (os.Executable found none)")
	}
	listener, dir, err := netproxy.Listen(getenv)
	if err != nil {
		return nil, sandbox.NetProxy{}, err
	}
	proxy := &netproxy.Proxy{Allow: allow, Resolver: true}
	go func() {
		// The socket has done its part once the bridge's sockets are here (nothing more is
		// taken on it): a run killed from then on leaves no directory behind.
		if proxy.ServeHandOver(listener) == nil {
			os.RemoveAll(dir)
		}
	}()
	attached := sandbox.NetProxy{Socket: listener.Addr().String(), Bridge: bridge, Refuse: len(allow) == 0}
	return &runProxy{proxy: proxy, dir: dir, listener: listener}, attached, nil
}

// stop ends the proxy (the sandbox's listener and resolver sockets it took over) and
// removes its socket. Connections still open are the dead sandbox's, ended as their far
// side closes.
func (p *runProxy) stop() {
	if p == nil {
		return
	}
	if p.listener != nil {
		p.listener.Close()
		os.RemoveAll(p.dir)
	}
	p.proxy.Close()
}

// handedOver: the bridge handed its sockets over, so the command may have started (the
// bridge execs it only after the hand-over).
func (p *runProxy) handedOver() bool { return p != nil && p.proxy.HandedOver() }

// joiner is the proxy as the one that makes its own listener in the sandbox, for a run
// whose NetProxy is Joined; nil otherwise.
func (p *runProxy) joiner() sandbox.Joiner {
	if p == nil || p.listener != nil {
		return nil
	}
	return p.proxy
}

// hosts are the allowed and denied destinations asked for, for the report.
func (p *runProxy) hosts() (allowed, denied []string) {
	if p == nil {
		return nil, nil
	}
	for _, attempt := range p.proxy.Attempts() {
		if attempt.Allowed {
			allowed = append(allowed, attempt.Host)
		} else {
			denied = append(denied, attempt.Host)
		}
	}
	return allowed, denied
}

// deniedSummary is run's summary on stderr when the proxy refused something (pure):
// host:port entries were asked of the proxy, bare names of the sandbox's resolver
// address by a tool that resolves names itself.
func deniedSummary(denied []string, allow netproxy.Allowlist) string {
	if len(denied) == 0 {
		return ""
	}
	if len(allow) == 0 {
		return fmt.Sprintf("bwrapkit: the sandbox has no network; refused %s; run with %s", strings.Join(denied, ", "), netproxy.Flags)
	}
	var hosts, names []string
	for _, entry := range denied {
		if _, _, err := net.SplitHostPort(entry); err == nil {
			hosts = append(hosts, entry)
		} else {
			names = append(names, entry)
		}
	}
	var lines []string
	if len(hosts) > 0 {
		lines = append(lines, fmt.Sprintf("bwrapkit: refused %s: not in --net-allow (%s); add it with --net-allow, or use --net", strings.Join(hosts, ", "), strings.Join(allow.Strings(), ", ")))
	}
	if len(names) > 0 {
		lines = append(lines, fmt.Sprintf("bwrapkit: refused the lookup of %s inside: with --net-allow only the proxy resolves names, for tools that use the proxy variables (http_proxy, https_proxy); this one resolved them itself; use --net for it", strings.Join(names, ", ")))
	}
	return strings.Join(lines, "\n")
}
