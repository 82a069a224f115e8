package bridge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Command is the bridge's subcommand, of bwrapkit and of bwrapkit-helper alike.
const Command = "net-bridge"

// The bridge's own exit statuses where it fails before the command: bwrapkit's usage and
// unavailable statuses (2 and 125), so a run reports them as bwrapkit's own.
const (
	exitUsage       = 2
	exitUnavailable = 125
)

// Main is the program run puts before the command inside a sandbox with the proxy
// (`bwrapkit-helper net-bridge --socket PATH --listen ADDR -- CMD [ARG...]`, the argv
// sandbox.NetProxy builds; bwrapkit itself where no helper is installed beside it), bound
// read-only, so nothing the sandbox may lack (a shell, socat, an interpreter) is assumed.
// It makes the listener the proxy variables point at on the sandbox's loopback, hands it
// and the resolver's sockets to the proxy outside (HandOver), which serves them itself
// from then on, and then execs the command in its own place: the command is what bwrap
// runs, its exit status and signals its own, with no process of bwrapkit's left inside
// and no relay in the path of its connections. If the hand-over fails the command never
// starts. A main calls it before anything else: it starts on every run without --net.
func Main(args []string, stderr io.Writer) int {
	socket, listen, command, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "bwrapkit %s: %v\n", Command, err)
		return exitUsage
	}
	listener, err := ListenInside(listen)
	if err != nil {
		fmt.Fprintf(stderr, "bwrapkit: the network bridge cannot listen on %s: %v\n", listen, err)
		return exitUnavailable
	}
	if err := HandOver(socket, listener); err != nil {
		fmt.Fprintf(stderr, "bwrapkit: the network bridge could not hand the sandbox's proxy sockets to bwrapkit's proxy outside (%v); the command was not started\n", err)
		return exitUnavailable
	}
	return execFailure(command[0], execCommand(command), stderr)
}

// execCommand replaces the bridge with the command, found as os/exec finds it (PATH for a
// bare name), with the bridge's environment (the sandbox's); it returns only on failure.
// Every descriptor of the bridge's own is close-on-exec.
func execCommand(command []string) error {
	path := command[0]
	if !strings.Contains(path, "/") {
		found, err := exec.LookPath(path)
		if err != nil {
			return err
		}
		path = found
	}
	return &fs.PathError{Op: "exec", Path: path, Err: syscall.Exec(path, command, os.Environ())}
}

// parseArgs reads exactly the layout sandbox.NetProxy writes.
func parseArgs(args []string) (socket, listen string, command []string, err error) {
	if len(args) < 6 || args[0] != "--socket" || args[2] != "--listen" || args[4] != "--" {
		return "", "", nil, errors.New("usage: --socket PATH --listen ADDR -- CMD [ARG...] (run adds it; not for direct use)")
	}
	return args[1], args[3], args[5:], nil
}

// execFailure is the status of a command the bridge could not start, as bwrap's
// own execvp would give: 127 when there is nothing at the name (run explains it from
// the host's view, with the --path or --ro that fixes it), else 126, said here since
// only the inside view knows why (no execute permission, a missing interpreter).
func execFailure(name string, err error, stderr io.Writer) int {
	var execErr *exec.Error
	missing := errors.As(err, &execErr) && errors.Is(execErr.Err, exec.ErrNotFound)
	if !missing && errors.Is(err, fs.ErrNotExist) {
		_, statErr := os.Stat(name)
		missing = statErr != nil // else the file is there and its interpreter is not
	}
	if missing {
		return 127
	}
	fmt.Fprintf(stderr, "bwrapkit: %s: found inside the sandbox but cannot be executed (%v)\n", name, errors.Unwrap(err))
	return 126
}
