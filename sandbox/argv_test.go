package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

var mergedUsrHost = Host{
	Roots: []RootEntry{{"/bin", "usr/bin"}, {"/lib", "usr/lib"}, {"/lib64", "usr/lib64"}, {"/sbin", "usr/sbin"}},
	Etc:   []string{"/etc/ld.so.cache", "/etc/passwd", "/etc/resolv.conf"},
	Env:   []string{"LANG=C.UTF-8"},
	Proc:  ProcSurface{ReadOnly: []string{"/proc/sys"}, MaskFiles: []string{"/proc/keys"}, MaskDirs: []string{"/proc/acpi"}},
}

var withDisableUserns = parseFeatures("    --disable-userns  Disable further use of user namespaces\n    --size BYTES  Set size of next tmpfs\n", "bubblewrap 0.8.0")

func TestArgvWholeCommandLine(t *testing.T) {
	policy := Policy{Workdir: "/src/app", Host: mergedUsrHost, Features: withDisableUserns, Env: []string{"CI=1"}, Protect: []string{"/src/app/.git"}}
	argv, err := Argv("/usr/bin/bwrap", policy, []string{"make", "-j2"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(`/usr/bin/bwrap --unshare-all --unshare-user --disable-userns --die-with-parent
		--new-session --cap-drop ALL --clearenv --ro-bind /usr /usr
		--symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
		--ro-bind /etc/ld.so.cache /etc/ld.so.cache --ro-bind /etc/passwd /etc/passwd
		--proc /proc --ro-bind /proc/sys /proc/sys --ro-bind /dev/null /proc/keys
		--tmpfs /proc/acpi --remount-ro /proc/acpi
		--dev /dev --size 1073741824 --tmpfs /dev/shm --size 1073741824 --tmpfs /tmp
		--size 1073741824 --tmpfs /var/tmp --size 1073741824 --tmpfs /run --remount-ro /dev
		--bind /src/app /src/app --ro-bind /src/app/.git /src/app/.git --remount-ro /
		--setenv PATH /usr/local/bin:/usr/bin:/bin --setenv HOME /src/app --setenv TMPDIR /tmp
		--setenv LANG C.UTF-8 --setenv CI 1 --seccomp 3 --chdir /src/app -- make -j2`)
	if !slices.Equal(argv, want) {
		t.Errorf("argv:\n got %q\nwant %q", argv, want)
	}
}

func TestArgvChoices(t *testing.T) {
	base := Policy{Workdir: "/src/app", Host: mergedUsrHost}
	cases := []struct {
		name     string
		policy   func(Policy) Policy
		has      []string // consecutive words that must appear
		hasNot   []string
		ordering [][2]string // a bind that must come before another
	}{
		{name: "no feature probe: no --disable-userns", policy: func(p Policy) Policy { return p },
			has: []string{"--unshare-user"}, hasNot: []string{"--disable-userns", "--share-net"}},
		{name: "network shares the namespace and resolv.conf", policy: func(p Policy) Policy { p.Network = true; return p },
			has: []string{"--share-net", "--ro-bind /etc/resolv.conf /etc/resolv.conf"}},
		{name: "no network, no resolv.conf", policy: func(p Policy) Policy { return p },
			hasNot: []string{"/etc/resolv.conf"}},
		{name: "directory roots are bound", policy: func(p Policy) Policy { p.Host.Roots = []RootEntry{{Path: "/bin"}}; return p },
			has: []string{"--ro-bind /bin /bin"}, hasNot: []string{"--symlink usr/bin /bin"}},
		{name: "read-only inside the workdir lands on top", policy: func(p Policy) Policy { p.ReadOnly = []string{"/src/app/vendor"}; return p },
			ordering: [][2]string{{"--bind /src/app /src/app", "--ro-bind /src/app/vendor /src/app/vendor"}}},
		{name: "workdir inside a read-only tree lands on top", policy: func(p Policy) Policy { p.ReadOnly = []string{"/src"}; return p },
			ordering: [][2]string{{"--ro-bind /src /src", "--bind /src/app /src/app"}}},
		{name: "protected paths after the workdir", policy: func(p Policy) Policy { p.Protect = []string{"/src/app/.env"}; return p },
			ordering: [][2]string{{"--bind /src/app /src/app", "--ro-bind /src/app/.env /src/app/.env"}}},
		{name: "binds after the tmpfs mounts", policy: func(p Policy) Policy { p.Workdir = "/tmp/work"; return p },
			ordering: [][2]string{{"--tmpfs /tmp", "--bind /tmp/work /tmp/work"}, {"--bind /tmp/work /tmp/work", "--remount-ro /"}}},
		{name: "caller env overrides defaults", policy: func(p Policy) Policy { p.Env = []string{"PATH=/opt/bin"}; return p },
			ordering: [][2]string{{"--setenv PATH /usr/local/bin:/usr/bin:/bin", "--setenv PATH /opt/bin"}}},
		{name: "command words stay words", policy: func(p Policy) Policy { return p },
			has: []string{"-- --help"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			argv, err := Argv("/usr/bin/bwrap", c.policy(base), []string{"--help"})
			if err != nil {
				t.Fatal(err)
			}
			line := " " + strings.Join(argv, " ") + " "
			for _, want := range c.has {
				if !strings.Contains(line, " "+want+" ") {
					t.Errorf("missing %q in %s", want, line)
				}
			}
			for _, unwanted := range c.hasNot {
				if strings.Contains(line, " "+unwanted+" ") {
					t.Errorf("unexpected %q in %s", unwanted, line)
				}
			}
			for _, pair := range c.ordering {
				first, second := strings.Index(line, " "+pair[0]+" "), strings.LastIndex(line, " "+pair[1]+" ")
				if first < 0 || second < 0 || first > second {
					t.Errorf("%q must come before %q in %s", pair[0], pair[1], line)
				}
			}
		})
	}
}

func TestArgvRefuses(t *testing.T) {
	ok := Policy{Workdir: "/src/app"}
	cases := []struct {
		name   string
		bwrap  string
		policy Policy
		cmd    []string
	}{
		{"empty command", "/usr/bin/bwrap", ok, nil},
		{"empty command word", "/usr/bin/bwrap", ok, []string{""}},
		{"relative bwrap", "bwrap", ok, []string{"true"}},
		{"relative workdir", "/usr/bin/bwrap", Policy{Workdir: "src"}, []string{"true"}},
		{"unclean workdir", "/usr/bin/bwrap", Policy{Workdir: "/src/app/../etc"}, []string{"true"}},
		{"root workdir", "/usr/bin/bwrap", Policy{Workdir: "/"}, []string{"true"}},
		{"etc workdir", "/usr/bin/bwrap", Policy{Workdir: "/etc"}, []string{"true"}},
		{"var workdir", "/usr/bin/bwrap", Policy{Workdir: "/var"}, []string{"true"}},
		{"protect outside", "/usr/bin/bwrap", Policy{Workdir: "/src/app", Protect: []string{"/src/other"}}, []string{"true"}},
		{"protect sibling prefix", "/usr/bin/bwrap", Policy{Workdir: "/src/app", Protect: []string{"/src/apple"}}, []string{"true"}},
		{"relative read-only", "/usr/bin/bwrap", Policy{Workdir: "/src/app", ReadOnly: []string{"opt"}}, []string{"true"}},
		{"env without =", "/usr/bin/bwrap", Policy{Workdir: "/src/app", Env: []string{"NOVALUE"}}, []string{"true"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if argv, err := Argv(c.bwrap, c.policy, c.cmd); err == nil {
				t.Errorf("accepted: %q", argv)
			}
		})
	}
}

func TestArgvRefusedWorkdirIsPolicyError(t *testing.T) {
	_, err := Argv("/usr/bin/bwrap", Policy{Workdir: "/usr"}, []string{"true"})
	var policyErr *PolicyError
	if !errors.As(err, &policyErr) || policyErr.Field != "workdir" {
		t.Fatalf("want a --workdir PolicyError, got %v", err)
	}
}

func BenchmarkArgv(b *testing.B) {
	policy := Policy{Workdir: "/src/app", Host: mergedUsrHost, Features: withDisableUserns,
		ReadOnly: []string{"/opt/go", "/opt/node"}, Protect: []string{"/src/app/.env"}, Env: []string{"CI=1"}}
	cmd := []string{"go", "test", "./..."}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Argv("/usr/bin/bwrap", policy, cmd); err != nil {
			b.Fatal(err)
		}
	}
}
