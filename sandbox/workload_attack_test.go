package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestLiveRaceFlippedReadWriteBindsOnlyTheCheckedDirectory: the workdir race, on an
// --rw path. A second sandbox swaps P/cache with a symlink to /etc while runs start;
// every run that starts must have the checked directory at P/cache, never /etc.
func TestLiveRaceFlippedReadWriteBindsOnlyTheCheckedDirectory(t *testing.T) {
	forEachBwrapAndSource(t, func(t *testing.T, bwrap string) {
		parent := livetest.TempDir(t)
		workdir := livetest.TempDir(t)
		cache, link := filepath.Join(parent, "cache"), filepath.Join(parent, "cache-link")
		if err := os.Mkdir(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc", link); err != nil {
			t.Fatal(err)
		}
		want, etc := devIno(t, cache), devIno(t, "/etc")
		wait := flipper(t, bwrap, parent, cache, link, 9)
		tally := raceRuns(t, bwrap, Request{Workdir: workdir, ReadWrite: []string{cache}}, []string{cache}, func(lines map[string]string) {
			got, _, _ := strings.Cut(lines[cache], " ")
			if got != want {
				t.Errorf("a started run had %s bound at the --rw path, not the checked directory %s (/etc is %s)", lines[cache], want, etc)
			}
		})
		wait()
		t.Logf("%s: %v", bwrap, tally)
		if tally.started == 0 || tally.other > 0 {
			t.Errorf("the race proved nothing or failed otherwise: %v", tally)
		}
	})
}

// TestAttackPlantedProjectHomeIsRefused: a symlink planted at a project's HOME (by a
// sandbox that could write the homes' directory, or another user) must never make a run
// bind its target read-write. Judged by the target afterwards.
func TestAttackPlantedProjectHomeIsRefused(t *testing.T) {
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "HOME=/nonexistent"}
	workdir := livetest.TempDir(t)
	realWorkdir, _ := filepath.EvalSymlinks(workdir)
	homes := filepath.Join(cache, "bwrapkit", "home")
	if err := os.MkdirAll(homes, 0o700); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir() // stands for ~/.ssh: what the planted link wants written
	planted := filepath.Join(homes, home.ProjectName(realWorkdir))
	if err := os.Symlink(target, planted); err != nil {
		t.Fatal(err)
	}
	_, err := NewPolicy(Request{Workdir: workdir}, env)
	var homeErr *home.Error
	var policyErr *PolicyError
	if !errors.As(err, &homeErr) && !errors.As(err, &policyErr) {
		t.Fatalf("a planted HOME link was accepted: %v", err)
	}
	if info, err := os.Lstat(planted); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the planted link was touched: %v", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("the link's target was written: %v", entries)
	}
	// A homes directory another user could write is not trusted either.
	os.Remove(planted)
	os.Chmod(homes, 0o777)
	if _, err := NewPolicy(Request{Workdir: workdir}, env); !errors.As(err, &homeErr) {
		t.Errorf("a world-writable homes directory was trusted: %v", err)
	}
	os.Chmod(homes, 0o700)
	policy, err := NewPolicy(Request{Workdir: workdir}, env)
	if err != nil || filepath.Dir(policy.Home) != homes {
		t.Fatalf("after the plant was removed: %+v %v", policy.Home, err)
	}
	if info, err := os.Lstat(policy.Home); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Errorf("the project HOME is not a private directory: %v %v", info, err)
	}
}

// TestAttackWorkdirCannotReachTheHomes: a workdir (or --rw) at or inside the homes'
// directory would hand a command another project's tool state; one enclosing it, all of
// them and the probe cache.
func TestAttackWorkdirCannotReachTheHomes(t *testing.T) {
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache}
	homes := filepath.Join(cache, "bwrapkit", "home")
	other := filepath.Join(homes, "other-0123456789abcdef")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	for _, dir := range []string{homes, other, filepath.Join(cache, "bwrapkit")} {
		if _, err := NewPolicy(Request{Workdir: dir}, env); err == nil {
			t.Errorf("workdir %s was accepted", dir)
		}
		if _, err := NewPolicy(Request{Workdir: project, ReadWrite: []string{dir}}, env); err == nil {
			t.Errorf("--rw %s was accepted", dir)
		}
	}
	// And --rw may not open the project's own protected paths or its HOME.
	os.Mkdir(filepath.Join(project, ".git"), 0o755)
	policy, err := NewPolicy(Request{Workdir: project}, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(project, ".git"), policy.Home, filepath.Dir(project)} {
		if _, err := NewPolicy(Request{Workdir: project, ReadWrite: []string{dir}}, env); err == nil {
			t.Errorf("--rw %s was accepted", dir)
		}
	}
	if _, err := NewPolicy(Request{Workdir: project, HomeDir: filepath.Join(project, ".git")}, env); err == nil {
		t.Errorf("a --home-dir inside the workdir was accepted")
	}
}

// TestLiveReadWriteBindAndHome: --rw is writable inside and the write reaches the host;
// HOME is the project's own, writable, and outside the workdir; the workdir stays clean.
func TestLiveReadWriteBindAndHome(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir, extra := livetest.TempDir(t), livetest.TempDir(t)
		cache := t.TempDir()
		s := sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir, ReadWrite: []string{extra}}, env: []string{"XDG_CACHE_HOME=" + cache}}
		// The HOME of the run's own policy: its read-only test binary outside the project
		// is a privilege, and the HOME is keyed by it.
		asRun := s.request
		asRun.ReadOnly = []string{testExecutable(t)}
		asRun.Env = []string{helperEnv + "=1"} // as sandboxRun.run sets it: a variable set is a privilege too
		policy, err := NewPolicy(asRun, s.env)
		if err != nil {
			t.Fatal(err)
		}
		_, stdout, stderr, err := s.run(t, "write", filepath.Join(extra, "f"), filepath.Join(policy.Home, "f"))
		if err != nil || strings.Count(stdout, ": ok") != 2 {
			t.Fatalf("writes: %v %s %s", err, stdout, stderr)
		}
		for _, path := range []string{filepath.Join(extra, "f"), filepath.Join(policy.Home, "f")} {
			if data, err := os.ReadFile(path); err != nil || string(data) != "written inside" {
				t.Errorf("%s on the host: %q %v", path, data, err)
			}
		}
		if entries, _ := os.ReadDir(workdir); len(entries) != 0 {
			t.Errorf("the workdir got %v", entries)
		}
	})
}

// TestLiveEphemeralHomeWithoutACacheDirectory: a service account with no home and no
// XDG_CACHE_HOME gets an empty HOME in the sandbox's private /tmp, writable, and nothing
// of it on the host: not in the workdir, not in TMPDIR.
func TestLiveEphemeralHomeWithoutACacheDirectory(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir, tmpdir := livetest.TempDir(t), t.TempDir()
		env := []string{"HOME=/nonexistent-" + filepath.Base(tmpdir), "XDG_CACHE_HOME=", "TMPDIR=" + tmpdir}
		policy, err := NewPolicy(Request{Workdir: workdir}, env)
		if err != nil || !policy.EphemeralHome || policy.Home != "" {
			t.Fatalf("%+v %v", policy.Home, err)
		}
		s := sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}, env: env}
		_, stdout, stderr, err := s.run(t, "write", filepath.Join(EphemeralHome, "state"))
		if err != nil || !strings.Contains(stdout, ": ok") {
			t.Fatalf("writing the ephemeral HOME: %v %s %s", err, stdout, stderr)
		}
		_, stdout, _, _ = s.run(t, "env")
		if !strings.Contains(stdout, "HOME="+EphemeralHome+"\n") {
			t.Errorf("HOME inside:\n%s", stdout)
		}
		for _, dir := range []string{workdir, tmpdir} {
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%s got %v", dir, entries)
			}
		}
	})
}

// TestWorkdirInBwrapkitsCacheGetsAnEphemeralHome: the doctor's self-test workdirs live in
// bwrapkit's cache, a fresh one each run; they must not leave a project HOME each.
func TestWorkdirInBwrapkitsCacheGetsAnEphemeralHome(t *testing.T) {
	cache := t.TempDir()
	workdir := filepath.Join(cache, "bwrapkit", "selftest", "bwrapkit-doctor-1", "work")
	os.MkdirAll(workdir, 0o755)
	policy, err := NewPolicy(Request{Workdir: workdir}, []string{"XDG_CACHE_HOME=" + cache})
	if err != nil || !policy.EphemeralHome || policy.Home != "" {
		t.Fatalf("%+v %v", policy.Home, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "bwrapkit", "home")); err == nil {
		t.Errorf("a homes directory was made")
	}
}
