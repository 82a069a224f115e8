package seccomp

import (
	"encoding/binary"
	"fmt"
)

// Preamble is size bytes of instructions to put before program, which change nothing it
// does: the first jumps over the rest, which never run (the kernel's constant-action
// cache follows the jump, so calls the program always allows stay as cheap). Alone, the
// preamble is no program the kernel loads: its jump leads past its end and it ends in no
// return. So a reader handed the preamble and then an end of file gets no filter, and
// fails, rather than a weaker one.
//
// The launch gate writes it ahead of the program to fill the pipe bwrap reads the filter
// from: the pipe frees as bwrap reads it, which tells the gate that bwrap's setup is over
// (see sandbox/gate.go).
func Preamble(size int, program []byte) ([]byte, error) {
	if size < 16 || size%8 != 0 {
		return nil, fmt.Errorf("seccomp preamble of %d bytes: want a multiple of 8, at least 16", size)
	}
	if len(program)%8 != 0 {
		return nil, fmt.Errorf("seccomp program of %d bytes is not whole instructions", len(program))
	}
	count := size / 8
	if total := count + len(program)/8; total > maxInstructions {
		return nil, fmt.Errorf("a %d-byte preamble makes the seccomp program %d instructions, more than the kernel's %d", size, total, maxInstructions)
	}
	out := make([]byte, size)
	for i := range count {
		entry := out[8*i : 8*i+8]
		binary.LittleEndian.PutUint16(entry[0:], opJump)
		if i == 0 {
			binary.LittleEndian.PutUint32(entry[4:], uint32(count-1))
		}
	}
	return out, nil
}
