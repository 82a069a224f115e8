package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func checkNumbers(t *testing.T, table map[string]uint32, xsys map[string]int) {
	t.Helper()
	if len(table) != len(xsys) {
		t.Errorf("the table has %d calls, the check %d: keep them in step", len(table), len(xsys))
	}
	for name, nr := range table {
		want, ok := xsys[name]
		if !ok {
			t.Errorf("%s: not checked against x/sys", name)
		} else if int(nr) != want {
			t.Errorf("%s = %d, x/sys says %d", name, nr, want)
		}
	}
}

// The package spells out the kernel's constants so Program stays pure and builds for
// either architecture anywhere; here they are held against x/sys.
func TestConstantsMatchXSys(t *testing.T) {
	for _, check := range []struct {
		name      string
		got, want uint64
	}{
		{"EPERM", uint64(errEPERM), uint64(unix.EPERM)},
		{"ENOSYS", uint64(errENOSYS), uint64(unix.ENOSYS)},
		{"EAFNOSUPPORT", uint64(errEAFNOSUPPORT), uint64(unix.EAFNOSUPPORT)},
		{"AUDIT_ARCH_X86_64", auditArchX86_64, unix.AUDIT_ARCH_X86_64},
		{"AUDIT_ARCH_AARCH64", auditArchAARCH64, unix.AUDIT_ARCH_AARCH64},
		{"SECCOMP_RET_KILL_PROCESS", retKillProcess, unix.SECCOMP_RET_KILL_PROCESS},
		{"SECCOMP_RET_ERRNO", retErrno, unix.SECCOMP_RET_ERRNO},
		{"SECCOMP_RET_ALLOW", retAllow, unix.SECCOMP_RET_ALLOW},
		{"BPF_MAXINSNS", maxInstructions, unix.BPF_MAXINSNS},
		{"BPF_LD|BPF_W|BPF_ABS", opLoadWord, unix.BPF_LD | unix.BPF_W | unix.BPF_ABS},
		{"BPF_JMP|BPF_JEQ|BPF_K", opJumpEq, unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K},
		{"BPF_JMP|BPF_JSET|BPF_K", opJumpSet, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K},
		{"BPF_RET|BPF_K", opReturn, unix.BPF_RET | unix.BPF_K},
		{"namespace flags", cloneNamespaceFlags, unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
			unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET},
		{"TIOCSTI", tiocsti, unix.TIOCSTI},
		{"TIOCLINUX", tioclinux, unix.TIOCLINUX},
		{"TIOCSETD", tiocsetd, unix.TIOCSETD},
		{"AF_UNIX", afUnix, unix.AF_UNIX},
		{"AF_INET", afInet, unix.AF_INET},
		{"AF_INET6", afInet6, unix.AF_INET6},
		{"AF_NETLINK", afNetlink, unix.AF_NETLINK},
		{"S_ISUID|S_ISGID", setIDBits, unix.S_ISUID | unix.S_ISGID},
	} {
		if check.got != check.want {
			t.Errorf("%s = %#x, x/sys says %#x", check.name, check.got, check.want)
		}
	}
}
