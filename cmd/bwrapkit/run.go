package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// runOptions are the flags shared by run and argv, and what run needs besides.
type runOptions struct {
	streams
	global      *globalOptions
	request     sandbox.Request
	timeout     time.Duration
	report      string
	policyFile  string
	printPolicy bool
	command     []string
}

func addRunFlags(cmd *cobra.Command, opts *runOptions) {
	flags := cmd.Flags()
	// Everything after the command is the command's, even words that look like flags.
	flags.SetInterspersed(false)
	flags.StringVar(&opts.request.Workdir, "workdir", "", "the project directory, read-write (default: current directory)")
	flags.StringArrayVar(&opts.request.ReadOnly, "ro", nil, "bind `PATH` read-only at the same path (repeatable; a symlink is recreated inside)")
	flags.StringArrayVar(&opts.request.ReadWrite, "rw", nil, "bind `PATH` read-write at the same path (repeatable; refused like a workdir)")
	flags.StringArrayVar(&opts.request.Path, "path", nil, "put `DIR` first on the inside PATH, bound read-only when not already visible (repeatable)")
	flags.StringArrayVar(&opts.request.Protect, "protect", nil, "re-bind `PATH` (relative to the workdir) read-only (repeatable); .git always is")
	flags.BoolVar(&opts.request.Network, "net", false, "keep the host network (and /etc/resolv.conf)")
	flags.StringArrayVar(&opts.request.Env, "env", nil, "set `NAME=VALUE` inside (repeatable)")
	flags.StringArrayVar(&opts.request.PassEnv, "pass-env", nil, "copy variable `NAME` from this environment when set (repeatable)")
	flags.StringArrayVar(&opts.request.Limits, "limit", nil, "bound the command: `NAME=VALUE`, repeatable; names: "+strings.Join(limits.Names(), ", ")+" (sizes take K, M, G, T; see the README)")
	flags.StringVar(&opts.request.HomeDir, "home-dir", "", "the command's HOME, read-write (default: a per-project directory under ~/.cache/bwrapkit/home)")
	flags.StringVar(&opts.request.Git, "git", "", "git metadata: `readonly` (default) or commit (objects, refs, index, logs writable; hooks and config never)")
	flags.StringVar(&opts.request.Cwd, "cwd", "", "start in `DIR`, relative to the workdir (default: the current directory when inside it)")
	flags.DurationVar(&opts.timeout, "timeout", 0, "kill every process of the sandbox after this long (exit 124); 0 means none")
	flags.StringVar(&opts.report, "report", "", "write the result as JSON (schema bwrapkit.run/v1) to `FILE`")
	flags.StringVar(&opts.policyFile, "policy", "", "read a policy (JSON, schema "+sandbox.PolicySchema+") from `FILE`; flags add to it (default: $BWRAPKIT_POLICY)")
	flags.BoolVar(&opts.printPolicy, "print-policy", false, "print the effective policy as JSON and run nothing")
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
read-write workdir, a per-project HOME outside it, a cleared environment. If the sandbox
cannot be built, CMD does not run.

Exit status: CMD's own; 124 timeout (every process killed); 125 the sandbox could not
be built (CMD did not run); 126 CMD cannot be executed; 127 CMD not found inside;
128+N CMD killed by signal N; 2 bad usage.`,
		Example: `  bwrapkit run -- make test
  bwrapkit run --path /usr/local/go/bin --timeout 10m -- go test ./...
  bwrapkit run --git commit -- git commit -am 'from the sandbox'
  bwrapkit run --net --env CI=1 --report result.json -- npm ci
  bwrapkit run --policy examples/policies/go.json -- go build ./...`,
		Args: commandArgs(&opts.command, &opts.printPolicy),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runF(cmd.Context(), opts)
		},
	}
	addRunFlags(cmd, opts)
	return cmd
}

// commandArgs takes everything after the flags as the command to run.
func commandArgs(command *[]string, printPolicy *bool) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 && printPolicy != nil && *printPolicy {
			return nil
		}
		if len(args) == 0 || args[0] == "" {
			return usagef("no command given: put it after --, as in `bwrapkit run -- make test`")
		}
		*command = args
		return nil
	}
}

// loadPolicyFile reads --policy (or $BWRAPKIT_POLICY) and puts the flags on top of it.
// The file is read through safefile: a symlink at the name or a FIFO is refused, never
// followed or blocked on, and the read is bounded.
func loadPolicyFile(opts *runOptions) error {
	path := opts.policyFile
	if path == "" {
		path = opts.Getenv("BWRAPKIT_POLICY")
	}
	if path == "" {
		return nil
	}
	data, err := safefile.ReadFile(path, sandbox.MaxPolicyFile())
	if err != nil {
		return usagef("--policy %s: %v", path, err)
	}
	file, err := sandbox.ParsePolicyFile(data)
	var policyErr *sandbox.PolicyError
	if errors.As(err, &policyErr) && policyErr.Field == "--policy" {
		policyErr.Value = path
		return usageError{policyErr}
	}
	if err != nil {
		return usagef("--policy %s: %v", path, err)
	}
	opts.request = file.Merge(opts.request)
	if opts.timeout == 0 && file.Timeout != "" {
		if opts.timeout, err = time.ParseDuration(file.Timeout); err != nil {
			return usagef("--policy %s: timeout %q: %v", path, file.Timeout, err)
		}
	}
	if opts.report == "" {
		opts.report = file.Report
	}
	return nil
}

// resolvePolicy loads the policy file and resolves the whole policy: no bwrap needed.
func resolvePolicy(opts *runOptions) (sandbox.Policy, error) {
	if err := loadPolicyFile(opts); err != nil {
		return sandbox.Policy{}, err
	}
	if opts.timeout < 0 {
		return sandbox.Policy{}, usagef("--timeout %v: must not be negative (0 means none)", opts.timeout)
	}
	request := opts.request
	// bwrapkit's home holds the managed bwrap every later run executes.
	request.Trusted = append(request.Trusted, opts.global.home(opts.streams))
	// bwrapkit's own binary too: `make build && ./bwrapkit run` from a checkout would
	// otherwise let the command replace the ./bwrapkit the next run executes.
	if self, err := os.Executable(); err == nil {
		request.Trusted = append(request.Trusted, self)
	}
	policy, err := sandbox.NewPolicy(request, opts.Environ())
	var policyErr *sandbox.PolicyError
	var homeErr *sandbox.HomeError
	if errors.As(err, &policyErr) || errors.As(err, &homeErr) {
		return sandbox.Policy{}, usageError{err}
	}
	return policy, err
}

// effectivePolicy is the policy as it is in force, in the policy file's form.
func effectivePolicy(opts *runOptions, policy sandbox.Policy) sandbox.PolicyFile {
	effective := sandbox.PolicyFile{Schema: sandbox.PolicySchema, Request: opts.request, Report: opts.report}
	effective.Trusted = nil
	effective.Workdir, effective.HomeDir, effective.Git = policy.Workdir, policy.Home, string(policy.Git)
	if effective.Git == "" {
		effective.Git = string(sandbox.GitReadOnly)
	}
	effective.Cwd = ""
	if rel, err := filepath.Rel(policy.Workdir, policy.StartDir()); err == nil && rel != "." {
		effective.Cwd = rel
	}
	if opts.timeout > 0 {
		effective.Timeout = opts.timeout.String()
	}
	return effective
}

// prepare finds bwrap, probes it, and resolves the policy: what run and argv share.
func prepare(ctx context.Context, opts *runOptions) (string, sandbox.Policy, error) {
	policy, err := resolvePolicy(opts)
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
	if opts.printPolicy {
		policy, err := resolvePolicy(opts)
		if err != nil {
			return err
		}
		data, _ := json.MarshalIndent(effectivePolicy(opts, policy), "", "  ")
		_, err = opts.Out.Write(append(data, '\n'))
		return err
	}
	// The report's place is known (and proven writable) before anything runs; a
	// policy file may name it, so that is read first.
	if err := loadPolicyFile(opts); err != nil {
		return err
	}
	opts.policyFile = "" // loaded: prepare must not add it twice
	report, err := openReport(opts.report)
	if err != nil {
		return err
	}
	defer report.close()
	facts := runFacts{}
	bwrap, policy, err := prepare(ctx, opts)
	facts.bwrap, facts.policy, facts.version = bwrap, effectivePolicy(opts, policy), policy.Features.Version
	if err != nil {
		facts.err = err
		writeReport(opts, report, facts)
		return err
	}
	result, err := sandbox.Run(ctx, policy, opts.command, sandbox.Options{
		Bwrap:        bwrap,
		Stdin:        opts.In,
		Stdout:       opts.Out,
		Stderr:       opts.Err,
		DirectStderr: directStderr(opts.Out, opts.Err, opts.ErrIsTerminal),
		Timeout:      opts.timeout,
	})
	facts.result, facts.err = result, err
	if err != nil && ctx.Err() != nil {
		facts.interrupted = interruptedStatus(ctx)
	}
	facts.failure = commandFailureMessage(opts, policy, result)
	writeReport(opts, report, facts)
	for _, moved := range result.GitMovedAside {
		fmt.Fprintf(opts.Err, "bwrapkit: the command planted what a host git would follow into its own config; moved aside: %s\n", moved)
	}
	var unavailable *sandbox.UnavailableError
	var audit *sandbox.GitAuditError
	switch {
	case errors.As(err, &audit):
		fmt.Fprintf(opts.Err, "bwrapkit: %v\n", audit)
		return exitError{result.ExitCode}
	case facts.interrupted != 0:
		return exitError{facts.interrupted}
	case errors.As(err, &unavailable):
		unavailable.StderrShown = true // bwrap's own line went to the same stderr
		return err
	case err != nil:
		return err
	case result.TimedOut:
		fmt.Fprintf(opts.Err, "bwrapkit: timed out after %v; every process of the sandbox was killed\n", opts.timeout)
	case facts.failure != "":
		fmt.Fprintf(opts.Err, "bwrapkit: %s\n", facts.failure)
	case result.ExitCode != 0 && policy.Git != sandbox.GitCommit && isGit(opts.command) && hasGitDir(policy.Workdir):
		fmt.Fprintln(opts.Err, "bwrapkit: .git is read-only in this sandbox (--git readonly, the default): a git command that writes (commit, stash, checkout -b, fetch) fails; --git commit lets it commit while hooks and config stay read-only")
	}
	return exitError{result.ExitCode}
}

// commandFailureMessage explains a 126 or 127, or is "".
func commandFailureMessage(opts *runOptions, policy sandbox.Policy, result sandbox.Result) string {
	if len(opts.command) == 0 {
		return ""
	}
	name := opts.command[0]
	switch result.Failure {
	case sandbox.CommandNotFound:
		return sandbox.NotFoundMessage(name, policy.InsidePath(), sandbox.HostLookPath(name, opts.Getenv("PATH")))
	case sandbox.CommandNotExecutable:
		return fmt.Sprintf("%s: found inside the sandbox but cannot be executed (no execute permission, a missing interpreter, or a directory)", name)
	}
	return ""
}

// directStderr decides whether the command gets stderr itself: when it is a terminal
// (colour kept) or the very open file stdout is (`2>&1`: the order of the lines kept).
// Otherwise it goes through bwrapkit, which keeps bwrap's last words for the report.
func directStderr(stdout, stderr io.Writer, stderrIsTerminal bool) bool {
	errFile, ok := stderr.(*os.File)
	if !ok {
		return false
	}
	if stderrIsTerminal {
		return true
	}
	outFile, ok := stdout.(*os.File)
	if !ok {
		return false
	}
	var outStat, errStat unix.Stat_t
	if unix.Fstat(int(outFile.Fd()), &outStat) != nil || unix.Fstat(int(errFile.Fd()), &errStat) != nil {
		return false
	}
	return sameOpenFile(outStat, errStat)
}

// sameOpenFile: the same file (device and inode). fstat cannot tell a shell's 2>&1 (one
// open file description) from two opens of one file, so both count as shared: handing
// them over directly is exactly what the caller would get without bwrapkit.
func sameOpenFile(a, b unix.Stat_t) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// runFacts is everything a report says about one run.
type runFacts struct {
	bwrap       string
	version     string
	policy      sandbox.PolicyFile
	result      sandbox.Result
	err         error
	interrupted int // 128+N when a signal to bwrapkit ended the run
	failure     string
}

// runReport is the bwrapkit.run/v1 document.
type runReport struct {
	Schema       string              `json:"schema"`
	Bwrap        string              `json:"bwrap"`
	BwrapVersion string              `json:"bwrap_version"`
	Command      []string            `json:"command"`
	Started      bool                `json:"started"`
	ExitCode     int                 `json:"exit_code"`
	Signal       int                 `json:"signal"`
	TimedOut     bool                `json:"timed_out"`
	DurationMS   int64               `json:"duration_ms"`
	Error        *reportError        `json:"error"`
	Policy       *sandbox.PolicyFile `json:"policy"`
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

func writeReport(opts *runOptions, target *reportTarget, facts runFacts) {
	if target == nil {
		return
	}
	result := facts.result
	report := runReport{
		Schema: "bwrapkit.run/v1", Bwrap: facts.bwrap, BwrapVersion: facts.version, Command: opts.command,
		Started: result.Started && result.Failure == "", ExitCode: result.ExitCode, Signal: result.Signal,
		TimedOut: result.TimedOut, DurationMS: result.Duration.Milliseconds(),
	}
	if facts.policy.Schema != "" {
		report.Policy = &facts.policy
	}
	var unavailable *sandbox.UnavailableError
	switch {
	case facts.interrupted != 0:
		report.ExitCode, report.Signal = facts.interrupted, facts.interrupted-128
		report.Error = &reportError{Reason: "interrupted", Message: fmt.Sprintf("bwrapkit got signal %d and killed the sandbox", facts.interrupted-128)}
	case errors.As(facts.err, &unavailable):
		report.ExitCode = exitUnavailable
		report.Error = &reportError{Reason: string(unavailable.Reason), Message: unavailable.Message()}
	case facts.err != nil:
		report.ExitCode = exitFailure
		var usage usageError
		if errors.As(facts.err, &usage) {
			report.ExitCode = exitUsage
		}
		report.Error = &reportError{Reason: "error", Message: facts.err.Error()}
	case result.Failure != "":
		report.Error = &reportError{Reason: string(result.Failure), Message: facts.failure}
	}
	data, _ := json.MarshalIndent(report, "", "  ")
	if err := target.dir.WriteFile(target.name, append(data, '\n'), 0o600); err != nil {
		// The command's status stays the exit status; the missing report is said loudly.
		fmt.Fprintf(opts.Err, "bwrapkit: could not write --report %s: %v\n", opts.report, err)
	}
}

// isGit: the command runs git: git itself, or a word "git" in its arguments (sh -c
// "git commit ..."). Only a hint depends on it.
func isGit(command []string) bool {
	for _, arg := range command {
		for _, word := range strings.Fields(arg) {
			if filepath.Base(word) == "git" {
				return true
			}
		}
	}
	return false
}

func hasGitDir(workdir string) bool {
	_, err := os.Lstat(filepath.Join(workdir, ".git"))
	return err == nil
}
