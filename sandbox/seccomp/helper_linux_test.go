package seccomp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperEnv marks the test binary re-executed as the probe (the standard library's
// helper-process pattern): "load" installs Program(NativeArch()) itself first,
// "loaded" runs under a filter bwrap installed, "unfiltered" under none (to show the
// probes can tell), "exit" only exits.
const helperEnv = "BWRAPKIT_SECCOMP_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "exit":
		os.Exit(0)
	case "load", "load-preamble", "load-preamble-alone":
		if err := loadFilter(os.Getenv(helperEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "load filter:", err)
			os.Exit(3)
		}
	}
	os.Exit(helperMain(os.Args[1:]))
}

// loadFilter does what bwrap does before it execs the command: no_new_privs, then the
// program, to every thread of this process (a Go process has several). As
// "load-preamble", the program comes behind the gate's Preamble, as bwrap reads it from
// a run's filter pipe; as "load-preamble-alone", the preamble is all there is.
func loadFilter(mode string) error {
	runtime.LockOSThread()
	arch, err := NativeArch()
	if err != nil {
		return err
	}
	raw, err := Program(arch)
	if err != nil {
		return err
	}
	if mode != "load" {
		preamble, err := Preamble(os.Getpagesize(), raw)
		if err != nil {
			return err
		}
		if raw = append(preamble, raw...); mode == "load-preamble-alone" {
			raw = preamble
		}
	}
	// The kernel reads the bytes as struct sock_filter in place; so does this.
	filters := make([]unix.SockFilter, len(raw)/8)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&filters[0])), len(raw)), raw)
	prog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	thread, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	if thread != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronised", thread)
	}
	return nil
}

func helperMain(args []string) int {
	switch args[0] {
	case "probe": // probe DIR: one line per probe, "name: result"
		for _, p := range probes(args[1]) {
			fmt.Printf("%s: %s\n", p.name, result(p.try()))
		}
	case "x32": // an x32 getpid: the filter kills the process before it returns
		unix.RawSyscall(x32Bit|unix.SYS_GETPID, 0, 0, 0)
		fmt.Println("x32: survived")
	default:
		fmt.Fprintf(os.Stderr, "unknown helper action %q\n", args[0])
		return 2
	}
	return 0
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	if errno, ok := err.(unix.Errno); ok {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return err.Error()
}

// probe is one call the sandboxed process tries, with what the filter must make of it.
// The arguments are chosen so that without the filter the kernel answers something
// else (it succeeds, or fails with EINVAL, EFAULT, ESRCH), so a missing rule shows.
type probe struct {
	name string
	want string
	try  func() error
}

func errnoOf(_, _ uintptr, errno unix.Errno) error {
	if errno != 0 {
		return errno
	}
	return nil
}

// closing closes the descriptor a call returned when, unfiltered, it succeeded.
func closing(fd, _ uintptr, errno unix.Errno) error {
	if errno != 0 {
		return errno
	}
	unix.Close(int(fd))
	return nil
}

func cstring(s string) uintptr {
	p, _ := unix.BytePtrFromString(s)
	return uintptr(unsafe.Pointer(p))
}

const (
	readImpliesExec  = 0x0400000
	uffdUserModeOnly = 1
)

func probes(dir string) []probe {
	path := func(name string) string { return filepath.Join(dir, name) }
	cwd := int64(unix.AT_FDCWD)
	at := uintptr(cwd)
	mode := path("mode")
	list := []probe{
		{"getpid", "ok", func() error { return errnoOf(unix.Syscall(unix.SYS_GETPID, 0, 0, 0)) }},
		// Not PTRACE_TRACEME: should the filter fail, this process would be left traced
		// by its parent and stop at its next signal. Peeking at itself, which no process
		// may trace, fails with ESRCH unfiltered and harms nothing.
		{"ptrace", "EPERM", func() error {
			return errnoOf(unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, uintptr(os.Getpid()), 0, 0, 0, 0))
		}},
		{"process_vm_readv", "EPERM", func() error {
			return errnoOf(unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(os.Getpid()), 0, 0, 0, 0, 0))
		}},
		{"keyctl", "EPERM", func() error {
			session := int64(unix.KEY_SPEC_SESSION_KEYRING)
			return errnoOf(unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(session), 0))
		}},
		{"add_key", "EPERM", func() error { return errnoOf(unix.Syscall6(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0, 0)) }},
		{"unshare-user", "EPERM", func() error { return unix.Unshare(unix.CLONE_NEWUSER) }},
		// With CLONE_FS the kernel refuses both outright (EINVAL), so these never fork.
		{"clone-newuser", "EPERM", func() error {
			return errnoOf(unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS, 0, 0, 0, 0, 0))
		}},
		{"clone-newns-high", "EPERM", func() error {
			return errnoOf(unix.RawSyscall6(unix.SYS_CLONE, high|unix.CLONE_NEWNS|unix.CLONE_FS, 0, 0, 0, 0, 0))
		}},
		{"clone-child", "ok", func() error { // a plain fork and exec, as os/exec does it
			child := exec.Command(os.Args[0])
			child.Env = append(os.Environ(), helperEnv+"=exit")
			return child.Run()
		}},
		{"clone3", "ENOSYS", func() error { return errnoOf(unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)) }},
		{"openat2", "ENOSYS", func() error { return errnoOf(unix.Syscall6(unix.SYS_OPENAT2, at, cstring(dir), 0, 0, 0, 0)) }},
		{"io_uring_setup", "EPERM", func() error { return errnoOf(unix.Syscall(unix.SYS_IO_URING_SETUP, 0, 0, 0)) }},
		{"bpf", "EPERM", func() error { return errnoOf(unix.Syscall(unix.SYS_BPF, 0, 0, 0)) }},
		{"perf_event_open", "EPERM", func() error {
			return errnoOf(unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0))
		}},
		{"userfaultfd", "EPERM", func() error {
			return closing(unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|uffdUserModeOnly, 0, 0))
		}},
		{"mount", "EPERM", func() error { return unix.Mount("none", path("missing"), "tmpfs", 0, "") }},
		// With no flags open_tree_attr is an O_PATH open of dir: unfiltered it succeeds.
		{"open_tree_attr", "EPERM", func() error {
			return closing(unix.Syscall6(unix.SYS_OPEN_TREE_ATTR, at, cstring(dir), unix.OPEN_TREE_CLOEXEC, 0, 0, 0))
		}},
		{"memfd_secret", "EPERM", func() error { return closing(unix.Syscall(unix.SYS_MEMFD_SECRET, unix.O_CLOEXEC, 0, 0)) }},
		// The unprivileged form (Linux 5.13+): notification only, events by file handle.
		{"fanotify_init", "EPERM", func() error {
			return closing(unix.Syscall(unix.SYS_FANOTIFY_INIT, unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID|unix.FAN_CLOEXEC, unix.O_RDONLY, 0))
		}},
		{"socket-vsock", "EAFNOSUPPORT", func() error {
			return closing(unix.Syscall(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0))
		}},
		{"socket-vsock-high", "EAFNOSUPPORT", func() error {
			return closing(unix.Syscall(unix.SYS_SOCKET, high|unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0))
		}},
		{"socket-packet", "EAFNOSUPPORT", func() error {
			return closing(unix.Syscall(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0))
		}},
		{"socket-unix", "ok", func() error {
			return closing(unix.Syscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0))
		}},
		{"socket-inet", "ok", func() error {
			return closing(unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0))
		}},
		{"socket-netlink", "ok", func() error {
			return closing(unix.Syscall(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE))
		}},
		{"socketpair-unix", "ok", func() error {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
			return err
		}},
		{"personality-query", "ok", func() error { return errnoOf(unix.Syscall(unix.SYS_PERSONALITY, personalityQuery, 0, 0)) }},
		{"personality-linux", "ok", func() error { return errnoOf(unix.Syscall(unix.SYS_PERSONALITY, 0, 0, 0)) }},
		{"personality-no-randomize", "ok", func() error {
			err := errnoOf(unix.Syscall(unix.SYS_PERSONALITY, addrNoRandomize, 0, 0))
			unix.Syscall(unix.SYS_PERSONALITY, 0, 0, 0)
			return err
		}},
		{"personality-read-implies-exec", "EPERM", func() error {
			return errnoOf(unix.Syscall(unix.SYS_PERSONALITY, readImpliesExec, 0, 0))
		}},
		{"personality-read-implies-exec-high", "EPERM", func() error {
			return errnoOf(unix.Syscall(unix.SYS_PERSONALITY, high|readImpliesExec, 0, 0))
		}},
		{"create-plain", "ok", func() error { return createFile(mode, 0o644) }},
		{"chmod-setuid", "EPERM", func() error { return unix.Chmod(mode, 0o4755) }},
		{"chmod-setgid", "EPERM", func() error { return unix.Chmod(mode, 0o2755) }},
		{"chmod-setuid-high", "EPERM", func() error {
			return errnoOf(unix.Syscall6(unix.SYS_FCHMODAT, at, cstring(mode), high|0o4755, 0, 0, 0))
		}},
		{"fchmodat2-setuid", "EPERM", func() error {
			return errnoOf(unix.Syscall6(unix.SYS_FCHMODAT2, at, cstring(mode), 0o4755, 0, 0, 0))
		}},
		{"fchmod-setgid", "EPERM", func() error {
			fd, err := unix.Open(mode, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Fchmod(fd, 0o2755)
		}},
		{"chmod", "ok", func() error { return unix.Chmod(mode, 0o755) }},
		{"openat-setgid", "EPERM", func() error { return createFile(path("setgid-file"), 0o2755) }},
		{"openat-setuid", "EPERM", func() error { return createFile(path("setuid-file"), 0o4755) }},
		{"openat", "ok", func() error { return createFile(path("plain"), 0o644) }},
		{"mkdir-setgid", "EPERM", func() error { return unix.Mkdir(path("setgid-dir"), 0o2755) }},
		{"mkdir", "ok", func() error { return unix.Mkdir(path("dir"), 0o755) }},
		{"mknod-setuid", "EPERM", func() error { return unix.Mknod(path("setuid-node"), unix.S_IFREG|0o4755, 0) }},
		{"mknod-fifo", "ok", func() error { return unix.Mknod(path("fifo"), unix.S_IFIFO|0o644, 0) }},
	}
	return append(list, terminalProbes()...)
}

func createFile(path string, mode uint32) error {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, mode)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// terminalProbes run TIOCSTI, TIOCLINUX and TIOCSETD on a fresh pty made this process's
// controlling terminal: there, unfiltered, TIOCSTI works (or EIO where the kernel
// disabled it), TIOCLINUX says EINVAL and TIOCSETD to N_TTY works, so only the filter
// answers EPERM.
func terminalProbes() []probe {
	var tty int
	var setup error
	ioctl := func(request uintptr, arg uintptr) error {
		if setup != nil {
			return setup
		}
		return errnoOf(unix.Syscall(unix.SYS_IOCTL, uintptr(tty), request, arg))
	}
	var input byte = '#'
	var subcode byte = 2     // TIOCL_SETSEL
	var lineDiscipline int32 // N_TTY
	return []probe{
		{"tty-setup", "ok", func() error {
			tty, setup = controllingPty()
			return setup
		}},
		{"ioctl-tcgets", "ok", func() error {
			var termios unix.Termios
			return ioctl(unix.TCGETS, uintptr(unsafe.Pointer(&termios)))
		}},
		{"ioctl-tiocsti", "EPERM", func() error { return ioctl(unix.TIOCSTI, uintptr(unsafe.Pointer(&input))) }},
		{"ioctl-tiocsti-high", "EPERM", func() error { return ioctl(high|unix.TIOCSTI, uintptr(unsafe.Pointer(&input))) }},
		{"ioctl-tioclinux", "EPERM", func() error { return ioctl(unix.TIOCLINUX, uintptr(unsafe.Pointer(&subcode))) }},
		// Setting the discipline the pty already has (N_TTY): unfiltered it succeeds.
		{"ioctl-tiocsetd", "EPERM", func() error { return ioctl(unix.TIOCSETD, uintptr(unsafe.Pointer(&lineDiscipline))) }},
		{"ioctl-tiocsetd-high", "EPERM", func() error { return ioctl(high|unix.TIOCSETD, uintptr(unsafe.Pointer(&lineDiscipline))) }},
		{"ioctl-tiocgetd", "ok", func() error { return ioctl(unix.TIOCGETD, uintptr(unsafe.Pointer(&lineDiscipline))) }},
	}
}

func controllingPty() (int, error) {
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		return -1, fmt.Errorf("unlockpt: %w", err)
	}
	peer, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		return -1, fmt.Errorf("TIOCGPTPEER: %w", errno)
	}
	if _, err := unix.Setsid(); err != nil {
		return -1, fmt.Errorf("setsid: %w", err)
	}
	if err := unix.IoctlSetInt(int(peer), unix.TIOCSCTTY, 0); err != nil {
		return -1, fmt.Errorf("TIOCSCTTY: %w", err)
	}
	return int(peer), nil
}
