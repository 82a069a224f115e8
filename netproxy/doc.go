// Package netproxy is the allowlist proxy a sandbox without the host's network reaches
// the network through: HTTP and HTTPS (CONNECT) only, names resolved on the host, every
// host outside the list refused at once with a message naming the flags that allow it.
// The proxy serves a listener of the sandbox's own loopback, which the bridge inside
// makes and hands over through a unix socket (handover.go).
package netproxy
