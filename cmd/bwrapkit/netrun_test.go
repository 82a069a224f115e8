package main

import (
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/netproxy"
)

// TestDeniedSummary: hosts asked of the proxy and names looked up inside each get the
// line that names their remedy; with no allowlist one line names both flags.
func TestDeniedSummary(t *testing.T) {
	allow, _ := netproxy.ParseAllowlist([]string{"registry.example.org"})
	for _, tc := range []struct {
		denied []string
		allow  netproxy.Allowlist
		want   []string // each must appear, on its own line
	}{
		{nil, allow, nil},
		{[]string{"example.org:443"}, nil, []string{"bwrapkit: the sandbox has no network; refused example.org:443; run with --net (the host's whole network) or --net-allow HOST[:PORT]"}},
		{[]string{"example.org", "x.example:80"}, nil, []string{"refused example.org, x.example:80; run with --net"}},
		{[]string{"other.example:443"}, allow, []string{"bwrapkit: refused other.example:443: not in --net-allow (registry.example.org); add it with --net-allow, or use --net"}},
		{[]string{"[::1]:8080", "registry.example.org"}, allow, []string{"refused [::1]:8080: not in --net-allow", "refused the lookup of registry.example.org inside: with --net-allow only the proxy resolves names"}},
	} {
		got := deniedSummary(tc.denied, tc.allow)
		if len(tc.want) == 0 && got != "" {
			t.Errorf("deniedSummary(%v) = %q, want nothing", tc.denied, got)
		}
		lines := strings.Split(got, "\n")
		if len(tc.want) > 0 && len(lines) != len(tc.want) {
			t.Errorf("deniedSummary(%v) = %q, want %d lines", tc.denied, got, len(tc.want))
			continue
		}
		for i, want := range tc.want {
			if !strings.Contains(lines[i], want) {
				t.Errorf("deniedSummary(%v) line %d = %q, want it to say %q", tc.denied, i, lines[i], want)
			}
		}
	}
}
