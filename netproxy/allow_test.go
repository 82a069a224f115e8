package netproxy

import "testing"

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Rule
		bad  bool
	}{
		{text: "registry.example.org", want: Rule{Host: "registry.example.org"}},
		{text: "Mods.Example.NET.", want: Rule{Host: "mods.example.net"}},
		{text: "index.example.com:443", want: Rule{Host: "index.example.com", Port: 443}},
		{text: "*.example.org", want: Rule{Host: "example.org", Wildcard: true}},
		{text: "*.example.org:8443", want: Rule{Host: "example.org", Wildcard: true, Port: 8443}},
		{text: "10.0.0.5:3000", want: Rule{Host: "10.0.0.5", Port: 3000}},
		{text: "[::1]:8080", want: Rule{Host: "::1", Port: 8080}},
		{text: "::1", want: Rule{Host: "::1"}},
		{text: "https://index.example.com", bad: true},
		{text: "index.example.com/simple", bad: true},
		{text: "user@index.example.com", bad: true},
		{text: "index.example.com:0", bad: true},
		{text: "index.example.com:70000", bad: true},
		{text: "index.example.com:https", bad: true},
		{text: "*.org", bad: true},
		{text: "*", bad: true},
		{text: "*.10.0.0.1", bad: true},
		{text: "", bad: true},
		{text: "-bad.example", bad: true},
		{text: "a..b", bad: true},
	} {
		got, err := ParseRule(tc.text)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseRule(%q) = %+v, want an error", tc.text, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tc.text, got, err, tc.want)
		}
	}
}

func TestAllows(t *testing.T) {
	list, err := ParseAllowlist([]string{"registry.example.org", "index.example.com:443", "*.files-example.org", "10.0.0.5:3000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"registry.example.org", 443, true},
		{"REGISTRY.example.org.", 80, true}, // no port in the rule: any port
		{"evil-registry.example.org", 443, false},
		{"registry.example.org.evil.com", 443, false},
		{"index.example.com", 443, true},
		{"index.example.com", 80, false},
		{"files.files-example.org", 443, true},
		{"a.b.files-example.org", 443, true},
		{"files-example.org", 443, false}, // a wildcard covers the names below, as a certificate's
		{"xfiles-example.org", 443, false},
		{"10.0.0.5", 3000, true},
		{"10.0.0.5", 22, false},
		{"example.org", 443, false},
		// An address with an IPv6 zone that names an allowed domain: the zone is dropped
		// when dialling, so this was host loopback through a wildcard rule.
		{"::ffff:127.0.0.1%.files-example.org", 443, false},
		{"fe80::1%eth0", 443, false},
		// An address is never reached through a wildcard's suffix, only named exactly.
		{"::ffff:10.0.0.5", 3000, true},
		{"127.0.0.1", 443, false},
	} {
		if got := list.Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("Allows(%s, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	if (Allowlist{}).Allows("example.org", 443) {
		t.Error("the empty list allowed a host")
	}
}
