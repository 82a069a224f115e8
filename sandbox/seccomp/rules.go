package seccomp

import "strconv"

// errno is a Linux error number the filter answers with; the values are the same on
// x86-64 and AArch64 (include/uapi/asm-generic/errno*.h).
type errno uint16

const (
	errEPERM        errno = 1
	errENOSYS       errno = 38
	errEAFNOSUPPORT errno = 97
)

func (e errno) String() string {
	switch e {
	case errEPERM:
		return "EPERM"
	case errENOSYS:
		return "ENOSYS"
	case errEAFNOSUPPORT:
		return "EAFNOSUPPORT"
	}
	return "errno " + strconv.Itoa(int(e))
}

// test is how a rule looks at its argument.
type test uint8

const (
	always  test = iota // refuse the call whatever its arguments
	anyBits             // refuse when the argument has any bit of mask set
	oneOf               // refuse when the argument is one of values
	noneOf              // refuse when the argument is none of values
)

// condition is a rule's test of one argument. Every condition reads only the low 32
// bits: for each call below the kernel itself declares the argument 32 bits wide or
// less (int, unsigned int, umode_t) or truncates it (clone's lower_32_bits), so the
// high word never reaches the kernel's decision. Comparing it too would let junk high
// bits slip a refused value past an equality test (CVE-2019-10063, Flatpak's TIOCSTI).
type condition struct {
	test   test
	arg    uint8     // 0..5
	mask   uint32    // anyBits
	values [4]uint32 // oneOf, noneOf: values[:count]
	count  uint8
}

func bits(arg uint8, mask uint32) condition {
	return condition{test: anyBits, arg: arg, mask: mask}
}

func valuesTest(kind test, arg uint8, values ...uint32) condition {
	c := condition{test: kind, arg: arg, count: uint8(len(values))}
	copy(c.values[:], values)
	return c
}

// rule is one refusal: a call, what it gets, and when.
type rule struct {
	syscall string
	errno   errno
	when    condition
	text    string // the condition in words, for Denied
	only    Arch   // the one architecture that has the call; empty for both
}

// The kernel constants the conditions test.
const (
	// Every namespace flag clone(2) honours. CLONE_NEWTIME (0x80) is not one: it lies
	// inside CSIGNAL, where clone reads the exit signal, so only clone3 and unshare
	// can ask for it, and both are refused whole.
	cloneNamespaceFlags = 0x00020000 | // CLONE_NEWNS
		0x02000000 | // CLONE_NEWCGROUP
		0x04000000 | // CLONE_NEWUTS
		0x08000000 | // CLONE_NEWIPC
		0x10000000 | // CLONE_NEWUSER
		0x20000000 | // CLONE_NEWPID
		0x40000000 // CLONE_NEWNET

	tiocsti   = 0x5412 // fake input on a terminal (CVE-2017-5226)
	tioclinux = 0x541c // virtual-console copy and paste, TIOCSTI's twin (CVE-2023-28100)
	tiocsetd  = 0x5423 // change the line discipline (n_hdlc CVE-2017-2636, n_gsm CVE-2023-6546)

	perLinux         = 0x0000000  // the default personality
	addrNoRandomize  = 0x0040000  // setarch -R; ThreadSanitizer re-execs itself with it
	personalityQuery = 0xffffffff // personality(0xffffffff) reads without changing

	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16

	setIDBits = 0o6000 // S_ISUID | S_ISGID
)

var (
	namespaceClone = bits(0, cloneNamespaceFlags)
	terminalIoctl  = valuesTest(oneOf, 1, tiocsti, tioclinux, tiocsetd)
	personality    = valuesTest(noneOf, 0, perLinux, addrNoRandomize, personalityQuery)
	socketFamily   = valuesTest(noneOf, 0, afUnix, afInet, afInet6, afNetlink)
)

const (
	setIDText  = "the mode has S_ISUID or S_ISGID"
	familyText = "the family (arg0) is not AF_UNIX, AF_INET, AF_INET6 or AF_NETLINK (so AF_VSOCK never)"
)

// rules are the refusals, in program order; everything else is allowed. README.md says
// why each is here and what is left allowed on purpose.
var rules = [...]rule{
	// Reaching into another process of the same uid: bwrap's pid 1 inside (stopping
	// it under ptrace hangs the run) and every other sandboxed process. Before Linux
	// 4.8 a tracer could also change a call after the filter had allowed it.
	{syscall: "ptrace", errno: errEPERM},
	{syscall: "process_vm_readv", errno: errEPERM},
	{syscall: "process_vm_writev", errno: errEPERM},
	{syscall: "pidfd_getfd", errno: errEPERM}, // takes another process's descriptors, on ptrace's check

	// io_uring does openat, socket, and more without making those calls, so none of
	// the argument checks below would see them.
	{syscall: "io_uring_setup", errno: errEPERM},
	{syscall: "io_uring_enter", errno: errEPERM},
	{syscall: "io_uring_register", errno: errEPERM},

	// Keyrings are not namespaced: the caller's session keyring is shared.
	{syscall: "keyctl", errno: errEPERM},
	{syscall: "add_key", errno: errEPERM},
	{syscall: "request_key", errno: errEPERM},

	// Large kernel attack surface no build or test needs.
	{syscall: "bpf", errno: errEPERM},
	{syscall: "perf_event_open", errno: errEPERM},
	{syscall: "userfaultfd", errno: errEPERM}, // stretches kernel race windows at will
	// Memory taken out of the kernel's direct map (splitting its huge pages for the
	// whole host) and out of reach of the kernel's own inspection.
	{syscall: "memfd_secret", errno: errEPERM},
	// Unprivileged since Linux 5.13: watches on every file the command can see, through
	// a subsystem with its own run of kernel bugs; no build or test needs it.
	{syscall: "fanotify_init", errno: errEPERM},

	// The kernel itself.
	{syscall: "kexec_load", errno: errEPERM},
	{syscall: "kexec_file_load", errno: errEPERM},
	{syscall: "init_module", errno: errEPERM},
	{syscall: "finit_module", errno: errEPERM},
	{syscall: "delete_module", errno: errEPERM},

	// The mount tree bwrap built must stay as built.
	{syscall: "mount", errno: errEPERM},
	{syscall: "umount2", errno: errEPERM},
	{syscall: "fsopen", errno: errEPERM},
	{syscall: "fsconfig", errno: errEPERM},
	{syscall: "fsmount", errno: errEPERM},
	{syscall: "fspick", errno: errEPERM},
	{syscall: "open_tree", errno: errEPERM},
	{syscall: "open_tree_attr", errno: errEPERM}, // Linux 6.15: open_tree with mount_setattr in one call
	{syscall: "move_mount", errno: errEPERM},
	{syscall: "mount_setattr", errno: errEPERM},
	{syscall: "pivot_root", errno: errEPERM},
	{syscall: "chroot", errno: errEPERM},

	// No new namespaces and no joining others: a fresh user namespace hands back every
	// capability, the usual first step of a kernel exploit.
	{syscall: "setns", errno: errEPERM},
	{syscall: "unshare", errno: errEPERM},

	// Host-wide state.
	{syscall: "syslog", errno: errEPERM},
	{syscall: "acct", errno: errEPERM},
	{syscall: "quotactl", errno: errEPERM},
	{syscall: "quotactl_fd", errno: errEPERM},
	{syscall: "swapon", errno: errEPERM},
	{syscall: "swapoff", errno: errEPERM},
	{syscall: "reboot", errno: errEPERM},
	// Before Linux 5.5, _sysctl wrote sysctls without going through /proc/sys, so a
	// read-only /proc/sys would not have stopped it.
	{syscall: "_sysctl", errno: errEPERM, only: AMD64},

	// Old or exotic calls with a history of holes.
	{syscall: "uselib", errno: errEPERM, only: AMD64},
	{syscall: "modify_ldt", errno: errEPERM, only: AMD64},
	{syscall: "lookup_dcookie", errno: errEPERM},
	{syscall: "nfsservctl", errno: errEPERM},
	{syscall: "open_by_handle_at", errno: errEPERM}, // "shocker": opens any inode by handle
	{syscall: "move_pages", errno: errEPERM},        // acts on other processes' memory by pid
	{syscall: "migrate_pages", errno: errEPERM},

	// seccomp cannot read behind a pointer, so these two cannot be inspected. ENOSYS
	// makes libc fall back to clone and openat, whose arguments can.
	{syscall: "clone3", errno: errENOSYS},
	{syscall: "openat2", errno: errENOSYS},

	{syscall: "clone", errno: errEPERM, when: namespaceClone,
		text: "the flags (arg0) carry CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET or CLONE_NEWCGROUP"},
	{syscall: "ioctl", errno: errEPERM, when: terminalIoctl,
		text: "the request (arg1, low 32 bits) is TIOCSTI, TIOCLINUX or TIOCSETD"},
	{syscall: "personality", errno: errEPERM, when: personality,
		text: "the persona (arg0) is not PER_LINUX, PER_LINUX|ADDR_NO_RANDOMIZE or the query 0xffffffff"},
	{syscall: "socket", errno: errEAFNOSUPPORT, when: socketFamily, text: familyText},
	{syscall: "socketpair", errno: errEAFNOSUPPORT, when: socketFamily, text: familyText},

	// No file or directory gets setuid or setgid bits: as root, a setuid-root file left
	// in the workdir would be a root shell for any host user.
	{syscall: "chmod", errno: errEPERM, when: bits(1, setIDBits), text: setIDText + " (arg1)", only: AMD64},
	{syscall: "fchmod", errno: errEPERM, when: bits(1, setIDBits), text: setIDText + " (arg1)"},
	{syscall: "fchmodat", errno: errEPERM, when: bits(2, setIDBits), text: setIDText + " (arg2)"},
	{syscall: "fchmodat2", errno: errEPERM, when: bits(2, setIDBits), text: setIDText + " (arg2)"},
	{syscall: "open", errno: errEPERM, when: bits(2, setIDBits), text: setIDText + " (arg2)", only: AMD64},
	{syscall: "openat", errno: errEPERM, when: bits(3, setIDBits), text: setIDText + " (arg3)"},
	{syscall: "creat", errno: errEPERM, when: bits(1, setIDBits), text: setIDText + " (arg1)", only: AMD64},
	{syscall: "mkdir", errno: errEPERM, when: bits(1, setIDBits), text: setIDText + " (arg1)", only: AMD64},
	{syscall: "mkdirat", errno: errEPERM, when: bits(2, setIDBits), text: setIDText + " (arg2)"},
	{syscall: "mknod", errno: errEPERM, when: bits(1, setIDBits), text: setIDText + " (arg1)", only: AMD64},
	{syscall: "mknodat", errno: errEPERM, when: bits(2, setIDBits), text: setIDText + " (arg2)"},
}
