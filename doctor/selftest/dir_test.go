package selftest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestCandidates(t *testing.T) {
	env := func(pairs ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(pairs); i += 2 {
			m[pairs[i]] = pairs[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tmp := []Candidate{{"/var/tmp", "/var/tmp"}, {"/tmp", "/tmp"}}
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		want   []Candidate
	}{
		{"home", env("HOME", "/home/dev"), append([]Candidate{{"/home/dev", "/home/dev/.cache/bwrapkit/selftest"}}, tmp...)},
		{"xdg cache wins, made only inside its parent", env("HOME", "/home/dev", "XDG_CACHE_HOME", "/srv/cache"),
			append([]Candidate{{"/srv", "/srv/cache/bwrapkit/selftest"}}, tmp...)},
		{"relative xdg is ignored", env("HOME", "/home/dev", "XDG_CACHE_HOME", "cache"), append([]Candidate{{"/home/dev", "/home/dev/.cache/bwrapkit/selftest"}}, tmp...)},
		{"no home", env(), tmp},
		{"relative home", env("HOME", "home"), tmp},
		{"tmpdir before the system's", env("HOME", "/root", "TMPDIR", "/scratch/"),
			append([]Candidate{{"/root", "/root/.cache/bwrapkit/selftest"}, {"/scratch", "/scratch"}}, tmp...)},
		{"tmpdir that is /tmp is not tried twice", env("TMPDIR", "/tmp"), []Candidate{{"/tmp", "/tmp"}, {"/var/tmp", "/var/tmp"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Candidates(tc.getenv); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMakeSceneNeverMakesAHome: a home that does not exist (nobody's /nonexistent) or is a
// file is passed over, and left as it was; the next place works.
func TestMakeSceneNeverMakesAHome(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexistent")
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fallback := filepath.Join(dir, "fallback")
	if err := os.Mkdir(fallback, 0o700); err != nil {
		t.Fatal(err)
	}
	scene, err := MakeScene([]Candidate{
		{missing, filepath.Join(missing, ".cache", "bwrapkit", "selftest")},
		{file, filepath.Join(file, ".cache", "bwrapkit", "selftest")},
		{fallback, fallback},
	}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer scene.Remove()
	if _, err := os.Lstat(missing); !os.IsNotExist(err) {
		t.Errorf("the missing home was made: %v", err)
	}
	if filepath.Dir(scene.base) != fallback {
		t.Errorf("scene in %s, want under %s", scene.base, fallback)
	}
	if _, err := MakeScene([]Candidate{{missing, missing}}, time.Now()); err == nil {
		t.Error("a scene was made where no place works")
	}
}

// TestSweep removes only the caller's own leftovers older than a doctor's bound.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * SceneBound)
	stale := filepath.Join(dir, scenePrefix+"stale")
	fresh := filepath.Join(dir, scenePrefix+"fresh")
	other := filepath.Join(dir, "unrelated")
	link := filepath.Join(dir, scenePrefix+"link")
	for _, path := range []string{stale, fresh, other} {
		if err := os.MkdirAll(filepath.Join(path, "work"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{stale, other} {
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(link, os.Geteuid(), os.Getegid()); err != nil {
		t.Fatal(err)
	}
	Sweep(dir, scenePrefix, time.Now())
	for path, want := range map[string]bool{stale: false, fresh: true, other: true, link: true} {
		if _, err := os.Lstat(path); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", path, err == nil, want)
		}
	}
}
