package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/doctor"
	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/render"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/doctor/selftest"
	"github.com/bwrapkit/bwrapkit/internal/atomicfile"
	"github.com/bwrapkit/bwrapkit/internal/probecache"
)

type doctorOptions struct {
	streams
	global  *globalOptions
	format  string
	json    bool
	output  string
	fix     bool
	verbose bool
	checks  []string
	// probe runs bwrapkit's self-test probe; default: this executable's hidden subcommand.
	probe probe.Command
	// fixEnv is what the fixer acts through; zero is the real host.
	fixEnv fixEnv
	// tempDir is where the self-tests make their files; "" is os.TempDir().
	tempDir string
}

var doctorFormats = []string{"text", "json", "prometheus"}

func newDoctorCmd(s streams, global *globalOptions) *cobra.Command {
	return newDoctorCmdWith(s, global, runDoctor)
}

// newDoctorCmdWith lets a test set the options flags cannot (probe, fixEnv, tempDir).
func newDoctorCmdWith(s streams, global *globalOptions, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{streams: s, global: global}
	cmd := &cobra.Command{
		Use:   "doctor [--json | --format text|json|prometheus] [--output FILE] [--check ID]... [--fix] [-v]",
		Short: "Say whether this host can sandbox, why not, and what to do",
		Long: `Check this host and its bwrap, and prove the sandbox boundary with live self-tests
(run through the same code path as "bwrapkit run"). Checks run concurrently and print in a
fixed order; a check whose prerequisite failed is skipped with the reason. Never prompts.

Checks: ` + strings.Join(doctor.IDs(), ", ") + `.

--fix applies the remedies that can be automated, then runs the checks again and reports
that run (at most three runs: an install, then the fixes for the bwrap it installed):
  install           no usable bwrap: install the pinned static bwrap into bwrapkit's home
                    (as "bwrapkit install": method auto, at most 5m). No root needed.
  apparmor-profile  as root: write /etc/apparmor.d/bwrapkit-<path> granting userns to the
                    exact bwrap in use, then load it with apparmor_parser -r.
  sysctl            as root: set the userns knob now (sysctl -w) and at boot
                    (/etc/sysctl.d/90-bwrapkit-userns.conf). This changes host policy.
  remove-setuid     as root, only on bwrapkit's own install: chmod u-s.
Without root, or where a fix is not bwrapkit's to make, nothing is changed and the exact
commands are printed instead. Files bwrapkit did not write are never overwritten. What
--fix does, and how to undo it, goes to stderr as "bwrapkit: fix:" lines; stdout (or
--output) carries only the final report.

Exit status: 0 healthy (every check ok, warn or skip); 1 a check failed; 2 bad usage.
With --fix, the status is that of the last run of the checks.`,
		Example: `  bwrapkit doctor
  bwrapkit doctor -v --check launch
  bwrapkit doctor --json | jq '.checks[] | select(.status != "ok")'
  bwrapkit doctor --format prometheus --output /var/lib/node_exporter/textfile/bwrapkit.prom
  bwrapkit doctor --fix
  sudo bwrapkit doctor --fix --bwrap /usr/bin/bwrap`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("json") && cmd.Flags().Changed("format") && opts.format != "json" {
				return usagef("--json and --format %s contradict each other", opts.format)
			}
			if opts.json {
				opts.format = "json"
			}
			return runF(cmd.Context(), opts)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&opts.format, "format", "text", "output format: text, json or prometheus")
	flags.BoolVar(&opts.json, "json", false, "same as --format json (schema bwrapkit.doctor/v1)")
	flags.StringVar(&opts.output, "output", "", "write the report to `FILE` atomically instead of stdout")
	flags.BoolVar(&opts.fix, "fix", false, "apply the remedies that can be automated, then check again")
	flags.BoolVarP(&opts.verbose, "verbose", "v", false, "show each check's detail (text format)")
	flags.StringArrayVar(&opts.checks, "check", nil, "run only check `ID` and what it needs (repeatable)")
	return cmd
}

func runDoctor(ctx context.Context, opts *doctorOptions) error {
	if !slices.Contains(doctorFormats, opts.format) {
		return usagef("unknown --format %q (want text, json or prometheus)", opts.format)
	}
	for _, id := range opts.checks {
		if !slices.Contains(doctor.IDs(), id) {
			return usageError{&doctor.UnknownCheckError{ID: id}}
		}
	}
	probe, err := opts.probeCommand()
	if err != nil {
		return err
	}
	// The self-tests' runs are kept as `bwrapkit run`'s are (docs/lifetime.md): a doctor
	// killed mid-run (a preflight's timeout, the OOM killer) left a bwrap child blocked
	// between its clone and its uid map, forever. bwrapkit-helper beside bwrapkit where it
	// fits, else the probe's binary, which is bwrapkit itself. The same helper is the
	// probe, too: it starts in a third of bwrapkit's CPU, three times per doctor.
	keeper, helperNote := probe.Argv[0], ""
	if programs, err := findPrograms(); err == nil && programs.helper != "" {
		keeper = programs.helper
		if len(opts.probe.Argv) == 0 && programs.helper == programs.guard {
			// bwrapkit-helper it is: asked first whether it serves this build, since a
			// helper left from another release would fail every self-test's probe and
			// pass for a host that cannot sandbox. One that does not is passed over for
			// bwrapkit itself, and the launch check warns about it.
			if helperNote = helperServes(ctx, opts.Environ(), programs.helper, probe.Argv[2]); helperNote == "" {
				probe.Argv[0] = programs.helper
			} else {
				keeper = probe.Argv[0]
			}
		}
	}
	cfg := doctor.Config{
		Query:       opts.global.query(opts.streams),
		Getenv:      opts.Getenv,
		Environ:     opts.Environ(),
		Probe:       probe,
		Keeper:      keeper,
		HelperNote:  helperNote,
		Checks:      opts.checks,
		TempDir:     opts.tempDir,
		ToolVersion: version,
	}
	// doctor.Run fails only on a bad configuration, a typed error main maps to a status.
	result, err := doctor.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if opts.fix {
		recheck := func(ctx context.Context) (report.Report, error) { return doctor.Run(ctx, cfg) }
		if result, err = newFixer(opts).Run(ctx, recheck, result); err != nil {
			return err
		}
	}
	if err := opts.write(result); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return exitError{interruptedStatus(ctx)}
	}
	if !result.Healthy() {
		return exitError{exitFailure}
	}
	return nil
}

// probeCommand is this executable's hidden probe subcommand, at its resolved path: the
// sandbox binds it read-only at that path.
func (opts *doctorOptions) probeCommand() (probe.Command, error) {
	if len(opts.probe.Argv) > 0 {
		return opts.probe, nil
	}
	executable, err := os.Executable()
	if err != nil {
		// Linux answers from /proc/self/exe: in a chroot or a build root without /proc
		// there is none, and the doctor must still report (the launch check then names the
		// missing proc). argv[0] is how this process was started, as the shell found it.
		executable, err = argv0Executable(os.Args[0], opts.Getenv("PATH"))
	}
	if err == nil {
		executable, err = filepath.EvalSymlinks(executable)
	}
	if err != nil {
		return probe.Command{}, failureError{fmt.Errorf("cannot find bwrapkit's own executable for the self-tests: %w", err)}
	}
	return probe.Command{Argv: []string{executable, probeCommandName, "build=" + probe.BuildID(version)}}, nil
}

// helperServes asks helper's probe whether it serves a doctor of this build (build is
// the probe's "build=" argument): "" when it does, else why not, in its words. The answer
// "it does" is kept in the probe cache, keyed by the helper file's identity (a replaced
// helper is asked again) and the build: the question costs a program start, which a
// doctor run every minute need not pay each time. A forged entry can only skip the
// question: a helper that then refuses fails the launch, never passes it.
func helperServes(ctx context.Context, environ []string, helper, build string) string {
	key := ""
	if info, err := os.Stat(helper); err == nil {
		key = "probe-handshake|" + probecache.Key(helper, info) + "|" + build
	}
	dirs := probecache.Dirs(environ)
	if entry, ok := probecache.Load(dirs, key); ok && entry.Build == build {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, helper, probeCommandName, build, "noop")
	cmd.Env, cmd.Stderr = []string{}, &stderr
	err := cmd.Run()
	if err == nil {
		probecache.Store(dirs, key, probecache.Entry{Version: "serves", Build: build})
		return ""
	}
	if last := selftest.LastLine(stderr.String()); last != "" {
		return fmt.Sprintf("%s (%v)", last, err)
	}
	return fmt.Sprintf("%s %s: %v", helper, probeCommandName, err)
}

// argv0Executable is argv[0] as an absolute path: as given when it names a path, else
// searched on PATH as the shell did.
func argv0Executable(argv0, path string) (string, error) {
	if strings.Contains(argv0, "/") {
		return filepath.Abs(argv0)
	}
	for _, dir := range filepath.SplitList(path) {
		candidate := filepath.Join(dir, argv0)
		if info, err := os.Stat(candidate); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 && filepath.IsAbs(candidate) {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH", argv0)
}

// write renders the report to stdout, or atomically to --output.
func (opts *doctorOptions) write(result report.Report) error {
	var out bytes.Buffer
	var err error
	switch opts.format {
	case "json":
		err = render.JSON(&out, result)
	case "prometheus":
		err = render.Prometheus(&out, result)
	default:
		color := opts.output == "" && opts.OutIsTerminal && opts.Getenv("NO_COLOR") == ""
		err = render.Text(&out, result, render.TextOptions{Color: color, Verbose: opts.verbose})
	}
	if err != nil {
		return err
	}
	if opts.output == "" {
		_, err = opts.Out.Write(out.Bytes())
		return err
	}
	if err := atomicfile.Write(opts.output, out.Bytes(), 0o644); err != nil {
		return failureError{fmt.Errorf("--output: %w", err)}
	}
	return nil
}
