package limits

import (
	"fmt"
	"strings"
)

// ErrorKind says which part of a --limit spec is wrong.
type ErrorKind int

const (
	BadSpec     ErrorKind = iota + 1 // not NAME=VALUE
	UnknownName                      // NAME is not one of Names()
	BadValue                         // VALUE is not a number, a unit or a value NAME accepts
)

// Error is a --limit spec Parse refuses; the CLI exits 2 with its message.
type Error struct {
	Spec   string
	Kind   ErrorKind
	Reason string   // what is wrong and how to write it instead
	Names  []string // the accepted names
}

func (e *Error) Error() string {
	return fmt.Sprintf("--limit %q: %s (names: %s)", e.Spec, e.Reason, strings.Join(e.Names, ", "))
}

// Parse applies specs ("nproc=512", "as=4G", "tmpfs=512MiB", "fsize=unlimited") on top
// of base, later specs winning as later flags do. K, M, G, T and KiB, MiB, GiB, TiB are
// all powers of 1024, as in the kernel's own tmpfs size= and in ulimit; KB, MB, GB are
// refused because readers disagree whether they mean 1000 or 1024.
func Parse(specs []string, base Limits) (Limits, error) {
	out := base
	for _, spec := range specs {
		i, v, err := parseOne(spec)
		if err != nil {
			return base, err
		}
		out.values[i] = v
		out.from[i] = fromExplicit
	}
	return out, nil
}

func parseOne(spec string) (int, uint64, error) {
	fail := func(kind ErrorKind, format string, args ...any) (int, uint64, error) {
		return -1, 0, &Error{Spec: spec, Kind: kind, Reason: fmt.Sprintf(format, args...), Names: Names()}
	}
	name, text, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return fail(BadSpec, "want NAME=VALUE, for example nproc=4096")
	}
	i := index(Name(name))
	if i < 0 {
		return fail(UnknownName, "unknown limit %q", name)
	}
	b := bounds()[i]
	if text == "" {
		return fail(BadValue, "%s needs a value", name)
	}
	if text == "unlimited" {
		if !b.unlimitedOK {
			if b.onlyZero {
				return fail(BadValue, "core dumps stay off in the sandbox: core takes only 0")
			}
			return fail(BadValue, "%s cannot be unlimited (the kernel caps it at fs.nr_open): give a number such as 1048576", name)
		}
		return i, Unlimited, nil
	}
	digits := len(text) - len(strings.TrimLeft(text, "0123456789"))
	if digits == 0 {
		return fail(BadValue, "%q is not a whole number (digits 0-9, then an optional unit)", text)
	}
	v, ok := parseDigits(text[:digits])
	if !ok {
		return fail(BadValue, "%s is too large", text)
	}
	if suffix := text[digits:]; suffix != "" {
		if !b.size {
			return fail(BadValue, "%s is a count: give a plain number, not %q", name, suffix)
		}
		shift, known := unitShift(suffix)
		if !known {
			return fail(BadValue, "unknown unit %q: use K, M, G, T (or KiB, MiB, GiB, TiB), all powers of 1024", suffix)
		}
		if v > Unlimited>>shift {
			return fail(BadValue, "%s is too large", text)
		}
		v <<= shift
	}
	switch {
	case b.onlyZero && v != 0:
		return fail(BadValue, "core dumps stay off in the sandbox: core takes only 0")
	case v < b.floor:
		switch b.name {
		case Tmpfs:
			return fail(BadValue, "a tmpfs of size 0 has no bound at all to the kernel: give a size, or unlimited if you mean that")
		case Nofile:
			return fail(BadValue, "bwrap itself needs open files to set up the sandbox: give at least %d", b.floor)
		case Nproc:
			return fail(BadValue, "bwrap's pid 1 and the command need a task each: give at least %d", b.floor)
		case Pids:
			return fail(BadValue, "bwrap, its pid 1 and the command need a task each: give at least %d", b.floor)
		case Memory:
			return fail(BadValue, "bwrap and the command need a few MiB: give at least 16M")
		}
		return fail(BadValue, "%s=0 would stop the command before it starts: give at least %d", name, b.floor)
	case b.name == Tmpfs && v > maxTmpfs:
		return fail(BadValue, "bwrap's --size takes at most %d bytes", maxTmpfs)
	case v == Unlimited && !b.unlimitedOK:
		return fail(BadValue, "%s is too large", text)
	}
	return i, v, nil
}

// parseDigits reads a decimal number of ASCII digits, refusing overflow (strconv would
// also take "+1", "0x10" with base 0, "1_000"; the spec wants none of those).
func parseDigits(digits string) (uint64, bool) {
	var v uint64
	for _, c := range digits {
		d := uint64(c - '0')
		if v > (Unlimited-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

func unitShift(suffix string) (uint, bool) {
	switch suffix {
	case "K", "k", "KiB":
		return 10, true
	case "M", "m", "MiB":
		return 20, true
	case "G", "g", "GiB":
		return 30, true
	case "T", "t", "TiB":
		return 40, true
	}
	return 0, false
}
