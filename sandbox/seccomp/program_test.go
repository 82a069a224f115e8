package seccomp

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

var arches = []Arch{AMD64, ARM64}

// Written out here, not taken from the package, so a wrong constant there fails.
var auditArchOf = map[Arch]uint32{AMD64: 0xc000003e, ARM64: 0xc00000b7}

func program(t testing.TB, arch Arch) []instruction {
	t.Helper()
	raw, err := Program(arch)
	if err != nil {
		t.Fatalf("Program(%s): %v", arch, err)
	}
	insns, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return insns
}

func numberOf(t testing.TB, arch Arch, name string) uint32 {
	t.Helper()
	target, _ := targetOf(arch)
	nr, ok := target.numbers[name]
	if !ok {
		t.Fatalf("no %s number for %s", arch, name)
	}
	return nr
}

func TestProgramIsValidForTheKernel(t *testing.T) {
	for _, arch := range arches {
		insns := program(t, arch)
		if err := validate(insns); err != nil {
			t.Errorf("%s: %v", arch, err)
		}
		t.Logf("%s: %d instructions (%d bytes)", arch, len(insns), 8*len(insns))
	}
}

func TestValidateCatchesBrokenPrograms(t *testing.T) {
	good := program(t, AMD64)
	for name, breakIt := range map[string]func([]instruction) []instruction{
		"jump past the end":   func(p []instruction) []instruction { p[1].jf = 255; return p },
		"no final return":     func(p []instruction) []instruction { return append(p, instruction{code: opLoadWord}) },
		"load outside data":   func(p []instruction) []instruction { p[0].k = 64; return p },
		"unaligned load":      func(p []instruction) []instruction { p[0].k = 2; return p },
		"unexpected opcode":   func(p []instruction) []instruction { p[0].code = 0x07; return p },
		"over BPF_MAXINSNS":   func(p []instruction) []instruction { return append(make([]instruction, maxInstructions), p...) },
		"truncated to a load": func(p []instruction) []instruction { return p[:1] },
	} {
		if err := validate(breakIt(slices.Clone(good))); err == nil {
			t.Errorf("%s: validate accepted it", name)
		}
	}
}

func TestProgramIsDeterministic(t *testing.T) {
	for _, arch := range arches {
		first, _ := Program(arch)
		second, _ := Program(arch)
		if !bytes.Equal(first, second) {
			t.Errorf("%s: two calls gave different programs", arch)
		}
	}
}

func TestUnsupportedArch(t *testing.T) {
	for _, arch := range []string{"386", "arm", "riscv64", "s390x", ""} {
		_, err := Program(Arch(arch))
		var unsupported *UnsupportedArchError
		if !errors.As(err, &unsupported) || unsupported.Arch != arch {
			t.Errorf("Program(%q) = %v, want *UnsupportedArchError", arch, err)
		}
		if _, err := archOf(arch); !errors.As(err, &unsupported) {
			t.Errorf("archOf(%q) = %v, want *UnsupportedArchError", arch, err)
		}
	}
	for _, arch := range arches {
		if got, err := archOf(string(arch)); got != arch || err != nil {
			t.Errorf("archOf(%s) = %q, %v", arch, got, err)
		}
	}
}

type call struct {
	name string
	args [6]uint64
	want string // "allow", "kill", or the errno name
}

func c(name, want string, args ...uint64) call {
	var fixed [6]uint64
	copy(fixed[:], args)
	return call{name: name, args: fixed, want: want}
}

const (
	sigchld         = 17
	cloneVM         = 0x100
	cloneVfork      = 0x4000
	cloneThreadLike = 0x003d0f00 // what glibc and Go pass to start a thread
	high            = 1 << 32    // junk in an argument's high word
)

// modeCalls are the calls whose mode argument must not carry S_ISUID or S_ISGID,
// with the argument's position.
var modeCalls = []struct {
	name string
	arg  int
	only Arch
}{
	{"chmod", 1, AMD64}, {"fchmod", 1, ""}, {"fchmodat", 2, ""}, {"fchmodat2", 2, ""},
	{"open", 2, AMD64}, {"openat", 3, ""}, {"creat", 1, AMD64},
	{"mkdir", 1, AMD64}, {"mkdirat", 2, ""}, {"mknod", 1, AMD64}, {"mknodat", 2, ""},
}

func callTable(arch Arch) []call {
	calls := []call{
		c("clone", "allow", sigchld),
		c("clone", "allow", cloneVM|cloneVfork|sigchld),
		c("clone", "allow", cloneThreadLike),
		c("clone", "allow", 0xffffffff00000000|sigchld), // the kernel reads only the low word
		c("clone", "allow", 0x80|sigchld),               // CLONE_NEWTIME's bit is the exit signal's here
		c("clone3", "ENOSYS"),
		c("clone3", "ENOSYS", 0x7fff0000, 88),
		c("ioctl", "allow", 0, 0x5401), // TCGETS
		c("ioctl", "allow", 0x5412, 0x5401),
		c("ioctl", "EPERM", 0, 0x5412),      // TIOCSTI
		c("ioctl", "EPERM", 0, 0x541c),      // TIOCLINUX
		c("ioctl", "EPERM", 0, high|0x5412), // the kernel's cmd is 32-bit: junk above must not help
		c("ioctl", "EPERM", 0, 0xffffffff00000000|0x541c),
		c("ioctl", "EPERM", 0, 0x5423),      // TIOCSETD
		c("ioctl", "EPERM", 0, high|0x5423), // the same with junk above
		c("ioctl", "allow", 0, 0x5424),      // TIOCGETD only reads the discipline
		c("ioctl", "allow", 0x5423, 0x5401), // TIOCSETD's value as the descriptor is no concern
		c("personality", "allow", 0),
		c("personality", "allow", 0xffffffff),
		c("personality", "allow", 0x0040000),           // ADDR_NO_RANDOMIZE
		c("personality", "allow", 0xffffffff00000000),  // the kernel reads 0
		c("personality", "EPERM", 0x0400000),           // READ_IMPLIES_EXEC
		c("personality", "EPERM", 0x0400000|0x0040000), // READ_IMPLIES_EXEC with ADDR_NO_RANDOMIZE
		c("personality", "EPERM", high|0x0400000),
		c("personality", "EPERM", 0x0100000), // MMAP_PAGE_ZERO
		c("personality", "EPERM", 0x0008),    // PER_LINUX32
		c("personality", "EPERM", 0x0000001), // PER_SVR4 and friends
		c("personality", "EPERM", 0xfffffffe),
		c("openat2", "ENOSYS"),
	}
	for _, flag := range []uint64{0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000} {
		calls = append(calls,
			c("clone", "EPERM", flag|sigchld),
			c("clone", "EPERM", high|flag|cloneVM|cloneVfork|sigchld))
	}
	for _, name := range []string{"socket", "socketpair"} {
		for _, family := range []uint64{1, 2, 10, 16, high | 1, 0xffffffff00000002} {
			calls = append(calls, c(name, "allow", family, 1, 0))
		}
		// AF_UNSPEC, AF_AX25, AF_PACKET, AF_BLUETOOTH, AF_ALG, AF_VSOCK, past AF_MAX, -1.
		for _, family := range []uint64{0, 3, 17, 31, 38, 40, high | 40, 46, 0xffffffff} {
			calls = append(calls, c(name, "EAFNOSUPPORT", family, 1, 0))
		}
	}
	for _, mode := range modeCalls {
		if mode.only != "" && mode.only != arch {
			continue
		}
		at := func(want string, value uint64) call {
			call := c(mode.name, want)
			call.args[mode.arg] = value
			return call
		}
		calls = append(calls,
			at("allow", 0o755), at("allow", 0o644), at("allow", 0o1777), at("allow", 0o100644),
			at("allow", 0o010644), // a FIFO
			at("EPERM", 0o4755), at("EPERM", 0o2755), at("EPERM", 0o6755), at("EPERM", 0o4000),
			at("EPERM", 0o104755), at("EPERM", high|0o2755))
		// The same bits anywhere but the mode are no concern: openat's flags include
		// O_NONBLOCK (04000) and O_APPEND (02000).
		for other := 0; other < 6; other++ {
			if other != mode.arg {
				call := at("allow", 0o644)
				call.args[other] = 0o6000
				calls = append(calls, call)
			}
		}
	}
	return calls
}

func TestProgramDecides(t *testing.T) {
	for _, arch := range arches {
		insns := program(t, arch)
		for _, call := range callTable(arch) {
			data := seccompData{nr: numberOf(t, arch, call.name), arch: auditArchOf[arch], args: call.args}
			ret, err := run(insns, data)
			if err != nil {
				t.Fatalf("%s %s: %v", arch, call.name, err)
			}
			if got := verdict(ret); got != call.want {
				t.Errorf("%s: %s(%#x) = %s, want %s", arch, call.name, call.args, got, call.want)
			}
		}
	}
}

// Every unconditional rule refuses whatever the arguments, and nothing else the
// program meets between 0 and 1023 is refused: a wrong number in a table would deny
// a call bwrapkit never meant to (read is 0 on amd64, write 64 on arm64).
func TestProgramRefusesExactlyTheRules(t *testing.T) {
	for _, arch := range arches {
		insns := program(t, arch)
		target, _ := targetOf(arch)
		unconditional := map[uint32]string{}
		conditional := map[uint32]bool{}
		for _, r := range rules {
			if r.only != "" && r.only != arch {
				continue
			}
			if r.when.test == always {
				unconditional[target.numbers[r.syscall]] = r.errno.String()
			} else {
				conditional[target.numbers[r.syscall]] = true
			}
		}
		for nr := uint32(0); nr < 1024; nr++ {
			if conditional[nr] {
				continue
			}
			want := "allow"
			if errno, ok := unconditional[nr]; ok {
				want = errno
			}
			for _, args := range [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}} {
				ret, err := run(insns, seccompData{nr: nr, arch: auditArchOf[arch], args: args})
				if err != nil {
					t.Fatal(err)
				}
				if got := verdict(ret); got != want {
					t.Errorf("%s: call %d = %s, want %s", arch, nr, got, want)
				}
			}
		}
	}
}

func TestForeignABIsAreKilled(t *testing.T) {
	foreign := map[Arch][]uint32{
		AMD64: {0x40000003, 0xc00000b7, 0}, // i386 (int 0x80), aarch64, nonsense
		ARM64: {0x40000028, 0xc000003e, 0}, // AArch32 compat, x86-64, nonsense
	}
	for _, arch := range arches {
		insns := program(t, arch)
		for _, auditArch := range foreign[arch] {
			// 39 is getpid on x86-64 but mkdir for i386: whatever the number, the call dies.
			for _, nr := range []uint32{0, 1, 20, 39, 102, 172} {
				ret, _ := run(insns, seccompData{nr: nr, arch: auditArch})
				if got := verdict(ret); got != "kill" {
					t.Errorf("%s program, arch %#x, call %d: %s, want kill", arch, auditArch, nr, got)
				}
			}
		}
	}
}

func TestX32IsKilled(t *testing.T) {
	insns := program(t, AMD64)
	for _, nr := range []uint32{0, 39, 101, 512, 547, 0xffffffff} {
		ret, _ := run(insns, seccompData{nr: x32Bit | nr, arch: auditArchOf[AMD64]})
		if got := verdict(ret); got != "kill" {
			t.Errorf("x32 call %#x: %s, want kill", x32Bit|nr, got)
		}
	}
}

func TestRuleTable(t *testing.T) {
	for _, arch := range arches {
		target, _ := targetOf(arch)
		seen := map[string]bool{}
		for _, r := range rules {
			if r.only != "" && r.only != arch {
				if _, ok := target.numbers[r.syscall]; ok {
					t.Errorf("%s is marked %s only but %s has it: the rule would miss it there", r.syscall, r.only, arch)
				}
				continue
			}
			if seen[r.syscall] {
				t.Errorf("%s: %s has two rules; the second would never be reached", arch, r.syscall)
			}
			seen[r.syscall] = true
		}
		for name := range target.numbers {
			if !seen[name] {
				t.Errorf("%s: %s is in the number table but no rule uses it", arch, name)
			}
		}
	}
	for _, r := range rules {
		if (r.when.test == always) != (r.text == "") {
			t.Errorf("%s: a conditional rule needs its condition in words, an unconditional one none", r.syscall)
		}
	}
}

func TestDeniedIsACopy(t *testing.T) {
	first := Denied()
	if len(first) != len(rules)+2 {
		t.Fatalf("Denied has %d rules, want %d", len(first), len(rules)+2)
	}
	first[2].Syscall = "changed"
	if Denied()[2].Syscall == "changed" {
		t.Error("Denied shares its slice between calls")
	}
	for _, rule := range Denied() {
		if rule.Syscall == "" || !slices.Contains([]string{"EPERM", "ENOSYS", "EAFNOSUPPORT", "SIGSYS"}, rule.Errno) {
			t.Errorf("incomplete rule %+v", rule)
		}
	}
	want := fmt.Sprint(Rule{"uselib", "EPERM", "amd64 only (the other architecture has no such call)"})
	if !slices.ContainsFunc(Denied(), func(r Rule) bool { return fmt.Sprint(r) == want }) {
		t.Errorf("Denied lacks %s", want)
	}
}
