package sandbox

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// ExecError is a bwrap that could not be executed at all, as opposed to one that ran and
// said nothing useful: the kernel's own reason (not executable, wrong architecture, a
// missing interpreter) is kept, because that is what the remedy depends on.
type ExecError struct {
	Path string
	Err  error
	// Machine is the binary's ELF machine when it is not this host's ("aarch64" on an
	// amd64 host); empty otherwise.
	Machine string
}

func (e *ExecError) Error() string {
	if e.Machine != "" {
		return fmt.Sprintf("%s is built for %s, but this host is %s (%v)", e.Path, e.Machine, hostMachine(), e.Err)
	}
	return fmt.Sprintf("%s cannot be executed: %v", e.Path, e.Err)
}

func (e *ExecError) Unwrap() error { return e.Err }

// asExecError recognises a failure to execute path (as opposed to a non-zero exit).
func asExecError(path string, err error) *ExecError {
	var errno syscall.Errno
	var pathErr *os.PathError
	if !errors.As(err, &pathErr) || !errors.As(err, &errno) {
		return nil
	}
	execErr := &ExecError{Path: path, Err: errno}
	if errno == syscall.ENOEXEC || errno == syscall.ENOENT {
		// ENOENT for an existing file: its ELF interpreter (a foreign loader) is missing.
		if machine := elfMachine(path); machine != "" && machine != hostMachine() {
			execErr.Machine = machine
		}
	}
	return execErr
}

// elfMachine names the architecture an ELF file is built for, or "" when it is not ELF.
func elfMachine(path string) string {
	file, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer file.Close()
	return machineName(file.Machine)
}

func machineName(machine elf.Machine) string {
	switch machine {
	case elf.EM_X86_64:
		return "amd64"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_386:
		return "386"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_RISCV:
		return "riscv64"
	case elf.EM_PPC64:
		return "ppc64"
	case elf.EM_S390:
		return "s390x"
	}
	return machine.String()
}

// hostMachine is this host's architecture in the same words.
func hostMachine() string { return runtime.GOARCH }
