package netproxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// query is a DNS query as glibc's resolver sends it: one question, recursion desired,
// and (when edns) the OPT record it adds with "options edns0".
func query(id uint16, name string, qtype uint16, edns bool) []byte {
	packet := binary.BigEndian.AppendUint16(nil, id)
	packet = binary.BigEndian.AppendUint16(packet, 0x0100) // RD
	packet = binary.BigEndian.AppendUint16(packet, 1)
	packet = append(packet, 0, 0, 0, 0)
	if edns {
		packet = append(packet, 0, 1)
	} else {
		packet = append(packet, 0, 0)
	}
	for _, label := range strings.Split(name, ".") {
		packet = append(packet, byte(len(label)))
		packet = append(packet, label...)
	}
	packet = append(packet, 0)
	packet = binary.BigEndian.AppendUint16(packet, qtype)
	packet = binary.BigEndian.AppendUint16(packet, 1) // IN
	if edns {
		packet = append(packet, 0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0) // OPT, 1232 bytes
	}
	return packet
}

func TestParseQuery(t *testing.T) {
	response := query(7, "example.org", 1, false)
	response[2] |= 0x80 // QR: an answer, not a query
	notify := query(7, "example.org", 1, false)
	notify[2] |= 4 << 3 // opcode NOTIFY
	pointer := append(query(7, "a", 1, false)[:12], 0xc0, 12, 0, 1, 0, 1)
	for _, tc := range []struct {
		what   string
		packet []byte
		name   string // "" with bad: refused as no query
		bad    bool
	}{
		{"A", query(0x1234, "Example.ORG", 1, false), "example.org", false},
		{"AAAA with EDNS", query(1, "packages.example", 28, true), "packages.example", false},
		{"root", append(query(1, "x", 2, false)[:12], 0, 0, 2, 0, 1), "", false},
		{"response", response, "", true},
		{"notify", notify, "", true},
		{"compression pointer", pointer, "", true},
		{"truncated header", []byte{1, 2, 3}, "", true},
		{"truncated question", query(1, "example.org", 1, false)[:20], "", true},
		{"two questions", func() []byte { p := query(1, "a.b", 1, false); p[5] = 2; return p }(), "", true},
		{"oversized", append(query(1, "a.b", 1, false), make([]byte, 600)...), "", true},
	} {
		q, err := parseQuery(tc.packet)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: parsed as %+v, want no query", tc.what, q)
			}
			continue
		}
		if err != nil || q.name != tc.name {
			t.Errorf("%s: %+v %v, want name %q", tc.what, q, err, tc.name)
		}
	}
}

// TestRefusalEchoesTheQuestion: the answer is REFUSED for the same id and question,
// with no record of any kind (an address inside would be a name resolved inside).
func TestRefusalEchoesTheQuestion(t *testing.T) {
	packet := query(0xbeef, "example.org", 28, true)
	q, err := parseQuery(packet)
	if err != nil {
		t.Fatal(err)
	}
	answer := q.refusal()
	if id := binary.BigEndian.Uint16(answer); id != 0xbeef {
		t.Errorf("id %#x", id)
	}
	flags := binary.BigEndian.Uint16(answer[2:])
	if flags&dnsFlagQR == 0 || flags&0xf != dnsRcodeRefus || flags&dnsFlagRD == 0 {
		t.Errorf("flags %#04x, want QR, RD and REFUSED", flags)
	}
	if counts := answer[4:12]; !bytes.Equal(counts, []byte{0, 1, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("counts % x, want one question and no record", counts)
	}
	if !bytes.Equal(answer[12:], packet[12:len(packet)-11]) {
		t.Errorf("question % x, want % x", answer[12:], packet[12:len(packet)-11])
	}
}

// TestServeDNSRefusesAndTells: Go's own resolver, pointed at ServeDNS, fails at once
// (not after its 5 s timeout) with no address, and every name it asked is told.
func TestServeDNSRefusesAndTells(t *testing.T) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	names := make(chan string, 16)
	go ServeDNS(conn, func(name string) { names <- name })
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", conn.LocalAddr().String())
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs, err := resolver.LookupHost(ctx, "pkg.example.org.")
	var dnsErr *net.DNSError
	if err == nil || !errors.As(err, &dnsErr) || dnsErr.IsTimeout || len(addrs) != 0 {
		t.Fatalf("LookupHost through the refusing resolver: %v %v, want a refusal, not a timeout", addrs, err)
	}
	if got := <-names; got != "pkg.example.org" {
		t.Errorf("told %q, want pkg.example.org", got)
	}
}

// TestAttemptsAreBounded: a command asking ever new names (one datagram each) cannot
// grow the caller's record without end; the first maxAttempts stay listed.
func TestAttemptsAreBounded(t *testing.T) {
	proxy := &Proxy{}
	for i := range maxAttempts + 50 {
		proxy.recordAttempt(Attempt{Host: "n" + strconv.Itoa(i) + ".example", Lookup: true}, nil)
	}
	proxy.recordAttempt(Attempt{Host: "n0.example", Lookup: true}, nil) // a listed one still counts
	attempts := proxy.Attempts()
	if len(attempts) != maxAttempts {
		t.Errorf("%d destinations recorded, want %d", len(attempts), maxAttempts)
	}
	for _, attempt := range attempts {
		if attempt.Host == "n0.example" && attempt.Count != 2 {
			t.Errorf("n0.example counted %d times, want 2", attempt.Count)
		}
	}
}
