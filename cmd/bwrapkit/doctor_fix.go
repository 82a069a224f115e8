package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/fix"
	"github.com/bwrapkit/bwrapkit/install"
)

// The wiring of `doctor --fix`: fix.Fixer acts; this file gives it stderr, the tools
// on this command's PATH, bwrapkit's home and the install of `bwrapkit install`.

const fixInstallTimeout = 5 * time.Minute // as `bwrapkit install --timeout`

// fixEnv is what tests change about doctor --fix. Zero means the real host and the
// built-in pin.
type fixEnv struct {
	fix.Env
	// Artifact is what the install fix installs; zero means the built-in manifest's pin
	// for this machine.
	Artifact install.Artifact
	// Embedded is the bwrap this build carries; nil means install.EmbeddedBwrap() (none in
	// a build without the embedbwrap tag).
	Embedded []byte
}

// newFixer is fix.Fixer with this command's stderr, PATH, home and install.
func newFixer(opts *doctorOptions) *fix.Fixer {
	env := opts.fixEnv.Env
	env.Err = opts.Err
	if env.LookPath == nil {
		env.LookPath = fix.ToolPath(opts.Getenv("PATH"))
	}
	if env.RunCommand == nil {
		env.RunCommand = fix.RunTool
	}
	if home, err := installHome(&installOptions{streams: opts.streams, global: opts.global}); err == nil {
		env.Home = home
	}
	env.Install = opts.installForFix
	return fix.New(env)
}

// installForFix is `bwrapkit install` with its defaults (method auto, the built-in pin,
// five minutes), narrated as fix lines.
func (opts *doctorOptions) installForFix(ctx context.Context, say func(format string, args ...any)) (fix.Installed, error) {
	home, err := installHome(&installOptions{streams: opts.streams, global: opts.global})
	if err != nil {
		return fix.Installed{}, err
	}
	artifact := opts.fixEnv.Artifact
	if artifact.SHA256 == "" {
		if artifact, err = install.Default().Artifact(runtime.GOARCH); err != nil {
			return fix.Installed{}, err
		}
	}
	// The same choice as `bwrapkit install`: a release build installs the bwrap it carries
	// (checked against the pin), with no network; only then the pinned download, then the
	// package manager.
	embedded := opts.fixEnv.Embedded
	if embedded == nil {
		embedded = install.EmbeddedBwrap()
	}
	say("installing bwrap %s into %s (method auto, at most %s)", artifact.Version, home, fixInstallTimeout)
	ctx, cancel := context.WithTimeout(ctx, fixInstallTimeout)
	defer cancel()
	result, err := install.Install(ctx, install.Options{
		Home:          home,
		Artifact:      artifact,
		Method:        install.Auto,
		Embedded:      embedded,
		Environ:       opts.Environ(),
		Geteuid:       opts.fixEnv.Geteuid,
		PackageOutput: opts.Err,
		Progress:      fixProgress{say},
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fix.Installed{}, fmt.Errorf("gave up after %s: %w", fixInstallTimeout, err)
	}
	if err != nil {
		return fix.Installed{}, err
	}
	installed := fix.Installed{Path: result.Path, Changed: result.Changed}
	switch {
	case !result.Changed:
		say("bwrap %s was already installed at %s", result.Version, result.Path)
	case result.Method == install.Pinned || result.Method == install.Embedded:
		say("to undo the install: rm -r %s %s", filepath.Join(home, "bin", "bwrap"), filepath.Join(home, "versions", artifact.ID()))
	default:
		say("installed bwrap %s at %s by the package manager; to undo, remove its bubblewrap package", result.Version, result.Path)
	}
	return installed, nil
}

// fixProgress shows the install's progress as plain fix lines.
type fixProgress struct {
	say func(format string, args ...any)
}

func (p fixProgress) Note(message string) { p.say("install: %s", message) }

func (fixProgress) Transfer(string, int64) io.WriteCloser { return discardCloser{} }
