package seccomp

import (
	"bufio"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// The families' native numbers against x/sys, which generates them from the kernel's
// tables. Zero: the architecture has no such call.
func TestFamilyNumbersMatchXSys(t *testing.T) {
	xsys := map[string]int{
		"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT,
		"chroot": unix.SYS_CHROOT, "open_tree": unix.SYS_OPEN_TREE, "move_mount": unix.SYS_MOVE_MOUNT,
		"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT,
		"fspick": unix.SYS_FSPICK, "mount_setattr": unix.SYS_MOUNT_SETATTR, "open_tree_attr": unix.SYS_OPEN_TREE_ATTR,
		"statmount": unix.SYS_STATMOUNT, "listmount": unix.SYS_LISTMOUNT,
		"add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY, "keyctl": unix.SYS_KEYCTL,
		"pkey_mprotect": unix.SYS_PKEY_MPROTECT, "pkey_alloc": unix.SYS_PKEY_ALLOC, "pkey_free": unix.SYS_PKEY_FREE,
		"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV,
		"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV, "pidfd_getfd": unix.SYS_PIDFD_GETFD,
		"perf_event_open": unix.SYS_PERF_EVENT_OPEN, "kcmp": unix.SYS_KCMP, "process_madvise": unix.SYS_PROCESS_MADVISE,
		"memfd_secret": unix.SYS_MEMFD_SECRET, "fanotify_init": unix.SYS_FANOTIFY_INIT,
	}
	for name, nr := range archOnlyXSys() {
		xsys[name] = nr
	}
	arch, err := NativeArch()
	if err != nil {
		t.Skip(err)
	}
	all := append([]familyCall{}, newlyDenied...)
	for _, calls := range callFamilies {
		all = append(all, calls...)
	}
	for _, call := range all {
		want, known := xsys[call.name]
		if got := int(call.number(arch)); got != want || (!known && got != 0) {
			t.Errorf("%s: %s is %d here, x/sys says %d", arch, call.name, got, want)
		}
	}
}

// familyPatterns say which of the kernel's call names belong to a family: every name
// containing mount or tree, the fs* calls of the new mount API, pivot_root and chroot;
// every name with key; every name about another process's memory, tracing or probes.
var familyPatterns = map[string]*regexp.Regexp{
	"mount":   regexp.MustCompile(`mount|tree|^fs(open|config|pick)$|^pivot_root$|^chroot$`),
	"key":     regexp.MustCompile(`key`),
	"tracing": regexp.MustCompile(`trace|probe|^process_vm_|^perf_event|^pidfd_getfd$|^kcmp$|^process_madvise$`),
}

// TestKernelFamiliesAreListed reads the running kernel's system calls (the __x64_sys_ or
// __arm64_sys_ entry points in /proc/kallsyms, whose names any reader sees) and requires
// every one of a family to be in callFamilies, denied or allowed with a reason: the next
// mount, key or tracing call a kernel adds fails here instead of passing unfiltered.
func TestKernelFamiliesAreListed(t *testing.T) {
	names := kernelSyscalls(t)
	if len(names) < 300 {
		livetest.Skip(t, "/proc/kallsyms lists only "+strconv.Itoa(len(names))+" system calls (a kernel without CONFIG_KALLSYMS?)")
	}
	for family, pattern := range familyPatterns {
		for _, name := range names {
			if !pattern.MatchString(name) {
				continue
			}
			if !slices.ContainsFunc(callFamilies[family], func(c familyCall) bool { return c.name == name }) {
				t.Errorf("the running kernel has %s, a call of the %s family that the filter's tests do not know: "+
					"deny it in rules.go (and numbers.go) or list it as allowed in families_test.go, with the reason in README.md", name, family)
			}
		}
	}
	for _, want := range []string{"mount", "open_tree", "keyctl", "ptrace"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is missing from the kernel's list: the scan reads the wrong symbols", want)
		}
	}
}

func kernelSyscalls(t *testing.T) []string {
	t.Helper()
	prefix := map[string]string{"amd64": "__x64_sys_", "arm64": "__arm64_sys_"}[runtime.GOARCH]
	if prefix == "" {
		t.Skip("no seccomp filter for " + runtime.GOARCH)
	}
	file, err := os.Open("/proc/kallsyms")
	if err != nil {
		livetest.Skip(t, "the running kernel's system calls are unreadable: "+err.Error())
		return nil
	}
	defer file.Close()
	var names []string
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 3 || !strings.HasPrefix(fields[2], prefix) {
			continue
		}
		if name := strings.TrimPrefix(fields[2], prefix); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
