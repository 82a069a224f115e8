package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/capped"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// Options are how one command is run: which bwrap, its streams and its bounds.
type Options struct {
	Bwrap  string // absolute path of the bwrap to use (see package locate)
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// DirectStderr hands Stderr (an *os.File) to the command itself instead of through a
	// pipe: a terminal keeps its colour, and the order of stdout and stderr lines sharing
	// one file is kept. bwrap's messages then reach it unread, and a 126 or 127 is told
	// from the command's presence inside.
	DirectStderr bool
	// Timeout bounds the command after launch; zero means none. When it fires every
	// process of the sandbox is killed.
	Timeout time.Duration
	// LaunchTimeout bounds the wait for bwrap's child-pid report (default 30s): a
	// bwrap that hangs during setup is killed and reported, never waited on forever.
	LaunchTimeout time.Duration
	// Prober probes Bwrap; nil means a DefaultProber of the process's environment as it is
	// at the call. Pass the one that located and probed the binary to skip a second probe.
	Prober *Prober
	// Keeper is an executable that runs lifetime.Main when its first argument is
	// lifetime.KeeperCommand (bwrapkit itself; a program embedding the runner calls
	// lifetime.KeeperMain first in its main and names os.Executable() here). It watches
	// the run from a session of its own and kills the sandbox if the caller dies before
	// the run is over. Empty: no keeper, and Result.Lifetime says so.
	Keeper string
	// Auditor is an executable that does a --git commit run's audit when it is started
	// with lifetime.AuditCommand and a record (bwrapkit itself; a program embedding the
	// runner calls AuditMain first in its main and names os.Executable() here). The
	// keeper starts it if the caller dies before the run's audit, once the sandbox is
	// gone. Empty, or no Keeper: a caller killed mid-run leaves its commit-mode run
	// unaudited (see docs/lifetime.md).
	Auditor string
	// NetProxy routes the command's HTTP(S) through bwrapkit's allowlist proxy (see
	// NetProxy); zero: none.
	NetProxy NetProxy
	// NetJoiner is the proxy that makes its own listener in the sandbox, for a NetProxy
	// that is Joined (and only then).
	NetJoiner Joiner
	// Hold is the run's keeper and cgroup, made ahead with Prepare(Keeper, the policy's
	// Limits) while the caller did other work; nil, or one made for another keeper or
	// other bounds, or seconds ago: Run makes its own. The caller Releases it in any case
	// (a no-op once Run took it).
	Hold *Hold
	// Caches are the caller's tool caches to layer under the project HOME's (see
	// CacheLayer); a bwrap without --overlay gets none.
	Caches []CacheLayer
	// BwrapStarted, if set, is called once bwrap is running (its exec done), before the
	// sandbox is built; not at all when bwrap could not be started. From then on nothing
	// the caller opens reaches the sandbox: bwrap's descriptor table is its own. Called
	// from Run's goroutine; it must return at once.
	BwrapStarted func()
}

const (
	defaultLaunchTimeout = 30 * time.Second
	// statusFD is where bwrap writes its JSON status: the first of cmd.ExtraFiles.
	statusFD = "3"
	// drainBound is how long to wait for pipes after bwrap exits; the pid namespace
	// ends every process in it when its init exits, so this is only a safety net.
	drainBound = 2 * time.Second
	// lostSightGrace is how long bwrap may take to exit of its own setup failure after
	// the gate saw its child gone, before it is killed (and the gate's word stands).
	lostSightGrace = 500 * time.Millisecond
)

// Run runs cmd inside the sandbox policy describes. It returns a Result only when bwrap
// proved the launch; otherwise an *UnavailableError and the command did not run. A
// cancelled ctx kills the sandbox and returns ctx's error with the partial Result.
//
// Run takes only a policy NewPolicy returned, unchanged but for Features (a policy of
// any other origin is refused with ReasonInvalidPolicy), and it probes opts.Bwrap itself
// rather than trust policy.Features, so every decision the argv depends on is its own.
//
// Run changes one thing in the calling process: it sets close-on-exec on every
// descriptor above 2, so that bwrap, and through it the sandbox, inherits only the
// descriptors Run hands it (a caller's database socket or secret file stays out). A
// caller that forks children of its own with inherited descriptors must pass them
// explicitly (exec.Cmd.ExtraFiles does).
func Run(ctx context.Context, policy Policy, cmd []string, opts Options) (Result, error) {
	if !policy.hasValidSeal() {
		return Result{}, &UnavailableError{Reason: ReasonInvalidPolicy, Bwrap: opts.Bwrap, Err: errUnsealed}
	}
	// The run's attachments, checked as NewPolicy checks its own paths (extend.go).
	if err := checkCaches(policy, opts.Caches); err != nil {
		return Result{}, &UnavailableError{Reason: ReasonInvalidPolicy, Bwrap: opts.Bwrap, Err: err}
	}
	if err := checkNetProxy(policy, opts.NetProxy, opts.NetJoiner); err != nil {
		return Result{}, &UnavailableError{Reason: ReasonInvalidPolicy, Bwrap: opts.Bwrap, Err: err}
	}
	policy.NetProxy, policy.Caches = opts.NetProxy, opts.Caches
	if err := usable(opts.Bwrap); err != nil {
		return Result{}, err
	}
	if err := checkTrusted(opts.Bwrap); err != nil {
		return Result{}, err
	}
	prober := opts.Prober
	if prober == nil {
		fresh := DefaultProber(os.Environ())
		prober = &fresh
	}
	features, err := prober.Capable(ctx, opts.Bwrap)
	if err != nil {
		return Result{}, err
	}
	policy.Features = features
	if err := check(opts.Bwrap, policy, cmd); err != nil {
		return Result{}, &UnavailableError{Reason: ReasonInvalidPolicy, Bwrap: opts.Bwrap, Err: err}
	}
	if err := CheckPlacement(opts.Bwrap, policy); err != nil {
		return Result{}, err
	}
	program, err := SeccompProgram()
	if err != nil {
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: fmt.Errorf("the seccomp filter cannot be built: %w", err)}
	}
	if len(program) > pipeAtomicWrite {
		// The filter must reach bwrap in one atomic write, or a bwrapkit that dies midway
		// could leave it a shorter, valid, weaker program.
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: fmt.Errorf("the seccomp filter is %d bytes, more than one atomic pipe write", len(program))}
	}
	choice, err := policy.ChooseMode()
	if err != nil {
		var unavailable *UnavailableError
		if errors.As(err, &unavailable) {
			unavailable.Bwrap = opts.Bwrap
		}
		return Result{}, err
	}
	if err := recordPolicyBase(policy, choice.Mode); err != nil {
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: err}
	}
	if choice.Mode == WorkdirDirect {
		if err := policy.RefuseSelfInsideDirect(); err != nil {
			return Result{}, &UnavailableError{Reason: ReasonInvalidPolicy, Bwrap: opts.Bwrap, Err: err}
		}
	}
	var txn *transaction
	if choice.Mode == WorkdirTransactional {
		if txn, err = beginTransaction(policy); err != nil {
			return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: err}
		}
		policy.overlay = overlayDirs{upper: txn.layer.Upper, work: txn.layer.Work}
	}
	plan, err := planLaunch(resolve(policy), cmd, opts.Bwrap)
	if err != nil {
		txn.abort()
		return Result{}, err
	}
	defer plan.close()
	plan.program = program
	if policy.NetProxy.Joined {
		plan.joiner = opts.NetJoiner
	}
	// One commit-mode run on a tree at a time, from its inventory to its audit.
	treeLocks, err := lockCommitRuns(policy)
	if err != nil {
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: err}
	}
	defer treeLocks.Close()
	// Earlier commit-mode runs killed with their keeper left audits nobody did: done
	// first, or this run's inventory would take their plants for the project's own.
	switch picked, live, err := pickUpAudits(policy); {
	case err != nil && policy.Git == GitCommit:
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: fmt.Errorf("an earlier --git commit run on this project was killed before its audit, and the audit cannot be done now: %w; look at the project's nested repositories (git status in each) and remove the record to go on", err)}
	case live > 0 && policy.Git == GitCommit:
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: errors.New("a --git commit run on this project whose bwrapkit was killed is still being ended and audited by its keeper: run this one in a moment (its inventory would take what that run left for the project's own)")}
	case len(picked) > 0:
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: pickedUpError(picked)}
	}
	before := repositoriesBefore(policy)
	if opts.Keeper != "" && opts.Auditor != "" {
		// Removed once the audit below is done; a run refused before it has nothing
		// of the command's to audit. Its lock is let go after, then the keeper.
		var lock *os.File
		if plan.auditRecord, lock, err = writePendingAudit(policy, before); err != nil {
			return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: opts.Bwrap, Err: err}
		}
		defer func() {
			os.Remove(plan.auditRecord)
			lock.Close()
			if plan.hold != nil {
				plan.hold.end() // start left it to the end of the audit
			}
		}()
	}
	result, err := start(ctx, plan, opts)
	result.WorkdirMode, result.ModeFallback = choice.Mode, choice.Fallback
	if txn != nil {
		// The sandbox is gone (start returns only once its pid 1 is dead), so nothing
		// writes the layer any more: vet it and land what is accepted.
		for _, layer := range txn.abandoned {
			if layer.MidLanding {
				result.Interrupted = append(result.Interrupted, layer.Dir)
			} else {
				result.Abandoned = append(result.Abandoned, layer.Dir)
			}
		}
		if landErr := txn.finish(ctx, result, err); landErr != nil && err == nil {
			err = landErr
		}
		result.Changes, result.Refused, result.Quarantine = txn.outcome()
	}
	if result.Started || result.Failure != "" {
		// The sandbox is gone (its pid namespace ended with it): nothing races this.
		moved, auditErr := auditGit(policy, before)
		result.GitMovedAside = moved
		if auditErr != nil && err == nil {
			err = &GitAuditError{Err: auditErr}
		}
	}
	// What the keepers of earlier killed runs did, said at the end, so that a run killed
	// in turn leaves it to the next.
	result.EarlierAudits = takeAuditLog(policy)
	return result, err
}

// GitAuditError is a commit-mode run after which bwrapkit could not prove the git
// metadata safe for a host git; the command ran and Result holds its status.
type GitAuditError struct{ Err error }

func (e *GitAuditError) Error() string { return "--git commit: " + e.Err.Error() }
func (e *GitAuditError) Unwrap() error { return e.Err }

const (
	// Descriptors bwrap inherits: the status pipe, the filter pipe, then bind sources.
	seccompFD = 4
	firstFD   = 5
	// pipeAtomicWrite is PIPE_BUF: a write of at most this many bytes is never split.
	pipeAtomicWrite = 4096
)

// launchPlan is one launch, ready to start: the argv, the descriptors behind it and
// what the gate must find in the finished sandbox.
type launchPlan struct {
	argv     []string
	files    []*os.File // ExtraFiles from fd 5 on: the bind sources, with --bind-fd
	sources  map[string]source
	expected []expectation
	program  []byte
	limits   limits.Limits
	command  string
	// joiner makes the proxy's sockets in the verified sandbox (Options.NetJoiner, for a
	// NetProxy that is Joined); nil: none.
	joiner Joiner
	// lookInside is the run's (resolved.lookInside), for telling a 126 from a 127.
	lookInside func(name string) (path string, found bool)
	// auditRecord is a --git commit run's pending audit (writePendingAudit), which the
	// keeper has done if the caller dies first; "" for none.
	auditRecord string
	// hold is the run's, when start leaves its end to Run (after the audit); nil else.
	hold *Hold
}

// planLaunch opens every bind source of the resolved run and builds the argv that binds
// those descriptors.
func planLaunch(run resolved, cmd []string, bwrap string) (*launchPlan, error) {
	plan := &launchPlan{sources: map[string]source{}}
	fds := layout{seccompFD: seccompFD, sourceFD: map[string]int{}}
	byFD := run.features.Has("bind-fd") && run.features.Has("ro-bind-fd")
	for _, bind := range run.binds {
		if _, done := plan.sources[bind.path]; done {
			continue
		}
		src, err := openSource(bind.path)
		if err != nil {
			plan.close()
			return nil, &UnavailableError{Reason: ReasonUnverified, Bwrap: bwrap, Err: err}
		}
		plan.sources[bind.path] = src
		// The overlay's lower layer is opened by path: its descriptor stays here. Passed
		// on unconsumed it would reach the command, a live handle on the host's project.
		if byFD && bind.option != overlayOption {
			fds.sourceFD[bind.path] = firstFD + len(plan.files)
			plan.files = append(plan.files, src.file)
		}
	}
	argv := build(bwrap, run, cmd, fds)
	plan.argv = append([]string{argv[0], "--json-status-fd", statusFD}, argv[1:]...)
	plan.expected = expectations(run, plan.sources)
	plan.limits = run.limits
	plan.command, plan.lookInside = cmd[0], run.lookInside
	return plan, nil
}

func (p *launchPlan) close() {
	for _, src := range p.sources {
		src.file.Close()
	}
}

// usable checks the bwrap path before anything is executed.
func usable(bwrap string) error {
	if bwrap == "" {
		return &UnavailableError{Reason: ReasonNotFound}
	}
	info, err := os.Stat(bwrap)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &UnavailableError{Reason: ReasonNotFound, Bwrap: bwrap, Err: err}
	case err != nil:
		return &UnavailableError{Reason: ReasonNotExecutable, Bwrap: bwrap, Err: err}
	case !info.Mode().IsRegular():
		return &UnavailableError{Reason: ReasonNotExecutable, Bwrap: bwrap, Err: errors.New("not a regular file")}
	case info.Mode().Perm()&0o111 == 0:
		return &UnavailableError{Reason: ReasonNotExecutable, Bwrap: bwrap, Err: errors.New("no execute permission")}
	}
	return nil
}

// checkTrusted refuses a bwrap that another user or a sandbox could replace (package trust's
// rule, the one locate applies when it searches): a caller of this package that names a
// bwrap in a world-writable directory would otherwise run whatever was put there.
func checkTrusted(bwrap string) error {
	exposed, _, err := locate.Replaceable(locate.OS{}, bwrap)
	switch {
	case err != nil:
		return &UnavailableError{Reason: ReasonUntrusted, Bwrap: bwrap, Err: fmt.Errorf("%s or a directory above it cannot be inspected: %w", bwrap, err)}
	case exposed != "":
		return &UnavailableError{Reason: ReasonUntrusted, Bwrap: bwrap, Err: fmt.Errorf("another user or a sandbox could replace it: %s", exposed)}
	}
	return nil
}

// CheckPlacement refuses a bwrap that the sandbox itself could replace: one at or under
// the workdir, as named or as resolved (a command plants `.venv/bin/bwrap`, an activated
// venv puts it first on PATH, and the next run would execute it unsandboxed on the host).
func CheckPlacement(bwrap string, policy Policy) error {
	real, err := filepath.EvalSymlinks(bwrap)
	if err != nil {
		return &UnavailableError{Reason: ReasonNotFound, Bwrap: bwrap, Err: err}
	}
	for _, path := range []string{bwrap, real} {
		if dir, inside := locate.Inside(path, []string{policy.Workdir}); inside {
			return &UnavailableError{Reason: ReasonUntrusted, Bwrap: bwrap, Err: fmt.Errorf("%s is inside the workdir %s, which sandboxed commands can write: one could have planted it", path, dir)}
		}
	}
	return nil
}

// start runs bwrap and watches its status fd: the effectful half of Run.
func start(ctx context.Context, plan *launchPlan, opts Options) (Result, error) {
	argv := plan.argv
	if err := keepInheritedFDsOut(); err != nil {
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: argv[0], Err: err}
	}
	statusRead, statusWrite, err := os.Pipe()
	if err != nil {
		return Result{}, &UnavailableError{Reason: ReasonStartFailed, Bwrap: argv[0], Err: err}
	}
	defer statusRead.Close()
	filterRead, filter, err := newHeldFilter(plan.program)
	if err != nil {
		statusWrite.Close()
		return Result{}, &UnavailableError{Reason: ReasonStartFailed, Bwrap: argv[0], Err: err}
	}
	defer filter.withhold()

	// The keeper exists before bwrap does: no moment of the run is unkept. So does the
	// run's cgroup, where the host allows one (bwrap is started in it), which the keeper
	// is told of before it is made. Both may be under way already (Options.Hold).
	hold := opts.Hold
	if !hold.take(opts.Keeper, plan.limits) {
		if hold.stale() {
			// No run takes it any more: its keeper and cgroup need not wait for the
			// caller's Release, after this whole run.
			go hold.Release()
		}
		hold = prepare(opts.Keeper, plan.limits, false)
	}
	keeper, group, cgroups, err := hold.wait()
	mode := LifetimeUnkept
	if keeper != nil {
		mode = LifetimeKeeper
	}
	// Said last, once everything of the run is gone (the deferred calls run in reverse),
	// early returns included: the cgroup is removed, then the keeper let go. (The run's
	// end removes the cgroup before, below, to report what was left.) With an audit
	// pending, Run lets the keeper go once the audit is done: a caller killed during it
	// still has its keeper do it.
	if plan.auditRecord != "" {
		plan.hold = hold
	} else {
		defer hold.end()
	}
	if err == nil && keeper != nil && plan.auditRecord != "" {
		// Before bwrap exists: from the command's first instruction on, a caller that
		// dies leaves the audit to the keeper.
		err = keeper.AuditAfter(opts.Auditor, plan.auditRecord)
	}
	if err != nil {
		statusWrite.Close()
		filterRead.Close()
		return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: argv[0], Err: err}
	}

	stderr := &capped.Tail{Out: opts.Stderr} // bwrap's own words explain a failure
	process := exec.Command(argv[0], argv[1:]...)
	process.Stdin, process.Stdout, process.Stderr = opts.Stdin, opts.Stdout, stderr
	direct, _ := opts.Stderr.(*os.File)
	if opts.DirectStderr && direct != nil {
		process.Stderr = direct
	}
	process.ExtraFiles = append([]*os.File{statusWrite, filterRead}, plan.files...)
	process.Env = []string{} // bwrap gets nothing of ours; --setenv builds the inside
	if keeper != nil {
		// Only the keeper's mark, which --clearenv keeps from the command.
		process.Env = []string{keeper.Env()}
	}
	// Its own process group: a terminal's ^C reaches bwrapkit, which decides.
	// And a parent-death signal from its first instruction: bwrap's own --die-with-parent
	// comes later, and a bwrap whose start was under way when bwrapkit died would otherwise
	// run on after the keeper stopped looking (Go kills the child at once when its parent
	// is already gone by the time the signal is set).
	process.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if group != nil {
		group.Attach(process.SysProcAttr)
	}
	process.WaitDelay = drainBound

	began := time.Now()
	exited, err := startInFreshKeyring(process, group)
	statusWrite.Close()
	filterRead.Close()
	if err != nil {
		return Result{}, &UnavailableError{Reason: ReasonStartFailed, Bwrap: argv[0], Err: err}
	}
	if opts.BwrapStarted != nil {
		opts.BwrapStarted()
	}

	if keeper != nil {
		if err := keeper.Watch("bwrap", process.Process.Pid); err != nil {
			kill(process, sandboxInit{})
			<-exited
			return Result{}, &UnavailableError{Reason: ReasonHardening, Bwrap: argv[0], Err: fmt.Errorf("the run's keeper is gone: %w", err)}
		}
	}

	status := watchStatus(statusRead)
	observed := launch{}
	var child sandboxInit
	// A closure: `defer child.close()` would copy child now, before its pidfd exists, and
	// leak one descriptor per run.
	defer func() { child.close() }()
	launchTimeout := opts.LaunchTimeout
	if launchTimeout == 0 {
		launchTimeout = defaultLaunchTimeout
	}
	launchTimer := time.NewTimer(launchTimeout)
	launchDeadline := time.Now().Add(launchTimeout)
	defer launchTimer.Stop()
	gateCtx, stopGate := context.WithCancel(ctx)
	defer stopGate()
	var gated <-chan error
	var deadline, lostSight <-chan time.Time
	var waitErr, interrupted, refused error
	cancelled := ctx.Done()
	var keeperExited <-chan struct{}
	if keeper != nil {
		keeperExited = keeper.Exited()
	}

wait:
	for {
		select {
		case pid := <-status.childPID:
			observed.childPID = pid
			child = holdInit(pid)
			// The keeper knows pid 1 before the command can exist (the gate releases it).
			if keeper != nil {
				if err := keeper.Watch("init", pid); err != nil {
					refused = fmt.Errorf("the run's keeper is gone: %w", err)
					kill(process, child)
					continue
				}
			}
			gated = gate(gateCtx, pid, plan, filter, keeperHolds(keeper, launchDeadline))
		case err := <-gated:
			gated = nil
			if err != nil {
				refused = err
				if errors.As(err, new(childGoneError)) {
					// The child died while being built: bwrap is dying of its own setup
					// failure, and its words name the cause. The filter stays withheld, so
					// no command can start meanwhile; the kill waits a moment for them.
					lostSight = time.After(lostSightGrace)
					continue
				}
				kill(process, child)
				continue
			}
			launchTimer.Stop()
			if opts.Timeout > 0 {
				timer := time.NewTimer(opts.Timeout)
				defer timer.Stop()
				deadline = timer.C
			}
		case <-lostSight:
			lostSight = nil
			kill(process, child)
		case <-launchTimer.C:
			kill(process, child)
			<-exited
			return Result{}, &UnavailableError{Reason: ReasonLaunchTimeout, Bwrap: argv[0], Stderr: stderr.String(), Err: fmt.Errorf("%v", launchTimeout)}
		case <-deadline:
			observed.timedOut = true
			kill(process, child)
		case <-keeperExited:
			// Nothing would end the sandbox if bwrapkit died now: the run is ended, and
			// refused, rather than left unkept.
			keeperExited = nil
			if refused == nil {
				refused = &UnavailableError{Reason: ReasonHardening, Err: errors.New("the run's keeper exited while the run went on, so nothing would have ended the sandbox had bwrapkit died; the sandbox was ended (was the keeper, sandbox-keeper, killed by the OOM killer or a pkill -f?)")}
			}
			kill(process, child)
		case <-cancelled:
			cancelled = nil // a closed channel would fire on every turn of the loop
			interrupted = ctx.Err()
			kill(process, child)
		case waitErr = <-exited:
			break wait
		}
	}
	stopGate()
	// bwrap has exited, but the sandbox's pid 1 need not have: the command shares its
	// uid and can rewrite it through /proc/1/mem (clear its parent-death signal, fake an
	// exit), so a sandbox could outlive bwrap and this call, timeout and all. Whatever
	// happened, pid 1 is killed now, which ends every process of the pid namespace.
	child.killAndReap(drainBound)
	// And what is left of bwrap's process group: if bwrap died between its clone and
	// telling its child to go on (a capset refused by an outer seccomp filter, say), the
	// child waits on an eventfd forever, unreported, in bwrap's group.
	_ = syscall.Kill(-process.Process.Pid, syscall.SIGKILL)
	// And the cgroup: the run is over only once nothing of it is left. Its OOM kills are
	// read first; End removes the counters.
	cgroups.oomKills, cgroups.bound = group.MemoryKills()
	cgroups.cpuMicros = group.CPUMicros()
	cgroups.ended = group.End(cgroupEndBound)

	// The status pipe closes with bwrap and the namespace, so this read is short.
	select {
	case report := <-status.done:
		if observed.childPID == 0 {
			observed.childPID = report.childPID
		}
		observed.exitCode, observed.exitReported = report.exitCode, report.exitReported
	case <-time.After(drainBound):
	}
	observed.stderr = stderr.String()
	observed.bwrapStatus = exitStatusOf(waitErr)
	observed.withheld = !filter.released()
	if process.Stderr == direct && direct != nil {
		observed.direct = true
		if !observed.exitReported && !observed.withheld {
			_, observed.commandFound = plan.lookInside(plan.command)
		}
	}

	result, reason := classify(observed)
	result.Duration = time.Since(began)
	result.Lifetime = mode
	result.Cgroup = cgroups.result()
	switch {
	case interrupted != nil:
		// Interrupted after the gate let the command start: it ran, and was killed.
		if !result.Started && result.Failure == "" && !observed.withheld && observed.childPID != 0 {
			result = Result{Started: true, Duration: result.Duration}
		}
		return result, interrupted
	case refused != nil && errors.As(refused, new(childGoneError)) && observed.bwrapStatus > 0 && observed.bwrapSaidError():
		// bwrap exited on its own with its error: its setup failure decides, the gate's
		// "unverified" is only for a sandbox that was built and did not match.
		return Result{}, &UnavailableError{Reason: ReasonSetupFailed, Bwrap: argv[0], Stderr: observed.stderr, StderrShown: observed.direct, Err: waitErr}
	case refused != nil:
		var unavailable *UnavailableError
		if errors.As(refused, &unavailable) {
			unavailable.Bwrap, unavailable.Stderr = argv[0], observed.stderr
			return Result{}, unavailable
		}
		return Result{}, &UnavailableError{Reason: ReasonUnverified, Bwrap: argv[0], Stderr: observed.stderr, Err: refused}
	case reason != "":
		return Result{}, &UnavailableError{Reason: reason, Bwrap: argv[0], Stderr: observed.stderr, StderrShown: observed.direct, Err: waitErr}
	}
	return result, nil
}

// gate waits for the sandbox's setup to finish, verifies it, and only then releases the
// seccomp filter that bwrap is waiting for (see gate.go). The answer arrives once.
func gate(ctx context.Context, pid int, plan *launchPlan, filter *heldFilter, kept func() error) <-chan error {
	answer := make(chan error, 1)
	go func() {
		// The bounds go on bwrap's child before it forks the command (it waits for the
		// filter first), so the command inherits them from its first instruction.
		var err error
		// Held from the start: the namespace joinNetwork opens by pid must be this child's.
		initFD, _ := unix.PidfdOpen(pid, 0)
		if initFD >= 0 {
			defer unix.Close(initFD)
		}
		cgroup.PreferInside(pid)
		if boundErr := limits.Apply(pid, plan.limits); boundErr != nil {
			err = &UnavailableError{Reason: ReasonHardening, Err: boundErr}
			if errors.Is(boundErr, unix.ESRCH) {
				err = childGoneError{err} // the child died in its setup before its bounds were set
			}
		}
		// The proxy makes its sockets in the sandbox's network namespace while bwrap
		// builds the rest: the namespace is the child's from its clone, and the sockets
		// are bound with IP_FREEBIND, so they work whether bwrap has brought up lo yet or
		// not. The command cannot exist before both are done (the filter is withheld).
		var joined chan error
		if err == nil && plan.joiner != nil {
			joined = make(chan error, 1)
			go func() { joined <- joinNetwork(pid, initFD, plan.joiner) }()
		}
		var root *os.File
		if err == nil {
			root, err = awaitSetup(ctx, pid, filter)
		}
		if err == nil {
			err = verifyMounts(root, plan.expected)
			root.Close()
		}
		if joined != nil {
			// Always awaited: it holds initFD, which this goroutine closes.
			if joinErr := <-joined; err == nil {
				err = joinErr
			}
		}
		if err == nil && kept != nil {
			// Last before the command may exist: the keeper holds pid 1 (see keeperHolds).
			err = kept()
		}
		if err == nil {
			err = filter.release(plan.program)
		}
		if err != nil && ctx.Err() != nil {
			return // the sandbox ended (or was ended) first: nothing to refuse
		}
		answer <- err
	}()
	return answer
}

// joinNetwork has the proxy make its sockets in the sandbox's network namespace
// (Options.NetJoiner) while bwrap builds the rest, before the command can exist. The
// namespace is opened by pid, so it is taken only if initFD (a pidfd of the sandbox's
// pid 1, opened when bwrap reported it) still shows that process alive afterwards: a pid
// recycled in between is another process's, and never the host's own namespace either.
func joinNetwork(pid, initFD int, joiner Joiner) error {
	path := "/proc/" + strconv.Itoa(pid) + "/ns/net"
	netns, err := os.Open(path)
	if err != nil {
		return goneIf(fmt.Errorf("the allowlist proxy cannot reach the sandbox's network namespace (%s): %w", path, err))
	}
	defer netns.Close()
	if initFD >= 0 {
		if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(initFD), Events: unix.POLLIN}}, 0); n != 0 {
			return childGoneError{errors.New("the sandbox's pid 1 exited before the allowlist proxy joined its network namespace")}
		}
	}
	var theirs, ours unix.Stat_t
	if unix.Fstat(int(netns.Fd()), &theirs) != nil || unix.Stat("/proc/self/ns/net", &ours) != nil || (theirs.Dev == ours.Dev && theirs.Ino == ours.Ino) {
		return &UnavailableError{Reason: ReasonHardening, Err: fmt.Errorf("%s is not a network namespace of the sandbox's own", path)}
	}
	if err := joiner.ServeNamespace(netns); err != nil {
		return &UnavailableError{Reason: ReasonHardening, Err: fmt.Errorf("the allowlist proxy could not serve the sandbox: %w", err)}
	}
	return nil
}

// keeperConfirmBound bounds waiting for the keeper's word that it holds the sandbox. It
// started before bwrap, so it has long been ready by the time the gate passes; the bound
// is for a host so loaded that a process start takes seconds.
const keeperConfirmBound = 10 * time.Second

// confirmMargin is how much sooner than the launch's bound the keeper's wait ends.
const confirmMargin = 100 * time.Millisecond

// confirmBound is the keeper's wait, given what is left of the launch's bound: up to
// keeperConfirmBound, ending confirmMargin before the launch's; the whole of
// keeperConfirmBound when that is too close to tell apart (the launch's bound decides).
func confirmBound(launchLeft time.Duration) time.Duration {
	if left := launchLeft - confirmMargin; left > 0 && left < keeperConfirmBound {
		return left
	}
	return keeperConfirmBound
}

// keeperHolds is the gate's last condition when the run has a keeper: the keeper has said
// it holds the sandbox's pid 1. Without it, a keeper that died early or does not speak
// this protocol would leave the command running unkept without a word; with it, the
// command never starts then (refused, reason hardening). nil: no keeper, nothing to wait.
// The wait ends a moment before the launch's own bound (launchDeadline), so that a keeper
// that never answers (a bwrapkit-helper of another build) is named as the cause, not
// reported as a slow launch, which the doctor would try again for twice as long.
func keeperHolds(keeper *lifetime.Keeper, launchDeadline time.Time) func() error {
	if keeper == nil {
		return nil
	}
	return func() error {
		if err := keeper.Confirm(confirmBound(time.Until(launchDeadline))); err != nil {
			return &UnavailableError{Reason: ReasonHardening, Err: err}
		}
		return nil
	}
}

// startInFreshKeyring starts process from a thread of its own that first joins a new,
// empty session keyring: bwrap does not namespace keyrings, and the child inherits the
// forking thread's, so the caller's keys would otherwise be one keyctl away. The thread
// stays until bwrap exits: --die-with-parent's signal fires when the forking thread
// ends, not the process. The keyring is a second wall; the filter denies keyctl.
func startInFreshKeyring(process *exec.Cmd, group *cgroup.Group) (<-chan error, error) {
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, with its keyring, ends with this goroutine
		// A NULL name: an anonymous keyring no other process can join by name.
		if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 && !keyringsUnavailable(errno) {
			err := error(errno)
			started <- fmt.Errorf("joining a fresh session keyring: %w", err)
			return
		}
		// v1 cgroups are joined by thread: this one, for the moment of the fork.
		leave, err := group.EnterThread()
		if err != nil {
			started <- err
			return
		}
		err = process.Start()
		if leaveErr := leave(); leaveErr != nil && err == nil {
			// This thread must not stay in the run's cgroups, which end with the run.
			kill(process, sandboxInit{})
			_ = process.Wait()
			err = fmt.Errorf("leaving the run's cgroups after starting bwrap: %w", leaveErr)
		}
		if err != nil {
			started <- err
			return
		}
		started <- nil
		lifetime.ParkUntilExited(process.Process.Pid)
		exited <- process.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}

// keyringsUnavailable: no keyrings in this kernel, or keyctl already filtered (a
// container's seccomp profile). Then the command cannot reach any keyring either.
func keyringsUnavailable(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}

// kill ends the sandbox: SIGKILL to the namespace's init takes every process in the
// pid namespace with it, including any that escaped with setsid; bwrap's process group
// goes too.
func kill(process *exec.Cmd, child sandboxInit) {
	child.kill()
	_ = syscall.Kill(-process.Process.Pid, syscall.SIGKILL)
}

// sandboxInit is the sandbox's pid 1, held by a pidfd from the moment bwrap reports it:
// once bwrap has reaped it its pid may be reused, and a kill by number could then hit an
// unrelated process.
type sandboxInit struct {
	pid   int
	pidfd int // -1 where the kernel has no pidfd_open (before 5.3)
}

func holdInit(pid int) sandboxInit {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		pidfd = -1
	}
	return sandboxInit{pid: pid, pidfd: pidfd}
}

func (c sandboxInit) kill() {
	switch {
	case c.pid <= 0: // not reported yet: bwrap's process group is all there is
	case c.pidfd >= 0:
		_ = unix.PidfdSendSignal(c.pidfd, unix.SIGKILL, nil, 0)
	default:
		_ = syscall.Kill(c.pid, syscall.SIGKILL)
	}
}

// killAndReap kills pid 1 and waits, at most bound, until it is gone (its pidfd turns
// readable when it exits). Without a pidfd there is nothing safe to wait on: a pid may
// already name another process.
func (c sandboxInit) killAndReap(bound time.Duration) {
	if c.pid <= 0 || c.pidfd < 0 {
		return
	}
	_ = unix.PidfdSendSignal(c.pidfd, unix.SIGKILL, nil, 0)
	fds := []unix.PollFd{{Fd: int32(c.pidfd), Events: unix.POLLIN}}
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds())+1)
		if n > 0 || (err != nil && err != unix.EINTR) {
			return
		}
	}
}

func (c sandboxInit) close() {
	if c.pid > 0 && c.pidfd >= 0 {
		unix.Close(c.pidfd)
	}
}

func exitStatusOf(err error) int {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exitErr):
		if status, ok := exitErr.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			return -1
		}
		return exitErr.ExitCode()
	}
	return -1
}

// statusReport is what the status fd said in the end.
type statusReport struct {
	childPID     int
	exitCode     int
	exitReported bool
}

type statusWatch struct {
	childPID chan int
	done     chan statusReport
}

// watchStatus reads bwrap's JSON status documents, one per line, ignoring unknown keys.
func watchStatus(r io.Reader) statusWatch {
	watch := statusWatch{childPID: make(chan int, 1), done: make(chan statusReport, 1)}
	go func() {
		var report statusReport
		scanner := bufio.NewScanner(r)
		for scanner.Scan() {
			var doc struct {
				ChildPID *int `json:"child-pid"`
				ExitCode *int `json:"exit-code"`
			}
			if json.Unmarshal(scanner.Bytes(), &doc) != nil {
				continue
			}
			if doc.ChildPID != nil && report.childPID == 0 && *doc.ChildPID > 0 {
				report.childPID = *doc.ChildPID
				watch.childPID <- report.childPID
			}
			if doc.ExitCode != nil {
				report.exitCode, report.exitReported = *doc.ExitCode, true
			}
		}
		watch.done <- report
	}()
	return watch
}
