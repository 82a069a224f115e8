package seccomp

import (
	"strings"
	"testing"
)

// TestPreambleChangesNothing: behind the preamble, the program answers every call,
// argument and architecture exactly as it does alone, and the whole passes the kernel's
// checks.
func TestPreambleChangesNothing(t *testing.T) {
	for _, arch := range arches {
		raw, err := Program(arch)
		if err != nil {
			t.Fatal(err)
		}
		alone, _ := decode(raw)
		for _, size := range []int{16, 4096, 16384} {
			preamble, err := Preamble(size, raw)
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", arch, size, err)
			}
			if len(preamble) != size {
				t.Fatalf("%s: preamble of %d bytes, asked for %d", arch, len(preamble), size)
			}
			whole, _ := decode(append(preamble, raw...))
			if err := validate(whole); err != nil {
				t.Errorf("%s, %d bytes: the kernel would refuse preamble and program: %v", arch, size, err)
			}
			for _, auditArch := range []uint32{auditArchOf[arch], 0x40000003, 0} {
				for nr := uint32(0); nr < 1024; nr++ {
					for _, args := range [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}, {1, 2, 3, 4, 5, 6}} {
						data := seccompData{nr: nr, arch: auditArch, args: args}
						want, _ := run(alone, data)
						got, err := run(whole, data)
						if err != nil || got != want {
							t.Fatalf("%s, %d bytes: call %d (arch %#x) = %#x (%v), the program alone %#x", arch, size, nr, auditArch, got, err, want)
						}
					}
				}
			}
		}
	}
}

// TestPreambleAloneIsNoProgram: a reader that gets the preamble and then an end of file
// (bwrapkit died, or the gate refused) must hold nothing the kernel would load, however
// much of the rest it got: not a shorter, weaker filter.
func TestPreambleAloneIsNoProgram(t *testing.T) {
	raw, _ := Program(AMD64)
	for _, size := range []int{16, 4096} {
		preamble, err := Preamble(size, raw)
		if err != nil {
			t.Fatal(err)
		}
		alone, _ := decode(preamble)
		if err := validate(alone); err == nil {
			t.Errorf("%d bytes: the preamble alone passes the kernel's checks", size)
		}
		// Its first jump leads past its end: the kernel refuses that on its own.
		if alone[0].code != opJump || int(alone[0].k) != len(alone)-1 {
			t.Errorf("%d bytes: first instruction %+v, want a jump over the other %d", size, alone[0], len(alone)-1)
		}
	}
}

func TestPreambleRefusesWhatCannotLoad(t *testing.T) {
	raw, _ := Program(AMD64)
	for name, c := range map[string]struct {
		size    int
		program []byte
		want    string
	}{
		"not whole instructions": {size: 4092, program: raw, want: "multiple of 8"},
		"too small to jump":      {size: 8, program: raw, want: "at least 16"},
		"past BPF_MAXINSNS":      {size: 8 * maxInstructions, program: raw, want: "more than the kernel's"},
		"a torn program":         {size: 4096, program: raw[:len(raw)-3], want: "whole instructions"},
	} {
		if _, err := Preamble(c.size, c.program); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, c.want)
		}
	}
}
