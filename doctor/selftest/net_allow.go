package selftest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/netproxy"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// The names the net-allow self-test asks for: both lead to this host's loopback, through
// the proxy's own resolver (never /etc/hosts, never a DNS server). Real names, not
// localhost: clients send localhost and 127.0.0.1 around any proxy.
const (
	netAllowedName = "allowed.bwrapkit.invalid"
	netDeniedName  = "denied.bwrapkit.invalid"
)

// NetAllow is the self-test of --net-allow: through the real proxy and a socket bound
// into a real sandbox without network, an allowed host is reached and a denied one is
// refused at once with the message that names the flags, and never reached. Where the
// transactional workdir can be built it rides in workdir-vetting's run (Joint).
func NetAllow(ctx context.Context, env *Env, _ Launched) report.Check {
	return env.joint(netAllowID).check(ctx, env, netAllowID)
}

// netAllowSetup is the host side of a net-allow run: the two servers, the proxy and its
// socket, and what the probe is to ask.
type netAllowSetup struct {
	token     string
	socket    string
	allowedAt string
	deniedAt  string
	// mixed are the allowed name on the denied server's port and the denied name on the
	// allowed server's: an allowlist that matched only the name, or only the port, let
	// one of them through, yet refused deniedAt, which differs in both.
	mixed      [2]string
	deniedHits *atomic.Int32
	cleanup    func()
}

// prepareNetAllow starts the servers and the proxy, or says why the check cannot run
// (setup nil, and the check to report).
func prepareNetAllow(env *Env) (*netAllowSetup, report.Check) {
	setup := &netAllowSetup{token: "net-allow-" + env.Scene.token, deniedHits: &atomic.Int32{}}
	var undo []func()
	setup.cleanup = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	token := setup.token
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(token)) }))
	undo = append(undo, allowed.Close)
	denied := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { setup.deniedHits.Add(1) }))
	undo = append(undo, denied.Close)
	setup.allowedAt, setup.deniedAt = named(allowed, netAllowedName), named(denied, netDeniedName)
	setup.mixed = [2]string{named(denied, netAllowedName), named(allowed, netDeniedName)}
	// The proxy reaches what this host itself reaches: where the host's own loopback does
	// not answer (an LXC container whose lo is down), there is nothing to show, and a
	// failure would blame the sandbox for the host's network.
	conn, err := net.Dial("tcp", allowed.Listener.Addr().String())
	if err != nil {
		setup.cleanup()
		return nil, report.Check{Status: report.StatusSkip,
			Summary: "this host's own loopback does not answer, so nothing is reachable through the proxy to show the allowlist with",
			Detail:  err.Error(), Remedy: "bring the loopback interface up (ip link set lo up) for --net-allow to reach local hosts"}
	}
	conn.Close()
	allow, err := netproxy.ParseAllowlist([]string{setup.allowedAt})
	if err != nil {
		setup.cleanup()
		return nil, Failed("the allowlist", err)
	}
	proxy := &netproxy.Proxy{Allow: allow, Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == netAllowedName || host == netDeniedName {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}}
	listener, dir, err := netproxy.Listen(environ.Getenv(env.Environ))
	if err != nil {
		setup.cleanup()
		return nil, Failed("the proxy's socket", err)
	}
	undo = append(undo, func() { os.RemoveAll(dir) }, func() { listener.Close() }, func() { proxy.Close() })
	setup.socket = listener.Addr().String()
	go proxy.ServeHandOver(listener)
	return setup, report.Check{}
}

// run is the probe's part: it is its own bridge (it makes the listener inside and hands
// it to the proxy), then asks for both hosts; ops are file operations (probe "fs") to do
// first, in a run shared with them.
func (n *netAllowSetup) run(ops ...string) ProbeRun {
	return ProbeRun{Name: "net-allow",
		NetProxy: sandbox.NetProxy{Socket: n.socket}, // the probe is its own bridge
		Args: append([]string{sandbox.ProxySocketInside, sandbox.ProxyListen, "http://" + n.allowedAt + "/", "http://" + n.deniedAt + "/",
			"http://" + n.mixed[0] + "/", "http://" + n.mixed[1] + "/"}, ops...)}
}

// verdict judges the run's observation and what the denied server saw.
func (n *netAllowSetup) verdict(res ProbeResult, err error) report.Check {
	observation, err := Decode[probe.NetAllowObservation](res, err)
	if err != nil {
		return Failed("the probe", err)
	}
	return netAllowVerdict(observation, n.token, int(n.deniedHits.Load()))
}

func named(server *httptest.Server, name string) string {
	_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
	return net.JoinHostPort(name, port)
}

// netAllowVerdict: the allowed host answered with the token; the denied one got the
// proxy's 403 naming --net-allow, within the refusal bound, and its server saw nothing.
func netAllowVerdict(observation probe.NetAllowObservation, token string, deniedHits int) report.Check {
	detail := fmt.Sprintf("allowed %s: %d %q %s (%d ms); denied %s: %d %q %s (%d ms); the denied server saw %d requests",
		observation.Allowed.URL, observation.Allowed.Status, observation.Allowed.Body, observation.Allowed.Error, observation.Allowed.Millis,
		observation.Denied.URL, observation.Denied.Status, observation.Denied.Body, observation.Denied.Error, observation.Denied.Millis, deniedHits)
	for _, also := range observation.AlsoDenied {
		detail += fmt.Sprintf("; denied %s: %d %s (%d ms)", also.URL, also.Status, also.Error, also.Millis)
	}
	switch {
	case observation.Error != "":
		return report.Check{Status: report.StatusFail, Summary: "the probe could not bridge to the proxy: " + observation.Error, Detail: detail}
	case deniedHits > 0:
		return breach("a host not on --net-allow was reached through the proxy", detail)
	case observation.Allowed.Status != http.StatusOK || observation.Allowed.Body != token:
		return report.Check{Status: report.StatusFail, Summary: "an allowed host was not reached through the proxy", Detail: detail,
			Remedy: "the proxy's socket is bound into the sandbox read-only; a bwrap that cannot bind a socket file fails here"}
	case observation.Denied.Status != http.StatusForbidden || !strings.Contains(observation.Denied.Body, "--net-allow"):
		return breach("a host not on --net-allow was not refused by the proxy", detail)
	case len(observation.AlsoDenied) != 2:
		return missing("requests for the allowed host on another port and another host on its port")
	case slices.ContainsFunc(observation.AlsoDenied, func(r probe.HTTPResult) bool {
		return r.Status != http.StatusForbidden || !strings.Contains(r.Body, "--net-allow")
	}):
		return breach("the proxy let through the allowed host on another port, or another host on the allowed port", detail)
	case observation.Denied.Millis > refusalBoundMillis:
		return report.Check{Status: report.StatusWarn, Summary: fmt.Sprintf("a denied host was refused, but only after %d ms", observation.Denied.Millis), Detail: detail}
	}
	return pass("--net-allow: an allowed host is reached through the proxy; a denied one, the allowed one on another port and another on its port are refused at once", detail)
}

// refusalBoundMillis is "at once" for a refusal: a loaded machine's scheduling, not a
// timeout some retry waited out.
const refusalBoundMillis = 1000
