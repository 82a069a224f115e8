package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

// The self-tests' decisions: pure functions over what the probe observed inside and what the
// doctor saw on the host. The host side is the proof; the probe's word alone is not.

const boundaryRemedy = "this bwrap does not hold the boundary; do not run untrusted code with it: " +
	"run `bwrapkit install` for a verified bwrap, and report this with `bwrapkit doctor --json`"

func pass(summary, detail string) Check {
	return Check{Status: StatusOK, Summary: summary, Detail: detail}
}

func breach(summary, detail string) Check {
	return Check{Status: StatusFail, Summary: summary, Detail: detail, Remedy: boundaryRemedy}
}

// launchProofVerdict: bwrap reported the child (Started) and the probe ran in namespaces
// other than the doctor's own.
func launchProofVerdict(result sandbox.Result, inside launchObservation, outside map[string]string) Check {
	if !result.Started {
		return breach("bwrap never reported the sandboxed child (no child-pid)", "")
	}
	var shared, separate []string
	for _, kind := range namespaceKinds {
		in, out := inside.Namespaces[kind], outside[kind]
		switch {
		case in == "" || out == "":
			continue
		case in == out:
			shared = append(shared, kind)
		default:
			separate = append(separate, kind)
		}
	}
	detail := fmt.Sprintf("child-pid reported; inside: pid %d, uid %d; own namespaces: %s", inside.PID, inside.UID, strings.Join(separate, " "))
	if len(shared) > 0 {
		return breach("the command shares the host's "+strings.Join(shared, ", ")+" namespace", detail)
	}
	if !slices.Contains(separate, "user") || !slices.Contains(separate, "pid") || !slices.Contains(separate, "mnt") {
		return breach("the command's namespaces could not be told apart from the host's", detail)
	}
	return pass(fmt.Sprintf("bwrap reported the child; it ran in its own %s namespaces", strings.Join(separate, ", ")), detail)
}

// workdirWriteVerdict: the file the probe created inside is on the host with its content.
func workdirWriteVerdict(op fileOp, hostContent string, hostErr error) Check {
	switch {
	case op.Error != "":
		return Check{Status: StatusFail, Summary: "writing in the workdir failed inside the sandbox: " + op.Error,
			Remedy: "the workdir must be writable by this user; a read-only or noexec workdir breaks toolchains"}
	case hostErr != nil:
		return breach("a file written in the workdir inside did not appear on the host", hostErr.Error())
	case hostContent != probeContent:
		return breach("the file written in the workdir has other content on the host", strconv.Quote(hostContent))
	}
	return pass("a file written in the workdir appeared on the host", op.Path)
}

// privateTmpfs are the sandbox's own tmpfs mounts: a write there succeeds and vanishes with
// the sandbox. Anywhere else outside the workdir the root is read-only, so a write must fail.
var privateTmpfs = []string{"/tmp", "/var/tmp", "/run"}

// outsideWriteVerdict: nothing changed on the host, and every write outside the workdir and
// the private tmpfs mounts was refused (the contract's read-only root, not a throwaway one).
func outsideWriteVerdict(ops []fileOp, hostChanges []string) Check {
	var detail, landed []string
	for _, op := range ops {
		outcome := "refused: " + op.Error
		if op.Error == "" {
			outcome = "landed in the sandbox's private tmpfs"
			if !underAny(op.Path, privateTmpfs) {
				outcome = "succeeded"
				landed = append(landed, op.Path)
			}
		}
		detail = append(detail, fmt.Sprintf("%s %s: %s", op.Op, op.Path, outcome))
	}
	switch {
	case len(hostChanges) > 0:
		return breach("writes outside the workdir reached the host: "+strings.Join(hostChanges, ", "), strings.Join(detail, "\n"))
	case len(landed) > 0:
		return breach("writes outside the workdir succeeded inside (the root is not read-only): "+strings.Join(landed, ", "), strings.Join(detail, "\n"))
	case len(ops) == 0:
		return Check{Status: StatusFail, Summary: "the probe reported no writes"}
	}
	return pass(fmt.Sprintf("%d writes outside the workdir (its parent, a sibling, /etc, /) left the host unchanged", len(ops)), strings.Join(detail, "\n"))
}

func underAny(path string, dirs []string) bool {
	for _, dir := range dirs {
		if path == dir || strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

// gitReadonlyVerdict: .git/config could be neither changed nor removed, and the host copy
// is as the doctor wrote it.
func gitReadonlyVerdict(ops []fileOp, hostContent string) Check {
	var succeeded, detail []string
	for _, op := range ops {
		detail = append(detail, fmt.Sprintf("%s %s: %s", op.Op, op.Path, orSucceeded(op.Error)))
		if op.Error == "" {
			succeeded = append(succeeded, op.Op)
		}
	}
	switch {
	case hostContent != gitConfigContent:
		return breach(".git/config changed on the host", strings.Join(detail, "\n"))
	case len(succeeded) > 0:
		return breach(".git inside the workdir is writable: "+strings.Join(succeeded, ", ")+" succeeded", strings.Join(detail, "\n"))
	case len(ops) == 0:
		return Check{Status: StatusFail, Summary: "the probe reported no writes"}
	}
	return pass(".git/config could not be changed or removed; the host copy is intact", strings.Join(detail, "\n"))
}

// envClearVerdict: the canary is nowhere in the environment, and nothing beyond what the
// contract passes is set.
func envClearVerdict(environ []string, canary string, allowed func(name string) bool) Check {
	var leaked, extra []string
	for _, entry := range environ {
		name, _, _ := strings.Cut(entry, "=")
		switch {
		case strings.Contains(entry, canary):
			leaked = append(leaked, name)
		case !allowed(name):
			extra = append(extra, name)
		}
	}
	names := make([]string, 0, len(environ))
	for _, entry := range environ {
		name, _, _ := strings.Cut(entry, "=")
		names = append(names, name)
	}
	detail := "inside: " + strings.Join(names, " ")
	switch {
	case len(leaked) > 0:
		return breach("a secret from the caller's environment reached the sandbox as "+strings.Join(leaked, ", "), detail)
	case len(extra) > 0:
		return breach("variables the contract does not pass are set inside: "+strings.Join(extra, ", "), detail)
	}
	return pass(fmt.Sprintf("the caller's secret stayed outside; %d variables inside, all expected", len(environ)), detail)
}

// allowedEnv are the names the contract sets inside, and those the doctor itself asked for.
func allowedEnv(extra []string) func(string) bool {
	return func(name string) bool {
		switch name {
		case "PATH", "HOME", "TMPDIR", "LANG", "TZ", "TERM":
			return true
		case "PWD":
			return true // bwrap itself sets it after --chdir
		}
		if strings.HasPrefix(name, "LC_") {
			return true
		}
		for _, entry := range extra {
			if n, _, _ := strings.Cut(entry, "="); n == name {
				return true
			}
		}
		return false
	}
}

// fdRemedy: bwrap gives the command every descriptor it inherits (an agent's socket, a CI
// runner's log pipe), so keeping them out is the runner's job.
const fdRemedy = "bwrap hands the command every descriptor it inherits, so the process that starts bwrap " +
	"must mark all of them above stderr close-on-exec first, and this bwrapkit did not: report it with " +
	"`bwrapkit doctor --json`; until it is fixed, do not run untrusted code from a process holding sockets, " +
	"pipes or secret files open"

// fdIsolationVerdict: the command holds stdin, stdout and stderr and nothing else, in
// particular not the canary the doctor held open without close-on-exec.
func fdIsolationVerdict(observation fdObservation, canary string) Check {
	var held, leaked []string
	for _, entry := range observation.FDs {
		described := fmt.Sprintf("%d -> %s", entry.FD, entry.Target)
		held = append(held, described)
		if entry.FD > 2 {
			if canary != "" && strings.Contains(entry.Target, canary) {
				described += " (the doctor's canary)"
			}
			leaked = append(leaked, described)
		}
	}
	detail := "inside: " + strings.Join(held, ", ")
	switch {
	case observation.Error != "":
		return Check{Status: StatusFail, Summary: "the probe could not list its descriptors: " + observation.Error}
	case len(leaked) > 0:
		return Check{Status: StatusFail, Summary: "the command inherited descriptors beyond stdin, stdout and stderr: " + strings.Join(leaked, ", "),
			Detail: detail, Remedy: fdRemedy}
	case len(observation.FDs) == 0:
		return Check{Status: StatusFail, Summary: "the probe listed no descriptors, not even its stdout"}
	}
	return pass("the command holds only stdin, stdout and stderr; a descriptor the doctor held open without close-on-exec stayed outside", detail)
}

// secretsHiddenVerdict: every read failed.
func secretsHiddenVerdict(ops []fileOp) Check {
	var readable, detail []string
	for _, op := range ops {
		detail = append(detail, fmt.Sprintf("read %s: %s", op.Path, orSucceeded(op.Error)))
		if op.Error == "" {
			readable = append(readable, op.Path)
		}
	}
	if len(readable) > 0 {
		return breach("secrets are readable inside: "+strings.Join(readable, ", "), strings.Join(detail, "\n"))
	}
	if len(ops) == 0 {
		return Check{Status: StatusFail, Summary: "the probe reported no reads"}
	}
	return pass("/etc/shadow and a file in the caller's home are unreadable inside", strings.Join(detail, "\n"))
}

// networkVerdict: the probe could not connect, and the host listener saw no one.
func networkVerdict(dial dialObservation, accepted int) Check {
	detail := fmt.Sprintf("dial %s: %s; connections accepted on the host: %d", dial.Address, orSucceeded(dial.Error), accepted)
	if dial.Error == "" || accepted > 0 {
		return breach("the sandbox reached a listener on the host's loopback", detail)
	}
	return pass("a listener on the host's loopback is unreachable without --net", detail)
}

// procIsolationVerdict: /proc shows the probe and its ancestors (bwrap's init) only.
func procIsolationVerdict(procs procObservation) Check {
	parent := map[int]int{}
	var listed []string
	for _, process := range procs.Processes {
		parent[process.PID] = process.PPID
		listed = append(listed, fmt.Sprintf("%d %s", process.PID, process.Comm))
	}
	ancestors := map[int]bool{}
	for pid, hops := procs.Self, 0; pid > 0 && hops < 64; pid, hops = parent[pid], hops+1 {
		ancestors[pid] = true
	}
	var foreign []string
	for _, process := range procs.Processes {
		if !ancestors[process.PID] {
			foreign = append(foreign, fmt.Sprintf("%d (%s)", process.PID, process.Comm))
		}
	}
	detail := "visible: " + strings.Join(listed, ", ")
	switch {
	case len(foreign) > 0:
		return breach("processes outside the sandbox are visible in its /proc: "+strings.Join(foreign, ", "), detail)
	case !ancestors[procs.Self] || len(procs.Processes) == 0:
		return breach("the probe could not find itself in /proc", detail)
	}
	return pass(fmt.Sprintf("/proc lists only the sandbox's own %d processes", len(procs.Processes)), detail)
}

// capabilitiesVerdict: no effective, permitted, inheritable or ambient capability.
func capabilitiesVerdict(caps capsObservation) Check {
	var held []string
	for _, set := range []string{"CapEff", "CapPrm", "CapInh", "CapAmb"} {
		value, ok := caps.Caps[set]
		if !ok {
			continue
		}
		if mask, err := strconv.ParseUint(value, 16, 64); err != nil || mask != 0 {
			held = append(held, set+"="+value)
		}
	}
	detail := fmt.Sprintf("CapEff=%s CapPrm=%s CapBnd=%s", caps.Caps["CapEff"], caps.Caps["CapPrm"], caps.Caps["CapBnd"])
	if _, ok := caps.Caps["CapEff"]; !ok {
		return Check{Status: StatusFail, Summary: "the probe could not read its capabilities", Detail: detail}
	}
	if len(held) > 0 {
		return breach("the command holds capabilities: "+strings.Join(held, " "), detail)
	}
	return pass("the command holds no capabilities (CapEff 0)", detail)
}

// timeoutKillVerdict: the timeout fired (124), and no process carrying the token survived
// on the host, the setsid grandchild included.
func timeoutKillVerdict(result sandbox.Result, spawned spawnObservation, survivors []string) Check {
	detail := fmt.Sprintf("timed out: %v, exit %d, grandchild started: %v", result.TimedOut, result.ExitCode, spawned.Ready)
	switch {
	case len(survivors) > 0:
		return breach("processes survived the timeout: "+strings.Join(survivors, ", "), detail)
	case !result.TimedOut || result.ExitCode != 124:
		return Check{Status: StatusFail, Summary: fmt.Sprintf("the timeout did not end the sandbox (exit %d)", result.ExitCode), Detail: detail, Remedy: boundaryRemedy}
	case !spawned.Ready:
		return Check{Status: StatusFail, Summary: "the grandchild never started, so the kill proves nothing: " + orNothing(spawned.Error), Detail: detail}
	}
	return pass("on timeout every process died, a setsid grandchild included (exit 124)", detail)
}

// nestedUsernsVerdict: creating a user namespace inside was refused.
func nestedUsernsVerdict(observation usernsObservation) Check {
	switch syscall.Errno(observation.Errno) {
	case 0:
		return breach("code inside the sandbox can create a user namespace", "clone(CLONE_NEWUSER) succeeded")
	case syscall.ENOSPC, syscall.EUSERS, syscall.EPERM:
		return pass("creating a user namespace inside is refused ("+observation.Error+")", "")
	}
	return Check{Status: StatusFail, Summary: "cannot tell whether a user namespace could be created inside: " + observation.Error}
}

func orSucceeded(errText string) string {
	if errText == "" {
		return "succeeded"
	}
	return errText
}
