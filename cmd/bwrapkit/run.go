package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// runOptions are the flags shared by run and argv, and what run needs besides.
type runOptions struct {
	streams
	global  *globalOptions
	request sandbox.Request
	timeout time.Duration
	report  string
	command []string
}

func addRunFlags(cmd *cobra.Command, opts *runOptions) {
	flags := cmd.Flags()
	// Everything after the command is the command's, even words that look like flags.
	flags.SetInterspersed(false)
	flags.StringVar(&opts.request.Workdir, "workdir", "", "the one read-write directory, and the command's cwd and HOME (default: current directory)")
	flags.StringArrayVar(&opts.request.ReadOnly, "ro", nil, "bind `PATH` read-only at the same path (repeatable)")
	flags.StringArrayVar(&opts.request.Protect, "protect", nil, "re-bind `PATH` (relative to the workdir) read-only (repeatable); .git always is")
	flags.BoolVar(&opts.request.Network, "net", false, "keep the host network (and /etc/resolv.conf)")
	flags.StringArrayVar(&opts.request.Env, "env", nil, "set `NAME=VALUE` inside (repeatable)")
	flags.StringArrayVar(&opts.request.PassEnv, "pass-env", nil, "copy variable `NAME` from this environment when set (repeatable)")
	flags.StringArrayVar(&opts.request.Limits, "limit", nil, "bound the command: `NAME=VALUE`, repeatable; names: "+strings.Join(limits.Names(), ", ")+" (sizes take K, M, G, T; see the README)")
	flags.DurationVar(&opts.timeout, "timeout", 0, "kill every process of the sandbox after this long (exit 124); 0 means none")
	flags.StringVar(&opts.report, "report", "", "write the result as JSON (schema bwrapkit.run/v1) to `FILE`")
}

func newRunCmd(s streams, global *globalOptions) *cobra.Command {
	return newRunCmdWith(s, global, runRun)
}

// newRunCmdWith lets a test see the parsed options instead of running (as gh's runF).
func newRunCmdWith(s streams, global *globalOptions, runF func(context.Context, *runOptions) error) *cobra.Command {
	opts := &runOptions{streams: s, global: global}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...]",
		Short: "Run a command inside the sandbox, fail-closed",
		Long: `Run CMD inside a bwrap sandbox: all namespaces unshared, a read-only system, one
read-write workdir, a cleared environment. If the sandbox cannot be built, CMD does not run.

Exit status: CMD's own; 124 timeout (every process killed); 125 the sandbox could not
be built (CMD did not run); 126 CMD cannot be executed; 127 CMD not found inside;
128+N CMD killed by signal N; 2 bad usage.`,
		Example: `  bwrapkit run -- make test
  bwrapkit run --workdir ~/src/app --ro /opt/go --timeout 10m -- go test ./...
  bwrapkit run --net --env CI=1 --report result.json -- npm ci`,
		Args: commandArgs(&opts.command),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runF(cmd.Context(), opts)
		},
	}
	addRunFlags(cmd, opts)
	return cmd
}

// commandArgs takes everything after the flags as the command to run.
func commandArgs(command *[]string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 || args[0] == "" {
			return usagef("no command given: put it after --, as in `bwrapkit run -- make test`")
		}
		*command = args
		return nil
	}
}

// prepare finds bwrap, probes it, and resolves the policy: what run and argv share.
func prepare(ctx context.Context, opts *runOptions) (string, sandbox.Policy, error) {
	if opts.timeout < 0 {
		return "", sandbox.Policy{}, usagef("--timeout %v: must not be negative (0 means none)", opts.timeout)
	}
	request := opts.request
	// bwrapkit's home holds the managed bwrap every later run executes.
	request.Trusted = append(request.Trusted, opts.global.home(opts.streams))
	policy, err := sandbox.NewPolicy(request, opts.Environ())
	var policyErr *sandbox.PolicyError
	if errors.As(err, &policyErr) {
		return "", sandbox.Policy{}, usageError{err}
	}
	if err != nil {
		return "", sandbox.Policy{}, err
	}
	found, err := locate.Find(opts.global.query(opts.streams), locate.OS{})
	if err != nil {
		return "", sandbox.Policy{}, unavailableFromLocate(err)
	}
	// The chosen binary and the name it was found by (a link in a venv, say): either
	// inside the workdir means a command could have planted or retargeted it.
	for _, path := range []string{found.Path, found.Chosen().Path} {
		if path == "" {
			continue
		}
		if err := sandbox.CheckPlacement(path, policy); err != nil {
			return "", sandbox.Policy{}, err
		}
	}
	features, err := sandbox.Capable(ctx, found.Path)
	if err != nil {
		return "", sandbox.Policy{}, err
	}
	policy.Features = features
	return found.Path, policy, nil
}

// unavailableFromLocate explains a failed search as the sandbox's unavailability.
func unavailableFromLocate(err error) error {
	var explicit *locate.ExplicitError
	if errors.As(err, &explicit) {
		reason := sandbox.ReasonNotExecutable
		switch explicit.Candidate.Refusal {
		case locate.RefusalMissing:
			reason = sandbox.ReasonNotFound
		case locate.RefusalReplaceable:
			reason = sandbox.ReasonUntrusted
		}
		return &sandbox.UnavailableError{Reason: reason, Bwrap: explicit.Candidate.Path, Err: errors.New(explicit.Candidate.Reason)}
	}
	return &sandbox.UnavailableError{Reason: sandbox.ReasonNotFound, Err: err}
}

func runRun(ctx context.Context, opts *runOptions) error {
	report, err := openReport(opts.report)
	if err != nil {
		return err
	}
	defer report.close()
	bwrap, policy, err := prepare(ctx, opts)
	if err != nil {
		writeReport(opts, report, bwrap, sandbox.Result{}, err)
		return err
	}
	result, err := sandbox.Run(ctx, policy, opts.command, sandbox.Options{
		Bwrap:   bwrap,
		Stdin:   opts.In,
		Stdout:  opts.Out,
		Stderr:  opts.Err,
		Timeout: opts.timeout,
	})
	writeReport(opts, report, bwrap, result, err)
	switch {
	case err != nil && ctx.Err() != nil:
		return exitError{interruptedStatus(ctx)}
	case err != nil:
		return err
	case result.TimedOut:
		fmt.Fprintf(opts.Err, "bwrapkit: timed out after %v; every process of the sandbox was killed\n", opts.timeout)
	}
	return exitError{result.ExitCode}
}

// runReport is the bwrapkit.run/v1 document.
type runReport struct {
	Schema     string       `json:"schema"`
	Bwrap      string       `json:"bwrap"`
	Command    []string     `json:"command"`
	Started    bool         `json:"started"`
	ExitCode   int          `json:"exit_code"`
	Signal     int          `json:"signal"`
	TimedOut   bool         `json:"timed_out"`
	DurationMS int64        `json:"duration_ms"`
	Error      *reportError `json:"error"`
}

type reportError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// reportTarget is where --report goes: its directory is resolved and proven writable
// before the command runs, and the file is placed there by a temp file and a rename on
// that directory's descriptor, so nothing the command does (a symlink planted at the
// name, the directory renamed or replaced) can send it elsewhere.
type reportTarget struct {
	dir  *safefile.Dir
	name string
}

func openReport(path string) (*reportTarget, error) {
	if path == "" {
		return nil, nil
	}
	dirPath, name := filepath.Split(path)
	if dirPath == "" {
		dirPath = "."
	}
	if name == "" || name == "." || name == ".." {
		return nil, usagef("--report %s: name a file", path)
	}
	dir, err := safefile.OpenDir(dirPath)
	if err != nil {
		return nil, usagef("--report %s: %v", path, err)
	}
	if err := dir.CheckWritable(); err != nil {
		dir.Close()
		return nil, usagef("--report %s: %v", path, err)
	}
	return &reportTarget{dir: dir, name: name}, nil
}

func (r *reportTarget) close() {
	if r != nil {
		r.dir.Close()
	}
}

func writeReport(opts *runOptions, target *reportTarget, bwrap string, result sandbox.Result, runErr error) {
	if target == nil {
		return
	}
	report := runReport{
		Schema: "bwrapkit.run/v1", Bwrap: bwrap, Command: opts.command,
		Started: result.Started, ExitCode: result.ExitCode, Signal: result.Signal,
		TimedOut: result.TimedOut, DurationMS: result.Duration.Milliseconds(),
	}
	var unavailable *sandbox.UnavailableError
	switch {
	case errors.As(runErr, &unavailable):
		report.ExitCode = exitUnavailable
		report.Error = &reportError{Reason: string(unavailable.Reason), Message: unavailable.Message()}
	case runErr != nil:
		report.Error = &reportError{Reason: "error", Message: runErr.Error()}
	}
	data, _ := json.MarshalIndent(report, "", "  ")
	if err := target.dir.WriteFile(target.name, append(data, '\n'), 0o600); err != nil {
		// The command's status stays the exit status; the missing report is said loudly.
		fmt.Fprintf(opts.Err, "bwrapkit: could not write --report %s: %v\n", opts.report, err)
	}
}
