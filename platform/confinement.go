package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Confinement is this process's AppArmor label, from /proc/self/attr/apparmor/current
// (Linux 5.8+, where LSMs stack) or, with AppArmor the only major LSM, /proc/self/attr/current.
// Ubuntu's userns restriction applies only to unconfined processes: under docker-default or
// lxc-container-default the EPERM of clone comes from that profile or the runtime's seccomp.
type Confinement struct {
	Known  bool   // a label was read
	Label  string // the profile: "docker-default", "unconfined", "lxd-c1_</var/snap/lxd/common/lxd>"
	Mode   string // "enforce", "complain", "kill", "unconfined"...; "" for the bare "unconfined"
	Source string // the file read, "/proc/self/attr/apparmor/current"
	Err    string // why it is unknown; "" when Known, or when no file offers a label
}

// Unconfined is true only for a label that was read and says so.
func (c Confinement) Unconfined() bool {
	return c.Known && (c.Label == "unconfined" || c.Mode == "unconfined")
}

// String is the label as the kernel prints it, or "unknown (why)".
func (c Confinement) String() string {
	switch {
	case c.Known && c.Mode != "":
		return c.Label + " (" + c.Mode + ")"
	case c.Known:
		return c.Label
	case c.Err != "":
		return "unknown (" + c.Source + ": " + c.Err + ")"
	}
	return "unknown"
}

// SeccompState is the Seccomp and Seccomp_filters lines of /proc/self/status.
type SeccompState struct {
	Known   bool // the Seccomp: line was read
	Mode    int  // 0 none, 1 strict, 2 filter
	Filters int  // how many filters are attached (Linux 5.9+); -1 when the kernel does not say
	Err     string
}

// Tracer is the process tracing this one (TracerPid in /proc/self/status): proot runs every
// program it starts under ptrace, and so do strace and debuggers.
type Tracer struct {
	PID  int    // 0: not traced, or status unreadable
	Comm string // /proc/PID/comm; "" when unreadable (another PID namespace hides it)
}

// UsernsBuild says whether the kernel was built with user namespaces at all (CONFIG_USER_NS),
// apart from the settings that disable them in a kernel that has them.
type UsernsBuild struct {
	State    string // UsernsBuiltIn, UsernsNotBuilt, or "" when no file proves either
	Evidence string // the file that proved it, or why nothing could
}

// UsernsBuild states.
const (
	UsernsBuiltIn  = "built-in"
	UsernsNotBuilt = "not-built"
)

// Paths of the confinement facts.
const (
	pathAttrAppArmor = "proc/self/attr/apparmor/current"
	pathAttrCurrent  = "proc/self/attr/current"
	pathNamespaces   = "proc/self/ns"
	pathMountinfo    = "proc/self/mountinfo"
)

// readConfinement reads the AppArmor label. attr/current belongs to whichever major LSM came
// first, so it is taken for AppArmor's only when AppArmor is on and SELinux is not.
func readConfinement(r *reader, appArmorEnabled bool, selinux string) Confinement {
	c := Confinement{Source: "/" + pathAttrAppArmor}
	data, err := r.fact(pathAttrAppArmor, maxFileSize)
	if isNotExist(err) {
		if !appArmorEnabled || selinux == "enforcing" || selinux == "permissive" {
			return Confinement{}
		}
		c.Source = "/" + pathAttrCurrent
		data, err = r.fact(pathAttrCurrent, maxFileSize)
		if isNotExist(err) {
			return Confinement{}
		}
	}
	if err != nil {
		c.Err = reason(err)
		return c
	}
	label, mode, ok := parseAppArmorLabel(string(data))
	if !ok {
		c.Err = "empty"
		return c
	}
	c.Known, c.Label, c.Mode = true, label, mode
	return c
}

// parseAppArmorLabel splits "docker-default (enforce)" into profile and mode. The kernel ends
// the text with a newline (and some kernels a NUL); a stacked label such as
// "lxd-c1_<...>//&:lxd-c1_<...>:unconfined (enforce)" keeps its profile part whole.
func parseAppArmorLabel(text string) (label, mode string, ok bool) {
	text = strings.TrimRight(text, "\x00\n ")
	if text == "" || strings.ContainsAny(text, "\n\x00") {
		return "", "", false
	}
	if open := strings.LastIndex(text, " ("); open > 0 && strings.HasSuffix(text, ")") {
		return text[:open], text[open+2 : len(text)-1], true
	}
	return text, "", true
}

// parseStatus reads the lines of /proc/self/status the facts need. Kernels before 4.10 lack
// NoNewPrivs, before 5.9 Seccomp_filters, and WSL1 several more: a missing line is no problem.
func parseStatus(text string) (fields map[string]string) {
	fields = map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		key, value, found := strings.Cut(line, ":")
		if found {
			fields[key] = strings.TrimSpace(value)
		}
	}
	return fields
}

// seccompState reads the two seccomp lines of a parsed status.
func seccompState(status map[string]string) SeccompState {
	state := SeccompState{Filters: -1}
	mode, ok := status["Seccomp"]
	if !ok {
		state.Err = "no Seccomp line (kernel without CONFIG_SECCOMP)"
		return state
	}
	switch mode {
	case "0", "1", "2":
		state.Known, state.Mode = true, int(mode[0]-'0')
	default:
		state.Err = fmt.Sprintf("Seccomp: want 0, 1 or 2, got %q", mode)
		return state
	}
	if filters, ok := status["Seccomp_filters"]; ok {
		count, err := strconv.Atoi(filters)
		if err != nil || count < 0 {
			state.Err = fmt.Sprintf("Seccomp_filters: not a count: %q", filters)
			return state
		}
		state.Filters = count
	}
	return state
}

// readTracer follows TracerPid to the tracer's command name.
func readTracer(r *reader, status map[string]string) Tracer {
	pid, err := strconv.Atoi(status["TracerPid"])
	if err != nil || pid <= 0 {
		return Tracer{}
	}
	tracer := Tracer{PID: pid}
	if data, err := r.fact("proc/"+strconv.Itoa(pid)+"/comm", maxFileSize); err == nil {
		tracer.Comm = strings.TrimSpace(string(data))
	}
	return tracer
}

// readUsernsBuild tells a kernel without CONFIG_USER_NS (no "user" entry among the
// namespaces of /proc/self/ns, which lists one per namespace type built in) from one that
// has it; the knobs then say whether it is disabled. Without /proc/self/ns (kernels before
// 3.8, a chroot without proc) the kernel's build config decides if it is installed.
func readUsernsBuild(r *reader, kernel string) UsernsBuild {
	entries, err := fs.ReadDir(r.fsys, pathNamespaces)
	if err == nil && len(entries) > 0 {
		for _, entry := range entries {
			if entry.Name() == "user" {
				return UsernsBuild{State: UsernsBuiltIn, Evidence: "/proc/self/ns/user exists"}
			}
		}
		return UsernsBuild{State: UsernsNotBuilt,
			Evidence: "/proc/self/ns has no user entry"}
	}
	why := "/proc/self/ns is missing"
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		why = "/proc/self/ns: " + reason(err)
	}
	if kernel == "" || strings.ContainsAny(kernel, "/\x00") {
		return UsernsBuild{Evidence: why}
	}
	config := "boot/config-" + kernel
	data, err := r.fact(config, maxTableSize)
	if err != nil {
		return UsernsBuild{Evidence: why}
	}
	for _, line := range strings.Split(string(data), "\n") {
		switch strings.TrimSpace(line) {
		case "CONFIG_USER_NS=y":
			return UsernsBuild{State: UsernsBuiltIn, Evidence: "/" + config + ": CONFIG_USER_NS=y"}
		case "# CONFIG_USER_NS is not set":
			return UsernsBuild{State: UsernsNotBuilt, Evidence: "/" + config + ": CONFIG_USER_NS is not set"}
		}
	}
	return UsernsBuild{Evidence: why + ", and /" + config + " does not mention CONFIG_USER_NS"}
}
