package selftest

import (
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

func TestNetAllowVerdict(t *testing.T) {
	reached := probe.HTTPResult{Status: 200, Body: "tok", Millis: 3}
	refused := probe.HTTPResult{Status: 403, Body: "bwrapkit: x is not in --net-allow (y)", Millis: 2}
	both := []probe.HTTPResult{refused, refused}
	for _, tc := range []struct {
		name       string
		allowed    probe.HTTPResult
		denied     probe.HTTPResult
		deniedHits int
		want       report.Status
		also       []probe.HTTPResult
	}{
		{"allowed reached, denied refused", reached, refused, 0, report.StatusOK, both},
		{"the denied server saw a request", reached, refused, 1, report.StatusFail, both},
		{"the denied host answered", reached, probe.HTTPResult{Status: 200, Body: "x"}, 0, report.StatusFail, both},
		{"a 403 that names nothing", reached, probe.HTTPResult{Status: 403, Body: "Forbidden"}, 0, report.StatusFail, both},
		{"the allowed host unreached", probe.HTTPResult{Error: "connection refused"}, refused, 0, report.StatusFail, both},
		{"the allowed host answered someone else's body", probe.HTTPResult{Status: 200, Body: "other"}, refused, 0, report.StatusFail, both},
		{"a slow refusal", reached, probe.HTTPResult{Status: 403, Body: "--net-allow", Millis: 4000}, 0, report.StatusWarn, both},
		{"the allowed host on another port answered", reached, refused, 0, report.StatusFail, []probe.HTTPResult{{Status: 200, Body: ""}, refused}},
		{"another host on the allowed port answered", reached, refused, 0, report.StatusFail, []probe.HTTPResult{refused, {Status: 200, Body: "tok"}}},
		{"no mixed requests reported", reached, refused, 0, report.StatusFail, nil},
	} {
		got := netAllowVerdict(probe.NetAllowObservation{Allowed: tc.allowed, Denied: tc.denied, AlsoDenied: tc.also}, "tok", tc.deniedHits)
		if got.Status != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got.Status, got.Summary, tc.want)
		}
	}
}
