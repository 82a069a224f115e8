package sandbox

import "encoding/binary"

// SeccompProgram is the filter every sandbox runs under, as bwrap reads it from
// --seccomp FD (struct sock_filter entries). PLACEHOLDER until sandbox/seccomp lands.
func SeccompProgram() ([]byte, error) {
	program := make([]byte, 8)
	binary.LittleEndian.PutUint16(program[0:], 0x06)
	binary.LittleEndian.PutUint32(program[4:], 0x7fff0000)
	return program, nil
}
