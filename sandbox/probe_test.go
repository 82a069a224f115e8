package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/capped"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/internal/probecache"
)

// The fixtures are the real --help and --version outputs of three bwraps.
func TestParseFeaturesOfRealBwraps(t *testing.T) {
	cases := []struct {
		fixture       string
		version       string
		build         string
		disableUserns bool
		overlay       bool
	}{
		{"debian-0.8.0", "0.8.0", "bubblewrap 0.8.0", true, false},
		{"static-0.12.0", "0.12.0", "bubblewrap 0.12.0", true, true},
		{"codex", "", "bubblewrap built for Codex", true, true},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			help := readFixture(t, c.fixture+".help")
			version := readFixture(t, c.fixture+".version")
			features := parseFeatures(help, version)
			if features.Version != c.version || features.Build != c.build {
				t.Errorf("version %q build %q, want %q %q", features.Version, features.Build, c.version, c.build)
			}
			if missing := features.Missing(); len(missing) != 0 {
				t.Errorf("a real bwrap lacks %v", missing)
			}
			if features.Has("disable-userns") != c.disableUserns || features.Has("overlay") != c.overlay {
				t.Errorf("disable-userns %v overlay %v", features.Has("disable-userns"), features.Has("overlay"))
			}
			if !features.Has("argv0") && c.fixture != "debian-0.8.0" {
				t.Errorf("--argv0 not parsed (digits in option names)")
			}
		})
	}
}

func TestParseFeaturesOfImpostors(t *testing.T) {
	for _, c := range []struct{ help, version string }{
		{"", ""},
		{"Usage: true [ignored command line arguments]\n  or:  true OPTION\n      --help     display this help and exit\n", "true (GNU coreutils) 9.1\n"},
	} {
		features := parseFeatures(c.help, c.version)
		if len(features.Missing()) < len(Required())-1 || features.Version != "" {
			t.Errorf("an impostor passes: %+v", features)
		}
	}
}

func TestProbeCachesPerBinaryAndSeesReplacement(t *testing.T) {
	system := livetest.SystemBwrap(t)
	features, err := Probe(context.Background(), system)
	if err != nil || len(features.Missing()) != 0 {
		t.Fatalf("probe %s: %+v %v", system, features, err)
	}
	// A binary replaced in place (new size or mtime) is probed again.
	path := filepath.Join(t.TempDir(), "bwrap")
	data, _ := os.ReadFile(system)
	livetest.WriteProgram(path, data, 0o755)
	if first, _ := Probe(context.Background(), path); len(first.Missing()) != 0 {
		t.Fatalf("copy of the system bwrap: %v", first.Missing())
	}
	livetest.WriteProgram(path, []byte("#!/bin/sh\necho nope\n"), 0o755)
	if second, _ := Probe(context.Background(), path); !slices.Equal(second.Missing(), Required()) {
		t.Fatalf("the replaced binary was not probed again: %+v", second)
	}
}

func readFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "bwrap", "probe", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestProbeCacheSurvivesTheProcessAndIgnoresDamage(t *testing.T) {
	system := livetest.SystemBwrap(t)
	prober := Prober{CacheDirs: []string{filepath.Join(t.TempDir(), "probe")}}
	info, _ := os.Stat(system)
	identity := probecache.Key(system, info)
	if _, err := prober.Probe(context.Background(), system); err != nil {
		t.Fatal(err)
	}
	if cached, ok := prober.cached(identity); !ok || len(cached.Missing()) != 0 {
		t.Fatalf("not on disk: %+v", cached)
	}
	entry := filepath.Join(prober.CacheDir(), probecache.Name(identity))
	os.WriteFile(entry, []byte("damaged\n"), 0o600)
	if features, err := prober.Probe(context.Background(), system); err != nil || len(features.Missing()) != 0 {
		t.Fatalf("a damaged cache must only cost a probe: %+v %v", features, err)
	}
}

// TestProbeRefusesAnImpostorThatFloods: a "bwrap" that prints without end (an impostor,
// a wrapper gone wrong) once cost the probe its whole timeout twice and gigabytes of
// memory, and passed as a binary that merely lacks options. It is stopped at the bound
// and refused as not bwrap.
func TestProbeRefusesAnImpostorThatFloods(t *testing.T) {
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Fatal("precondition: yes(1) (coreutils) is on PATH")
	}
	impostor := filepath.Join(t.TempDir(), "bwrap")
	if err := livetest.WriteProgram(impostor, []byte("#!/bin/sh\nexec "+yes+" '    --unshare-all   lists every option, forever'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Prober{}.Probe(context.Background(), impostor)
	if !errors.Is(err, capped.ErrExceeded) {
		t.Fatalf("want the probe to fail with capped.ErrExceeded, got %v", err)
	}
	_, err = Prober{}.Capable(context.Background(), impostor)
	var unavailable *UnavailableError
	if !errors.As(err, &unavailable) || unavailable.Reason != ReasonUnsupported || !unavailable.NotBwrap {
		t.Fatalf("want ReasonUnsupported, not bwrap: %v", err)
	}
	if !strings.Contains(unavailable.Error(), "more than 64 KiB") {
		t.Fatalf("the refusal must say why: %v", unavailable)
	}
}

// TestCachedNegativeClaimsAreNotBelieved: a cache entry (forged, or from a broken probe)
// that says a security option is missing would drop it from every argv; it is a miss.
func TestCachedNegativeClaimsAreNotBelieved(t *testing.T) {
	all := append(Required(), securityOptions()...)
	if _, ok := believed(probecache.Entry{Version: "0.8.0", Options: all}); !ok {
		t.Fatal("an entry with every option was not believed")
	}
	for _, option := range []string{"disable-userns", "bind-fd", "ro-bind-fd", "size"} {
		without := slices.DeleteFunc(slices.Clone(all), func(name string) bool { return name == option })
		if _, ok := believed(probecache.Entry{Version: "0.8.0", Options: without}); ok {
			t.Errorf("an entry without %s was believed", option)
		}
	}
}
