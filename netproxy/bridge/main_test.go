package bridge

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseArgsTakesOnlyTheLayoutSandboxWrites(t *testing.T) {
	socket, listen, command, err := parseArgs([]string{"--socket", "/run/bwrapkit/proxy.sock", "--listen", "127.0.0.1:3128", "--", "go", "test"})
	if err != nil || socket != "/run/bwrapkit/proxy.sock" || listen != "127.0.0.1:3128" || !slices.Equal(command, []string{"go", "test"}) {
		t.Fatalf("parseArgs = %q %q %q %v", socket, listen, command, err)
	}
	for _, args := range [][]string{
		nil,
		{"--socket", "/s", "--listen", "127.0.0.1:1", "--"},         // no command
		{"--listen", "127.0.0.1:1", "--socket", "/s", "--", "true"}, // reordered
		{"--socket", "/s", "--listen", "127.0.0.1:1", "true"},       // no --
	} {
		if _, _, _, err := parseArgs(args); err == nil {
			t.Errorf("parseArgs(%q) accepted", args)
		}
	}
}

func TestMainRefusesBadUsageBeforeListening(t *testing.T) {
	var stderr bytes.Buffer
	if status := Main([]string{"--socket"}, &stderr); status != exitUsage || !strings.Contains(stderr.String(), "usage:") {
		t.Errorf("Main = %d, %q; want %d and the usage", status, stderr.String(), exitUsage)
	}
	stderr.Reset()
	if status := Main([]string{"--socket", "/nonexistent", "--listen", "::1:3128", "--", "true"}, &stderr); status != exitUnavailable || !strings.Contains(stderr.String(), "cannot listen") {
		t.Errorf("Main with an IPv6 listen address = %d, %q; want %d", status, stderr.String(), exitUnavailable)
	}
}

// execFailure gives 127 for nothing at the name, as bwrap's own execvp would, and 126
// with the reason for a file that is there and cannot be executed.
func TestExecFailureStatuses(t *testing.T) {
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "script")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingInterpreter := filepath.Join(dir, "orphan")
	if err := os.WriteFile(missingInterpreter, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		command []string
		status  int
	}{
		{"a bare name not on PATH", []string{"no-such-command-here"}, 127},
		{"a path to nothing", []string{filepath.Join(dir, "missing")}, 127},
		{"a file without execute permission", []string{notExecutable}, 126},
		{"a script whose interpreter is missing", []string{missingInterpreter}, 126},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		err := execCommand(c.command)
		if err == nil {
			t.Fatalf("%s: execCommand returned nil", c.name)
		}
		if status := execFailure(c.command[0], err, &stderr); status != c.status {
			t.Errorf("%s: status %d (%v), want %d", c.name, status, err, c.status)
		}
		if c.status == 126 && !strings.Contains(stderr.String(), "cannot be executed") {
			t.Errorf("%s: stderr %q names no reason", c.name, stderr.String())
		}
	}
	var execErr *exec.Error
	if err := execCommand([]string{"no-such-command-here"}); !errors.As(err, &execErr) {
		t.Errorf("a bare name not found: %v, want an *exec.Error", err)
	}
}
