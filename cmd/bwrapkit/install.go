package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/install"
)

func init() { extraCommands = append(extraCommands, newInstallCmd) }

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
		Use:   "install [--manifest FILE|URL] [--mirror URL] [--method auto|pinned|package] [--timeout D] [--force] [--json]",
		Short: "Install a pinned static bwrap, or bubblewrap from the package manager",
		Long: `Install bwrap without asking anything (stdin is never read).

pinned:  download the manifest's bwrap for this architecture, check its sha256 and size,
         place it at <home>/versions/<sha256[:16]>/bwrap, check that it runs, then point
         <home>/bin/bwrap at it in one rename. Sources are tried in order; one that cannot
         be reached is skipped, one that delivers wrong bytes stops the install.
package: apt-get, dnf, yum, zypper, pacman or apk, non-interactive, killed with its
         process group at the timeout. Needs root; otherwise prints the command to run.
auto:    pinned, then package if no pinned source could be reached.

Installing the pin that is already active changes nothing. Any failure leaves the previous
install untouched. The default manifest is built in.

Exit status: 0 installed (or already installed); 1 failed; 2 bad usage or a bad manifest.`,
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
	flags.StringVar(&opts.method, "method", string(install.Auto), "auto, pinned or package")
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
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()

	artifact, err := chooseArtifact(ctx, opts, method)
	if err != nil {
		return err
	}
	result, err := install.Install(ctx, install.Options{
		Home:          home,
		Artifact:      artifact,
		Method:        method,
		Force:         opts.force,
		StallLimit:    opts.stallLimit,
		Environ:       opts.Environ(),
		Geteuid:       opts.geteuid,
		PackageOutput: opts.Err, // stdout is kept for the result
		Progress:      &installProgress{out: opts.Err, terminal: opts.ErrIsTerminal},
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return failureError{fmt.Errorf("--timeout %s expired: %w", opts.timeout, err)}
	}
	if err != nil {
		return failureError{err}
	}
	if opts.json {
		data, _ := json.MarshalIndent(installReport{Schema: "bwrapkit.install/v1", Result: result}, "", "  ")
		fmt.Fprintln(opts.Out, string(data))
	}
	return nil
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
		if err != nil {
			if strings.Contains(opts.manifest, "://") {
				return install.Artifact{}, failureError{fmt.Errorf("fetching --manifest: %w", err)}
			}
			return install.Artifact{}, usagef("--manifest: %v", err)
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
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.out),
		progressbar.OptionSetDescription("downloading"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.out) }),
	)
	return barCloser{bar}
}

// barCloser ends the bar where the download stopped: a tar's member may come before the
// archive's end, and a failed download must not be drawn as complete.
type barCloser struct{ *progressbar.ProgressBar }

func (b barCloser) Close() error { return b.Exit() }

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }
