package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/install"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// installOptions are install's flags and what it needs besides.
type installOptions struct {
	streams
	global   *globalOptions
	manifest string
	mirror   string
	method   string
	timeout  time.Duration
	force    bool
	json     bool
	// arch, stallLimit and geteuid are fixed in production; tests set them.
	arch       string
	stallLimit time.Duration
	geteuid    func() int
}

func newInstallCmd(s streams, global *globalOptions) *cobra.Command {
	return newInstallCmdWith(s, global, runInstall)
}

// newInstallCmdWith lets a test see the parsed options instead of installing.
func newInstallCmdWith(s streams, global *globalOptions, runF func(context.Context, *installOptions) error) *cobra.Command {
	opts := &installOptions{streams: s, global: global, arch: runtime.GOARCH, geteuid: os.Geteuid}
	cmd := &cobra.Command{
		Use:   "install [--manifest FILE|URL] [--mirror URL] [--method auto|embedded|pinned|package] [--timeout D] [--force] [--json]",
		Short: "Install a pinned static bwrap, or bubblewrap from the package manager",
		Long: `Install bwrap without asking anything (stdin is never read).

pinned:  download the manifest's bwrap for this architecture, check its sha256 and size,
         place it at <home>/versions/<sha256[:16]>/bwrap, check that it runs, then point
         <home>/bin/bwrap at it in one rename. Sources are tried in order; one that cannot
         be reached is skipped, one that delivers wrong bytes stops the install.
package: apt-get, dnf, yum, zypper, pacman or apk, non-interactive, killed with its
         process group at the timeout. Needs root; otherwise prints the command to run.
embedded: a release build (make dist) carries the pinned static bwrap: checked against
         the pin like any source and installed with no network. A copy that is not the
         pin is refused.
auto:    embedded (when this build has it and it is the pin), then pinned, then package
         if no pinned source could be reached.

Installing the pin that is already active changes nothing. Any failure leaves the previous
install untouched. The default manifest is built in.

Every file read on this host (--manifest, a plain-path or file:// mirror or source) must
be a regular file: a symlink, FIFO or device there is refused at once (exit 2).
--timeout and SIGINT/SIGTERM end every phase, the wait for another installer's lock too.

Exit status: 0 installed (or already installed); 1 failed (or --timeout expired); 2 bad
usage, a bad manifest, or a refused local file; 128+N stopped by signal N.`,
		Example: `  bwrapkit install
  bwrapkit install --mirror https://mirror.example.internal/bwrap/ --timeout 2m
  bwrapkit install --manifest ./manifest.json --method pinned --json
  sudo bwrapkit install --method package
  bwrapkit install --home /opt/bwrapkit --force`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), opts) },
	}
	flags := cmd.Flags()
	flags.StringVar(&opts.manifest, "manifest", "", "read the manifest from `FILE` or an http(s) URL (default: the built-in one)")
	flags.StringVar(&opts.mirror, "mirror", "", "fetch every source's file from `URL` (or directory) instead of its own host")
	flags.StringVar(&opts.method, "method", string(install.Auto), "auto, embedded, pinned or package")
	flags.DurationVar(&opts.timeout, "timeout", 5*time.Minute, "give up on the whole install after this long")
	flags.BoolVar(&opts.force, "force", false, "reinstall even if the pinned bwrap is already active")
	flags.BoolVar(&opts.json, "json", false, `print {"schema","method","path","sha256","version","changed"} as JSON`)
	return cmd
}

// installReport is the --json output, schema bwrapkit.install/v1.
type installReport struct {
	Schema string `json:"schema"`
	install.Result
}

func runInstall(ctx context.Context, opts *installOptions) error {
	method, err := install.ParseMethod(opts.method)
	if err != nil {
		return usageError{err}
	}
	if opts.timeout <= 0 {
		return usagef("--timeout must be positive, got %s", opts.timeout)
	}
	home, err := installHome(opts)
	if err != nil {
		return err
	}
	signalCtx, stopSignals := catchSignals(ctx)
	defer stopSignals()
	ctx, cancel := context.WithTimeout(signalCtx, opts.timeout)
	defer cancel()

	artifact, err := chooseArtifact(ctx, opts, method)
	if err == nil {
		var result install.Result
		result, err = installArtifact(ctx, opts, home, method, artifact)
		if err == nil && opts.json {
			data, _ := json.MarshalIndent(installReport{Schema: "bwrapkit.install/v1", Result: result}, "", "  ")
			fmt.Fprintln(opts.Out, string(data))
		}
	}
	if err != nil && signalCtx.Err() != nil {
		// A signal, not the deadline: say so once, and exit as a shell reports a signal.
		fmt.Fprintf(opts.Err, "bwrapkit: install stopped (%v); the previous install is untouched\n", context.Cause(signalCtx))
		return exitError{interruptedStatus(signalCtx)}
	}
	return err
}

// installArtifact runs the install and sorts its failure: a refused local file (a FIFO or
// link given as a source) is bad input, anything else a failure.
func installArtifact(ctx context.Context, opts *installOptions, home string, method install.Method, artifact install.Artifact) (install.Result, error) {
	result, err := install.Install(ctx, install.Options{
		Home:          home,
		Artifact:      artifact,
		Method:        method,
		Embedded:      install.EmbeddedBwrap(),
		Force:         opts.force,
		StallLimit:    opts.stallLimit,
		Environ:       opts.Environ(),
		Geteuid:       opts.geteuid,
		PackageOutput: opts.Err, // stdout is kept for the result
		Progress:      &installProgress{out: opts.Err, terminal: opts.ErrIsTerminal},
	})
	var refused *safefile.Error
	switch {
	case errors.Is(err, install.ErrNoEmbedded):
		return result, usageError{err}
	case errors.Is(err, context.DeadlineExceeded):
		return result, failureError{fmt.Errorf("--timeout %s expired: %w", opts.timeout, err)}
	case errors.As(err, &refused):
		return result, usageError{err}
	case err != nil:
		return result, failureError{err}
	}
	return result, nil
}

// catchSignals makes a signal cancel ctx from here on, even before main's handler is in
// place (main registers it off the main goroutine to keep run's start-up short, and an
// install can reach its lock within that window): a signal's default action would end
// the install with its lock taken and a temp file behind.
func catchSignals(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case received := <-signals:
			cancel(signalled{received.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		cancel(nil)
	}
}

func installHome(opts *installOptions) (string, error) {
	home := opts.global.home(opts.streams)
	if home == "" {
		return "", usagef("cannot tell where bwrapkit's home is (no HOME): pass --home DIR or set BWRAPKIT_HOME")
	}
	absolute, err := filepath.Abs(home)
	if err != nil {
		return "", usagef("--home %s: %v", home, err)
	}
	return absolute, nil
}

// chooseArtifact reads and checks the manifest and picks this machine's pin, all before
// anything is downloaded: a bad manifest is bad usage.
func chooseArtifact(ctx context.Context, opts *installOptions, method install.Method) (install.Artifact, error) {
	manifest := install.Default()
	if opts.manifest != "" {
		data, err := install.ReadManifest(ctx, opts.manifest)
		var readErr *install.ManifestReadError
		switch {
		case errors.As(err, &readErr) && readErr.Remote:
			return install.Artifact{}, failureError{fmt.Errorf("fetching --manifest: %w", err)}
		case err != nil:
			return install.Artifact{}, usagef("--manifest: %w", err)
		}
		if manifest, err = install.ParseManifest(data); err != nil {
			return install.Artifact{}, usagef("--manifest %s: %v", opts.manifest, err)
		}
	}
	if method == install.Package {
		if opts.mirror != "" {
			return install.Artifact{}, usagef("--mirror applies to pinned sources, not to --method package")
		}
		return install.Artifact{}, nil
	}
	artifact, err := manifest.Artifact(opts.arch)
	if err != nil {
		return install.Artifact{}, usagef("%v; use a manifest with a %s artifact, or --method package", err, opts.arch)
	}
	if opts.mirror != "" {
		if artifact, err = artifact.WithMirror(opts.mirror); err != nil {
			return install.Artifact{}, usageError{err}
		}
	}
	return artifact, nil
}

// installProgress writes plain progress lines, and a progress bar per download when
// stderr is a terminal.
type installProgress struct {
	out      io.Writer
	terminal bool
}

func (p *installProgress) Note(message string) { fmt.Fprintf(p.out, "bwrapkit: %s\n", message) }

func (p *installProgress) Transfer(_ string, total int64) io.WriteCloser {
	if !p.terminal {
		return discardCloser{}
	}
	bar := &progressBar{out: p.out, total: total}
	bar.draw()
	return bar
}

// progressBar draws one download on a terminal, redrawn in place at most every
// barInterval. It is bwrapkit's own (a few lines), not a library's: a progress bar
// package is initialised in every bwrapkit process, `bwrapkit run` and its keeper
// included, although only `bwrapkit install` draws one.
type progressBar struct {
	out       io.Writer
	total     int64 // -1: unknown
	done      int64
	lastDrawn time.Time
}

const barInterval = 100 * time.Millisecond

func (b *progressBar) Write(chunk []byte) (int, error) {
	b.done += int64(len(chunk))
	if now := time.Now(); now.Sub(b.lastDrawn) >= barInterval {
		b.lastDrawn = now
		b.draw()
	}
	return len(chunk), nil
}

// Close ends the bar where the download stopped: a tar's member may come before the
// archive's end, and a failed download must not be drawn as complete.
func (b *progressBar) Close() error {
	b.draw()
	_, err := fmt.Fprintln(b.out)
	return err
}

func (b *progressBar) draw() { fmt.Fprint(b.out, "\r"+barLine(b.done, b.total, 30)) }

// barLine is the bar's text for done of total bytes (total -1: unknown), width cells wide.
func barLine(done, total int64, width int) string {
	if total <= 0 {
		return fmt.Sprintf("downloading %s", mebibytes(done))
	}
	fraction := min(float64(done)/float64(total), 1)
	filled := int(fraction * float64(width))
	return fmt.Sprintf("downloading %3d%% [%s%s] %s / %s", int(fraction*100),
		strings.Repeat("=", filled), strings.Repeat(" ", width-filled), mebibytes(done), mebibytes(total))
}

func mebibytes(bytes int64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }
