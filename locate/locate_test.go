package locate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/internal/trust"
)

// fakeFS is a file system of paths, their modes, owners and symlink targets. Every
// ancestor of a listed path exists as a root-owned 0755 directory unless listed itself.
type fakeFS struct {
	files  map[string]fs.FileMode
	links  map[string]string    // path -> resolved real path
	owners map[string][2]uint32 // path -> uid, gid; root when absent
	caller int
}

type fakeInfo struct {
	name     string
	mode     fs.FileMode
	uid, gid uint32
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return &syscall.Stat_t{Uid: i.uid, Gid: i.gid} }

func (f fakeFS) real(name string) string {
	if target, ok := f.links[name]; ok {
		return target
	}
	return name
}

func (f fakeFS) Lstat(name string) (fs.FileInfo, error) {
	owner := f.owners[name]
	info := fakeInfo{name: filepath.Base(name), uid: owner[0], gid: owner[1]}
	if _, ok := f.links[name]; ok {
		info.mode = fs.ModeSymlink | 0o777
		return info, nil
	}
	if mode, ok := f.files[name]; ok {
		info.mode = mode
		return info, nil
	}
	for path := range f.files {
		if name == "/" || strings.HasPrefix(path, name+"/") {
			info.mode = fs.ModeDir | 0o755
			return info, nil
		}
	}
	for path := range f.links {
		if name == "/" || strings.HasPrefix(path, name+"/") {
			info.mode = fs.ModeDir | 0o755
			return info, nil
		}
	}
	return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
}

func (f fakeFS) Stat(name string) (fs.FileInfo, error) {
	info, err := f.Lstat(f.real(name))
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return info, nil
}

func (f fakeFS) EvalSymlinks(name string) (string, error) { return f.real(name), nil }
func (f fakeFS) Getuid() int                              { return f.caller }

func TestFind(t *testing.T) {
	fsys := fakeFS{
		files: map[string]fs.FileMode{
			"/usr/bin/bwrap":                0o755,
			"/opt/noexec/bwrap":             0o644,
			"/opt/dir/bwrap":                fs.ModeDir | 0o755,
			"/opt/fifo/bwrap":               fs.ModeNamedPipe | 0o755,
			"/home/u/.local/share/bk/bin/x": 0o755,
			"/managed/versions/abc/bwrap":   0o755,
			"/custom/bwrap":                 0o755,
		},
		links: map[string]string{
			"/usr/local/bin/bwrap": "/usr/bin/bwrap",
			"/managed/bin/bwrap":   "/managed/versions/abc/bwrap",
			"/opt/dangling/bwrap":  "/nowhere",
		},
	}
	cases := []struct {
		name       string
		query      Query
		wantPath   string
		wantSource Source
		wantErr    any
		considered []string // candidate paths in order
	}{
		{name: "first on PATH", query: Query{PATH: "/usr/bin:/custom"}, wantPath: "/usr/bin/bwrap", wantSource: SourcePath,
			considered: []string{"/usr/bin/bwrap", "/custom/bwrap"}},
		{name: "symlink resolved", query: Query{PATH: "/usr/local/bin"}, wantPath: "/usr/bin/bwrap", wantSource: SourcePath},
		{name: "non-executable, directory, fifo skipped", query: Query{PATH: "/opt/noexec:/opt/dir:/opt/fifo:/opt/dangling:/custom", SystemDirs: []string{"/opt", "/custom"}},
			wantPath: "/custom/bwrap", wantSource: SourcePath,
			considered: []string{"/opt/noexec/bwrap", "/opt/dir/bwrap", "/opt/fifo/bwrap", "/custom/bwrap"}},
		{name: "empty and relative entries ignored and said", query: Query{PATH: ":bin:./x:/custom", SystemDirs: []string{"/custom"}}, wantPath: "/custom/bwrap", wantSource: SourcePath,
			considered: []string{"", "bin", "./x", "/custom/bwrap"}},
		{name: "managed install last", query: Query{PATH: "/opt/noexec", Home: "/managed"}, wantPath: "/managed/versions/abc/bwrap", wantSource: SourceManaged},
		{name: "flag first", query: Query{Flag: "/custom/bwrap", Env: "/usr/bin/bwrap", PATH: "/usr/bin"}, wantPath: "/custom/bwrap", wantSource: SourceFlag},
		{name: "env before PATH", query: Query{Env: "/custom/bwrap", PATH: "/usr/bin"}, wantPath: "/custom/bwrap", wantSource: SourceEnv},
		{name: "explicit missing never falls back", query: Query{Flag: "/nope/bwrap", PATH: "/usr/bin"}, wantErr: &ExplicitError{}},
		{name: "explicit not executable never falls back", query: Query{Env: "/opt/noexec/bwrap", PATH: "/usr/bin"}, wantErr: &ExplicitError{}},
		{name: "explicit relative refused", query: Query{Flag: "bwrap", PATH: "/usr/bin"}, wantErr: &ExplicitError{}},
		{name: "root's install after the user's own", query: Query{PATH: "/opt/noexec", Home: "/empty", SystemHome: "/managed"},
			wantPath: "/managed/versions/abc/bwrap", wantSource: SourceManaged,
			considered: []string{"/opt/noexec/bwrap", "/empty/bin/bwrap", "/managed/bin/bwrap"}},
		{name: "root's install is the home: looked at once", query: Query{PATH: "/opt/noexec", Home: "/empty", SystemHome: "/empty/"}, wantErr: &NotFoundError{},
			considered: []string{"/opt/noexec/bwrap", "/empty/bin/bwrap"}},
		{name: "nothing anywhere", query: Query{PATH: "/opt/noexec", Home: "/empty"}, wantErr: &NotFoundError{},
			considered: []string{"/opt/noexec/bwrap", "/empty/bin/bwrap"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			result, err := Find(c.query, fsys)
			switch want := c.wantErr.(type) {
			case *ExplicitError:
				if !errors.As(err, &want) {
					t.Fatalf("want ExplicitError, got %v %+v", err, result)
				}
				return
			case *NotFoundError:
				if !errors.As(err, &want) {
					t.Fatalf("want NotFoundError, got %v %+v", err, result)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
			}
			if result.Path != c.wantPath || result.Source != c.wantSource {
				t.Errorf("got %s (%s), want %s (%s)", result.Path, result.Source, c.wantPath, c.wantSource)
			}
			if c.considered != nil {
				var paths []string
				for _, candidate := range result.Candidates {
					paths = append(paths, candidate.Path)
				}
				if !slices.Equal(paths, c.considered) {
					t.Errorf("candidates %q, want %q", paths, c.considered)
				}
			}
			for _, candidate := range result.Candidates {
				if !candidate.Usable && (candidate.Reason == "" || candidate.Refusal == "") {
					t.Errorf("unusable candidate without a reason and its kind: %+v", candidate)
				}
			}
		})
	}
}

func TestHome(t *testing.T) {
	env := func(pairs ...string) func(string) string {
		return func(name string) string {
			for i := 0; i < len(pairs); i += 2 {
				if pairs[i] == name {
					return pairs[i+1]
				}
			}
			return ""
		}
	}
	cases := []struct {
		flag string
		env  func(string) string
		uid  int
		want string
	}{
		{"/x", env("BWRAPKIT_HOME", "/y"), 0, "/x"},
		{"", env("BWRAPKIT_HOME", "/y"), 1000, "/y"},
		{"", env(), 0, "/usr/local/lib/bwrapkit"},
		{"", env("XDG_DATA_HOME", "/d", "HOME", "/h"), 1000, "/d/bwrapkit"},
		{"", env("HOME", "/h"), 1000, "/h/.local/share/bwrapkit"},
	}
	for _, c := range cases {
		if got := Home(c.flag, c.env, c.uid); got != c.want {
			t.Errorf("Home(%q, uid %d) = %q, want %q", c.flag, c.uid, got, c.want)
		}
	}
}

// TestFindOnRealFiles checks the real file system seam with real modes and links.
func TestFindOnRealFiles(t *testing.T) {
	dir := t.TempDir()
	real, _ := filepath.EvalSymlinks(dir)
	for _, sub := range []string{"a", "b", "c"} {
		os.Mkdir(filepath.Join(real, sub), 0o755)
	}
	os.WriteFile(filepath.Join(real, "a", "bwrap"), []byte("x"), 0o644)
	livetest.WriteProgram(filepath.Join(real, "c", "bwrap"), []byte("x"), 0o755)
	os.Symlink(filepath.Join(real, "c", "bwrap"), filepath.Join(real, "b", "bwrap"))
	result, err := Find(Query{PATH: filepath.Join(real, "a") + ":" + filepath.Join(real, "b"), SystemDirs: []string{real}}, OS{})
	if err != nil {
		t.Fatal(err)
	}
	if result.Path != filepath.Join(real, "c", "bwrap") {
		t.Errorf("got %s", result.Path)
	}
	if result.Candidates[0].Usable || result.Candidates[0].Reason != "is not executable (no x bit)" {
		t.Errorf("non-executable candidate: %+v", result.Candidates[0])
	}
}

// TestFindWithoutPATH: an unset or empty PATH (env -i) searches what execvp would, so the
// system's /usr/bin/bwrap is found, not only the managed install.
func TestFindWithoutPATH(t *testing.T) {
	fsys := fakeFS{files: map[string]fs.FileMode{"/usr/bin/bwrap": 0o755}}
	result, err := Find(Query{PATH: ""}, fsys)
	if err != nil || result.Path != "/usr/bin/bwrap" || result.Source != SourcePath {
		t.Fatalf("Find with no PATH: %+v, %v", result, err)
	}
}

// TestFindAmbiguousOwner: in a namespace that maps the overflow uid (nspawn
// --private-users=pick over unshifted files), root's files and the namespace's own nobody's
// look alike: refused, with a remedy that is not `bwrapkit install`.
func TestFindAmbiguousOwner(t *testing.T) {
	nobody := [2]uint32{65534, 65534}
	fsys := viewingFS{fakeFS{files: map[string]fs.FileMode{"/usr/bin/bwrap": 0o755},
		owners: map[string][2]uint32{"/usr/bin/bwrap": nobody, "/usr/bin": nobody, "/usr": nobody, "/": nobody}},
		trust.ViewerFor(0, []trust.IDRange{{Inside: 0, Outside: 1758330880, Count: 65536}}, 65534)}
	_, err := Find(Query{PATH: "/usr/bin"}, fsys)
	if !OwnerAmbiguous(err) || strings.Contains(Remedy(err), "bwrapkit install") || !strings.Contains(Remedy(err), "--private-users-ownership") {
		t.Fatalf("err %v, remedy %q", err, Remedy(err))
	}
}

type viewingFS struct {
	fakeFS
	viewer trust.Viewer
}

func (v viewingFS) Viewer() trust.Viewer { return v.viewer }
