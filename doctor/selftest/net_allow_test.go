package selftest

import (
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

func TestNetAllowVerdict(t *testing.T) {
	reached := probe.HTTPResult{Status: 200, Body: "tok", Millis: 3}
	refused := probe.HTTPResult{Status: 403, Body: "bwrapkit: x is not in --net-allow (y)", Millis: 2}
	for _, tc := range []struct {
		name       string
		allowed    probe.HTTPResult
		denied     probe.HTTPResult
		deniedHits int
		want       report.Status
	}{
		{"allowed reached, denied refused", reached, refused, 0, report.StatusOK},
		{"the denied server saw a request", reached, refused, 1, report.StatusFail},
		{"the denied host answered", reached, probe.HTTPResult{Status: 200, Body: "x"}, 0, report.StatusFail},
		{"a 403 that names nothing", reached, probe.HTTPResult{Status: 403, Body: "Forbidden"}, 0, report.StatusFail},
		{"the allowed host unreached", probe.HTTPResult{Error: "connection refused"}, refused, 0, report.StatusFail},
		{"the allowed host answered someone else's body", probe.HTTPResult{Status: 200, Body: "other"}, refused, 0, report.StatusFail},
		{"a slow refusal", reached, probe.HTTPResult{Status: 403, Body: "--net-allow", Millis: 4000}, 0, report.StatusWarn},
	} {
		got := netAllowVerdict(probe.NetAllowObservation{Allowed: tc.allowed, Denied: tc.denied}, "tok", tc.deniedHits)
		if got.Status != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got.Status, got.Summary, tc.want)
		}
	}
}
