package seccomp

import (
	"encoding/binary"
	"fmt"
)

// The classic-BPF subset the program uses (include/uapi/linux/bpf_common.h), all of
// which the kernel's seccomp checker accepts and its constant-action cache can follow.
const (
	opLoadWord = 0x20 // BPF_LD | BPF_W | BPF_ABS: A = the 32-bit word at offset k
	opJumpEq   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K: A == k
	opJumpSet  = 0x45 // BPF_JMP | BPF_JSET | BPF_K: A & k != 0
	opReturn   = 0x06 // BPF_RET | BPF_K: return k
	opJump     = 0x05 // BPF_JMP | BPF_JA: skip the next k instructions (Preamble only)
)

// Where the fields of struct seccomp_data are (include/uapi/linux/seccomp.h).
const (
	offsetNr   = 0
	offsetArch = 4
	offsetArgs = 16 // six 64-bit arguments
)

// argLow is the offset of an argument's low 32 bits: its first word on the
// little-endian architectures bwrapkit builds for.
func argLow(arg uint8) uint32 { return offsetArgs + 8*uint32(arg) }

// The filter's answers (include/uapi/linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000 // | errno
	retAllow       = 0x7fff0000
)

// maxInstructions is BPF_MAXINSNS: the kernel refuses longer programs.
const maxInstructions = 4096

type instruction struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// label names an instruction not yet emitted; jumps only go forward, as classic BPF requires.
type label int32

// next is the jump target "the following instruction".
const next label = -1

type jump struct {
	at                  int
	whenTrue, whenFalse label
}

// assembler collects instructions and resolves labels into the 8-bit skips of
// conditional jumps.
type assembler struct {
	program []instruction
	jumps   []jump
	placed  []int // by label: the index it names, -1 until placed
}

func newAssembler() *assembler {
	return &assembler{
		program: make([]instruction, 0, 160),
		jumps:   make([]jump, 0, 96),
		placed:  make([]int, 0, 32),
	}
}

func (a *assembler) label() label {
	a.placed = append(a.placed, -1)
	return label(len(a.placed) - 1)
}

// place makes l name the next instruction emitted.
func (a *assembler) place(l label) { a.placed[l] = len(a.program) }

func (a *assembler) load(offset uint32) {
	a.program = append(a.program, instruction{code: opLoadWord, k: offset})
}

func (a *assembler) jumpIf(code uint16, k uint32, whenTrue, whenFalse label) {
	a.jumps = append(a.jumps, jump{at: len(a.program), whenTrue: whenTrue, whenFalse: whenFalse})
	a.program = append(a.program, instruction{code: code, k: k})
}

func (a *assembler) ret(k uint32) {
	a.program = append(a.program, instruction{code: opReturn, k: k})
}

// bytes resolves the jumps and encodes the program as struct sock_filter entries:
// u16 code, u8 jt, u8 jf, u32 k, little-endian.
func (a *assembler) bytes() ([]byte, error) {
	for _, j := range a.jumps {
		jt, err := a.skip(j.at, j.whenTrue)
		if err != nil {
			return nil, err
		}
		jf, err := a.skip(j.at, j.whenFalse)
		if err != nil {
			return nil, err
		}
		a.program[j.at].jt, a.program[j.at].jf = jt, jf
	}
	if len(a.program) > maxInstructions {
		return nil, fmt.Errorf("seccomp program has %d instructions, more than the kernel's %d", len(a.program), maxInstructions)
	}
	out := make([]byte, 8*len(a.program))
	for i, insn := range a.program {
		entry := out[8*i : 8*i+8]
		binary.LittleEndian.PutUint16(entry[0:], insn.code)
		entry[2], entry[3] = insn.jt, insn.jf
		binary.LittleEndian.PutUint32(entry[4:], insn.k)
	}
	return out, nil
}

func (a *assembler) skip(at int, target label) (uint8, error) {
	if target == next {
		return 0, nil
	}
	to := a.placed[target]
	if to < 0 {
		return 0, fmt.Errorf("seccomp program: jump at %d to a label never placed", at)
	}
	skip := to - at - 1
	if skip < 0 || skip > 255 {
		return 0, fmt.Errorf("seccomp program: jump at %d to %d does not fit a conditional jump", at, to)
	}
	return uint8(skip), nil
}

// block is where the program decides one kind of rule: the calls that share a
// condition and an answer jump to the same block.
type block struct {
	when  condition
	errno errno
	start label
}

// assemble lays the program out as: the arch check, the x32 check, one comparison
// of the call number per rule, allow, then the blocks the comparisons jump to. Calls
// no rule names reach allow having read only nr and arch, which lets the kernel
// (5.11+) cache them as always allowed and skip the filter for them.
func assemble(t target, rules []rule) ([]byte, error) {
	a := newAssembler()

	a.load(offsetArch)
	native, foreign := a.label(), a.label()
	a.jumpIf(opJumpEq, t.auditArch, native, foreign)
	// Another ABI's numbers name other calls, and on x86-64 int 0x80 reaches the
	// i386 socketcall multiplexer this filter cannot inspect: kill, never run it.
	a.place(foreign)
	a.ret(retKillProcess)
	a.place(native)
	a.load(offsetNr)
	if t.x32 {
		x32, notX32 := a.label(), a.label()
		a.jumpIf(opJumpSet, x32Bit, x32, notX32)
		a.place(x32)
		a.ret(retKillProcess)
		a.place(notX32)
	}

	blocks := make([]block, 0, 12)
	for _, r := range rules {
		if r.only != "" && r.only != t.arch {
			continue
		}
		nr, ok := t.numbers[r.syscall]
		if !ok {
			return nil, fmt.Errorf("seccomp: a rule names %s but the %s table has no number for it", r.syscall, t.arch)
		}
		start := next
		for _, b := range blocks {
			if b.when == r.when && b.errno == r.errno {
				start = b.start
				break
			}
		}
		if start == next {
			start = a.label()
			blocks = append(blocks, block{when: r.when, errno: r.errno, start: start})
		}
		a.jumpIf(opJumpEq, nr, start, next)
	}
	a.ret(retAllow)

	for _, b := range blocks {
		a.place(b.start)
		emit(a, b)
	}
	return a.bytes()
}

func emit(a *assembler, b block) {
	refuse := retErrno | uint32(b.errno)
	if b.when.test == always {
		a.ret(refuse)
		return
	}
	a.load(argLow(b.when.arg))
	values := b.when.values[:b.when.count]
	switch b.when.test {
	case anyBits:
		deny, allow := a.label(), a.label()
		a.jumpIf(opJumpSet, b.when.mask, deny, allow)
		a.place(deny)
		a.ret(refuse)
		a.place(allow)
		a.ret(retAllow)
	case oneOf:
		deny := a.label()
		for _, v := range values {
			a.jumpIf(opJumpEq, v, deny, next)
		}
		a.ret(retAllow)
		a.place(deny)
		a.ret(refuse)
	case noneOf:
		allow := a.label()
		for _, v := range values {
			a.jumpIf(opJumpEq, v, allow, next)
		}
		a.ret(refuse)
		a.place(allow)
		a.ret(retAllow)
	}
}
