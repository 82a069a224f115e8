// Package seccomp owns the syscall filter every sandboxed command runs under: the rules,
// the syscall numbers per architecture, and the classic-BPF program bwrap loads with --seccomp.
package seccomp

import (
	"fmt"
	"runtime"
)

// Arch is a seccomp architecture bwrapkit builds for: "amd64" or "arm64" (Go's names).
type Arch string

// The architectures Program builds for.
const (
	AMD64 Arch = "amd64"
	ARM64 Arch = "arm64"
)

// UnsupportedArchError is the answer for an architecture bwrapkit has no filter for.
// The runner must refuse to run (never run unfiltered).
type UnsupportedArchError struct {
	Arch string
}

func (e *UnsupportedArchError) Error() string {
	return fmt.Sprintf("no seccomp filter for architecture %q: bwrapkit builds one for amd64 and arm64 only; "+
		"run bwrapkit on an amd64 or arm64 host", e.Arch)
}

// NativeArch is runtime.GOARCH when Program supports it.
func NativeArch() (Arch, error) {
	return archOf(runtime.GOARCH)
}

func archOf(goarch string) (Arch, error) {
	switch Arch(goarch) {
	case AMD64, ARM64:
		return Arch(goarch), nil
	}
	return "", &UnsupportedArchError{Arch: goarch}
}

// Program returns the filter as the bytes bwrap reads from --seccomp FD: struct
// sock_filter entries, 8 bytes each, in the architecture's byte order (little-endian on
// both). It is pure and deterministic: the same arch always gives the same bytes.
func Program(arch Arch) ([]byte, error) {
	target, err := targetOf(arch)
	if err != nil {
		return nil, err
	}
	return assemble(target, rules[:])
}

// Rule is one thing the filter refuses, for docs and the doctor.
type Rule struct {
	Syscall   string // the call, as the kernel names it
	Errno     string // what the caller sees: "EPERM", "ENOSYS", "EAFNOSUPPORT", or "SIGSYS" (killed)
	Condition string // when it is refused; empty means always
}

// Denied lists what the filter refuses, in the order the program checks it. Each call
// returns a fresh copy.
func Denied() []Rule {
	denied := make([]Rule, 0, len(rules)+2)
	denied = append(denied,
		Rule{Syscall: "any call through another ABI (i386 int 0x80 on amd64, AArch32 compat on arm64)",
			Errno: "SIGSYS", Condition: "seccomp_data.arch is not the native AUDIT_ARCH: the process is killed"},
		Rule{Syscall: "any x32 call", Errno: "SIGSYS",
			Condition: "amd64 only: the number has the x32 bit (0x40000000): the process is killed"})
	for _, r := range rules {
		condition := r.text
		if r.only != "" {
			if condition != "" {
				condition += "; "
			}
			condition += string(r.only) + " only (the other architecture has no such call)"
		}
		denied = append(denied, Rule{Syscall: r.syscall, Errno: r.errno.String(), Condition: condition})
	}
	return denied
}
