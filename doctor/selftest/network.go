package selftest

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// Network is the self-test of its name; see doctor/README.md for why it can fail and pass.
func Network(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	listener, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		skip := report.Check{Status: report.StatusSkip, Summary: "no loopback listener could be opened on the host: " + err.Error()}
		return Part{Judge: func(context.Context, Launched) report.Check { return skip }}, nil
	}
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
	request.Dial = listener.Addr().String()
	return Part{
		Cleanup: func() { listener.Close() },
		Judge: func(_ context.Context, launched Launched) report.Check {
			if launched.Observation.Dial == nil {
				return missing("dial")
			}
			return networkVerdict(*launched.Observation.Dial, int(accepted.Load()))
		},
	}, nil
}

// networkVerdict: the probe could not connect, and the host listener saw no one.
func networkVerdict(dial probe.DialObservation, accepted int) report.Check {
	detail := fmt.Sprintf("dial %s: %s; connections accepted on the host: %d", dial.Address, orSucceeded(dial.Error), accepted)
	if dial.Error == "" || accepted > 0 {
		return breach("the sandbox reached a listener on the host's loopback", detail)
	}
	return pass("a listener on the host's loopback is unreachable without --net", detail)
}
