package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/capped"
	"github.com/bwrapkit/bwrapkit/internal/probecache"
	"github.com/bwrapkit/bwrapkit/internal/version"
)

// Features is what one bwrap binary can do, read from its own --help and --version.
// Version order is not feature order (--bind-fd was backported to 0.6.3), so every
// decision is made on the options the binary lists, never on its version.
type Features struct {
	// Version is the X.Y.Z from "bubblewrap X.Y.Z", or "" for a custom build string.
	Version string
	// Build is the raw --version output, trimmed; custom builds print anything.
	Build string
	// Options holds every long option --help lists, without the leading "--".
	Options map[string]bool
}

// Has reports whether the binary lists the long option name (without "--").
func (f Features) Has(name string) bool { return f.Options[name] }

// Required are the options the runner cannot build its boundary without (a fresh copy).
func Required() []string {
	return []string{
		"unshare-all", "unshare-user", "share-net", "die-with-parent", "new-session",
		"cap-drop", "clearenv", "setenv", "ro-bind", "ro-bind-try", "bind", "symlink",
		"proc", "dev", "tmpfs", "remount-ro", "chdir", "json-status-fd", "seccomp",
	}
}

// Missing lists the required options the binary does not offer.
func (f Features) Missing() []string {
	var missing []string
	for _, name := range Required() {
		if !f.Has(name) {
			missing = append(missing, name)
		}
	}
	return missing
}

// IsBwrap reports whether the binary's --help lists any of bwrap's options at all: a
// binary that lists none is something else (an impostor, a wrapper that prints nothing).
func (f Features) IsBwrap() bool { return len(f.Missing()) < len(Required()) }

// parseFeatures reads the texts of `bwrap --help` and `bwrap --version`. An option is
// an indented line starting "--name"; the version is X.Y.Z of "bubblewrap X.Y.Z".
// (Plain string code rather than regexps: this runs on every `bwrapkit run`, and a
// compiled regexp costs more at start-up than the whole parse.)
func parseFeatures(help, versionText string) Features {
	features := Features{Build: strings.TrimSpace(versionText), Options: map[string]bool{}}
	for _, line := range strings.Split(help, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if len(trimmed) == len(line) || !strings.HasPrefix(trimmed, "--") {
			continue
		}
		name := trimmed[2:]
		if end := strings.IndexFunc(name, func(r rune) bool { return !isOptionRune(r) }); end >= 0 {
			name = name[:end]
		}
		if name != "" && name[0] != '-' {
			features.Options[name] = true
		}
	}
	if rest, ok := strings.CutPrefix(features.Build, "bubblewrap "); ok {
		rest = strings.TrimPrefix(strings.TrimSpace(rest), "v")
		if _, ok := version.Parse(rest); ok {
			features.Version = rest
		}
	}
	return features
}

func isOptionRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-'
}

// probeTimeout bounds each of --help and --version: an impostor that hangs must not
// hang its caller.
const probeTimeout = 5 * time.Second

// Probe runs `bwrap --help` and `bwrap --version` with a DefaultProber of the process's
// environment as it is now (its disk cache makes a repeated probe cheap).
func Probe(ctx context.Context, bwrapPath string) (Features, error) {
	return DefaultProber(os.Environ()).Probe(ctx, bwrapPath)
}

// Probe runs `bwrap --help` and `bwrap --version` once per binary (keyed by the file's
// identity, so a replaced binary is probed again; see package probecache) and parses what
// they print. A binary that cannot be executed at all is an *ExecError.
func (p Prober) Probe(ctx context.Context, bwrapPath string) (Features, error) {
	info, err := os.Stat(bwrapPath)
	if err != nil {
		return Features{}, err
	}
	identity := probecache.Key(bwrapPath, info)
	if p.memo != nil && identity != "" {
		if memo, ok := p.memo.Load(identity); ok {
			return memo.(Features), nil
		}
	}
	if cached, ok := p.cached(identity); ok {
		p.remember(identity, cached)
		return cached, nil
	}
	help, helpErr := probeOutput(ctx, bwrapPath, "--help")
	if execErr := asExecError(bwrapPath, helpErr); execErr != nil {
		return Features{}, execErr
	}
	if errors.Is(helpErr, capped.ErrExceeded) {
		return Features{}, fmt.Errorf("%s --help: %w", bwrapPath, helpErr)
	}
	version, versionErr := probeOutput(ctx, bwrapPath, "--version")
	if errors.Is(versionErr, capped.ErrExceeded) {
		return Features{}, fmt.Errorf("%s --version: %w", bwrapPath, versionErr)
	}
	if helpErr != nil && help == "" {
		return Features{}, fmt.Errorf("%s --help: %w", bwrapPath, helpErr)
	}
	if versionErr != nil && version == "" {
		return Features{}, fmt.Errorf("%s --version: %w", bwrapPath, versionErr)
	}
	features := parseFeatures(help, version)
	p.remember(identity, features)
	p.store(identity, features)
	return features, nil
}

func (p Prober) remember(identity string, features Features) {
	if p.memo != nil && identity != "" {
		p.memo.Store(identity, features)
	}
}

// Capable probes bwrapPath and refuses it, as an *UnavailableError, when it cannot be
// executed or lacks an option the boundary needs: what Run checks, for callers that
// build the argv themselves.
func (p Prober) Capable(ctx context.Context, bwrapPath string) (Features, error) {
	// First, since bwrap itself misbehaves without it (its --help then lists nothing):
	// every bind is proven through /proc/self/fd (see openSource) and the finished
	// sandbox is inspected through /proc/PID, so without /proc nothing can be.
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return Features{}, &UnavailableError{Reason: ReasonHardening, Bwrap: bwrapPath, Err: fmt.Errorf("/proc is not mounted where bwrapkit runs (%v), and the sandbox's binds and mounts are proven through it; run bwrapkit where /proc is mounted (mount -t proc proc /proc)", err)}
	}
	features, err := p.Probe(ctx, bwrapPath)
	var execErr *ExecError
	switch {
	case errors.As(err, &execErr):
		return Features{}, &UnavailableError{Reason: ReasonNotExecutable, Bwrap: bwrapPath, Err: execErr}
	case err != nil:
		return Features{}, &UnavailableError{Reason: ReasonUnsupported, Bwrap: bwrapPath, Missing: Required(), NotBwrap: true, Err: err}
	}
	if missing := features.Missing(); len(missing) > 0 {
		return Features{}, &UnavailableError{Reason: ReasonUnsupported, Bwrap: bwrapPath, Missing: missing, NotBwrap: !features.IsBwrap()}
	}
	return features, nil
}

// probeOutput runs the binary with one argument and no stdin, returning stdout and
// stderr together (old bwraps print --help to stderr). A binary that prints more than
// capped.Limit is stopped there and is an error: bwrap's answer is a few KiB, and an
// impostor printing forever would otherwise cost its whole timeout and the memory of
// everything it printed.
func probeOutput(ctx context.Context, bwrapPath, arg string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	out := capped.NewHead(cancel)
	cmd := exec.CommandContext(ctx, bwrapPath, arg)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if out.Exceeded() {
		return "", fmt.Errorf("%w, so it is not bwrap (whose answer is a few KiB); it was stopped", out.Err())
	}
	return out.String(), err
}
