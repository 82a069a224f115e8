package limits

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ApplyError is a bound the kernel refused to set: the lead refuses to run the command.
type ApplyError struct {
	Pid      int
	Resource int
	Want     Rlimit
	Had      Rlimit // the target's limit before, when it could be read
	Err      error
}

func (e *ApplyError) Error() string {
	if e.Pid <= 0 {
		return fmt.Sprintf("no sandbox child to bound (pid %d): read child-pid from bwrap's --json-status-fd", e.Pid)
	}
	name := resourceName(e.Resource)
	msg := fmt.Sprintf("cannot set %s=%s on the sandbox (pid %d): %v", name, format(e.Want.Max, isSize(e.Resource)), e.Pid, e.Err)
	if errors.Is(e.Err, unix.EPERM) && e.Want.Max > e.Had.Max {
		msg += fmt.Sprintf("; the caller's hard limit is %s and raising it needs CAP_SYS_RESOURCE: lower --limit %s or raise the hard limit (ulimit -H)",
			format(e.Had.Max, isSize(e.Resource)), name)
	}
	return msg
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply sets every bound of l on pid with prlimit(2). The caller runs it on bwrap's
// sandboxed child while that child waits on --block-fd: bwrap reads the block fd after
// all setup and before its pid 1 forks the command, so the command inherits the bounds
// from its first instruction. Defaults are first lowered to the target's own hard
// limits (Within).
//
// Any refusal is an error, and Apply then kills pid: bwrap's child takes end-of-file
// on the block fd as the go-ahead, and it has no --die-with-parent until just before
// it runs the command, so a caller that only killed bwrap, or closed the block fd,
// would release the command unbounded or leave the child waiting forever.
func Apply(pid int, l Limits) error {
	if pid <= 0 {
		// prlimit's pid 0 is the caller itself: bounding bwrapkit instead of the sandbox
		// would look like success.
		return &ApplyError{Pid: pid, Err: unix.ESRCH}
	}
	// A pidfd pins the process, so the kill on failure cannot hit a reused pid.
	pidfd, pidfdErr := unix.PidfdOpen(pid, 0)
	if pidfdErr == nil {
		defer unix.Close(pidfd)
	}
	err := apply(pid, l)
	if err != nil {
		if pidfdErr == nil {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		} else {
			unix.Kill(pid, unix.SIGKILL) // kernels before 5.3 have no pidfd
		}
	}
	return err
}

func apply(pid int, l Limits) error {
	var hard []Rlimit
	for _, want := range l.Rlimits() {
		var had unix.Rlimit
		if err := unix.Prlimit(pid, want.Resource, nil, &had); err != nil {
			return &ApplyError{Pid: pid, Resource: want.Resource, Want: want, Err: err}
		}
		hard = append(hard, Rlimit{Resource: want.Resource, Cur: had.Cur, Max: had.Max})
	}
	for i, want := range l.Within(hard).Rlimits() {
		set := unix.Rlimit{Cur: want.Cur, Max: want.Max}
		if err := unix.Prlimit(pid, want.Resource, &set, nil); err != nil {
			return &ApplyError{Pid: pid, Resource: want.Resource, Want: want, Had: hard[i], Err: err}
		}
	}
	return nil
}

// Inherited returns the calling process's own limits for every resource Rlimits sets,
// which bwrap and its child inherit: pass it to Within before printing the policy, so
// the printed bounds are the ones Apply will set.
func Inherited() ([]Rlimit, error) {
	var out []Rlimit
	for _, r := range Defaults().Rlimits() {
		var got unix.Rlimit
		if err := unix.Getrlimit(r.Resource, &got); err != nil {
			return nil, fmt.Errorf("getrlimit %s: %w", resourceName(r.Resource), err)
		}
		out = append(out, Rlimit{Resource: r.Resource, Cur: got.Cur, Max: got.Max})
	}
	return out, nil
}

func resourceName(resource int) Name {
	for _, b := range bounds() {
		if b.resource == resource {
			return b.name
		}
	}
	return Name(fmt.Sprintf("resource %d", resource))
}

func isSize(resource int) bool {
	for _, b := range bounds() {
		if b.resource == resource {
			return b.size
		}
	}
	return false
}
