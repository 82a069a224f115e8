package netproxy

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
)

// A sandbox without the host's network has no /etc/resolv.conf, so glibc's, musl's and
// Go's resolvers all ask 127.0.0.1:53 (Go also [::1]:53): the sandbox's own loopback.
// The proxy answers there, on sockets the bridge made in the sandbox's network
// namespace and the proxy bound (resolver.go), so a tool that resolves names itself
// (ignoring the proxy variables) gets an immediate REFUSED, and the name it wanted
// reaches the report. Nothing is ever resolved inside: the answer carries no address,
// for any name.

// question is the part of a DNS query a refusal echoes and the report needs.
type question struct {
	id   uint16
	rd   bool   // recursion desired, echoed as resolvers do
	name string // lower case, no trailing dot; "" for the root
	raw  []byte // the question section as asked (name, type, class)
}

const (
	dnsHeaderLen  = 12
	dnsRcodeRefus = 5
	dnsFlagQR     = 1 << 15
	dnsFlagRD     = 1 << 8
	dnsOpcodeMask = 0xf << 11
	maxDNSPacket  = 512 // a query never needs more; longer ones are no query of ours
)

// parseQuery reads a standard query with one question (pure). Anything else (a
// response, another opcode, compression in the question, a truncated packet) is no
// query to answer.
func parseQuery(packet []byte) (question, error) {
	if len(packet) < dnsHeaderLen || len(packet) > maxDNSPacket {
		return question{}, errors.New("not a DNS query: bad length")
	}
	flags := binary.BigEndian.Uint16(packet[2:])
	if flags&dnsFlagQR != 0 || flags&dnsOpcodeMask != 0 {
		return question{}, errors.New("not a standard query")
	}
	if binary.BigEndian.Uint16(packet[4:]) != 1 {
		return question{}, errors.New("not one question")
	}
	var labels []string
	at := dnsHeaderLen
	for {
		if at >= len(packet) {
			return question{}, errors.New("truncated name")
		}
		length := int(packet[at])
		at++
		if length == 0 {
			break
		}
		if length > 63 || at+length > len(packet) {
			return question{}, errors.New("bad label") // 0xc0 and above: a pointer, never in a query's question
		}
		labels = append(labels, strings.ToLower(string(packet[at:at+length])))
		at += length
	}
	if at+4 > len(packet) {
		return question{}, errors.New("truncated question")
	}
	return question{
		id:   binary.BigEndian.Uint16(packet),
		rd:   flags&dnsFlagRD != 0,
		name: strings.Join(labels, "."),
		raw:  packet[dnsHeaderLen : at+4],
	}, nil
}

// refusal is the REFUSED answer to q (pure): the question echoed, no records.
func (q question) refusal() []byte {
	answer := make([]byte, dnsHeaderLen, dnsHeaderLen+len(q.raw))
	binary.BigEndian.PutUint16(answer, q.id)
	flags := uint16(dnsFlagQR | dnsRcodeRefus)
	if q.rd {
		flags |= dnsFlagRD
	}
	binary.BigEndian.PutUint16(answer[2:], flags)
	binary.BigEndian.PutUint16(answer[4:], 1)
	return append(answer, q.raw...)
}

// ServeDNS answers every query on conn with REFUSED, after passing the name asked to
// lookedUp (so the report has it before the tool can exit on the answer). It returns
// when conn closes.
func ServeDNS(conn net.PacketConn, lookedUp func(name string)) error {
	buffer := make([]byte, maxDNSPacket+1)
	for {
		n, from, err := conn.ReadFrom(buffer)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		q, err := parseQuery(buffer[:n])
		if err != nil {
			continue
		}
		if validName(q.name) {
			lookedUp(q.name)
		}
		conn.WriteTo(q.refusal(), from)
	}
}
