package seccomp

import "testing"

// The call families the kernel keeps adding to, written out here, not read from the
// rules: each call with its number on both architectures (from the kernel's tables, as
// golang.org/x/sys/unix carries them; families_linux_test.go holds the native ones to
// x/sys) and what the filter must answer. A rule dropped, or a number mistyped in
// numbers.go, leaves a call here allowed and fails TestFamiliesAreDenied; a call the
// running kernel has in a family and this table lacks fails TestKernelFamiliesAreListed.

// familyCall is one call of a family. A zero number means the architecture's 64-bit
// table has no such call (the kernel may still carry its code for another ABI, which
// the filter kills whole).
type familyCall struct {
	name         string
	amd64, arm64 uint32
	want         string // the errno name ("EPERM", "ENOSYS"), or "allow" with why
	why          string
}

func (f familyCall) number(arch Arch) uint32 {
	if arch == AMD64 {
		return f.amd64
	}
	return f.arm64
}

// callFamilies are the denied families of README.md's table whose new members the
// kernel keeps adding (open_tree_attr in 6.15, listmount and statmount in 6.8): the
// mount family, keyrings, and tracing another process. The allowed members say why.
var callFamilies = map[string][]familyCall{
	"mount": {
		{"mount", 165, 40, "EPERM", ""},
		{"umount2", 166, 39, "EPERM", ""},
		{"pivot_root", 155, 41, "EPERM", ""},
		{"chroot", 161, 51, "EPERM", ""},
		{"open_tree", 428, 428, "EPERM", ""},
		{"move_mount", 429, 429, "EPERM", ""},
		{"fsopen", 430, 430, "EPERM", ""},
		{"fsconfig", 431, 431, "EPERM", ""},
		{"fsmount", 432, 432, "EPERM", ""},
		{"fspick", 433, 433, "EPERM", ""},
		{"mount_setattr", 442, 442, "EPERM", ""},
		{"open_tree_attr", 467, 467, "EPERM", ""},
		{"statmount", 457, 457, "allow", "reads one mount's attributes, as /proc/self/mountinfo shows them; changes nothing"},
		{"listmount", 458, 458, "allow", "lists mount ids, as /proc/self/mountinfo does; another mount namespace needs CAP_SYS_ADMIN over it"},
		{"umount", 0, 0, "allow", "i386's umount (sys_oldumount's twin): in no 64-bit table, and i386 calls are killed"},
		{"oldumount", 0, 0, "allow", "i386's umount: in no 64-bit table, and i386 calls are killed"},
	},
	"key": {
		{"add_key", 248, 217, "EPERM", ""},
		{"request_key", 249, 218, "EPERM", ""},
		{"keyctl", 250, 219, "EPERM", ""},
		{"pkey_mprotect", 329, 288, "allow", "memory protection keys: the process's own pages, not keyrings"},
		{"pkey_alloc", 330, 289, "allow", "memory protection keys, not keyrings"},
		{"pkey_free", 331, 290, "allow", "memory protection keys, not keyrings"},
	},
	"tracing": {
		{"ptrace", 101, 117, "EPERM", ""},
		{"process_vm_readv", 310, 270, "EPERM", ""},
		{"process_vm_writev", 311, 271, "EPERM", ""},
		{"pidfd_getfd", 438, 438, "EPERM", ""},
		{"perf_event_open", 298, 241, "EPERM", ""},
		{"kcmp", 312, 272, "allow", "only on processes that pass ptrace's access check (inside the sandbox); orders kernel objects, changes nothing"},
		{"process_madvise", 440, 440, "allow", "advice on another process's memory needs CAP_SYS_NICE, which is dropped"},
		{"uretprobe", 335, 0, "allow", "the return path of a kernel-placed uprobe trampoline: seccomp passes it unfiltered (Linux 6.13+), and called anywhere else the kernel answers SIGILL"},
		{"uprobe", 336, 0, "allow", "the same for uprobe trampolines (Linux 6.16+)"},
	},
}

// newlyDenied are the calls the filter refuses outside those families, which no peer's
// default forced on us: Docker's default seccomp profile (moby's
// profiles/seccomp/default.json) allows fanotify_init only with CAP_SYS_ADMIN and
// knows no open_tree_attr, but allows memfd_secret; we refuse all three, and ioctl
// TIOCSETD (callTable), for the reasons in README.md.
var newlyDenied = []familyCall{
	{"memfd_secret", 447, 447, "EPERM", ""},
	{"fanotify_init", 300, 262, "EPERM", ""},
	{"open_tree_attr", 467, 467, "EPERM", ""},
}

// otherDenied are the rest of README.md's denied calls, one by one, so that every
// unconditional rule of rules.go has its call written out here with its numbers: a
// rule dropped there leaves its call allowed here. (The conditional rules are pinned by
// callTable in program_test.go.)
var otherDenied = []familyCall{
	{"io_uring_setup", 425, 425, "EPERM", ""},
	{"io_uring_enter", 426, 426, "EPERM", ""},
	{"io_uring_register", 427, 427, "EPERM", ""},
	{"bpf", 321, 280, "EPERM", ""},
	{"userfaultfd", 323, 282, "EPERM", ""},
	{"kexec_load", 246, 104, "EPERM", ""},
	{"kexec_file_load", 320, 294, "EPERM", ""},
	{"init_module", 175, 105, "EPERM", ""},
	{"finit_module", 313, 273, "EPERM", ""},
	{"delete_module", 176, 106, "EPERM", ""},
	{"setns", 308, 268, "EPERM", ""},
	{"unshare", 272, 97, "EPERM", ""},
	{"syslog", 103, 116, "EPERM", ""},
	{"acct", 163, 89, "EPERM", ""},
	{"quotactl", 179, 60, "EPERM", ""},
	{"quotactl_fd", 443, 443, "EPERM", ""},
	{"swapon", 167, 224, "EPERM", ""},
	{"swapoff", 168, 225, "EPERM", ""},
	{"reboot", 169, 142, "EPERM", ""},
	{"_sysctl", 156, 0, "EPERM", ""},
	{"uselib", 134, 0, "EPERM", ""},
	{"modify_ldt", 154, 0, "EPERM", ""},
	{"lookup_dcookie", 212, 18, "EPERM", ""},
	{"nfsservctl", 180, 42, "EPERM", ""},
	{"open_by_handle_at", 304, 265, "EPERM", ""},
	{"move_pages", 279, 239, "EPERM", ""},
	{"migrate_pages", 256, 238, "EPERM", ""},
	{"clone3", 435, 435, "ENOSYS", ""},
	{"openat2", 437, 437, "ENOSYS", ""},
}

// TestFamiliesAreDenied runs every call written out above through the program, at the
// number written out above, with arguments zero and all ones.
func TestFamiliesAreDenied(t *testing.T) {
	all := append(append([]familyCall{}, newlyDenied...), otherDenied...)
	for _, calls := range callFamilies {
		all = append(all, calls...)
	}
	for _, arch := range arches {
		insns := program(t, arch)
		for _, call := range all {
			nr := call.number(arch)
			if nr == 0 {
				continue
			}
			if call.want == "allow" && call.why == "" {
				t.Errorf("%s: allowed without a reason", call.name)
			}
			for _, args := range [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}} {
				ret, err := run(insns, seccompData{nr: nr, arch: auditArchOf[arch], args: args})
				if err != nil {
					t.Fatal(err)
				}
				if got := verdict(ret); got != call.want {
					t.Errorf("%s: %s (%d) = %s, want %s", arch, call.name, nr, got, call.want)
				}
			}
		}
	}
}
