package main

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// TestExitStatusFromTypedErrors: main decides every status from the error's type, and only
// bad usage (a typed usage error, an unknown doctor check, cobra's own) is exit 2.
func TestExitStatusFromTypedErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{exitError{exitFailure}, exitFailure},
		{usagef("bad flag"), exitUsage},
		{&doctor.UnknownCheckError{ID: "nope"}, exitUsage},
		{fmt.Errorf("doctor: %w", &doctor.UnknownCheckError{ID: "nope"}), exitUsage},
		{failureError{errors.New("--output: read-only file system")}, exitFailure},
		{errors.New("anything else the doctor did not expect"), exitFailure},
		{&sandbox.UnavailableError{Reason: sandbox.ReasonNotFound}, exitUnavailable},
	} {
		if got := exitStatus(tc.err, io.Discard); got != tc.want {
			t.Errorf("exitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
