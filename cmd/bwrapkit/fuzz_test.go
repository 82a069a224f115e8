package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

// FuzzRunFlags: any words given to `bwrapkit run --print-policy` (flags, values, a policy
// file named by them) end in exit 0 with the effective policy (or the help) on stdout, or in exit 2 or
// 125 with a message on stderr: never a panic, never exit 0 with nothing to show, never
// a status the contract lacks. --print-policy runs nothing and makes nothing, so every
// word is safe to try. The words are the input split at NUL bytes. Seeded with the bad
// inputs once accepted or garbled; CI runs it for a bounded time (make fuzz).
func FuzzRunFlags(f *testing.F) {
	dir := f.TempDir()
	policy := filepath.Join(dir, "policy.json")
	os.WriteFile(policy, []byte(`{"schema":"bwrapkit.policy/v1","ro":["/usr"],"ro":["/opt"]}`), 0o644)
	nul := filepath.Join(dir, "nul.json")
	os.WriteFile(nul, []byte(`{"schema":"bwrapkit.policy/v1","env":["A=b\u0000c"]}`), 0o644)
	os.Mkdir(filepath.Join(dir, "adir"), 0o755)
	for _, seed := range [][]string{
		{},
		{"--ro", "."},
		{"--report", filepath.Join(dir, "adir")},
		{"--report", strings.Repeat("r", 300)},
		{"--policy", policy},
		{"--policy", nul},
		{"--env", "A"},
		{"--limit", "nproc=0"},
		{"--timeout", "-1s"},
		{"--git", "write"},
		{"--workdir", "/"},
		{"--rw", "/etc", "--net"},
		{"--cwd", "/abs", "--protect", "../x"},
		{"--path", "/usr/bin:/bin"},
		{"--pass-env", "A=B", "--home-dir", "/nonexistent"},
		{"--", "true"},
	} {
		f.Add(strings.Join(seed, "\x00"))
	}
	workdir := f.TempDir()
	environ := []string{"PATH=/usr/bin:/bin", "HOME=" + f.TempDir(), "XDG_CACHE_HOME=" + filepath.Join(f.TempDir(), "cache")}
	f.Fuzz(func(t *testing.T, input string) {
		words := []string{}
		if input != "" {
			words = strings.Split(input, "\x00")
		}
		if strings.Contains(input, "print-policy") {
			return // --print-policy=false would run the words as a command: never here
		}
		var stdout, stderr bytes.Buffer
		s := streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr, Getenv: getenvFrom(environ), Environ: func() []string { return environ }}
		args := append([]string{"run", "--print-policy", "--workdir", workdir}, words...)
		status := execute(context.Background(), args, s)
		switch status {
		case exitOK:
			if strings.Contains(stdout.String(), "Usage:\n  bwrapkit run") {
				return // -h or --help among the words: the help is the output
			}
			var shown sandbox.PolicyFile
			if err := json.Unmarshal(stdout.Bytes(), &shown); err != nil || shown.Schema != sandbox.PolicySchema {
				t.Fatalf("%q: exit 0 without the policy on stdout (%v): %q", words, err, stdout.String())
			}
		case exitUsage, exitUnavailable, exitFailure:
			if strings.TrimSpace(stderr.String()) == "" {
				t.Fatalf("%q: exit %d with no message", words, status)
			}
		default:
			t.Fatalf("%q: exit %d, which --print-policy never gives", words, status)
		}
		if strings.Contains(stderr.String(), "goroutine ") || strings.Contains(stderr.String(), "panic") {
			t.Fatalf("%q: a stack dump: %s", words, stderr.String())
		}
	})
}
