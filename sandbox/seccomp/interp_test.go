package seccomp

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// A classic-BPF interpreter for the instructions Program emits, written from the
// kernel's rules (kernel/seccomp.c seccomp_check_filter, net/core/filter.c
// bpf_check_classic), so the tests judge the bytes the kernel will load.

type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// bytes lays the data out as struct seccomp_data on a little-endian machine.
func (d seccompData) bytes() [64]byte {
	var b [64]byte
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	// b[8:16] is instruction_pointer, never read.
	for i, arg := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], arg)
	}
	return b
}

func decode(program []byte) ([]instruction, error) {
	if len(program) == 0 || len(program)%8 != 0 {
		return nil, fmt.Errorf("program is %d bytes, not a positive multiple of 8", len(program))
	}
	insns := make([]instruction, len(program)/8)
	for i := range insns {
		entry := program[8*i:]
		insns[i] = instruction{
			code: binary.LittleEndian.Uint16(entry[0:]),
			jt:   entry[2], jf: entry[3],
			k: binary.LittleEndian.Uint32(entry[4:]),
		}
	}
	return insns, nil
}

// validate applies the checks the kernel makes before it loads a filter.
func validate(insns []instruction) error {
	if len(insns) > maxInstructions {
		return fmt.Errorf("%d instructions, more than BPF_MAXINSNS", len(insns))
	}
	for pc, insn := range insns {
		switch insn.code {
		case opLoadWord:
			if insn.k%4 != 0 || insn.k >= 64 {
				return fmt.Errorf("%d: load at offset %d, outside seccomp_data or unaligned", pc, insn.k)
			}
		case opJumpEq, opJumpSet:
			if pc+1+int(insn.jt) >= len(insns) || pc+1+int(insn.jf) >= len(insns) {
				return fmt.Errorf("%d: jump out of the program", pc)
			}
		case opJump:
			if pc+1+int(insn.k) >= len(insns) {
				return fmt.Errorf("%d: jump out of the program", pc)
			}
		case opReturn:
		default:
			return fmt.Errorf("%d: opcode %#x the program should not emit", pc, insn.code)
		}
	}
	// With only forward jumps, a last instruction that returns means every path returns.
	if insns[len(insns)-1].code != opReturn {
		return fmt.Errorf("the last instruction is not a return")
	}
	return nil
}

func run(insns []instruction, d seccompData) (uint32, error) {
	data := d.bytes()
	var a uint32
	for pc := 0; pc < len(insns); {
		insn := insns[pc]
		switch insn.code {
		case opLoadWord:
			a = binary.LittleEndian.Uint32(data[insn.k:])
			pc++
		case opJumpEq, opJumpSet:
			taken := a == insn.k
			if insn.code == opJumpSet {
				taken = a&insn.k != 0
			}
			if taken {
				pc += 1 + int(insn.jt)
			} else {
				pc += 1 + int(insn.jf)
			}
		case opJump:
			pc += 1 + int(insn.k)
		case opReturn:
			return insn.k, nil
		default:
			return 0, fmt.Errorf("%d: unknown opcode %#x", pc, insn.code)
		}
	}
	return 0, fmt.Errorf("ran off the end")
}

// verdict names a filter answer the way the tables below write it.
func verdict(ret uint32) string {
	switch {
	case ret == retAllow:
		return "allow"
	case ret == retKillProcess:
		return "kill"
	case ret&0xffff0000 == retErrno:
		return errno(ret & 0xffff).String()
	}
	return "return " + strconv.FormatUint(uint64(ret), 16)
}
