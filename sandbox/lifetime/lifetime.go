// Package lifetime owns how long a run's processes live: a keeper process that outlives
// bwrapkit and kills the sandbox when bwrapkit goes away without saying the run is over.
//
// bwrap's --die-with-parent ends the sandbox only from the moment bwrap has set it up, and
// the command can undo it (it shares pid 1's uid and can rewrite it through /proc/1/mem).
// A SIGKILL of bwrapkit, or of its whole process group (a CI cancellation, an agent's tool
// timeout), then leaves the command tree running. The keeper is a second process in a
// session of its own, which neither of those reaches.
package lifetime

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
)

// TokenVar names the variable that marks every process of one run before it executes the
// command: bwrap and its children carry it in their environment (bwrap's --clearenv keeps
// it out of the command's). The keeper finds by it what it was not yet told about.
const TokenVar = "BWRAPKIT_RUN"

// message is one line from bwrapkit to its keeper.
type message struct {
	kind string // "bwrap", "init", "cgroup", "auditor", "audit" or "done"
	pid  int
	path string // "cgroup": one of the run's cgroup directories; "auditor", "audit": see Keeper.AuditAfter
}

// parseMessage reads one protocol line: "bwrap PID", "init PID", "cgroup PATH",
// "auditor PATH", "audit PATH" or "done".
func parseMessage(line string) (message, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch kind {
	case "auditor", "audit":
		if !cleanAbs(rest) {
			return message{}, fmt.Errorf("keeper: %q: not an absolute, clean path", line)
		}
		return message{kind: kind, path: rest}, nil
	case "done":
		if rest != "" {
			return message{}, fmt.Errorf("keeper: %q takes no argument", line)
		}
		return message{kind: kind}, nil
	case "cgroup":
		if !strings.HasPrefix(rest, "/") || !strings.HasPrefix(path.Base(rest), cgroup.Prefix) {
			return message{}, fmt.Errorf("keeper: %q: not a run's cgroup", line)
		}
		return message{kind: kind, path: rest}, nil
	case "bwrap", "init":
		pid, err := strconv.Atoi(rest)
		if err != nil || pid <= 0 {
			return message{}, fmt.Errorf("keeper: %q: not a process id", line)
		}
		return message{kind: kind, pid: pid}, nil
	}
	return message{}, fmt.Errorf("keeper: unknown message %q", line)
}

// cleanAbs: p is an absolute path in its clean form, as the auditor's and the record's
// must be on either side of the lifeline.
func cleanAbs(p string) bool { return path.IsAbs(p) && path.Clean(p) == p }

// watched is what the keeper knows of a run at the moment bwrapkit goes.
type watched struct {
	bwrap, init int
	cgroups     []string // the v2 one first, as bwrapkit names them
	// auditor and audit: the program that does a pending audit, and its record
	// (Keeper.AuditAfter); "" for none.
	auditor, audit string
	done           bool
}

// follow reads messages until EOF (bwrapkit gone) or "done"; a malformed line counts as
// bwrapkit gone: the keeper never guesses in the run's favour.
func follow(r io.Reader, seen func(message)) watched {
	var state watched
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		msg, err := parseMessage(scanner.Text())
		if err != nil {
			return state
		}
		switch msg.kind {
		case "done":
			state.done = true
			return state
		case "bwrap":
			state.bwrap = msg.pid
		case "init":
			state.init = msg.pid
		case "cgroup":
			state.cgroups = append(state.cgroups, msg.path)
		case "auditor":
			state.auditor = msg.path
		case "audit":
			state.audit = msg.path
		}
		if seen != nil {
			seen(msg)
		}
	}
	return state
}

// marked reports whether a /proc/PID/environ (NUL-separated) carries this run's token.
func marked(environ []byte, token string) bool {
	want := TokenVar + "=" + token
	for entry := range strings.SplitSeq(string(environ), "\x00") {
		if entry == want {
			return true
		}
	}
	return false
}
