package seccomp

// The syscall numbers of the calls the rules name, one table per architecture. Only
// the calls the filter inspects are listed; a test checks each entry against
// golang.org/x/sys/unix's SYS_* constant on the native architecture.

// amd64Numbers is x86-64's table (arch/x86/entry/syscalls/syscall_64.tbl).
var amd64Numbers = map[string]uint32{
	"_sysctl":           156,
	"acct":              163,
	"add_key":           248,
	"bpf":               321,
	"chmod":             90,
	"chroot":            161,
	"clone":             56,
	"clone3":            435,
	"creat":             85,
	"delete_module":     176,
	"fanotify_init":     300,
	"fchmod":            91,
	"fchmodat":          268,
	"fchmodat2":         452,
	"finit_module":      313,
	"fsconfig":          431,
	"fsmount":           432,
	"fsopen":            430,
	"fspick":            433,
	"init_module":       175,
	"io_uring_enter":    426,
	"io_uring_register": 427,
	"io_uring_setup":    425,
	"ioctl":             16,
	"kexec_file_load":   320,
	"kexec_load":        246,
	"keyctl":            250,
	"lookup_dcookie":    212,
	"memfd_secret":      447,
	"migrate_pages":     256,
	"mkdir":             83,
	"mkdirat":           258,
	"mknod":             133,
	"mknodat":           259,
	"modify_ldt":        154,
	"mount":             165,
	"mount_setattr":     442,
	"move_mount":        429,
	"move_pages":        279,
	"nfsservctl":        180,
	"open":              2,
	"open_by_handle_at": 304,
	"open_tree":         428,
	"open_tree_attr":    467,
	"openat":            257,
	"openat2":           437,
	"perf_event_open":   298,
	"personality":       135,
	"pidfd_getfd":       438,
	"pivot_root":        155,
	"process_vm_readv":  310,
	"process_vm_writev": 311,
	"ptrace":            101,
	"quotactl":          179,
	"quotactl_fd":       443,
	"reboot":            169,
	"request_key":       249,
	"setns":             308,
	"socket":            41,
	"socketpair":        53,
	"swapoff":           168,
	"swapon":            167,
	"syslog":            103,
	"umount2":           166,
	"unshare":           272,
	"uselib":            134,
	"userfaultfd":       323,
}

// arm64Numbers is AArch64's table, the generic one (include/uapi/asm-generic/unistd.h).
// It has no open, creat, mkdir, mknod, chmod, uselib, modify_ldt or _sysctl: only
// the *at forms.
var arm64Numbers = map[string]uint32{
	"acct":              89,
	"add_key":           217,
	"bpf":               280,
	"chroot":            51,
	"clone":             220,
	"clone3":            435,
	"delete_module":     106,
	"fanotify_init":     262,
	"fchmod":            52,
	"fchmodat":          53,
	"fchmodat2":         452,
	"finit_module":      273,
	"fsconfig":          431,
	"fsmount":           432,
	"fsopen":            430,
	"fspick":            433,
	"init_module":       105,
	"io_uring_enter":    426,
	"io_uring_register": 427,
	"io_uring_setup":    425,
	"ioctl":             29,
	"kexec_file_load":   294,
	"kexec_load":        104,
	"keyctl":            219,
	"lookup_dcookie":    18,
	"memfd_secret":      447,
	"migrate_pages":     238,
	"mkdirat":           34,
	"mknodat":           33,
	"mount":             40,
	"mount_setattr":     442,
	"move_mount":        429,
	"move_pages":        239,
	"nfsservctl":        42,
	"open_by_handle_at": 265,
	"open_tree":         428,
	"open_tree_attr":    467,
	"openat":            56,
	"openat2":           437,
	"perf_event_open":   241,
	"personality":       92,
	"pidfd_getfd":       438,
	"pivot_root":        41,
	"process_vm_readv":  270,
	"process_vm_writev": 271,
	"ptrace":            117,
	"quotactl":          60,
	"quotactl_fd":       443,
	"reboot":            142,
	"request_key":       218,
	"setns":             268,
	"socket":            198,
	"socketpair":        199,
	"swapoff":           225,
	"swapon":            224,
	"syslog":            116,
	"umount2":           39,
	"unshare":           97,
	"userfaultfd":       282,
}

// The AUDIT_ARCH_* values the kernel puts in seccomp_data.arch (include/uapi/linux/audit.h):
// the ELF machine, 64-bit and little-endian flags.
const (
	auditArchX86_64  = 0xc000003e
	auditArchAARCH64 = 0xc00000b7
)

// x32Bit marks an x32 call on x86-64: it arrives with AUDIT_ARCH_X86_64 like a native
// call, so only the number tells them apart (arch/x86/include/uapi/asm/unistd.h).
const x32Bit = 0x40000000

// target is what the program needs to know about an architecture.
type target struct {
	arch      Arch
	auditArch uint32
	numbers   map[string]uint32
	x32       bool // the kernel also accepts x32 calls under this AUDIT_ARCH
}

func targetOf(arch Arch) (target, error) {
	switch arch {
	case AMD64:
		return target{arch: arch, auditArch: auditArchX86_64, numbers: amd64Numbers, x32: true}, nil
	case ARM64:
		return target{arch: arch, auditArch: auditArchAARCH64, numbers: arm64Numbers}, nil
	}
	return target{}, &UnsupportedArchError{Arch: string(arch)}
}
