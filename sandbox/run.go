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
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options are how one command is run: which bwrap, its streams and its bounds.
type Options struct {
	Bwrap  string // absolute path of the bwrap to use (see package locate)
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Timeout bounds the command after launch; zero means none. When it fires every
	// process of the sandbox is killed.
	Timeout time.Duration
	// LaunchTimeout bounds the wait for bwrap's child-pid report (default 30s): a
	// bwrap that hangs during setup is killed and reported, never waited on forever.
	LaunchTimeout time.Duration
}

const (
	defaultLaunchTimeout = 30 * time.Second
	// statusFD is where bwrap writes its JSON status: the first of cmd.ExtraFiles.
	statusFD = "3"
	// stderrTailSize keeps enough of bwrap's stderr to explain a failure.
	stderrTailSize = 4096
	// drainBound is how long to wait for pipes after bwrap exits; the pid namespace
	// ends every process in it when its init exits, so this is only a safety net.
	drainBound = 2 * time.Second
)

// Run runs cmd inside the sandbox policy describes. It returns a Result only when bwrap
// proved the launch; otherwise an *UnavailableError and the command did not run. A
// cancelled ctx kills the sandbox and returns ctx's error with the partial Result.
func Run(ctx context.Context, policy Policy, cmd []string, opts Options) (Result, error) {
	if err := usable(opts.Bwrap); err != nil {
		return Result{}, err
	}
	if policy.Features.Options == nil {
		features, err := Capable(ctx, opts.Bwrap)
		if err != nil {
			return Result{}, err
		}
		policy.Features = features
	} else if missing := policy.Features.Missing(); len(missing) > 0 {
		return Result{}, &UnavailableError{Reason: ReasonUnsupported, Bwrap: opts.Bwrap, Missing: missing}
	}
	argv, err := Argv(opts.Bwrap, policy, cmd)
	if err != nil {
		return Result{}, &UnavailableError{Reason: ReasonInvalidPolicy, Bwrap: opts.Bwrap, Err: err}
	}
	argv = append([]string{argv[0], "--json-status-fd", statusFD}, argv[1:]...)
	return start(ctx, argv, opts)
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

// start runs bwrap and watches its status fd: the effectful half of Run.
func start(ctx context.Context, argv []string, opts Options) (Result, error) {
	keepInheritedFDsOut()
	statusRead, statusWrite, err := os.Pipe()
	if err != nil {
		return Result{}, &UnavailableError{Reason: ReasonStartFailed, Bwrap: argv[0], Err: err}
	}
	defer statusRead.Close()

	stderr := &tailWriter{out: opts.Stderr, max: stderrTailSize}
	process := exec.Command(argv[0], argv[1:]...)
	process.Stdin, process.Stdout, process.Stderr = opts.Stdin, opts.Stdout, stderr
	process.ExtraFiles = []*os.File{statusWrite}
	process.Env = []string{} // bwrap gets nothing of ours; --setenv builds the inside
	// Its own process group: a terminal's ^C reaches bwrapkit, which decides.
	process.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	process.WaitDelay = drainBound

	began := time.Now()
	if err := process.Start(); err != nil {
		statusWrite.Close()
		return Result{}, &UnavailableError{Reason: ReasonStartFailed, Bwrap: argv[0], Err: err}
	}
	statusWrite.Close()

	status := watchStatus(statusRead)
	exited := make(chan error, 1)
	go func() { exited <- process.Wait() }()

	observed := launch{}
	var child sandboxInit
	defer child.close()
	launchTimeout := opts.LaunchTimeout
	if launchTimeout == 0 {
		launchTimeout = defaultLaunchTimeout
	}
	launchTimer := time.NewTimer(launchTimeout)
	defer launchTimer.Stop()
	var deadline <-chan time.Time
	var waitErr error
	var interrupted error
	cancelled := ctx.Done()

wait:
	for {
		select {
		case pid := <-status.childPID:
			observed.childPID = pid
			child = holdInit(pid)
			launchTimer.Stop()
			if opts.Timeout > 0 {
				timer := time.NewTimer(opts.Timeout)
				defer timer.Stop()
				deadline = timer.C
			}
		case <-launchTimer.C:
			kill(process, child)
			<-exited
			return Result{}, &UnavailableError{Reason: ReasonLaunchTimeout, Bwrap: argv[0], Stderr: stderr.tail(), Err: fmt.Errorf("%v", launchTimeout)}
		case <-deadline:
			observed.timedOut = true
			kill(process, child)
		case <-cancelled:
			cancelled = nil // a closed channel would fire on every turn of the loop
			interrupted = ctx.Err()
			kill(process, child)
		case waitErr = <-exited:
			break wait
		}
	}

	// bwrap has exited; its status pipe closes with it (the namespace's processes die
	// with their init), so this read is short.
	select {
	case report := <-status.done:
		if observed.childPID == 0 {
			observed.childPID = report.childPID
		}
		observed.exitCode, observed.exitReported = report.exitCode, report.exitReported
	case <-time.After(drainBound):
	}
	observed.stderr = stderr.tail()
	observed.bwrapStatus = exitStatusOf(waitErr)

	result, reason := classify(observed)
	result.Duration = time.Since(began)
	if interrupted != nil {
		return result, interrupted
	}
	if reason != "" {
		return Result{}, &UnavailableError{Reason: reason, Bwrap: argv[0], Stderr: observed.stderr, Err: waitErr}
	}
	return result, nil
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
