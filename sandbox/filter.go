package sandbox

import "github.com/bwrapkit/bwrapkit/sandbox/seccomp"

// SeccompProgram is the filter every sandbox runs under, for this machine's
// architecture, as bwrap reads it from --seccomp FD (struct sock_filter entries). An
// architecture without a filter is an error: there is no run without one.
func SeccompProgram() ([]byte, error) {
	arch, err := seccomp.NativeArch()
	if err != nil {
		return nil, err
	}
	return seccomp.Program(arch)
}
