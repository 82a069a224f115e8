package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The Go runtime dies with a stack dump and exit 2 (the usage status) when a resource it
// needs runs out: an epoll descriptor on its first file, a thread for its scheduler. Some
// limits are checked at start for that reason, before anything opens a file: a limit too
// small for a run is one line and exit 125. (Limits so small that the runtime cannot even
// start, ulimit -v below about 800 MB or ulimit -u below 4, end the process before any of
// bwrapkit's code runs; nothing in the binary can speak then. See docs/run.md.)
const (
	// minOpenFiles covers a run's descriptors: the three streams, the runtime's epoll and
	// its wake-up eventfd, the status and filter pipes, exec's own pipes, the sandbox's
	// pidfd and mount-namespace root, and one per bind source (workdir, HOME, .git, each
	// --ro and --rw), with room to spare.
	minOpenFiles = 64
	// minProcesses covers the runtime's threads (about six), bwrap, its sandboxed pid 1
	// and the command's first process. It binds only a caller without CAP_SYS_RESOURCE
	// (not root), and it counts every process of the user, so a user already running
	// many processes needs more.
	minProcesses = 32
)

// startLimitProblem is the pure decision: the limit too small to run with, or "".
func startLimitProblem(openFiles, processes uint64, root bool) string {
	switch {
	case openFiles < minOpenFiles:
		return fmt.Sprintf("the open-files limit is %d, and bwrapkit needs at least %d descriptors for a run; raise it (ulimit -n %d) or leave it at the system's default", openFiles, minOpenFiles, 1024)
	case !root && processes < minProcesses:
		return fmt.Sprintf("the process limit is %d, and bwrapkit needs at least %d (its own threads, bwrap and the command count against it); raise it (ulimit -u %d), or bound the command with --limit nproc=N instead", processes, minProcesses, 1024)
	}
	return ""
}

// checkStartLimits reads the limits in force (after the Go runtime raised the soft
// open-files limit to the hard one, which it does at start).
func checkStartLimits() string {
	var files, procs unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &files) != nil || unix.Getrlimit(unix.RLIMIT_NPROC, &procs) != nil {
		return "" // unreadable limits are not a reason to refuse
	}
	return startLimitProblem(files.Cur, procs.Cur, unix.Geteuid() == 0)
}
