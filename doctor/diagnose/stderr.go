package diagnose

import "strings"

// Step is the part of building a sandbox that bwrap's last message says failed. bwrap dies at
// the first error, so its last line names one step and, for a file operation, one path; the
// wording of each step is stable across 0.4 to 0.12 and Debian's patch (see testdata/README.md),
// the errno text after the last ": " is strerror's.
type Step string

const (
	StepNone          Step = ""               // no bwrap message at all
	StepOther         Step = "other"          // a bwrap message this table does not know
	StepUserns        Step = "userns"         // clone(CLONE_NEWUSER|...) in the launcher
	StepInnerUserns   Step = "inner-userns"   // the second user namespace ("unshare user ns")
	StepUIDMap        Step = "uid-map"        // writing uid_map/gid_map
	StepLoopback      Step = "loopback"       // configuring lo in the new network namespace
	StepSlave         Step = "slave"          // "Failed to make / slave": the first mount in the new namespace
	StepProc          Step = "proc"           // mounting the sandbox's proc
	StepDisableUserns Step = "disable-userns" // --disable-userns writing /proc/sys/user/max_user_namespaces
	StepBind          Step = "bind"           // a bind mount or its source
	StepTmpfs         Step = "tmpfs"          // a tmpfs mount
	StepSetuid        Step = "setuid"         // a build without setuid support run setuid
	StepPivotRoot     Step = "pivot-root"     // pivot_root(2) into the new root (Docker's filter refuses it even with CAP_SYS_ADMIN)
)

// Failure is what bwrap's stderr says failed: the step, the path it names (where the step
// has one), and the errno as strerror printed it ("" when bwrap's own words replace it).
type Failure struct {
	Step  Step
	Path  string
	Errno string // "Operation not permitted", "Read-only file system", "No space left on device"...
	Line  string // the line read, trimmed
	// KernelSaysNoUserns, NoPermission and ENOSPC mark bwrap's own words for the three
	// namespace failures it explains itself (EINVAL, EPERM unprivileged, ENOSPC since 0.7.0).
	KernelSaysNoUserns bool
	NoPermission       bool
	ENOSPC             bool
	// MountLimit: bwrap 0.9+ prints mount(2)'s ENOSPC as "Limit exceeded (ENOSPC)" with a
	// hint at fs.mount-max: a mount limit, not a user namespace one.
	MountLimit bool
}

// strerrors are the errno texts bwrap's die_with_error appends (glibc's and musl's
// wording agree on these), longest first so none is taken for a shorter one's tail.
func strerrors() []string {
	return []string{
		"Operation not permitted", "Permission denied", "Read-only file system",
		"No such file or directory", "No space left on device", "Invalid argument",
		"Function not implemented", "Device or resource busy", "Not a directory",
		"Too many levels of symbolic links", "File exists", "Too many users",
		"Bad address", "Resource temporarily unavailable",
	}
}

// ParseFailure reads the last "bwrap: " line of stderr. A line of bwrap's that names no known
// step is StepOther; no bwrap line at all is StepNone.
func ParseFailure(stderr string) Failure {
	line := ""
	for _, candidate := range strings.Split(stderr, "\n") {
		candidate = strings.TrimSpace(candidate)
		// Wrappers prefix the line ("# bwrap: ...", "pressure-vessel-wrap[13]: E: ... bwrap: ...").
		if index := strings.Index(candidate, "bwrap: "); index >= 0 {
			line = candidate[index:]
		}
	}
	prefixed := line != ""
	if !prefixed {
		// bwrap before 0.2.0 printed its errors without the "bwrap: " prefix: its last
		// line counts only if it names a step of bwrap's (an impostor prints anything).
		line = lastLine(stderr)
	}
	f := parseMessage(strings.TrimPrefix(line, "bwrap: "))
	f.Line = line
	if !prefixed && f.Step == StepOther || line == "" {
		return Failure{Step: StepNone}
	}
	return f
}

// parseMessage classifies one bwrap message, without its "bwrap: " prefix.
func parseMessage(message string) Failure {
	f := Failure{Step: StepOther}
	if index := strings.Index(message, "Limit exceeded (ENOSPC)"); index > 0 {
		f.MountLimit, f.Errno = true, "No space left on device"
		message = strings.TrimSuffix(strings.TrimSpace(message[:index]), ":")
	} else {
		for _, text := range strerrors() {
			if head, ok := cutSuffixFold(message, ": "+text); ok {
				f.Errno, message = text, head
				break
			}
		}
	}
	lower := strings.ToLower(message)
	has := func(s string) bool { return strings.Contains(lower, strings.ToLower(s)) }
	after := func(prefix string) string {
		_, rest, _ := strings.Cut(message, prefix)
		return strings.TrimSpace(rest)
	}
	switch {
	case has("setuid use of bubblewrap is not supported"):
		f.Step = StepSetuid
	case has("does not support user namespaces"):
		f.Step, f.KernelSaysNoUserns = StepUserns, true
	case has("no permissions to creat"):
		f.Step, f.NoPermission = StepUserns, true
	case has("nesting depth or /proc/sys/user/max_*_namespaces exceeded"):
		f.Step, f.ENOSPC, f.Errno = StepUserns, true, "No space left on device"
	case has("creat") && has("new namespace failed"):
		// "Creating new namespace failed" (and "Create new namespace failed" as AWX relays it).
		f.Step = StepUserns
		f.ENOSPC = f.Errno == "No space left on device"
	case has("unshare user ns"):
		f.Step = StepInnerUserns
		f.ENOSPC = f.Errno == "No space left on device"
	case has("setting up uid map") || has("setting up gid map") || has("setgroups"):
		f.Step = StepUIDMap
	case has("loopback:"):
		f.Step = StepLoopback
	case has("pivot_root"):
		f.Step = StepPivotRoot
	case has("failed to make / slave"):
		f.Step, f.Path = StepSlave, "/"
	case has("can't mount proc on"):
		f.Step, f.Path = StepProc, after("on ")
	case has("/proc/sys/user/max_user_namespaces") || has("sysctl user.max_user_namespaces"):
		f.Step, f.Path = StepDisableUserns, "/proc/sys/user/max_user_namespaces"
	case has("can't bind mount"):
		// "Can't bind mount SRC on DEST" (0.4) / "Can't bind mount %s on %s" with the
		// failing path (0.7+): the destination, as the mount is made there.
		f.Step, f.Path = StepBind, lastField(after(" on "))
	case has("can't find source path"):
		f.Step, f.Path = StepBind, after("source path ")
	case has("can't mount tmpfs on"):
		f.Step, f.Path = StepTmpfs, after("on ")
	}
	return f
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

func lastField(s string) string {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return ""
	}
	return fields[len(fields)-1]
}
