package limits

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestNamesSorted(t *testing.T) {
	want := []string{"as", "core", "fsize", "memory", "nofile", "nproc", "pids", "tmpfs"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	names := Names()
	names[0] = "changed"
	if Names()[0] != "as" {
		t.Fatal("Names returns shared state")
	}
}

func TestParseGood(t *testing.T) {
	for _, tc := range []struct {
		spec string
		name Name
		want uint64
	}{
		{"nproc=512", Nproc, 512},
		{"memory=16M", Memory, 16 << 20},
		{"memory=2G", Memory, 2 << 30},
		{"memory=unlimited", Memory, Unlimited},
		{"pids=4", Pids, 4},
		{"pids=unlimited", Pids, Unlimited},
		{"nproc=unlimited", Nproc, Unlimited},
		{"nproc=18446744073709551615", Nproc, Unlimited},
		{"nofile=4096", Nofile, 4096},
		{"nofile=64", Nofile, 64},
		{"nproc=2", Nproc, 2},
		{"as=4G", AS, 4 << 30},
		{"as=4g", AS, 4 << 30},
		{"as=4GiB", AS, 4 << 30},
		{"as=unlimited", AS, Unlimited},
		{"as=1", AS, 1},
		{"fsize=1GiB", Fsize, 1 << 30},
		{"fsize=0", Fsize, 0},
		{"fsize=1K", Fsize, 1024},
		{"fsize=1KiB", Fsize, 1024},
		{"fsize=3M", Fsize, 3 << 20},
		{"fsize=2T", Fsize, 2 << 40},
		{"fsize=2TiB", Fsize, 2 << 40},
		{"fsize=16777215T", Fsize, 16777215 << 40},
		{"fsize=007", Fsize, 7},
		{"fsize=unlimited", Fsize, Unlimited},
		{"tmpfs=512M", Tmpfs, 512 << 20},
		{"tmpfs=512MiB", Tmpfs, 512 << 20},
		{"tmpfs=1", Tmpfs, 1},
		{"tmpfs=9223372036854775807", Tmpfs, maxTmpfs},
		{"tmpfs=unlimited", Tmpfs, Unlimited},
		{"core=0", Core, 0},
		{"core=0K", Core, 0},
	} {
		got, err := Parse([]string{tc.spec}, Defaults())
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if v, _ := got.Value(tc.name); v != tc.want {
			t.Errorf("Parse(%q): %s = %d, want %d", tc.spec, tc.name, v, tc.want)
		}
	}
}

func TestParseBad(t *testing.T) {
	for _, tc := range []struct {
		spec string
		kind ErrorKind
		says string // part of the reason
	}{
		{"", BadSpec, "NAME=VALUE"},
		{"nproc", BadSpec, "NAME=VALUE"},
		{"=5", BadSpec, "NAME=VALUE"},
		{"bogus=5", UnknownName, "unknown limit"},
		{"NPROC=5", UnknownName, "unknown limit"},
		{" nproc=5", UnknownName, "unknown limit"},
		{"rss=1G", UnknownName, "unknown limit"},
		{"nproc=", BadValue, "needs a value"},
		{"nproc= 5", BadValue, "whole number"},
		{"nproc=5 ", BadValue, "count"},
		{"nproc=-1", BadValue, "whole number"},
		{"nproc=+5", BadValue, "whole number"},
		{"nproc=0x10", BadValue, "count"},
		{"nproc=1e3", BadValue, "count"},
		{"nproc=1_000", BadValue, "count"},
		{"nproc=1.5", BadValue, "count"},
		{"nproc=4K", BadValue, "count"},
		{"nproc=0", BadValue, "at least 2"},
		{"nproc=1", BadValue, "at least 2"},
		{"nproc=Unlimited", BadValue, "whole number"},
		{"nproc=infinity", BadValue, "whole number"},
		{"nproc=18446744073709551616", BadValue, "too large"},
		{"nproc=99999999999999999999999", BadValue, "too large"},
		{"nofile=0", BadValue, "at least 64"},
		{"nofile=63", BadValue, "at least 64"},
		{"nofile=unlimited", BadValue, "fs.nr_open"},
		{"nofile=18446744073709551615", BadValue, "too large"},
		{"as=0", BadValue, "at least 1"},
		{"as=4GB", BadValue, "unknown unit"},
		{"as=4Gi", BadValue, "unknown unit"},
		{"as=4gib", BadValue, "unknown unit"},
		{"as=4 G", BadValue, "unknown unit"},
		{"as=4P", BadValue, "unknown unit"},
		{"as=4B", BadValue, "unknown unit"},
		{"as=G", BadValue, "whole number"},
		{"as=16777216T", BadValue, "too large"},
		{"as=17179869184G", BadValue, "too large"},
		{"fsize=1.5G", BadValue, "unknown unit"},
		{"fsize=-1", BadValue, "whole number"},
		{"tmpfs=0", BadValue, "size 0"},
		{"tmpfs=0M", BadValue, "size 0"},
		{"tmpfs=9223372036854775808", BadValue, "at most"},
		{"tmpfs=8388608T", BadValue, "at most"},
		{"core=1", BadValue, "only 0"},
		{"core=1K", BadValue, "only 0"},
		{"core=unlimited", BadValue, "only 0"},
		{"nproc=5=6", BadValue, "count"},
		{"memory=1M", BadValue, "at least 16M"},
		{"memory=0", BadValue, "at least 16M"},
		{"memory=1GB", BadValue, "unknown unit"},
		{"pids=3", BadValue, "at least 4"},
		{"pids=1K", BadValue, "count"},
	} {
		base, _ := Parse([]string{"nproc=77"}, Defaults())
		got, err := Parse([]string{"fsize=1G", tc.spec}, base)
		var perr *Error
		if !errors.As(err, &perr) {
			t.Errorf("Parse(%q) = %v, %v; want *Error", tc.spec, got.Strings(), err)
			continue
		}
		if perr.Spec != tc.spec || perr.Kind != tc.kind || !strings.Contains(perr.Reason, tc.says) {
			t.Errorf("Parse(%q): %+v; want kind %d saying %q", tc.spec, perr, tc.kind, tc.says)
		}
		msg := err.Error()
		if !strings.Contains(msg, "as, core, fsize, memory, nofile, nproc, pids, tmpfs") || !strings.Contains(msg, `"`+tc.spec+`"`) {
			t.Errorf("Parse(%q): message %q lacks the spec or the names", tc.spec, msg)
		}
		// A refused list changes nothing, not even the specs before the bad one.
		if got != base {
			t.Errorf("Parse(%q) returned %v, want base %v", tc.spec, got.Strings(), base.Strings())
		}
	}
}

func TestParseLayers(t *testing.T) {
	base, err := Parse([]string{"nproc=100", "as=1G"}, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse([]string{"nproc=200", "nproc=300", "tmpfs=64M"}, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"as=1G", "core=0", "fsize=8G", "memory=8G", "nofile=65536", "nproc=300", "pids=4096", "tmpfs=64M"}
	if !slices.Equal(got.Strings(), want) {
		t.Fatalf("Strings() = %v, want %v", got.Strings(), want)
	}
	if v, _ := base.Value(Nproc); v != 100 {
		t.Fatalf("Parse changed its base: nproc=%d", v)
	}
}

func TestDefaults(t *testing.T) {
	want := []string{"as=unlimited", "core=0", "fsize=8G", "memory=8G", "nofile=65536", "nproc=4096", "pids=4096", "tmpfs=1G"}
	if got := Defaults().Strings(); !slices.Equal(got, want) {
		t.Fatalf("Defaults().Strings() = %v, want %v", got, want)
	}
	if (Limits{}) != Defaults() {
		t.Fatal("the zero Limits is not the defaults")
	}
	if _, ok := Defaults().Value("bogus"); ok {
		t.Fatal("Value accepted an unknown name")
	}
}

func TestRlimits(t *testing.T) {
	l, err := Parse([]string{"nproc=10", "nofile=200", "fsize=1M", "as=2G"}, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	want := []Rlimit{
		{unix.RLIMIT_AS, 2 << 30, 2 << 30},
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_FSIZE, 1 << 20, 1 << 20},
		{unix.RLIMIT_NOFILE, 200, 200},
		{unix.RLIMIT_NPROC, 10, 10},
	}
	if got := l.Rlimits(); !slices.Equal(got, want) {
		t.Fatalf("Rlimits() = %v, want %v", got, want)
	}
	wantDefaults := []Rlimit{
		{unix.RLIMIT_AS, Unlimited, Unlimited},
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_FSIZE, 8 << 30, 8 << 30},
		{unix.RLIMIT_NOFILE, 65536, 65536},
		{unix.RLIMIT_NPROC, 4096, 4096},
	}
	if got := Defaults().Rlimits(); !slices.Equal(got, wantDefaults) {
		t.Fatalf("Defaults().Rlimits() = %v, want %v", got, wantDefaults)
	}
	for _, r := range l.Rlimits() {
		if r.Cur != r.Max {
			t.Fatalf("soft %d != hard %d for resource %d: the command could raise its soft limit", r.Cur, r.Max, r.Resource)
		}
	}
}

func TestTmpfsSize(t *testing.T) {
	for _, tc := range []struct {
		specs []string
		want  uint64
	}{
		{nil, 1 << 30},
		{[]string{"tmpfs=512M"}, 512 << 20},
		{[]string{"tmpfs=1"}, 1},
		{[]string{"tmpfs=unlimited"}, 0},
	} {
		l, err := Parse(tc.specs, Defaults())
		if err != nil {
			t.Fatal(err)
		}
		if got := l.TmpfsSize(); got != tc.want {
			t.Errorf("%v: TmpfsSize() = %d, want %d", tc.specs, got, tc.want)
		}
	}
}

func TestWithin(t *testing.T) {
	hard := []Rlimit{
		{unix.RLIMIT_NOFILE, 1024, 4096},
		{unix.RLIMIT_NPROC, 100, 100},
		{unix.RLIMIT_AS, 1 << 40, 1 << 40},
		{unix.RLIMIT_FSIZE, Unlimited, Unlimited},
		{unix.RLIMIT_CORE, Unlimited, Unlimited},
	}
	got := Defaults().Within(hard)
	want := []string{"as=1T", "core=0", "fsize=8G", "memory=8G", "nofile=4096", "nproc=100", "pids=4096", "tmpfs=1G"}
	if !slices.Equal(got.Strings(), want) {
		t.Fatalf("Defaults().Within = %v, want %v", got.Strings(), want)
	}
	// A value the user set is never lowered silently: Apply refuses it instead.
	l, _ := Parse([]string{"nofile=100000", "nproc=50"}, Defaults())
	got = l.Within(hard)
	want = []string{"as=1T", "core=0", "fsize=8G", "memory=8G", "nofile=100000", "nproc=50", "pids=4096", "tmpfs=1G"}
	if !slices.Equal(got.Strings(), want) {
		t.Fatalf("Within kept %v, want %v", got.Strings(), want)
	}
	// Lowering twice is the same as once, and higher hard limits raise nothing.
	once := Defaults().Within(hard)
	if once.Within(hard) != once || Defaults().Within(nil) != Defaults() {
		t.Fatal("Within is not idempotent")
	}
	if Defaults().Within([]Rlimit{{unix.RLIMIT_NOFILE, Unlimited, Unlimited}}) != Defaults() {
		t.Fatal("Within raised or touched a default below the hard limit")
	}
}

func TestStringsRoundTrip(t *testing.T) {
	for _, specs := range [][]string{
		nil,
		{"as=1", "fsize=1023", "tmpfs=1025"},
		{"as=1536M", "fsize=0", "tmpfs=3K", "nproc=2", "nofile=1048576"},
		{"as=unlimited", "fsize=unlimited", "tmpfs=unlimited", "nproc=unlimited"},
		{"as=16777215T", "tmpfs=9223372036854775807", "fsize=18446744073709551614"},
		{"fsize=1048576K", "tmpfs=1024G"},
	} {
		l, err := Parse(specs, Defaults())
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(l.Strings(), Defaults())
		if err != nil {
			t.Fatalf("%v: Strings() %v does not parse: %v", specs, l.Strings(), err)
		}
		if !slices.Equal(back.Strings(), l.Strings()) || !slices.Equal(back.Rlimits(), l.Rlimits()) || back.TmpfsSize() != l.TmpfsSize() {
			t.Fatalf("%v: round trip %v -> %v", specs, l.Strings(), back.Strings())
		}
	}
	l, _ := Parse([]string{"fsize=1048576K", "tmpfs=1024G", "as=1536M"}, Defaults())
	if got := l.Strings(); !slices.Equal(got, []string{"as=1536M", "core=0", "fsize=1G", "memory=8G", "nofile=65536", "nproc=4096", "pids=4096", "tmpfs=1T"}) {
		t.Fatalf("canonical form %v", got)
	}
}

func TestApplyErrorMessage(t *testing.T) {
	err := error(&ApplyError{Pid: 42, Resource: unix.RLIMIT_NOFILE,
		Want: Rlimit{unix.RLIMIT_NOFILE, 100000, 100000}, Had: Rlimit{unix.RLIMIT_NOFILE, 1024, 4096}, Err: unix.EPERM})
	msg := err.Error()
	for _, part := range []string{"nofile=100000", "pid 42", "hard limit is 4096", "--limit nofile"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
	if !errors.Is(err, unix.EPERM) {
		t.Error("ApplyError does not unwrap to its errno")
	}
}

func TestApplyRefusesOwnPid(t *testing.T) {
	// pid 0 means the caller to prlimit(2): it must not bound bwrapkit and report success.
	var aerr *ApplyError
	if err := Apply(0, Defaults()); !errors.As(err, &aerr) || !strings.Contains(err.Error(), "no sandbox child") {
		t.Fatalf("Apply(0) = %v, want *ApplyError naming the missing child", err)
	}
}

func BenchmarkParse(b *testing.B) {
	specs := []string{"nproc=512", "as=4G", "fsize=1GiB", "nofile=4096", "tmpfs=512M", "core=0"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(specs, Defaults()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStrings(b *testing.B) {
	l, _ := Parse([]string{"nproc=512", "as=4G", "fsize=1GiB", "nofile=4096", "tmpfs=512M"}, Defaults())
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Strings()
	}
}
