package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestRunRefusesOnItsOwn drives the refusals the CLI makes through Run alone, as a
// library caller meets them: each is an *UnavailableError of its reason, and the command
// (which would leave a marker) never runs. The control run, through the real bwrap,
// must start: otherwise a Run that refuses everything would pass.
func TestRunRefusesOnItsOwn(t *testing.T) {
	system := livetest.SystemBwrap(t)
	workdir := t.TempDir()
	marker := filepath.Join(workdir, "ran")
	policy, err := NewPolicy(Request{Workdir: workdir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	planted := filepath.Join(workdir, "bwrap") // a real bwrap, where the sandbox can write
	copyFile(t, system, planted, 0o755)
	notExecutable := filepath.Join(elsewhere, "bwrap-noexec")
	copyFile(t, system, notExecutable, 0o644)
	impostor := filepath.Join(elsewhere, "impostor")
	if err := livetest.WriteProgram(impostor, []byte("#!/bin/sh\necho usage: nothing\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		bwrap  string
		policy Policy
		want   Reason
	}{
		{"no bwrap named", "", policy, ReasonNotFound},
		{"bwrap missing", filepath.Join(elsewhere, "none"), policy, ReasonNotFound},
		{"bwrap not executable", notExecutable, policy, ReasonNotExecutable},
		{"not bwrap", impostor, policy, ReasonUnsupported},
		{"bwrap inside the workdir", planted, policy, ReasonUntrusted},
		{"policy not from NewPolicy", system, Policy{Workdir: workdir}, ReasonInvalidPolicy},
	} {
		_, err := Run(context.Background(), tc.policy, []string{"/usr/bin/touch", marker}, Options{Bwrap: tc.bwrap})
		var unavailable *UnavailableError
		if !errors.As(err, &unavailable) || unavailable.Reason != tc.want {
			t.Errorf("%s: want %s, got %v", tc.name, tc.want, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the command ran", tc.name)
		}
	}
	result, err := Run(context.Background(), policy, []string{"/usr/bin/touch", marker}, Options{Bwrap: system})
	if err != nil || result.ExitCode != 0 {
		t.Fatalf("control: %+v %v", result, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("control: the command did not run: %v", err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}
