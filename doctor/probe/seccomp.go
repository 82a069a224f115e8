package probe

import (
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A harmless attempt at each call the filter denies: arguments that do nothing even
// where the call is allowed (an invalid descriptor, a zero length, a pid that cannot be
// traced, a key type that does not exist), chosen where possible so that, without the
// filter, the kernel would answer something else (EBADF, EINVAL, ESRCH, success): the
// errno the filter gives then proves the filter gave it. The clone of a new user
// namespace is the nested-userns self-test's; the setuid modes are setuid-refused's.
func seccompAttempts() map[string]func() unix.Errno {
	raw := func(number uintptr, args ...uintptr) func() unix.Errno {
		return func() unix.Errno {
			var a [6]uintptr
			copy(a[:], args)
			_, _, errno := unix.Syscall6(number, a[0], a[1], a[2], a[3], a[4], a[5])
			return errno
		}
	}
	noFD := ^uintptr(0) // -1
	missing, noType, name := address(missingPath), address(noKeyType), address(moduleName)
	pid := uintptr(os.Getpid())
	return map[string]func() unix.Errno{
		"ptrace":            raw(unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, pid), // itself, untraced: ESRCH
		"process_vm_readv":  raw(unix.SYS_PROCESS_VM_READV, pid),             // zero iovecs: 0
		"process_vm_writev": raw(unix.SYS_PROCESS_VM_WRITEV, pid),
		"pidfd_getfd":       raw(unix.SYS_PIDFD_GETFD, noFD),
		"io_uring_setup":    raw(unix.SYS_IO_URING_SETUP, 0, 0), // no params: EFAULT or EINVAL
		"io_uring_enter":    raw(unix.SYS_IO_URING_ENTER, noFD),
		"io_uring_register": raw(unix.SYS_IO_URING_REGISTER, noFD),
		"keyctl":            raw(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd)), // the session keyring's id: succeeds unfiltered
		"add_key":           raw(unix.SYS_ADD_KEY, noType, name, 0, 0, uintptr(0xfffffffd)),        // no such type: ENODEV
		"request_key":       raw(unix.SYS_REQUEST_KEY, noType, name, 0, 0),
		"bpf":               raw(unix.SYS_BPF, 0xffff),
		"perf_event_open":   raw(unix.SYS_PERF_EVENT_OPEN, 0, 0, noFD, noFD, 0), // no attr: EFAULT
		"userfaultfd":       raw(unix.SYS_USERFAULTFD, 0xffffffff),              // bad flags: EINVAL
		"memfd_secret":      raw(unix.SYS_MEMFD_SECRET, 0xffffffff),             // bad flags: EINVAL (ENOSYS where disabled)
		"fanotify_init":     notificationGroup,
		"kexec_load":        raw(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0xffffffff),
		"kexec_file_load":   raw(unix.SYS_KEXEC_FILE_LOAD, noFD, noFD, 0, 0, 0xffffffff),
		"init_module":       raw(unix.SYS_INIT_MODULE, 0, 0, name),
		"finit_module":      raw(unix.SYS_FINIT_MODULE, noFD, name, 0),
		"delete_module":     raw(unix.SYS_DELETE_MODULE, name, 0),
		"mount":             raw(unix.SYS_MOUNT, 0, missing, 0, 0, 0),
		"umount2":           raw(unix.SYS_UMOUNT2, missing, 0),
		"fsopen":            raw(unix.SYS_FSOPEN, noType, 0),
		"fsconfig":          raw(unix.SYS_FSCONFIG, noFD, 0, 0, 0, 0),
		"fsmount":           raw(unix.SYS_FSMOUNT, noFD, 0, 0),
		"fspick":            raw(unix.SYS_FSPICK, noFD, missing, 0),
		"open_tree":         raw(unix.SYS_OPEN_TREE, noFD, missing, 0),
		"open_tree_attr":    raw(unix.SYS_OPEN_TREE_ATTR, noFD, missing, 0, 0, 0),
		"move_mount":        raw(unix.SYS_MOVE_MOUNT, noFD, missing, noFD, missing, 0),
		"mount_setattr":     raw(unix.SYS_MOUNT_SETATTR, noFD, missing, 0, 0, 0),
		"pivot_root":        raw(unix.SYS_PIVOT_ROOT, missing, missing),
		"chroot":            raw(unix.SYS_CHROOT, missing), // ENOENT unfiltered
		"setns":             raw(unix.SYS_SETNS, noFD, 0),
		"unshare":           raw(unix.SYS_UNSHARE, 0x1), // not a namespace flag: EINVAL unfiltered
		"syslog":            raw(unix.SYS_SYSLOG, 10),   // SYSLOG_ACTION_SIZE_BUFFER: only reads a size
		"acct":              raw(unix.SYS_ACCT, missing),
		"swapon":            raw(unix.SYS_SWAPON, missing, 0),
		"swapoff":           raw(unix.SYS_SWAPOFF, missing),
		"reboot":            raw(unix.SYS_REBOOT, 0, 0, 0, 0), // wrong magic: EINVAL even with the capability
		"open_by_handle_at": raw(unix.SYS_OPEN_BY_HANDLE_AT, noFD, 0, 0),
		"move_pages":        raw(unix.SYS_MOVE_PAGES, pid, 0, 0, 0, 0, 0), // zero pages: 0
		"migrate_pages":     raw(unix.SYS_MIGRATE_PAGES, pid, 0, 0, 0),
		"clone3":            raw(unix.SYS_CLONE3, 0, 0), // size 0: EINVAL unfiltered
		"openat2":           raw(unix.SYS_OPENAT2, noFD, missing, 0, 0),
		"socket":            vsock,
		"ioctl":             terminalInjection,
		"personality":       persona,
	}
}

// SeccompAttempts names the denied calls the probe knows how to try harmlessly.
func SeccompAttempts() []string {
	var names []string
	for name := range seccompAttempts() {
		names = append(names, name)
	}
	return names
}

// terminalInjection asks TIOCSTI, then TIOCSETD, of /dev/null, never a terminal:
// unfiltered each is ENOTTY. The answer is the first that is not the filter's EPERM, so
// either request let through shows.
func terminalInjection() unix.Errno {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err.(unix.Errno)
	}
	defer unix.Close(fd)
	c := byte('x')
	var lineDiscipline int32 // N_TTY
	for _, request := range []struct {
		code uintptr
		arg  unsafe.Pointer
	}{{unix.TIOCSTI, unsafe.Pointer(&c)}, {unix.TIOCSETD, unsafe.Pointer(&lineDiscipline)}} {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), request.code, uintptr(request.arg))
		if errno != unix.EPERM {
			return errno
		}
	}
	return unix.EPERM
}

// notificationGroup asks for the fanotify group anyone may have since Linux 5.13
// (notification only, events by file handle), closed at once if it opens.
func notificationGroup() unix.Errno {
	fd, _, errno := unix.Syscall(unix.SYS_FANOTIFY_INIT, unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID|unix.FAN_CLOEXEC, unix.O_RDONLY, 0)
	if errno == 0 {
		unix.Close(int(fd))
	}
	return errno
}

// persona asks for READ_IMPLIES_EXEC and, should it be granted, puts the default back.
func persona() unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_PERSONALITY, 0x0400000, 0, 0)
	if errno == 0 {
		unix.Syscall(unix.SYS_PERSONALITY, 0, 0, 0)
	}
	return errno
}

// observeSeccomp reads the filter's mode and tries each named call, and a few ordinary
// calls the filter must leave alone.
func observeSeccomp(names []string) *SeccompObservation {
	observation := &SeccompObservation{}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		key, value, _ := strings.Cut(line, ":")
		switch key {
		case "Seccomp":
			observation.Mode = strings.TrimSpace(value)
		case "Seccomp_filters":
			observation.Filters = strings.TrimSpace(value)
		}
	}
	attempts := seccompAttempts()
	for _, name := range names {
		try, ok := attempts[name]
		if !ok {
			observation.Unknown = append(observation.Unknown, name)
			continue
		}
		observation.Denied = append(observation.Denied, SyscallAttempt{Syscall: name, Errno: errnoName(try())})
	}
	allowed := func(name string, err error) {
		observation.Allowed = append(observation.Allowed, SyscallAttempt{Syscall: name, Errno: errnoName(err)})
	}
	for _, family := range []struct {
		name   string
		family int
	}{{"socket AF_UNIX", unix.AF_UNIX}, {"socket AF_INET", unix.AF_INET}, {"socket AF_INET6", unix.AF_INET6}} {
		fd, err := unix.Socket(family.family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		if family.family == unix.AF_INET6 && err == unix.EAFNOSUPPORT {
			err = nil // a kernel without IPv6 says so itself
		}
		allowed(family.name, err)
	}
	_, err := unix.Getpid(), error(nil)
	allowed("getpid", err)
	_, _, errno := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	allowed("personality query", errnoOrNil(errno))
	return observation
}

func errnoOrNil(errno unix.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

// The strings the attempts pass, NUL-terminated, in package variables so the collector
// never frees them while the kernel reads them by address.
var (
	missingPath = []byte("/nonexistent-bwrapkit-doctor\x00")
	noKeyType   = []byte("bwrapkit-doctor-no-such-key-type\x00")
	moduleName  = []byte("bwrapkit-doctor\x00")
)

func address(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// vsock asks for an AF_VSOCK socket (on WSL2 one reaches Windows), closed if it opens.
func vsock() unix.Errno {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return 0
	}
	return err.(unix.Errno)
}
