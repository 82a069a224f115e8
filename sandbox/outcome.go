package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox/land"
)

// Result is what happened to a command that bwrap proved it launched.
type Result struct {
	// Started: the command ran. bwrap proved the launch (child-pid, then the gate passed)
	// and the command's exec succeeded. A Result with Started false has a Failure: the
	// sandbox was built, but the command could not be executed in it (126, 127). Without
	// a launch proof there is no Result, only an *UnavailableError. The run report's
	// "started" is this same field.
	Started bool
	// ExitCode is the command's status, 128+N when a signal killed it, 124 on timeout,
	// 126/127 when it could not be executed / was not found inside.
	ExitCode int
	// Signal is N when ExitCode is 128+N (bwrap reports a signal death that way, so a
	// command that itself exits 130 reads as SIGINT too).
	Signal   int
	TimedOut bool
	// Failure says why the command itself did not run (126, 127); empty otherwise.
	Failure CommandFailure
	// GitMovedAside lists what a --git commit run planted that a host git would have
	// followed, and where the git audit moved it ("old -> new").
	GitMovedAside []string
	Duration      time.Duration
	// Lifetime says what held the run's processes to its end besides bwrapkit itself:
	// LifetimeKeeper, or LifetimeUnkept when Options.Keeper was empty (a SIGKILL of the
	// caller could then leave the sandbox running).
	Lifetime Lifetime
	// Cgroup says which cgroup held the run and bounded its memory and tasks, if any.
	Cgroup RunCgroup
	// WorkdirMode is the mode the run had; ModeFallback says why a default run fell
	// back to direct ("" when it did not).
	WorkdirMode  WorkdirMode
	ModeFallback string
	// Transactional runs: what landed, what was refused (kept in Quarantine), the
	// layers of earlier runs whose bwrapkit died before landing (removed, or kept with
	// KeepAbandoned), and those of earlier runs killed while landing (Interrupted: part
	// of each landed, each file whole; the rest is always kept there).
	Changes     land.Changes
	Refused     []Refusal
	Quarantine  string
	Abandoned   []string
	Interrupted []string
	// EarlierAudits are what the keepers of earlier --git commit runs on the project,
	// whose bwrapkit was killed before its audit, did in its place (AuditLogName's
	// lines), each said once, to the next run.
	EarlierAudits []string
}

// Lifetime names what ends a run's processes when its caller dies.
type Lifetime string

const (
	LifetimeKeeper Lifetime = "keeper" // a keeper in its own session kills the run
	LifetimeUnkept Lifetime = "unkept" // only bwrap's --die-with-parent, which the command can undo
)

// Reason is why the sandbox could not be built.
type Reason string

const (
	ReasonNotFound      Reason = "not-found"       // no bwrap at all
	ReasonNotExecutable Reason = "not-executable"  // the path exists but cannot be run
	ReasonUnsupported   Reason = "unsupported"     // --help lacks options the boundary needs
	ReasonStartFailed   Reason = "start-failed"    // exec of bwrap itself failed
	ReasonSetupFailed   Reason = "setup-failed"    // bwrap ran and reported an error building the sandbox
	ReasonNoLaunchProof Reason = "no-launch-proof" // bwrap exited without ever reporting child-pid
	ReasonLaunchTimeout Reason = "launch-timeout"  // no child-pid within the bound
	ReasonInvalidPolicy Reason = "invalid-policy"  // the policy itself was refused
	ReasonUntrusted     Reason = "untrusted-bwrap" // the bwrap sits where a sandbox or another user can replace it
	ReasonUnverified    Reason = "unverified"      // the built sandbox did not match what was checked (a path raced), or could not be inspected
	ReasonHardening     Reason = "hardening"       // a piece of the boundary (filter, limits, descriptor hygiene) could not be put in place
)

// UnavailableError says the command did not run because the boundary was not built.
type UnavailableError struct {
	Reason Reason
	Bwrap  string
	// Stderr is the tail of what bwrap printed (its own "bwrap: ..." errors).
	Stderr string
	// Missing lists required options absent from --help (ReasonUnsupported).
	Missing []string
	// NotBwrap: the binary lists none of bwrap's options at all (ReasonUnsupported).
	NotBwrap bool
	// StderrShown: bwrap's own message already reached the user (its stderr was
	// passed through), so Message does not repeat it.
	StderrShown bool
	Err         error
}

func (e *UnavailableError) Error() string {
	return "sandbox unavailable: " + e.Message()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Message names the cause and the next step, in one or two lines.
func (e *UnavailableError) Message() string {
	cause := e.cause()
	return fmt.Sprintf("the sandbox could not be built, so the command did not run: %s\n  next: %s", cause, e.Remedy())
}

func (e *UnavailableError) cause() string {
	switch e.Reason {
	case ReasonNotFound:
		return "no bwrap found"
	case ReasonNotExecutable:
		var execErr *ExecError
		if errors.As(e.Err, &execErr) {
			return execErr.Error()
		}
		return fmt.Sprintf("%s is not executable (%v)", e.Bwrap, e.Err)
	case ReasonUnsupported:
		var modeErr *ModeError
		if errors.As(e.Err, &modeErr) {
			return fmt.Sprintf("%s: %v", orNothingPath(e.Bwrap), modeErr)
		}
		if e.NotBwrap && e.Err != nil {
			return fmt.Sprintf("%s does not behave like bwrap: %v", e.Bwrap, e.Err)
		}
		if e.NotBwrap {
			return fmt.Sprintf("%s does not behave like bwrap: its --help lists none of bwrap's options", e.Bwrap)
		}
		return fmt.Sprintf("%s lacks options the boundary needs: --%s", e.Bwrap, strings.Join(e.Missing, ", --"))
	case ReasonStartFailed:
		return fmt.Sprintf("%s could not be started: %v", e.Bwrap, e.Err)
	case ReasonSetupFailed:
		if e.StderrShown {
			return fmt.Sprintf("%s failed while building the sandbox (its message is above)", e.Bwrap)
		}
		return fmt.Sprintf("%s failed while building the sandbox: %s", e.Bwrap, orNothing(lastLine(e.Stderr)))
	case ReasonNoLaunchProof:
		return fmt.Sprintf("%s exited without reporting a sandboxed child (%v); it is not a working bwrap", e.Bwrap, e.Err)
	case ReasonLaunchTimeout:
		return fmt.Sprintf("%s did not report a sandboxed child within %v and was killed", e.Bwrap, e.Err)
	case ReasonInvalidPolicy, ReasonUntrusted, ReasonUnverified, ReasonHardening:
		return e.Err.Error()
	}
	return string(e.Reason)
}

// Remedy is the next step for this reason.
func (e *UnavailableError) Remedy() string {
	switch e.Reason {
	case ReasonNotFound, ReasonNotExecutable, ReasonUnsupported, ReasonNoLaunchProof:
		return "run `bwrapkit install` for a verified bwrap, or point --bwrap at a real one; `bwrapkit doctor` explains"
	case ReasonSetupFailed, ReasonLaunchTimeout:
		return "run `bwrapkit doctor` to see why this host refused (user namespaces, AppArmor, container) and how to fix it"
	case ReasonInvalidPolicy:
		return "fix the flag named above"
	case ReasonUntrusted:
		return "use a bwrap only root can replace: `bwrapkit install` (as root it installs under /usr/local/lib/bwrapkit), your distribution's package, or --bwrap /usr/bin/bwrap"
	case ReasonUnverified:
		return "something changed the paths while the sandbox was being built (another sandbox sharing the directory?); run again, and check what else writes there"
	case ReasonHardening:
		return "run `bwrapkit doctor` to see which part of the boundary this host cannot provide"
	}
	return "run `bwrapkit doctor`"
}

func orNothingPath(path string) string {
	if path == "" {
		return "bwrap"
	}
	return path
}

func orNothing(s string) string {
	if s == "" {
		return "(it printed nothing)"
	}
	return s
}

// lastLine is the last non-empty line of text.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// launch is everything observed about one bwrap process, for classify.
type launch struct {
	childPID     int  // from the status fd; 0 when never reported
	exitCode     int  // from the status fd
	exitReported bool // "exit-code" was seen
	bwrapStatus  int  // bwrap's own exit status; -1 if killed by a signal
	stderr       string
	timedOut     bool // our --timeout fired after launch
	withheld     bool // the gate never released the filter: setup did not reach the command
	// direct: bwrap's stderr went straight to the caller, so stderr is empty and an exec
	// failure is told by commandFound (lookInside) instead of bwrap's execvp line.
	direct       bool
	commandFound bool
}

// classify decides what a finished bwrap means. It is the one place that turns
// bwrap's status stream into "the command ran" or "the sandbox was not built".
func classify(l launch) (Result, Reason) {
	switch {
	case l.childPID == 0, l.withheld:
		if l.bwrapStatus != 0 && l.bwrapSaidError() {
			return Result{}, ReasonSetupFailed
		}
		return Result{}, ReasonNoLaunchProof
	case l.timedOut:
		return Result{Started: true, ExitCode: 124, TimedOut: true}, ""
	case l.exitReported:
		return exited(l.exitCode), ""
	}
	// child-pid without exit-code: the child died before its command ran. bwrap's
	// last word is either the exec failure or a setup step that failed in the child.
	if line := execFailure(l.stderr); line != "" {
		if strings.HasSuffix(line, "No such file or directory") {
			return Result{ExitCode: 127, Failure: CommandNotFound}, ""
		}
		return Result{ExitCode: 126, Failure: CommandNotExecutable}, ""
	}
	if l.direct && l.bwrapStatus != -1 {
		// The filter was released, so setup was complete: what is left before the
		// command is bwrap's execvp.
		if l.commandFound {
			return Result{ExitCode: 126, Failure: CommandNotExecutable}, ""
		}
		return Result{ExitCode: 127, Failure: CommandNotFound}, ""
	}
	if l.bwrapStatus == -1 {
		return Result{}, ReasonNoLaunchProof
	}
	return Result{}, ReasonSetupFailed
}

// bwrapSaidError: bwrap printed its own error. With stderr handed directly it cannot be
// read, and bwrap's own exit status 1 (die_with_error) stands for it: the binary already
// passed the capability probe, so it is a bwrap, not an impostor exiting non-zero.
func (l launch) bwrapSaidError() bool {
	return strings.Contains(l.stderr, "bwrap:") || (l.direct && l.bwrapStatus > 0)
}

func exited(code int) Result {
	result := Result{Started: true, ExitCode: code}
	if code > 128 && code <= 128+64 {
		result.Signal = code - 128
	}
	return result
}

// execFailure finds bwrap's "bwrap: execvp CMD: ERROR" line.
func execFailure(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "bwrap: execvp ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
