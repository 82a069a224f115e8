package locate

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/internal/trust"
)

func TestReplaceableBy(t *testing.T) {
	const caller = 1000
	file := func(mode fs.FileMode, uid, gid uint32) PathEntry {
		return PathEntry{Path: "/x/bwrap", Mode: mode, UID: uid, GID: gid}
	}
	dir := func(mode fs.FileMode, uid, gid uint32) PathEntry {
		return PathEntry{Path: "/x", Mode: fs.ModeDir | mode, UID: uid, GID: gid}
	}
	root := PathEntry{Path: "/", Mode: fs.ModeDir | 0o755}
	cases := []struct {
		name    string
		entries []PathEntry
		caller  uint32
		want    string // a substring of the one finding; "" for none
	}{
		{"root's, 0755", []PathEntry{file(0o755, 0, 0), dir(0o755, 0, 0), root}, caller, ""},
		{"the caller's own", []PathEntry{file(0o755, caller, caller), dir(0o700, caller, caller), root}, caller, ""},
		{"sticky world-writable directory", []PathEntry{file(0o755, caller, caller), dir(fs.ModeSticky|0o777, 0, 0), root}, caller, ""},
		{"world-writable directory", []PathEntry{file(0o755, 0, 0), dir(0o777, 0, 0), root}, caller, "/x is writable by every user (mode 0777)"},
		{"group-writable directory", []PathEntry{file(0o755, 0, 0), dir(0o775, 0, 50), root}, caller, "/x is writable by group 50 (mode 0775)"},
		{"group-writable by root's group too", []PathEntry{file(0o775, 0, 0), dir(0o755, 0, 0), root}, caller, "/x/bwrap is writable by group 0"},
		{"world-writable file", []PathEntry{file(0o757, 0, 0), dir(0o755, 0, 0), root}, caller, "/x/bwrap is writable by every user"},
		{"sticky bit on a file means nothing", []PathEntry{file(fs.ModeSticky|0o777, 0, 0), dir(0o755, 0, 0), root}, caller, "/x/bwrap is writable by every user"},
		{"file owned by another user, read-only", []PathEntry{file(0o555, 1001, 1001), dir(0o755, 0, 0), root}, caller, "/x/bwrap is owned by uid 1001"},
		{"directory owned by another user", []PathEntry{file(0o755, 0, 0), dir(0o755, 1001, 1001), root}, caller, "/x is owned by uid 1001"},
		{"root running a user's bwrap", []PathEntry{file(0o755, caller, caller), dir(0o755, caller, caller), root}, 0, "/x/bwrap is owned by uid 1000, neither root nor the caller (uid 0)"},
		{"a writable root directory", []PathEntry{file(0o755, 0, 0), dir(0o755, 0, 0), {Path: "/", Mode: fs.ModeDir | 0o777}}, caller, "/ is writable by every user"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ReplaceableBy(c.entries, trust.Initial(c.caller))
			switch {
			case c.want == "" && len(got) != 0:
				t.Errorf("want none, got %q", got)
			case c.want != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "; "), c.want)):
				t.Errorf("want %q, got %q", c.want, got)
			}
		})
	}
}

func TestInside(t *testing.T) {
	cases := []struct {
		bwrap string
		dirs  []string
		want  string
		found bool
	}{
		{"/work/proj/.venv/bin/bwrap", []string{"/work/proj"}, "/work/proj", true},
		{"/work/proj/.venv/bin/bwrap", []string{"/data", "/work/proj/.venv/"}, "/work/proj/.venv/", true},
		{"/work/project/bwrap", []string{"/work/proj"}, "", false}, // a prefix of the name is not a parent
		{"/usr/bin/bwrap", []string{"/work/proj", "/home/u"}, "", false},
		{"/usr/bin/bwrap", []string{"/usr/bin/bwrap"}, "/usr/bin/bwrap", true}, // the file itself bound read-write
		{"/usr/bin/bwrap", []string{"/"}, "/", true},
		{"/opt/b/bwrap", []string{"/opt/b/sub"}, "", false}, // a child of its directory cannot replace it
		{"/usr/bin/bwrap", nil, "", false},
		{"/a/b/../bwrap", []string{"/a/b"}, "", false}, // cleaned: /a/bwrap
	}
	for _, c := range cases {
		got, found := Inside(c.bwrap, c.dirs)
		if got != c.want || found != c.found {
			t.Errorf("Inside(%q, %q) = %q, %v; want %q, %v", c.bwrap, c.dirs, got, found, c.want, c.found)
		}
	}
}

// TestFindRefusesReplaceable: through the search, a candidate another user could replace
// is skipped with the reason, and an explicit one is an error, never a fallback.
func TestFindRefusesReplaceable(t *testing.T) {
	fsys := fakeFS{
		files: map[string]fs.FileMode{
			"/usr/bin/bwrap":              0o755,
			"/shared":                     fs.ModeDir | 0o777,
			"/shared/bwrap":               0o755,
			"/home/other/bin/bwrap":       0o755,
			"/home/me/bin/bwrap":          0o755,
			"/tmp":                        fs.ModeDir | fs.ModeSticky | 0o777,
			"/tmp/me/bwrap":               0o755,
			"/links":                      fs.ModeDir | 0o777,
			"/opt/safe/bwrap":             0o755,
			"/home/me/.local/share/b/v/x": 0o755,
		},
		links: map[string]string{"/links/bwrap": "/opt/safe/bwrap"},
		owners: map[string][2]uint32{
			"/home/other/bin/bwrap": {1001, 1001}, "/home/me": {1000, 1000}, "/home/me/bin": {1000, 1000},
			"/home/me/bin/bwrap": {1000, 1000}, "/tmp/me": {1000, 1000}, "/tmp/me/bwrap": {1000, 1000},
		},
		caller: 1000,
	}
	cases := []struct {
		name     string
		query    Query
		want     string
		refused  string // a candidate path that must be unusable
		because  string
		explicit bool
	}{
		{name: "world-writable PATH directory skipped", query: Query{PATH: "/shared:/usr/bin"}, want: "/usr/bin/bwrap",
			refused: "/shared/bwrap", because: "/shared is writable by every user"},
		{name: "another user's binary skipped", query: Query{PATH: "/home/other/bin:/usr/bin"}, want: "/usr/bin/bwrap",
			refused: "/home/other/bin/bwrap", because: "owned by uid 1001"},
		// A bwrap the caller can write may sit in a project a sandbox writes (a venv's bin):
		// on PATH it is not used; named explicitly it is.
		{name: "the caller's own binary on PATH skipped", query: Query{PATH: "/home/me/bin:/usr/bin"}, want: "/usr/bin/bwrap",
			refused: "/home/me/bin/bwrap", because: "outside /usr, /bin and /sbin"},
		{name: "the caller's own binary in a system directory used", query: Query{PATH: "/home/me/bin:/usr/bin", SystemDirs: []string{"/home", "/usr"}},
			want: "/home/me/bin/bwrap"},
		{name: "the caller's binary under sticky /tmp skipped on PATH", query: Query{PATH: "/tmp/me:/usr/bin"}, want: "/usr/bin/bwrap",
			refused: "/tmp/me/bwrap", because: "outside /usr, /bin and /sbin"},
		{name: "the caller's own binary named with --bwrap used", query: Query{Flag: "/home/me/bin/bwrap", PATH: "/usr/bin"}, want: "/home/me/bin/bwrap"},
		{name: "a link in a world-writable directory skipped, though its target is safe", query: Query{PATH: "/links:/usr/bin"},
			want: "/usr/bin/bwrap", refused: "/links/bwrap", because: "/links is writable by every user"},
		{name: "explicit replaceable binary is an error", query: Query{Flag: "/shared/bwrap", PATH: "/usr/bin"},
			refused: "/shared/bwrap", because: "another user could replace it", explicit: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			result, err := Find(c.query, fsys)
			if c.explicit {
				var explicit *ExplicitError
				if !errors.As(err, &explicit) || !strings.Contains(err.Error(), c.because) {
					t.Fatalf("want an ExplicitError saying %q, got %v", c.because, err)
				}
			} else if err != nil || result.Path != c.want {
				t.Fatalf("got %q, %v; want %q", result.Path, err, c.want)
			}
			if c.refused == "" {
				return
			}
			for _, candidate := range result.Candidates {
				if candidate.Path == c.refused {
					if candidate.Usable || candidate.Refusal != RefusalReplaceable || !strings.Contains(candidate.Reason, c.because) || strings.Contains(candidate.Reason, "\n") {
						t.Errorf("candidate %+v: want unusable because %q", candidate, c.because)
					}
					return
				}
			}
			t.Errorf("%s not among the candidates %+v", c.refused, result.Candidates)
		})
	}
}

// TestFindRefusesAPlantedCopyOnRealFiles: a real bwrap copied into a world-writable
// directory on PATH is refused with the reason; the same copy once the directory is
// closed again is used. Judged on the real file system, as the caller runs it.
func TestFindRefusesAPlantedCopyOnRealFiles(t *testing.T) {
	system, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("no bwrap on PATH to copy")
	}
	data, err := os.ReadFile(system)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	planted := filepath.Join(base, "bin")
	if err := os.Mkdir(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := livetest.WriteProgram(filepath.Join(planted, "bwrap"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(planted, 0o777); err != nil { // mkdir's mode is cut by the umask
		t.Fatal(err)
	}
	result, err := Find(Query{PATH: planted, SystemDirs: []string{filepath.Dir(planted)}}, OS{})
	var notFound *NotFoundError
	if !errors.As(err, &notFound) || len(result.Candidates) != 1 ||
		!strings.Contains(result.Candidates[0].Reason, planted+" is writable by every user (mode 0777)") {
		t.Fatalf("the planted copy was not refused: %v %+v", err, result.Candidates)
	}
	if err := os.Chmod(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	if result, err := Find(Query{PATH: planted, SystemDirs: []string{filepath.Dir(planted)}}, OS{}); err != nil || result.Path != filepath.Join(planted, "bwrap") {
		t.Errorf("the same copy in a closed directory: %v %+v", err, result)
	}
	if os.Geteuid() != 0 {
		return
	}
	// As root: a copy nobody owns is nobody's to replace, so root must not run it.
	if err := os.Chown(filepath.Join(planted, "bwrap"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	result, err = Find(Query{PATH: planted, SystemDirs: []string{filepath.Dir(planted)}}, OS{})
	if !errors.As(err, &notFound) || !strings.Contains(result.Candidates[0].Reason, "is owned by uid 65534, neither root nor the caller (uid 0)") {
		t.Errorf("a copy owned by nobody, run by root: %v %+v", err, result.Candidates)
	}
}

// BenchmarkFindOnThisHost is the search run does on every start, with the ownership and
// mode of every directory above each candidate.
func BenchmarkFindOnThisHost(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("no bwrap on PATH")
	}
	query := Query{PATH: os.Getenv("PATH"), Home: b.TempDir()}
	for range b.N {
		if _, err := Find(query, OS{}); err != nil {
			b.Fatal(err)
		}
	}
}
