// Command bwrapkit makes bwrap a dependable, provable sandbox: doctor, install, run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bwrapkit/bwrapkit/doctor"
	"github.com/bwrapkit/bwrapkit/doctor/probe"
	_ "github.com/bwrapkit/bwrapkit/internal/earlysignal" // first: see its doc
	"github.com/bwrapkit/bwrapkit/netproxy/bridge"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
)

// Exit statuses decided here and only here.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitTimeout     = 124
	exitUnavailable = 125
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == probe.CommandName {
		// The doctor's probe inside the sandbox where no bwrapkit-helper is beside bwrapkit:
		// straight to it, with no command tree, signal handling or flag parsing to build.
		os.Exit(probe.Main(os.Args[2:], probe.BuildID(version), os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.BridgeCommand {
		// The network bridge inside the sandbox (see netproxy): straight to it, too.
		os.Exit(bridge.Main(os.Args[2:], os.Stderr))
	}
	// The run's keeper (see sandbox/lifetime): bwrapkit re-executed, before anything else.
	lifetime.KeeperMain()
	// A --git commit run's audit, which its keeper has done when that run's bwrapkit died
	// before doing it (see sandbox.AuditMain).
	sandbox.AuditMain()
	if problem := checkStartLimits(); problem != "" {
		fmt.Fprintln(os.Stderr, "bwrapkit: "+problem)
		os.Exit(exitUnavailable)
	}
	// Handlers first, before anything else runs. Until this line a signal takes its
	// default action (earlysignal undid an inherited ignore at start-up), which ends
	// bwrapkit before it has started a sandbox; from here on it cancels the run.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { cancel(signalled{(<-signals).(syscall.Signal)}) }()
	os.Exit(execute(ctx, os.Args[1:], newStreams()))
}

// signalled is the cause of a context cancelled by a signal to bwrapkit.
type signalled struct{ signal syscall.Signal }

func (s signalled) Error() string { return "interrupted by " + s.signal.String() }

// interruptedStatus is 128+N for the signal that cancelled ctx, as a shell reports it.
func interruptedStatus(ctx context.Context) int {
	var cause signalled
	if errors.As(context.Cause(ctx), &cause) {
		return 128 + int(cause.signal)
	}
	return 128 + int(syscall.SIGTERM)
}

// execute runs the command line and maps what it returns to an exit status.
func execute(ctx context.Context, args []string, streams streams) int {
	root := newRootCmd(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return exitStatus(err, streams.Err)
}

// exitError carries a status decided by a command (the sandboxed command's own status,
// doctor's verdict) that is not itself an error worth printing.
type exitError struct{ status int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.status) }

// usageError is bad input: exit 2 with a one-line reason.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// failureError is a failure with a message already fit for the user: exit 1.
type failureError struct{ err error }

func (e failureError) Error() string { return e.err.Error() }
func (e failureError) Unwrap() error { return e.err }

func exitStatus(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var exit exitError
	if errors.As(err, &exit) {
		return exit.status
	}
	var unavailable *sandbox.UnavailableError
	if errors.As(err, &unavailable) {
		fmt.Fprintf(stderr, "bwrapkit: %s\n", unavailable.Message())
		return exitUnavailable
	}
	fmt.Fprintf(stderr, "bwrapkit: %s\n", err)
	var usage usageError
	var unknownCheck *doctor.UnknownCheckError
	var failure failureError
	switch {
	case errors.As(err, &usage), errors.As(err, &unknownCheck), isCobraUsage(err):
		return exitUsage
	case errors.As(err, &failure):
		return exitFailure
	}
	return exitFailure
}
