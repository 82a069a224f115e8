package selftest

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// Network is the self-test of its name; see doctor/README.md for why it can fail and pass.
func Network(ctx context.Context, env *Env, launched Launched) report.Check {
	listener, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return report.Check{Status: report.StatusSkip, Summary: "no loopback listener could be opened on the host: " + err.Error()}
	}
	defer listener.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	observation, err := Decode[probe.DialObservation](env.Run(ctx, ProbeRun{Name: "dial", Args: []string{listener.Addr().String()}}))
	if err != nil {
		return Failed("the network probe did not run", err)
	}
	return networkVerdict(observation, int(accepted.Load()))
}

// networkVerdict: the probe could not connect, and the host listener saw no one.
func networkVerdict(dial probe.DialObservation, accepted int) report.Check {
	detail := fmt.Sprintf("dial %s: %s; connections accepted on the host: %d", dial.Address, orSucceeded(dial.Error), accepted)
	if dial.Error == "" || accepted > 0 {
		return breach("the sandbox reached a listener on the host's loopback", detail)
	}
	return pass("a listener on the host's loopback is unreachable without --net", detail)
}
