package netproxy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one allowlist entry: a host name (or IP address), or "*." and a domain for
// every name below it (not the domain itself, as a certificate wildcard), and a port,
// 0 for any.
type Rule struct {
	Host     string // lower case, no trailing dot; for a wildcard the domain after "*."
	Wildcard bool
	Port     int
}

func (r Rule) String() string {
	host := r.Host
	if r.Wildcard {
		host = "*." + host
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if r.Port != 0 {
		return host + ":" + strconv.Itoa(r.Port)
	}
	return host
}

// Allowlist is the hosts a sandbox may reach; the empty list reaches none.
type Allowlist []Rule

// ParseRule reads HOST, HOST:PORT, *.DOMAIN[:PORT], an IP address or [IPv6]:PORT.
func ParseRule(text string) (Rule, error) {
	spec := strings.TrimSpace(text)
	if spec == "" {
		return Rule{}, fmt.Errorf("empty host")
	}
	if strings.Contains(spec, "://") || strings.ContainsAny(spec, "/?#@ \t") {
		return Rule{}, fmt.Errorf("name a host and an optional port (registry.example.org, *.example.org:443), not a URL")
	}
	host, port := spec, 0
	if h, p, err := net.SplitHostPort(spec); err == nil {
		number, err := strconv.Atoi(p)
		if err != nil || number < 1 || number > 65535 {
			return Rule{}, fmt.Errorf("port %q: want 1 to 65535", p)
		}
		host, port = h, number
	} else if strings.Count(spec, ":") == 1 {
		return Rule{}, fmt.Errorf("bad port: %v", err)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	rule := Rule{Host: host, Port: port}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		rule.Host, rule.Wildcard = rest, true
	}
	if _, err := netip.ParseAddr(rule.Host); err == nil {
		if rule.Wildcard {
			return Rule{}, fmt.Errorf("a wildcard needs a domain, not an address")
		}
		return rule, nil
	}
	if !validName(rule.Host) {
		return Rule{}, fmt.Errorf("%q is not a host name", rule.Host)
	}
	if rule.Wildcard && !strings.Contains(rule.Host, ".") {
		return Rule{}, fmt.Errorf("*.%s would allow a whole top-level domain; name a domain below it", rule.Host)
	}
	return rule, nil
}

// ParseAllowlist reads each entry; the first bad one is the error.
func ParseAllowlist(entries []string) (Allowlist, error) {
	var list Allowlist
	for _, entry := range entries {
		rule, err := ParseRule(entry)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", entry, err)
		}
		list = append(list, rule)
	}
	return list, nil
}

// Allows decides one destination (pure): host as the client named it, port it asked.
func (list Allowlist) Allows(host string, port int) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if strings.Contains(host, "%") {
		// An IPv6 zone ("::ffff:127.0.0.1%.example.org") parses as an address whose zone
		// a suffix match would take for the allowed domain; no client needs one here.
		return false
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		// An address is allowed only by a rule naming that very address, never by a
		// wildcard's suffix.
		for _, rule := range list {
			if !rule.Wildcard && (rule.Port == 0 || rule.Port == port) {
				if ruleAddr, err := netip.ParseAddr(rule.Host); err == nil && ruleAddr.Unmap() == addr.Unmap() {
					return true
				}
			}
		}
		return false
	}
	for _, rule := range list {
		if rule.Port != 0 && rule.Port != port {
			continue
		}
		if rule.Wildcard {
			if strings.HasSuffix(host, "."+rule.Host) {
				return true
			}
		} else if host == rule.Host {
			return true
		}
	}
	return false
}

// Strings are the rules as a user writes them.
func (list Allowlist) Strings() []string {
	out := make([]string, 0, len(list))
	for _, rule := range list {
		out = append(out, rule.String())
	}
	return out
}

func validName(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9')) {
				return false
			}
		}
	}
	return true
}
