// Command bwrapkit-helper is the lean half of bwrapkit: the two programs a run starts
// besides bwrapkit itself, the run's keeper (package sandbox/lifetime) and the network
// bridge inside the sandbox (package netproxy/bridge), and the doctor's probe inside its
// sandboxes (package doctor/probe), in a binary that links nothing else. bwrapkit uses it when it lies beside bwrapkit's own binary (as make build and the
// release archives put it), and is its own helper otherwise.
//
// Why a second binary: both start on every run, and a Go program initialises every
// package it links before main. bwrapkit links the installer's archive codecs, the
// doctor and HTTP; started for a few system calls, it spent most of its start-up on them
// (docs/run.md#speed has the figures). It is not for direct use.
package main

import (
	"fmt"
	"os"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
)

// version is set at build time with -ldflags "-X main.version=...", as bwrapkit's is: the
// doctor's probe refuses to serve a doctor of another build.
var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case lifetime.KeeperCommand:
			os.Exit(lifetime.Main(os.Args[2:]))
		case bridge.Command:
			os.Exit(bridge.Main(os.Args[2:], os.Stderr))
		case probe.CommandName:
			os.Exit(probe.Main(os.Args[2:], probe.BuildID(version), os.Stdout, os.Stderr))
		}
	}
	fmt.Fprintln(os.Stderr, "bwrapkit-helper: bwrapkit starts it (a run's keeper, its network bridge, the doctor's probe); it is not for direct use")
	os.Exit(2)
}
