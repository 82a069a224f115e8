// Package limits owns the resource bounds of a sandboxed command: the rlimits bwrap's
// child gets before the command exists, the size of each private tmpfs, and the memory
// and task bounds of the run's cgroup (package cgroup sets those).
package limits

import (
	"math"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// Name is a bound a user can set with --limit NAME=VALUE.
type Name string

// The bounds, in the order Strings and Rlimits list them (sorted by name).
const (
	AS     Name = "as"     // RLIMIT_AS: bytes of address space per process
	Core   Name = "core"   // RLIMIT_CORE: always 0, core dumps off
	Fsize  Name = "fsize"  // RLIMIT_FSIZE: bytes in any one file written
	Memory Name = "memory" // the run's cgroup: bytes of memory, kernel memory, tmpfs and memfds included
	Nofile Name = "nofile" // RLIMIT_NOFILE: one more than the highest descriptor number
	Nproc  Name = "nproc"  // RLIMIT_NPROC: tasks (threads count) of the sandbox's uid
	Pids   Name = "pids"   // the run's cgroup: tasks (threads count), root's included
	Tmpfs  Name = "tmpfs"  // bytes of each private tmpfs (/tmp, /var/tmp, /run, /dev/shm)
)

// Unlimited is the value meaning "no bound" (RLIM_INFINITY for an rlimit, no --size for
// a tmpfs, where the kernel then allows half of RAM per mount).
const Unlimited = uint64(math.MaxUint64)

// maxTmpfs is bubblewrap's MAX_TMPFS_BYTES (SIZE_MAX >> 1): a larger --size is refused.
const maxTmpfs = uint64(math.MaxInt64)

// bound is one row of the table every decision reads.
type bound struct {
	name     Name
	resource int    // the RLIMIT_* constant, or -1 for tmpfs and the cgroup's bounds (not rlimits)
	size     bool   // a size in bytes (takes units) rather than a count
	fallback uint64 // the default; README.md says why each is what it is
	// unlimitedOK: "unlimited" is accepted. Not for core (core dumps stay off, issue 7
	// item 1) nor nofile (the kernel refuses RLIM_INFINITY above fs.nr_open).
	unlimitedOK bool
	// floor is the least value accepted. Measured (README.md): below 64 open files
	// bwrap's own setup fails ("setting up uid map: Too many open files"), below 2 tasks
	// bwrap cannot fork its pid 1 as a non-root caller; zero address space stops the
	// command before it starts, and tmpfs size=0 means "no bound" to the kernel.
	floor    uint64
	onlyZero bool // core: the single accepted value is 0
}

const gib = 1 << 30

// bounds returns the table, a fresh copy each call (no exported mutable state).
func bounds() [count]bound {
	return [count]bound{
		{name: AS, resource: unix.RLIMIT_AS, size: true, fallback: Unlimited, unlimitedOK: true, floor: 1},
		{name: Core, resource: unix.RLIMIT_CORE, size: true, fallback: 0, onlyZero: true},
		{name: Fsize, resource: unix.RLIMIT_FSIZE, size: true, fallback: 8 * gib, unlimitedOK: true},
		// A floor of 16 MiB: bwrap and a small command need a few MiB; below that the
		// run dies of the bound before it can say anything.
		{name: Memory, resource: -1, size: true, fallback: 8 * gib, unlimitedOK: true, floor: 16 << 20},
		{name: Nofile, resource: unix.RLIMIT_NOFILE, fallback: 65536, floor: 64},
		{name: Nproc, resource: unix.RLIMIT_NPROC, fallback: 4096, unlimitedOK: true, floor: 2},
		{name: Pids, resource: -1, fallback: 4096, unlimitedOK: true, floor: 4},
		{name: Tmpfs, resource: -1, size: true, fallback: 1 * gib, unlimitedOK: true, floor: 1},
	}
}

const count = 8

// origin says where a value came from. Only defaults are lowered to the caller's hard
// limits (Within); a value the user set is applied as given or refused.
type origin uint8

const (
	fromDefault  origin = iota // zero value: the default, not yet fitted to a host
	fromHost                   // the default, lowered to the caller's hard limit
	fromExplicit               // set by Parse
)

// Limits is a set of bounds. It is a value; the zero Limits means "the defaults".
type Limits struct {
	values [count]uint64
	from   [count]origin
}

// Defaults returns the defaults: the zero Limits, named for readers of the caller.
func Defaults() Limits { return Limits{} }

// Names returns the accepted names, sorted, for the exit-2 message.
func Names() []string {
	names := make([]string, 0, count)
	for _, b := range bounds() {
		names = append(names, string(b.name))
	}
	slices.Sort(names)
	return names
}

func index(name Name) int {
	for i, b := range bounds() {
		if b.name == name {
			return i
		}
	}
	return -1
}

// Value returns the bound for name (Unlimited for none) and whether name is known.
func (l Limits) Value(name Name) (uint64, bool) {
	i := index(name)
	if i < 0 {
		return 0, false
	}
	return l.value(i), true
}

func (l Limits) value(i int) uint64 {
	if l.from[i] == fromDefault {
		return bounds()[i].fallback
	}
	return l.values[i]
}

// Rlimit is one resource bound for prlimit(2).
type Rlimit struct {
	Resource int // unix.RLIMIT_*
	Cur, Max uint64
}

// Rlimits returns every rlimit to set, soft equal to hard: a command may raise its soft
// limit up to the hard one, so a lower soft limit would bound nothing. RLIMIT_CORE is
// always 0, so no core dump leaves the sandbox's memory in a file or a core_pattern pipe.
func (l Limits) Rlimits() []Rlimit {
	out := make([]Rlimit, 0, count-1)
	for i, b := range bounds() {
		if b.resource < 0 {
			continue
		}
		v := l.value(i)
		if b.onlyZero {
			v = 0
		}
		out = append(out, Rlimit{Resource: b.resource, Cur: v, Max: v})
	}
	return out
}

// Explicit reports whether the user set name (a --limit or the policy's "limit"), as
// opposed to its default: a bound the user asked for must hold, or the run is refused.
func (l Limits) Explicit(name Name) bool {
	i := index(name)
	return i >= 0 && l.from[i] == fromExplicit
}

// TmpfsSize is the byte count for bwrap's --size before each private --tmpfs; 0 means
// pass no --size (the user asked for tmpfs=unlimited).
func (l Limits) TmpfsSize() uint64 {
	v := l.value(index(Tmpfs))
	if v == Unlimited {
		return 0
	}
	return v
}

// Within lowers every default that exceeds the hard limit the caller already has for
// that resource (hard, as from Inherited), so a default never asks for more than an
// unprivileged caller may set: prlimit(2) refuses to raise a hard limit without
// CAP_SYS_RESOURCE, and the run would then fail closed on a host whose hard limits are
// lower (4096 open files is the kernel's own default hard limit). A value the user set
// is kept as given; Apply then refuses it if the kernel does.
func (l Limits) Within(hard []Rlimit) Limits {
	table := bounds()
	for i, b := range table {
		if l.from[i] == fromExplicit || b.resource < 0 {
			continue
		}
		for _, h := range hard {
			if h.Resource == b.resource && h.Max < l.value(i) {
				l.values[i] = h.Max
				l.from[i] = fromHost
			}
		}
	}
	return l
}

// Strings returns NAME=VALUE for every bound, sorted by name, in the form Parse reads
// back: sizes in the largest binary unit that divides them exactly (K, M, G, T are
// powers of 1024), counts as numbers, "unlimited" for no bound.
func (l Limits) Strings() []string {
	out := make([]string, 0, count)
	for i, b := range bounds() {
		out = append(out, string(b.name)+"="+format(l.value(i), b.size))
	}
	return out
}

// Format writes name's value v as --limit takes it: "64M" for a size, "4096" for a count,
// "unlimited".
func Format(name Name, v uint64) string {
	for _, b := range bounds() {
		if b.name == name {
			return format(v, b.size)
		}
	}
	return format(v, false)
}

func format(v uint64, size bool) string {
	if v == Unlimited {
		return "unlimited"
	}
	if size && v != 0 {
		for _, u := range []struct {
			suffix string
			shift  uint
		}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
			if v%(1<<u.shift) == 0 {
				return strconv.FormatUint(v>>u.shift, 10) + u.suffix
			}
		}
	}
	return strconv.FormatUint(v, 10)
}
