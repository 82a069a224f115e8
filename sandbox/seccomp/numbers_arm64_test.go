//go:build linux

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The arm64 table against x/sys, which generates its numbers from the kernel's headers.
func TestNumbersMatchXSys(t *testing.T) {
	checkNumbers(t, arm64Numbers, map[string]int{
		"acct":              unix.SYS_ACCT,
		"add_key":           unix.SYS_ADD_KEY,
		"bpf":               unix.SYS_BPF,
		"chroot":            unix.SYS_CHROOT,
		"clone":             unix.SYS_CLONE,
		"clone3":            unix.SYS_CLONE3,
		"delete_module":     unix.SYS_DELETE_MODULE,
		"fanotify_init":     unix.SYS_FANOTIFY_INIT,
		"fchmod":            unix.SYS_FCHMOD,
		"fchmodat":          unix.SYS_FCHMODAT,
		"fchmodat2":         unix.SYS_FCHMODAT2,
		"finit_module":      unix.SYS_FINIT_MODULE,
		"fsconfig":          unix.SYS_FSCONFIG,
		"fsmount":           unix.SYS_FSMOUNT,
		"fsopen":            unix.SYS_FSOPEN,
		"fspick":            unix.SYS_FSPICK,
		"init_module":       unix.SYS_INIT_MODULE,
		"io_uring_enter":    unix.SYS_IO_URING_ENTER,
		"io_uring_register": unix.SYS_IO_URING_REGISTER,
		"io_uring_setup":    unix.SYS_IO_URING_SETUP,
		"ioctl":             unix.SYS_IOCTL,
		"kexec_file_load":   unix.SYS_KEXEC_FILE_LOAD,
		"kexec_load":        unix.SYS_KEXEC_LOAD,
		"keyctl":            unix.SYS_KEYCTL,
		"lookup_dcookie":    unix.SYS_LOOKUP_DCOOKIE,
		"memfd_secret":      unix.SYS_MEMFD_SECRET,
		"migrate_pages":     unix.SYS_MIGRATE_PAGES,
		"mkdirat":           unix.SYS_MKDIRAT,
		"mknodat":           unix.SYS_MKNODAT,
		"mount":             unix.SYS_MOUNT,
		"mount_setattr":     unix.SYS_MOUNT_SETATTR,
		"move_mount":        unix.SYS_MOVE_MOUNT,
		"move_pages":        unix.SYS_MOVE_PAGES,
		"nfsservctl":        unix.SYS_NFSSERVCTL,
		"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
		"open_tree":         unix.SYS_OPEN_TREE,
		"open_tree_attr":    unix.SYS_OPEN_TREE_ATTR,
		"openat":            unix.SYS_OPENAT,
		"openat2":           unix.SYS_OPENAT2,
		"perf_event_open":   unix.SYS_PERF_EVENT_OPEN,
		"personality":       unix.SYS_PERSONALITY,
		"pidfd_getfd":       unix.SYS_PIDFD_GETFD,
		"pivot_root":        unix.SYS_PIVOT_ROOT,
		"process_vm_readv":  unix.SYS_PROCESS_VM_READV,
		"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"ptrace":            unix.SYS_PTRACE,
		"quotactl":          unix.SYS_QUOTACTL,
		"quotactl_fd":       unix.SYS_QUOTACTL_FD,
		"reboot":            unix.SYS_REBOOT,
		"request_key":       unix.SYS_REQUEST_KEY,
		"setns":             unix.SYS_SETNS,
		"socket":            unix.SYS_SOCKET,
		"socketpair":        unix.SYS_SOCKETPAIR,
		"swapoff":           unix.SYS_SWAPOFF,
		"swapon":            unix.SYS_SWAPON,
		"syslog":            unix.SYS_SYSLOG,
		"umount2":           unix.SYS_UMOUNT2,
		"unshare":           unix.SYS_UNSHARE,
		"userfaultfd":       unix.SYS_USERFAULTFD,
	})
}

// archOnlyXSys are the family calls only AArch64 has: none.
func archOnlyXSys() map[string]int { return map[string]int{} }
