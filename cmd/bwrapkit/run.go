package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
	"github.com/bwrapkit/bwrapkit/sandbox/land"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// runOptions are the flags shared by run and argv, and what run needs besides.
type runOptions struct {
	streams
	prober      *sandbox.Prober // set by prepare
	programs    *ownPrograms    // bwrapkit's own binary and its helper, found once by resolvePolicy
	global      *globalOptions
	request     sandbox.Request
	timeout     time.Duration
	report      string
	policyFile  string
	printPolicy bool
	command     []string
	// failOnRefused makes a run exit 123 when anything it wrote was refused.
	failOnRefused bool
	// policyData is the policy file as read, checked against where it lies.
	policyData []byte
}

// exitRefused is the status of a transactional run that refused some of its changes
// (--fail-on-refused) or could not land them at all.
const exitRefused = 123

func addRunFlags(cmd *cobra.Command, opts *runOptions) {
	flags := cmd.Flags()
	// Everything after the command is the command's, even words that look like flags.
	flags.SetInterspersed(false)
	flags.StringVar(&opts.request.Workdir, "workdir", "", "the project directory, read-write (default: the nearest directory at or above the current one that holds .git, else the current directory)")
	flags.StringArrayVar(&opts.request.ReadOnly, "ro", nil, "bind `PATH` read-only at the same path (repeatable; a symlink is recreated inside)")
	flags.StringArrayVar(&opts.request.ReadWrite, "rw", nil, "bind `PATH` read-write at the same path (repeatable; refused like a workdir)")
	flags.StringArrayVar(&opts.request.Path, "path", nil, "put `DIR` first on the inside PATH, bound read-only when not already visible (repeatable)")
	flags.StringArrayVar(&opts.request.Protect, "protect", nil, "re-bind `PATH` (relative to the workdir) read-only (repeatable); .git always is")
	flags.BoolVar(&opts.request.Network, "net", false, "keep the host network (and /etc/resolv.conf)")
	flags.StringVar(&opts.request.Cache, "cache", "", "`host` (default): your Go, npm and pip caches are read-only lower layers of the project HOME's (needs a bwrap with --overlay); none")
	flags.StringArrayVar(&opts.request.NetAllow, "net-allow", nil, "reach `HOST[:PORT]` over HTTP(S) through bwrapkit's proxy, and nothing else (repeatable; *.DOMAIN for the names below it)")
	flags.StringArrayVar(&opts.request.Env, "env", nil, "set `NAME=VALUE` inside (repeatable)")
	flags.StringArrayVar(&opts.request.PassEnv, "pass-env", nil, "copy variable `NAME` from this environment when set (repeatable)")
	flags.StringArrayVar(&opts.request.Limits, "limit", nil, "bound the command: `NAME=VALUE`, repeatable; names: "+strings.Join(limits.Names(), ", ")+" (sizes take K, M, G, T; see docs/run.md)")
	flags.StringVar(&opts.request.HomeDir, "home-dir", "", "the command's HOME, read-write (default: a per-project directory under ~/.cache/bwrapkit/home)")
	flags.StringVar(&opts.request.Git, "git", "", "git metadata: `readonly` (default) or commit (objects, refs, index, logs writable; hooks and config never)")
	flags.StringVar(&opts.request.Cwd, "cwd", "", "start in `DIR`, relative to the workdir (default: the current directory when inside it)")
	flags.DurationVar(&opts.timeout, "timeout", 0, "kill every process of the sandbox after this long (exit 124); 0 means none")
	flags.StringVar(&opts.report, "report", "", "write the result as JSON (schema bwrapkit.run/v1) to `FILE`")
	flags.StringVar(&opts.policyFile, "policy", "", "read a policy (JSON, schema "+sandbox.PolicySchema+") from `FILE`; flags add to it (default: $BWRAPKIT_POLICY)")
	flags.BoolVar(&opts.printPolicy, "print-policy", false, "print the effective policy as JSON and run nothing")
	flags.StringVar(&opts.request.WorkdirMode, "workdir-mode", "", "`transactional` (the default where bwrap and kernel allow: writes are vetted, then land after the command) or direct (writes reach the project live, unvetted; the default falls back to it with a warning) (default: $BWRAPKIT_WORKDIR_MODE)")
	flags.BoolVar(&opts.failOnRefused, "fail-on-refused", false, "exit 123 when any change the command made was refused (transactional mode)")
	flags.BoolVar(&opts.request.KeepAbandoned, "keep-refused", false, "keep the layers of earlier runs whose bwrapkit was killed, as quarantines, instead of removing them")
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

Workdir: by default the command sees the project through an overlay; what it writes
lands in the project only after it has exited and bwrapkit has vetted each change (no
.git but the project's own, no link out of the project, no device, no world-writable or
setuid mode, no change to hooks, the policy file or bwrapkit itself, no file the host
changed meanwhile). Refused changes stay in a quarantine directory that stderr names.
--workdir-mode direct binds the project live instead (weaker: a command's writes are
seen by host tools at once, and only .git and --protect paths are read-only).

Exit status: CMD's own; 123 with --fail-on-refused when a change was refused, or when the
changes could not be landed; 124 timeout (every process killed); 125 the sandbox could not
be built (CMD did not run); 126 CMD cannot be executed; 127 CMD not found inside;
128+N CMD killed by signal N; 2 bad usage.`,
		Example: `  bwrapkit run -- make test
  bwrapkit run --path /usr/local/go/bin --timeout 10m -- go test ./...
  bwrapkit run --git commit -- git commit -am 'from the sandbox'
  bwrapkit run --net --env CI=1 --report result.json -- npm ci
  bwrapkit run --policy examples/policies/go.json -- go build ./...`,
		Args: commandArgs(&opts.command, &opts.printPolicy),
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runF(cmd.Context(), opts)
			var unavailable *sandbox.UnavailableError
			var cause signalled
			if errors.As(err, &unavailable) && errors.As(context.Cause(cmd.Context()), &cause) {
				// A signal while the run was being set up (its keeper, the proxy, the probe,
				// the launch) interrupted it; it was not refused. As a shell reports it.
				fmt.Fprintln(opts.Err, interruptedMessage(int(cause.signal)))
				return exitError{128 + int(cause.signal)}
			}
			return err
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
	if errors.As(err, &policyErr) && policyErr.Field == "policy" {
		policyErr.Value = path
		return usageError{flagError{policyErr}}
	}
	if errors.As(err, &policyErr) {
		return usagef("--policy %s: %v", path, flagError{policyErr})
	}
	if err != nil {
		return usagef("--policy %s: %v", path, err)
	}
	opts.request = file.Merge(opts.request)
	opts.request.PolicyFile, opts.policyData = path, data
	if opts.timeout == 0 && file.Timeout != "" {
		if opts.timeout, err = time.ParseDuration(file.Timeout); err != nil {
			return usagef("--policy %s: timeout %q: %v", path, file.Timeout, err)
		}
	}
	if file.Report != "" {
		// A policy file may sit where an earlier run could rewrite it; naming where the
		// report is written would let that run aim a write at a shell start-up file.
		return usagef("--policy %s: a policy file cannot set report; pass --report FILE", path)
	}
	return nil
}

// prepareHold starts making the run's hold (sandbox.Prepare: its keeper and cgroup) from
// the request alone, before the policy is resolved: the bounds are the request's (flags
// and policy file, loaded already), as the policy's will be. nil when the bounds do not
// parse or bwrapkit's own programs are missing: the run refuses those later, saying why.
// Run takes the hold only if it was made for the run's keeper and bounds, and makes its
// own otherwise.
func prepareHold(opts *runOptions) *sandbox.Hold {
	if opts.programs == nil {
		programs, _ := findPrograms()
		opts.programs = &programs
	}
	bounds, err := limits.Parse(opts.request.Limits, limits.Defaults())
	if err != nil || programsPresent(*opts.programs) != nil {
		return nil
	}
	return sandbox.Prepare(opts.programs.helper, bounds)
}

// resolvePolicy loads the policy file and resolves the whole policy: no bwrap needed.
func resolvePolicy(opts *runOptions) (sandbox.Policy, error) {
	if err := loadPolicyFile(opts); err != nil {
		return sandbox.Policy{}, err
	}
	if _, err := parseNetAllow(opts.request); err != nil {
		return sandbox.Policy{}, err
	}
	if _, err := parseCacheMode(opts.request.Cache); err != nil {
		return sandbox.Policy{}, err
	}
	if opts.timeout < 0 {
		return sandbox.Policy{}, usagef("--timeout %v: must not be negative (0 means none)", opts.timeout)
	}
	request := opts.request
	request.Preview = opts.printPolicy // shown, not run: nothing is made on the host
	if request.WorkdirMode == "" {
		request.WorkdirMode = opts.Getenv("BWRAPKIT_WORKDIR_MODE")
	}
	if value := opts.Getenv("BWRAPKIT_LAND_MAX_ENTRIES"); value != "" {
		n, err := strconv.Atoi(value)
		if err != nil || n <= 0 {
			return sandbox.Policy{}, usagef("BWRAPKIT_LAND_MAX_ENTRIES=%s: want a positive number of entries", value)
		}
		request.LandMaxEntries = n
	}
	discovered := request.Workdir == ""
	if discovered {
		request.Workdir = discoverWorkdir(opts.Getenv)
	}
	// bwrapkit's home holds the managed bwrap every later run executes.
	request.Trusted = append(request.Trusted, opts.global.home(opts.streams))
	// bwrapkit's own binary too: `make build && ./bwrapkit run` from a checkout would
	// otherwise let the command replace the ./bwrapkit the next run executes.
	// (Transactionally, a ./bwrapkit inside the workdir is guarded instead: no change to
	// it lands.)
	if opts.programs == nil {
		// Without /proc there are none; the probe then refuses the run, saying why.
		programs, _ := findPrograms()
		opts.programs = &programs
	}
	request.Self, request.Helper = opts.programs.self, opts.programs.guard
	policy, err := sandbox.NewPolicy(request, opts.Environ())
	var policyErr *sandbox.PolicyError
	var homeErr *home.Error
	if discovered && errors.As(err, &policyErr) && policyErr.Field == "workdir" {
		policyErr.Value += " (the project found from the current directory: the nearest directory holding .git; choose another with --workdir)"
	}
	switch {
	case errors.As(err, &policyErr) && error(policyErr) == err:
		return sandbox.Policy{}, usageError{flagError{policyErr}}
	case errors.As(err, &policyErr) || errors.As(err, &homeErr):
		return sandbox.Policy{}, usageError{err}
	}
	if err == nil && request.PolicyFile != "" {
		if err := sandbox.TrustPolicyFile(policy, request.PolicyFile, opts.policyData); err != nil {
			if errors.As(err, &policyErr) {
				return sandbox.Policy{}, usageError{flagError{policyErr}}
			}
			return sandbox.Policy{}, usageError{err}
		}
	}
	return policy, err
}

// flagError shows a policy refusal by the flag that gave the refused value: the library
// names the policy's field (ro, home_dir, as in the policy file), the CLI its flag.
type flagError struct{ *sandbox.PolicyError }

func (e flagError) Error() string {
	return fmt.Sprintf("%s %s: %s", flagName(e.Field), e.Value, e.Reason)
}

func (e flagError) Unwrap() error { return e.PolicyError }

// flagName is the run flag for a policy field: --ro for ro, --home-dir for home_dir.
// A field that is no flag (HOME, the project's own) is shown as it is.
func flagName(field string) string {
	switch field {
	case "workdir", "ro", "rw", "path", "protect", "net", "net_allow", "cache", "env", "pass_env", "limit", "home_dir", "git", "cwd", "policy", "workdir_mode":
		return "--" + strings.ReplaceAll(field, "_", "-")
	}
	return field
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
	if policy.HomeFallback != "" {
		fmt.Fprintf(opts.Err, "bwrapkit: %s\n", policy.HomeFallback)
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
	prober := sandbox.DefaultProber(opts.Environ())
	opts.prober = &prober // Run reuses what this probe learned
	features, err := prober.Capable(ctx, found.Path)
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
	report, err := openReport(opts.report, opts.Environ())
	if err != nil {
		return err
	}
	defer report.close()
	// The run's keeper and cgroup are made while the policy is resolved and bwrap found
	// and probed: a program start and a few cgroupfs writes, mostly the kernel's work on
	// the other CPU, which the launch would otherwise wait for. A run refused on the way
	// releases them; nothing of the run exists yet for them to hold.
	hold := prepareHold(opts)
	defer hold.Release() // a no-op once the run took it
	facts := runFacts{}
	bwrap, policy, err := prepare(ctx, opts)
	facts.bwrap, facts.policy, facts.version = bwrap, effectivePolicy(opts, policy), policy.Features.Version
	facts.homeFallback = policy.HomeFallback
	if err != nil {
		facts.err = err
		if ctx.Err() != nil {
			// A signal during the probe: the run was interrupted, not refused.
			facts.interrupted = interruptedStatus(ctx)
			writeReport(opts, report, facts)
			return exitError{facts.interrupted}
		}
		writeReport(opts, report, facts)
		return err
	}
	// The keeper: bwrapkit-helper beside bwrapkit, or bwrapkit itself re-executed (as
	// resolvePolicy found them, and guarded them). A run without it is refused below.
	keeper := opts.programs.helper
	missing := programsPresent(*opts.programs)
	// The fallback is said before the command runs, once (Run falls back the same way).
	if choice, err := policy.ChooseMode(); err == nil {
		if choice.Mode == sandbox.WorkdirDirect {
			if err := policy.RefuseSelfInsideDirect(); err != nil {
				facts.err = usageError{err}
				writeReport(opts, report, facts)
				return facts.err
			}
		}
		if choice.Fallback != "" {
			fmt.Fprintf(opts.Err, "bwrapkit: warning: %s\n", fallbackWarning(choice.Fallback))
		}
	}
	if missing != nil {
		facts.err = &sandbox.UnavailableError{Reason: sandbox.ReasonHardening, Err: missing}
		writeReport(opts, report, facts)
		return facts.err
	}
	held, err := holdHome(opts, policy)
	if err != nil {
		facts.err = err
		writeReport(opts, report, facts)
		return err
	}
	defer held.Release()
	caches, cacheUses, err := layerCaches(opts, policy)
	// After the run: its sandbox, the only mount of its layers, is gone by then.
	defer cacheUses.release()
	if err != nil {
		facts.err = &sandbox.UnavailableError{Reason: sandbox.ReasonHardening, Err: err}
		writeReport(opts, report, facts)
		return facts.err
	}
	allow, _ := parseNetAllow(opts.request) // checked by prepare
	var proxy *runProxy
	var netProxy sandbox.NetProxy
	if !policy.Network {
		if proxy, netProxy, err = startProxy(allow, opts.programs.helper, opts.Getenv); err != nil {
			facts.err = &sandbox.UnavailableError{Reason: sandbox.ReasonHardening, Err: err}
			writeReport(opts, report, facts)
			return facts.err
		}
		defer proxy.stop()
	}
	result, err := sandbox.Run(ctx, policy, opts.command, sandbox.Options{
		Keeper:       keeper,
		Auditor:      opts.programs.self, // bwrapkit itself: the helper links no audit
		Bwrap:        bwrap,
		Stdin:        opts.In,
		Stdout:       opts.Out,
		Stderr:       opts.Err,
		DirectStderr: directStderr(opts.Out, opts.Err, opts.ErrIsTerminal),
		Timeout:      opts.timeout,
		Prober:       opts.prober,
		NetProxy:     netProxy,
		NetJoiner:    proxy.joiner(),
		Caches:       caches,
		Hold:         hold,
	})
	facts.result, facts.err = result, err
	proxy.stop()
	facts.netAllowed, facts.netDenied = proxy.hosts()
	if proxy != nil && result.Failure == "" {
		result.Failure = bridgeFailure(result.ExitCode, sandbox.FoundInside(policy, opts.command[0]))
		facts.result.Failure = result.Failure
		if result.Failure != "" || !proxy.handedOver() {
			// The bridge ran, the command never did: it could not be executed, or the
			// hand-over failed (the bridge said why) and the bridge never execed it.
			result.Started, facts.result.Started = false, false
		}
	}
	if err != nil && ctx.Err() != nil {
		facts.interrupted = interruptedStatus(ctx)
	}
	facts.failure = commandFailureMessage(opts, policy, result)
	writeReport(opts, report, facts)
	printCgroup(opts, result.Cgroup, cgroup.Unbounded(policy.Limits))
	printLanding(opts, result)
	if line := deniedSummary(facts.netDenied, allow); line != "" {
		fmt.Fprintln(opts.Err, line)
	}
	for _, moved := range result.GitMovedAside {
		fmt.Fprintf(opts.Err, "bwrapkit: the command planted what a host git would follow into its own config; moved aside: %s\n", moved)
	}
	var unavailable *sandbox.UnavailableError
	var audit *sandbox.GitAuditError
	var landErr *sandbox.LandError
	switch {
	case errors.As(err, &landErr):
		fmt.Fprintf(opts.Err, "bwrapkit: %v\n", landErr)
		if facts.interrupted != 0 {
			return exitError{facts.interrupted} // interrupted while waiting to land
		}
		return exitError{exitRefused}
	case errors.As(err, &audit):
		fmt.Fprintf(opts.Err, "bwrapkit: %v\n", audit)
		return exitError{result.ExitCode}
	case facts.interrupted != 0:
		fmt.Fprintln(opts.Err, interruptedMessage(facts.interrupted-128))
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
	if opts.failOnRefused && len(result.Refused) > 0 {
		return exitError{exitRefused}
	}
	return exitError{result.ExitCode}
}

// printCgroup says on stderr, once, that a run had no cgroup of its own (unless the user
// chose memory=unlimited and pids=unlimited), and whether its cgroup was left behind.
func printCgroup(opts *runOptions, held sandbox.RunCgroup, chosen bool) {
	if held.Mode == cgroup.None && !chosen {
		fmt.Fprintf(opts.Err, "bwrapkit: note: this run had no cgroup of its own (keeper only: memory and tasks unbounded by a cgroup): %s; %s\n", held.Why, held.Remedy)
	}
	if held.Left != "" {
		fmt.Fprintf(opts.Err, "bwrapkit: warning: the run's cgroup was not removed: %s\n", held.Left)
	}
	if note := memoryKillNote(held); note != "" {
		fmt.Fprintf(opts.Err, "bwrapkit: %s\n", note)
	}
}

// memoryKillNote says that the kernel ended processes of the run at its memory bound, and
// how to raise it (pure): without it a command killed so reads as a bare 137.
func memoryKillNote(held sandbox.RunCgroup) string {
	if held.OOMKills == 0 {
		return ""
	}
	processes := "a process"
	if held.OOMKills > 1 {
		processes = fmt.Sprintf("%d processes", held.OOMKills)
	}
	return fmt.Sprintf("the kernel's OOM killer ended %s of the run: it reached its memory bound of %s (raise it with --limit memory=SIZE)",
		processes, limits.Format(limits.Memory, held.MemoryBound))
}

// earlierRunNotes are what a run found of earlier runs on the project whose bwrapkit
// was killed (pure): said on stderr and kept in the report's warnings.
func earlierRunNotes(result sandbox.Result) []string {
	var notes []string
	for _, layer := range result.Abandoned {
		notes = append(notes, fmt.Sprintf("an earlier run on this project was killed before it landed its changes; nothing of it landed (its layer: %s)", layer))
	}
	for _, layer := range result.Interrupted {
		notes = append(notes, fmt.Sprintf("an earlier run on this project was killed while landing its changes: part of them landed (each file whole, old or new); what did not is kept in %s", layer))
	}
	for _, line := range result.EarlierAudits {
		notes = append(notes, "an earlier --git commit run on this project was killed before its audit; the audit was done since: "+line)
	}
	return notes
}

// printLanding says on stderr what a run's workdir mode did: the fallback warning, one
// line per refused change and a summary, the abandoned layers of killed runs.
func printLanding(opts *runOptions, result sandbox.Result) {
	for _, note := range earlierRunNotes(result) {
		fmt.Fprintf(opts.Err, "bwrapkit: %s\n", note)
	}
	if result.WorkdirMode != sandbox.WorkdirTransactional || !result.Started {
		return
	}
	for i, refused := range result.Refused {
		if i == refusedLinesShown {
			// A command can leave a quarter of a million refused entries; the quarantine's
			// REFUSED file and the report list every one.
			fmt.Fprintf(opts.Err, "bwrapkit: ... and %d more refused (all of them in %s)\n", len(result.Refused)-i, filepath.Join(result.Quarantine, land.RefusedList))
			break
		}
		fmt.Fprintf(opts.Err, "bwrapkit: refused %s: %s\n", land.Printable(refused.Path), refusalText(refused.Rule))
	}
	if len(result.Refused) > 0 {
		fmt.Fprintf(opts.Err, "bwrapkit: landed %d added, %d modified, %d deleted; refused %d (kept in %s)\n", result.Changes.Added, result.Changes.Modified, result.Changes.Deleted, len(result.Refused), result.Quarantine)
	} else if landed := result.Changes; landed.Added+landed.Modified+landed.Deleted > 0 && result.Quarantine != "" {
		// A landing that stopped partway (an error after its first changes).
		fmt.Fprintf(opts.Err, "bwrapkit: landing stopped partway: landed %d added, %d modified, %d deleted (each file whole, old or new); the rest is kept in %s\n", landed.Added, landed.Modified, landed.Deleted, result.Quarantine)
	} else if result.Quarantine != "" {
		fmt.Fprintf(opts.Err, "bwrapkit: nothing landed; the command's changes are kept in %s\n", result.Quarantine)
	}
}

// refusedLinesShown bounds the refused entries named one to a line on stderr.
const refusedLinesShown = 100

// refusalText explains a landing rule in a few words.
func refusalText(rule string) string {
	texts := map[string]string{
		"git-entry":        "a .git other than the project's own (host git would run what it names)",
		"git-shape":        "makes a directory a repository (HEAD beside objects/ and refs/), or changes what one outside .git reads or runs: host git would run what it names",
		"symlink-git":      "a symlink through .git (host tools would write git's own files)",
		"git-readonly":     "a change under .git (use --git commit to commit)",
		"git-commit":       "under .git but not what a commit writes (or it did not verify)",
		"symlink-absolute": "a symlink to an absolute path",
		"symlink-escapes":  "a symlink that leads out of the project",
		"special-file":     "a device, FIFO or socket",
		"world-writable":   "a world-writable mode",
		"group-writable":   "group-writable for a group not yours",
		"setuid":           "a setuid or setgid mode",
		"protected":        "a file host tools run by themselves (policy, bwrapkit, hooks, --protect)",
		"tool-config":      "a package manager's settings or its own code, which can make its next command run programs; change it on the host",
		"conflict":         "changed on the host during the run; the host's copy was kept",
		"metacopy":         "its data was left in the lower layer",
	}
	if text, ok := texts[rule]; ok {
		return rule + ": " + text
	}
	return rule
}

// bridgeFailure reads the exit status of a run with the proxy (the bridge execs the
// command in its place) as bwrap's execvp failure would be read: a 127 for a name the
// sandbox does not show is the bridge's failed exec, not the command's. A 126 the bridge
// explained itself.
func bridgeFailure(status int, foundInside bool) sandbox.CommandFailure {
	if status == 127 && !foundInside {
		return sandbox.CommandNotFound
	}
	return ""
}

// interruptedMessage is the one line an interrupted run leaves on stderr: a Ctrl-C
// otherwise ends with a bare 130 and the user cannot tell the sandbox from the command.
func interruptedMessage(signal int) string {
	name := unix.SignalName(syscall.Signal(signal))
	if name == "" {
		name = "signal " + strconv.Itoa(signal)
	}
	return fmt.Sprintf("bwrapkit: interrupted (%s): every process of the sandbox was killed; exit %d", name, 128+signal)
}

// holdHome marks the project HOME in use for the whole run (a concurrent `home prune`
// keeps it) and records its project and last use for `home ls`. A --home-dir is the
// caller's own directory: neither.
func holdHome(opts *runOptions, policy sandbox.Policy) (*home.Held, error) {
	if opts.request.HomeDir != "" || policy.Home == "" || !home.InRoot(policy.Home, resolvedRoots(home.Roots(opts.Environ()))) {
		return nil, nil
	}
	held, err := home.Hold(policy.Home)
	if err != nil {
		return nil, &sandbox.UnavailableError{Reason: sandbox.ReasonHardening, Err: err}
	}
	if err := home.Touch(policy.Home, policy.Workdir); err != nil {
		fmt.Fprintf(opts.Err, "bwrapkit: could not record the HOME's use for `bwrapkit home ls`: %v\n", err)
	}
	return held, nil
}

// resolvedRoots are the HOMEs' roots as the policy's resolved HOME paths see them.
func resolvedRoots(roots []string) []string {
	resolved := make([]string, 0, len(roots))
	for _, root := range roots {
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
		resolved = append(resolved, root)
	}
	return resolved
}

// commandFailureMessage explains a 126 or 127, or is "".
func commandFailureMessage(opts *runOptions, policy sandbox.Policy, result sandbox.Result) string {
	if len(opts.command) == 0 {
		return ""
	}
	name := opts.command[0]
	switch result.Failure {
	case sandbox.CommandNotFound:
		if link, target := sandbox.HiddenLinkTarget(policy, name); link != "" {
			return hiddenLinkMessage(name, link, target)
		}
		return notFoundMessage(name, policy.InsidePath(), hostLookPath(name, opts.Getenv("PATH")))
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
	// homeFallback is why HOME is ephemeral when a project HOME was wanted.
	homeFallback string
	netAllowed   []string // host:port the proxy let through
	netDenied    []string // host:port the proxy refused
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
	Lifetime     string              `json:"lifetime,omitempty"`
	Cgroup       *sandbox.RunCgroup  `json:"cgroup,omitempty"`
	WorkdirMode  string              `json:"workdir_mode"`
	Changes      *landChanges        `json:"changes"`
	Refused      []sandbox.Refusal   `json:"refused"`
	Quarantine   string              `json:"quarantine"`
	Error        *reportError        `json:"error"`
	Policy       *sandbox.PolicyFile `json:"policy"`
	// NetworkAllowed and NetworkDenied are the hosts the command asked bwrapkit's proxy
	// for (host:port), let through and refused.
	NetworkAllowed []string `json:"network_allowed"`
	NetworkDenied  []string `json:"network_denied"`
	// Warnings are what bwrapkit said on stderr about how the run differs from what was
	// asked (a HOME that could not be made); absent when there are none.
	Warnings []string `json:"warnings,omitempty"`
}

type landChanges struct {
	Added    int `json:"added"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
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

// maxFileName is NAME_MAX: the longest name one directory entry can have.
const maxFileName = 255

// openReport proves, before anything runs, that the report can be written where --report
// says: a report lost after the command ran would leave a caller that reads it with
// nothing, and a zero exit status.
func openReport(path string, env []string) (*reportTarget, error) {
	if path == "" {
		return nil, nil
	}
	const field = "--report"
	dirPath, name := filepath.Split(path)
	if dirPath == "" {
		dirPath = "."
	}
	if name == "" || name == "." || name == ".." {
		return nil, usagef("%s %s: names a directory; name a file, as %s", field, path, filepath.Join(path, "report.json"))
	}
	if len(name) > maxFileName {
		return nil, usagef("%s %s: the file name is %d bytes, longer than a file name can be (%d); choose a shorter one", field, path, len(name), maxFileName)
	}
	// Never at or under a home dot-entry: bwrapkit itself writes the report, and a
	// ~/.bashrc written there would run in the caller's next shell.
	if real, err := filepath.EvalSymlinks(dirPath); err == nil {
		if err := sandbox.RefuseCallerDotEntry("--report", path, filepath.Join(real, name), env); err != nil {
			return nil, usageError{err}
		}
	}
	dir, err := safefile.OpenDir(dirPath)
	if err != nil {
		return nil, usagef("%s %s: %v", field, path, err)
	}
	if dir.IsDirectory(name) {
		dir.Close()
		return nil, usagef("%s %s: names a directory; name a file, as %s", field, path, filepath.Join(path, "report.json"))
	}
	if err := dir.CheckWritable(); err != nil {
		dir.Close()
		return nil, usagef("%s %s: %v", field, path, err)
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
		Started: result.Started, ExitCode: result.ExitCode, Signal: result.Signal,
		TimedOut: result.TimedOut, DurationMS: result.Duration.Milliseconds(),
		Lifetime:    string(result.Lifetime),
		WorkdirMode: string(result.WorkdirMode), Refused: result.Refused, Quarantine: result.Quarantine,
	}
	if result.Cgroup.Mode != "" {
		report.Cgroup = &result.Cgroup
	}
	if report.Refused == nil {
		report.Refused = []sandbox.Refusal{}
	}
	if result.WorkdirMode == sandbox.WorkdirTransactional {
		report.Changes = &landChanges{result.Changes.Added, result.Changes.Modified, result.Changes.Deleted}
	}
	report.NetworkAllowed, report.NetworkDenied = nonNilStrings(facts.netAllowed), nonNilStrings(facts.netDenied)
	if facts.policy.Schema != "" {
		report.Policy = &facts.policy
	}
	if facts.homeFallback != "" {
		report.Warnings = append(report.Warnings, facts.homeFallback)
	}
	report.Warnings = append(report.Warnings, earlierRunNotes(result)...)
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

func nonNilStrings(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
