package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestE2ELookupsInsideAreRefusedAndReported: tools that resolve names themselves (glibc's
// getent, Go's own resolver), with the proxy variables taken away, ask the sandbox's
// loopback resolver address: each gets an immediate refusal and no address, and the
// names land in the report's network_denied and the summary on stderr, without --net and
// with --net-allow. On every bwrap, as root and (make test-unprivileged) as nobody.
func TestE2ELookupsInsideAreRefusedAndReported(t *testing.T) {
	script := strings.Join([]string{
		"unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY",
		"getent hosts glibc-lookup.example; echo getent=$?",
		"GODEBUG=netdns=go GOPROXY=https://go-lookup.example GOSUMDB=off GOFLAGS=-mod=mod go mod download example.com/m@v1.0.0 2>&1; echo go=$?",
	}, "\n")
	for _, bwrap := range livetest.Bwraps(t) {
		environ, _ := attackEnv(t, bwrap.Path)
		workdir := livetest.TempDir(t)
		for _, allow := range [][]string{nil, {"registry.example.org"}} {
			t.Run(bwrap.Name+"/allow="+strings.Join(allow, ","), func(t *testing.T) {
				report := filepath.Join(livetest.TempDir(t), "report.json")
				args := []string{"run", "--workdir", workdir, "--path", goBin, "--report", report}
				for _, host := range allow {
					args = append(args, "--net-allow", host)
				}
				// What the sandbox and go's start cost on this loaded machine now comes on
				// top of the bound for the two refusals.
				began := time.Now()
				if got := binaryRun(t, environ, append(args, "--", "go", "version")...); got.status != 0 {
					t.Fatalf("go version: %d %s", got.status, got.stderr)
				}
				ctx, cancel := context.WithTimeout(context.Background(), refusedBound+time.Since(began))
				defer cancel()
				cmd := exec.CommandContext(ctx, builtBinary, append(args, "--", "sh", "-c", script)...)
				cmd.Env = environ
				status, stdout, stderr := runStatus(t, cmd)
				if ctx.Err() != nil {
					t.Fatalf("the lookups were still waiting after %v: %s %s", refusedBound, stdout, stderr)
				}
				if status != 0 || !strings.Contains(stdout, "getent=2") || strings.Contains(stdout, "go=0") {
					t.Errorf("status %d, stdout %q: want getent to find nothing (2) and go to fail", status, stdout)
				}
				got := readNetReport(t, report)
				for _, name := range []string{"glibc-lookup.example", "go-lookup.example"} {
					if !slices.Contains(got.Denied, name) {
						t.Errorf("report network_denied %v: %s is missing", got.Denied, name)
					}
					if !strings.Contains(stderr, name) {
						t.Errorf("stderr does not name %s: %q", name, stderr)
					}
				}
				if allow != nil && !strings.Contains(stderr, "refused the lookup of") {
					t.Errorf("with --net-allow, stderr %q does not say the lookup inside was refused", stderr)
				}
			})
		}
	}
}
