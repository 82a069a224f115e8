package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// These tests are what a hostile command (or a second sandbox sharing a directory) does
// to reach the host. Each is judged by the host's state afterwards, never by the argv,
// and none performs an escape: a command only reports what it could reach.

// devIno is a file's identity as "DEV:INO", the form the statdirs helper prints.
func devIno(t *testing.T, path string) string {
	t.Helper()
	var stat unix.Stat_t
	if err := unix.Lstat(path, &stat); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%d", stat.Dev, stat.Ino)
}

// flipper runs, in a sandbox of its own with workdir dir, a loop that swaps a and b
// (a directory and a symlink) for at most the given time: the concurrent sandbox of the
// race. stop ends it and waits for it.
func flipper(t *testing.T, bwrap, dir, a, b string, seconds float64) (stop func()) {
	t.Helper()
	stopFile := filepath.Join(dir, "stop-flipping")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		result, stdout, stderr, err := sandboxRun{bwrap: bwrap, request: Request{Workdir: dir, WorkdirMode: string(WorkdirDirect)}}.run(t, "flip", a, b, fmt.Sprint(seconds), stopFile)
		if err != nil || result.ExitCode != 0 || !strings.Contains(stdout, "swaps:") {
			t.Errorf("the flipping sandbox did not flip: %+v %v\n%s%s", result, err, stdout, stderr)
		}
	}()
	return func() {
		os.WriteFile(stopFile, nil, 0o644)
		wg.Wait()
	}
}

// raceTally counts how the runs under a flipping path ended.
type raceTally struct{ started, refusedPolicy, refusedUnverified, other int }

func (r raceTally) String() string {
	return fmt.Sprintf("%d started, %d refused at resolution, %d refused by the gate, %d other", r.started, r.refusedPolicy, r.refusedUnverified, r.other)
}

// raceRuns runs the statdirs helper under a flipping path until the time or the count
// runs out, and hands each started run's output to judge.
func raceRuns(t *testing.T, bwrap string, request Request, paths []string, judge func(lines map[string]string)) raceTally {
	t.Helper()
	features, err := DefaultProber(os.Environ()).Capable(context.Background(), bwrap)
	if err != nil {
		t.Fatal(err)
	}
	if pathSources(t) {
		// As with a bwrap older than --bind-fd: bind by path, and only the gate decides.
		features.Options = maps.Clone(features.Options)
		delete(features.Options, "bind-fd")
		delete(features.Options, "ro-bind-fd")
	}
	var tally raceTally
	// At least 200 tries over 2.5 s, and on until a few runs started (within 8 s).
	began := time.Now()
	enough := func(try int) bool {
		elapsed := time.Since(began)
		return elapsed > 8*time.Second || (try >= 200 && elapsed > 2500*time.Millisecond && tally.started >= 3)
	}
	for try := 0; !enough(try); try++ {
		exe := testExecutable(t)
		req := request
		if req.WorkdirMode == "" {
			// These judges read the bound directory's own identity, which only a
			// direct bind shows; the transactional race has its own test.
			req.WorkdirMode = string(WorkdirDirect)
		}
		req.ReadOnly = append(slices.Clone(request.ReadOnly), exe)
		req.Env = append(slices.Clone(request.Env), helperEnv+"=1")
		policy, err := NewPolicy(req, nil)
		var policyErr *PolicyError
		if errors.As(err, &policyErr) {
			tally.refusedPolicy++
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		policy.Features = features
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		result, err := Run(ctx, policy, append([]string{exe, "statdirs"}, paths...), Options{Bwrap: bwrap, Stdout: &stdout, Stderr: &stderr})
		cancel()
		var unavailable *UnavailableError
		switch {
		case errors.As(err, &unavailable):
			// Refused by the gate, or by bwrap's own check of a bound descriptor: either
			// way the command did not run.
			tally.refusedUnverified++
		case err == nil && result.ExitCode == 0:
			tally.started++
			judge(outputLines(stdout.String()))
		default:
			tally.other++
			t.Logf("try %d: %+v %v %s", try, result, err, stderr.String())
		}
	}
	return tally
}

// pathSources runs a race test twice: binding descriptors (--bind-fd, as every bwrap here
// has it) and binding paths (as an older bwrap must), where the gate alone decides.
func pathSources(t *testing.T) bool { return strings.HasSuffix(t.Name(), "/paths") }

// forEachBwrapAndSource runs the test per bwrap, with descriptor and path sources.
func forEachBwrapAndSource(t *testing.T, test func(t *testing.T, bwrap string)) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		for _, sources := range []string{"descriptors", "paths"} {
			t.Run(sources, func(t *testing.T) { test(t, bwrap) })
		}
	})
}

// TestLiveRaceFlippedWorkdirBindsOnlyTheCheckedDirectory: a second sandbox swaps the
// workdir P/sub with a symlink to /etc while runs start. Every run that starts must have
// the directory P/sub was when it was checked bound at its path, and none /etc.
func TestLiveRaceFlippedWorkdirBindsOnlyTheCheckedDirectory(t *testing.T) {
	forEachBwrapAndSource(t, func(t *testing.T, bwrap string) {
		parent := livetest.TempDir(t)
		sub, link := filepath.Join(parent, "sub"), filepath.Join(parent, "sub-link")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc", link); err != nil {
			t.Fatal(err)
		}
		want, etc := devIno(t, sub), devIno(t, "/etc")
		wait := flipper(t, bwrap, parent, sub, link, 9)
		tally := raceRuns(t, bwrap, Request{Workdir: sub}, []string{"."}, func(lines map[string]string) {
			got, _, _ := strings.Cut(lines["."], " ")
			if got != want {
				t.Errorf("a started run had %s bound as its workdir, not the checked directory %s (/etc is %s)", lines["."], want, etc)
			}
		})
		wait()
		t.Logf("%s: %v", bwrap, tally)
		if tally.started == 0 || tally.other > 0 {
			t.Errorf("the race proved nothing or failed otherwise: %v", tally)
		}
	})
}

// TestLiveRaceFlippedTransactionalWorkdirShowsOnlyTheCheckedDirectory: the same race
// against a transactional run, whose lower layer bwrap opens by path. Every run that
// starts must see the checked directory's own file (by inode) through its overlay, and
// never /etc's.
func TestLiveRaceFlippedTransactionalWorkdirShowsOnlyTheCheckedDirectory(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		features, err := DefaultProber(os.Environ()).Capable(context.Background(), bwrap)
		if err != nil {
			t.Fatal(err)
		}
		if !features.Has("overlay") {
			t.Skip("this bwrap has no --overlay: its runs are direct")
		}
		parent := livetest.TempDir(t)
		sub, link := filepath.Join(parent, "sub"), filepath.Join(parent, "sub-link")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "hostname"), []byte("checked\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc", link); err != nil {
			t.Fatal(err)
		}
		want := devIno(t, filepath.Join(sub, "hostname"))
		_, wantIno, _ := strings.Cut(want, ":")
		wait := flipper(t, bwrap, parent, sub, link, 9)
		tally := raceRuns(t, bwrap, Request{Workdir: sub, WorkdirMode: string(WorkdirTransactional)}, []string{"hostname"}, func(lines map[string]string) {
			got, _, _ := strings.Cut(lines["hostname"], " ")
			if _, ino, _ := strings.Cut(got, ":"); ino != wantIno {
				t.Errorf("a started run saw hostname as %s, not the checked directory's %s", lines["hostname"], want)
			}
		})
		wait()
		t.Logf("%s: %v", bwrap, tally)
		if tally.started == 0 || tally.other > 0 {
			t.Errorf("the race proved nothing or failed otherwise: %v", tally)
		}
	})
}

// TestLiveRaceFlippedGitStaysProtected: the same race on the workdir's .git, swapped with
// a symlink to a directory of secrets outside the workdir. Every started run must have
// the real .git, read-only, and never the secrets.
func TestLiveRaceFlippedGitStaysProtected(t *testing.T) {
	forEachBwrapAndSource(t, func(t *testing.T, bwrap string) {
		parent := livetest.TempDir(t)
		workdir := filepath.Join(parent, "w")
		git, link := filepath.Join(workdir, ".git"), filepath.Join(workdir, ".git-link")
		secrets := livetest.TempDir(t)
		for _, dir := range []string{workdir, git} {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(secrets, link); err != nil {
			t.Fatal(err)
		}
		want := devIno(t, git)
		// The flipper's workdir is the parent: its own policy does not pin w/.git.
		wait := flipper(t, bwrap, parent, git, link, 9)
		tally := raceRuns(t, bwrap, Request{Workdir: workdir}, []string{".git"}, func(lines map[string]string) {
			// The flipper goes on swapping while the command runs, so by the time it looks
			// the name may hold the symlink (the pinned .git moved along with its name in
			// the flipper's sandbox, which does not protect it). A directory there must be
			// the checked .git, read-only.
			fields := strings.Fields(lines[".git"])
			if len(fields) != 3 || (fields[1] == "dir" && (fields[0] != want || fields[2] != "ro")) {
				t.Errorf("a started run saw .git as %q, want the checked directory %s read-only", lines[".git"], want)
			}
		})
		wait()
		t.Logf("%s: %v", bwrap, tally)
		if tally.started == 0 || tally.other > 0 {
			t.Errorf("the race proved nothing or failed otherwise: %v", tally)
		}
	})
}

// TestLiveProtectedPathsSurviveAHostileRun: the command renames every parent of a
// protected path, renames and deletes the path, and puts its own file at the name.
// Afterwards the host must find the same, unchanged file at every protected path.
func TestLiveProtectedPathsSurviveAHostileRun(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := livetest.TempDir(t)
		files := map[string]string{
			".git/config":                "[core]\n\tbare = false\n",
			".github/workflows/ci.yml":   "on: push\n",
			"deploy/keys/id.pub":         "ssh-ed25519 AAAA\n",
			"deploy/keys/readme.txt":     "keys\n",
			".github/CODEOWNERS":         "* @owner\n",
			"src/main.go":                "package main\n",
			"deploy/keys/nested/key.pem": "pem\n",
		}
		for name, content := range files {
			path := filepath.Join(workdir, name)
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		protected := []string{".git", ".github/workflows", "deploy/keys"}
		before := map[string]string{}
		for _, rel := range protected {
			before[rel] = devIno(t, filepath.Join(workdir, rel))
		}
		out := mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir, Protect: protected[1:]}},
			append([]string{"hostile-protect"}, protected...)...)
		for _, rel := range protected {
			if got := devIno(t, filepath.Join(workdir, rel)); got != before[rel] {
				t.Errorf("%s is another file on the host after the run (%s, was %s)\n%s", rel, got, before[rel], out)
			}
		}
		for name, content := range files {
			if strings.HasPrefix(name, "src/") || name == ".github/CODEOWNERS" {
				continue // not protected: the command may change these
			}
			if data, err := os.ReadFile(filepath.Join(workdir, name)); err != nil || string(data) != content {
				t.Errorf("%s changed on the host: %q %v", name, data, err)
			}
		}
		for _, rel := range protected {
			if _, err := os.Stat(filepath.Join(workdir, rel, "planted")); err == nil {
				t.Errorf("a file was planted in %s", rel)
			}
		}
	})
}

// TestLiveSubmoduleGitdirCannotBeRedirected: a submodule's gitfile rewritten to a gitdir
// the command made, with core.fsmonitor set, would make a later host `git status` run
// the command's code. The gitfile must stay as it was, and a host git must run nothing.
//
// With a split index (core.splitIndex) the gitlink lives in the shared index beside
// .git/index, which bwrapkit once did not read: the gitfile was left writable, and the
// host git status below ran the command's fsmonitor.
func TestLiveSubmoduleGitdirCannotBeRedirected(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		livetest.Skip(t, "no git on PATH (apt-get install git)")
	}
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		for _, variant := range []struct {
			name                  string
			split, parentReadOnly bool
		}{{"index", false, false}, {"split index", true, false}, {"read-only parent", false, true}} {
			t.Run(variant.name, func(t *testing.T) {
				submoduleRedirect(t, gitPath, bwrap, variant.split, variant.parentReadOnly)
			})
		}
	})
}

// submoduleRedirect is one trial of TestLiveSubmoduleGitdirCannotBeRedirected. With
// parentReadOnly the project's parent is an --ro path (its binds lie under the workdir's
// writable one), which once left the submodule's directory unpinned: the command renamed
// it away and put a repository of its own at the name.
func submoduleRedirect(t *testing.T, gitPath, bwrap string, split, parentReadOnly bool) {
	workdir := livetest.TempDir(t)
	git := func(args ...string) string {
		cmd := exec.Command(gitPath, append([]string{"-C", workdir}, args...)...)
		cmd.Env = []string{"HOME=" + workdir, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	os.MkdirAll(filepath.Join(workdir, ".git", "modules"), 0o755)
	git("init", "-q", "--separate-git-dir", filepath.Join(workdir, ".git", "modules", "sub"), "sub")
	git("update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,sub")
	if split {
		git("update-index", "--split-index")
	}
	gitfile := filepath.Join(workdir, "sub", ".git")
	original, err := os.ReadFile(gitfile)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(livetest.TempDir(t), "fsmonitor-ran")
	evil := filepath.Join(workdir, ".evil")
	for _, dir := range []string{"objects", "refs"} {
		os.MkdirAll(filepath.Join(evil, dir), 0o755)
	}
	os.WriteFile(filepath.Join(evil, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(evil, "config"), []byte("[core]\n\tfsmonitor = touch "+marker+"\n"), 0o644)

	request := Request{Workdir: workdir}
	if parentReadOnly {
		request.ReadOnly = []string{filepath.Dir(workdir)}
	}
	out := mustRun(t, sandboxRun{bwrap: bwrap, request: request}, "rewrite", gitfile, "gitdir: ../.evil\n")
	out += mustRun(t, sandboxRun{bwrap: bwrap, request: request}, "hostile-protect", gitfile)
	if data, _ := os.ReadFile(gitfile); string(data) != string(original) {
		t.Errorf("the submodule's gitfile was redirected or replaced: %q\n%s", data, out)
	}
	if _, err := os.Lstat(filepath.Join(workdir, "sub.moved")); err == nil {
		t.Errorf("the submodule's directory was renamed away:\n%s", out)
	}
	git("status", "--porcelain")
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a host git status ran the command's fsmonitor")
	}
}

// TestLiveRootCannotWriteHostSysctls: a root caller's command is host uid 0 inside, and
// /proc/sys files are root's 0644: the fresh /proc's sysctls must be read-only. The
// helper writes each value back unchanged, so even a broken boundary changes nothing.
func TestLiveRootCannotWriteHostSysctls(t *testing.T) {
	sysctls := []string{"/proc/sys/vm/stat_interval", "/proc/sys/kernel/perf_event_paranoid", "/proc/sys/fs/protected_symlinks"}
	before := map[string]string{}
	for _, path := range sysctls {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		before[path] = string(data)
	}
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		lines := outputLines(mustRun(t, sandboxRun{bwrap: bwrap}, append([]string{"sysctl-write"}, sysctls...)...))
		for _, path := range sysctls {
			if lines[path] != "read-only file system" {
				t.Errorf("write %s inside: %q, want read-only file system", path, lines[path])
			}
		}
	})
	for _, path := range sysctls {
		if data, _ := os.ReadFile(path); string(data) != before[path] {
			t.Errorf("%s changed on the host: %q -> %q", path, before[path], data)
		}
	}
}

// TestLiveNoSetuidFileIsLeftOnTheHost: as root, a setuid-root copy in the workdir runs
// with euid 0 for any host user. No way of creating or changing a mode may set it.
func TestLiveNoSetuidFileIsLeftOnTheHost(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := livetest.TempDir(t)
		out := mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}}, "setuid", workdir)
		lines := outputLines(out)
		for _, attempt := range []string{"chmod-4755", "chmod-2755", "fchmodat-6755", "fchmod-4755", "open-creat-4755", "mkdir-2755", "mknod-4755"} {
			if lines[attempt] != "operation not permitted" {
				t.Errorf("%s inside: %q, want operation not permitted", attempt, lines[attempt])
			}
		}
		if lines["chmod-0700"] != "ok" {
			t.Errorf("an ordinary chmod must still work: %q", lines["chmod-0700"])
		}
		filepath.Walk(workdir, func(path string, info os.FileInfo, err error) error {
			if err == nil && info.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Errorf("%s is %v on the host", path, info.Mode())
			}
			return nil
		})
	})
}

// TestLiveCallersKeyringsStayOut: keyrings are not namespaced by bwrap. Inside, no
// keyring may be read or written, and nothing may be planted in the caller's.
func TestLiveCallersKeyringsStayOut(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		lines := outputLines(mustRun(t, sandboxRun{bwrap: bwrap}, "keys"))
		for _, attempt := range []string{"keyctl-session", "keyctl-user", "add-key-user", "request-key"} {
			if lines[attempt] != "operation not permitted" {
				t.Errorf("%s inside: %q, want operation not permitted", attempt, lines[attempt])
			}
		}
		if lines["proc-keys"] == "ok" {
			t.Errorf("/proc/keys is readable inside")
		}
	})
	if _, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", "bwrapkit-planted", 0); err == nil {
		t.Errorf("a key was planted in the caller's user keyring")
	}
}

// TestLiveFilterWithheldMeansNoCommand: if the gate never releases the filter (bwrapkit
// died, or the check failed), bwrap must refuse to run the command: from an empty pipe,
// and from the primed one, where bwrap has read the preamble and then meets the end of
// the file instead of the program.
func TestLiveFilterWithheldMeansNoCommand(t *testing.T) {
	program, err := SeccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		for _, primed := range []bool{false, true} {
			t.Run(fmt.Sprintf("primed=%v", primed), func(t *testing.T) {
				marker := filepath.Join(livetest.TempDir(t), "ran")
				var filterRead *os.File
				var filter *heldFilter
				if primed {
					filterRead, filter = primedPipe(t, program)
				} else {
					filterRead, filter = unprimedPipe(t)
				}
				filter.withhold()
				cmd := exec.Command(bwrap, "--unshare-all", "--unshare-user", "--die-with-parent",
					"--ro-bind", "/", "/", "--bind", filepath.Dir(marker), filepath.Dir(marker),
					"--seccomp", "3", "--", "/bin/sh", "-c", "touch "+marker)
				cmd.ExtraFiles = []*os.File{filterRead}
				out, err := cmd.CombinedOutput()
				filterRead.Close()
				var exitErr *exec.ExitError
				if !errors.As(err, &exitErr) {
					t.Errorf("bwrap with a withheld filter: %v\n%s", err, out)
				}
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the command ran without its filter")
				}
			})
		}
	})
}

// unprimedPipe is a filter pipe as hosts without a preamble have it: empty.
func unprimedPipe(t *testing.T) (*os.File, *heldFilter) {
	t.Helper()
	read, write, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return read, &heldFilter{pipe: write}
}

// primedPipe is a run's filter pipe, primed for program; the test is skipped where no
// preamble fits the host's page, and fails where one should have (4 KiB pages).
func primedPipe(t *testing.T, program []byte) (*os.File, *heldFilter) {
	t.Helper()
	read, filter, err := newHeldFilter(program)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(filter.withhold)
	if !filter.primed {
		read.Close()
		if os.Getpagesize() == 4096 {
			t.Fatalf("a filter pipe on a host with 4 KiB pages was not primed")
		}
		t.Skipf("no preamble fits a %d-byte page: runs watch the mounts here", os.Getpagesize())
	}
	return read, filter
}

// TestLiveGateWakesWhenBwrapReadsTheFilter: with a primed pipe the gate's wait ends once
// bwrap has read the preamble, which it does only after its whole setup: by then the
// sandbox's root is its own and read-only, and the command has not started (it waits for
// the program). Released, the command then runs under the filter.
func TestLiveGateWakesWhenBwrapReadsTheFilter(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		dir := livetest.TempDir(t)
		marker := filepath.Join(dir, "ran")
		root := []string{"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
			"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc",
			"--bind", dir, dir, "--remount-ro", "/"}
		launch := startGated(t, bwrap, root, "grep Seccomp: /proc/self/status > "+marker)
		sandboxRoot, err := launch.await()
		if err != nil {
			t.Fatalf("the gate's wait: %v", err)
		}
		sandboxRoot.Close()
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the command ran before its filter was released")
		}
		if err := launch.filter.release(launch.program); err != nil {
			t.Fatal(err)
		}
		if err := launch.cmd.Wait(); err != nil {
			t.Fatalf("bwrap after the release: %v", err)
		}
		if got, _ := os.ReadFile(marker); !strings.Contains(string(got), "Seccomp:\t2") {
			t.Errorf("the command's seccomp status: %q, want filter mode 2", got)
		}
	})
}

// TestLiveGateRefusesAnUnfinishedRoot: a bwrap that asks for its filter while the
// sandbox's root is still the host's (here bound whole, as no run's argv does) is
// refused, its filter withheld: the wake alone is never taken for a finished sandbox.
func TestLiveGateRefusesAnUnfinishedRoot(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		dir := livetest.TempDir(t)
		marker := filepath.Join(dir, "ran")
		launch := startGated(t, bwrap, []string{"--ro-bind", "/", "/", "--bind", dir, dir}, "touch "+marker)
		_, err := launch.await()
		if err == nil || !strings.Contains(err.Error(), "before the sandbox's root was finished") {
			t.Fatalf("the gate's wait on a sandbox rooted at the host's /: %v, want a refusal", err)
		}
		launch.filter.withhold()
		if err := launch.cmd.Wait(); err == nil {
			t.Errorf("bwrap with its filter withheld exited 0")
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the command ran")
		}
	})
}

// gatedLaunch is bwrap started as Run starts it (a JSON status and a primed filter pipe),
// without the rest of Run, so a test can hold the gate's wait alone.
type gatedLaunch struct {
	cmd     *exec.Cmd
	filter  *heldFilter
	program []byte
	pid     int
}

func startGated(t *testing.T, bwrap string, mounts []string, script string) *gatedLaunch {
	t.Helper()
	program, err := SeccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	filterRead, filter := primedPipe(t, program)
	statusRead, statusWrite, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { statusRead.Close() })
	args := append([]string{"--unshare-all", "--unshare-user", "--die-with-parent", "--json-status-fd", "3"}, mounts...)
	cmd := exec.Command(bwrap, append(args, "--seccomp", "4", "--", "/bin/sh", "-c", script)...)
	cmd.ExtraFiles = []*os.File{statusWrite, filterRead}
	err = cmd.Start()
	statusWrite.Close()
	filterRead.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	pid := <-watchStatus(statusRead).childPID
	return &gatedLaunch{cmd: cmd, filter: filter, program: program, pid: pid}
}

// await is the gate's wait for this launch, bounded.
func (g *gatedLaunch) await() (*os.File, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return awaitSetup(ctx, g.pid, g.filter)
}

// TestDescriptorHygieneFailsClosed: where neither close_range nor the descriptor listing
// works, the launch is refused rather than handing the command every descriptor.
func TestDescriptorHygieneFailsClosed(t *testing.T) {
	err := markCloseOnExec(filepath.Join(t.TempDir(), "no-such-fd-listing"))
	if err == nil || !strings.Contains(err.Error(), "cannot keep inherited descriptors out") {
		t.Fatalf("want a refusal, got %v", err)
	}
	if err := markCloseOnExec("/proc/self/fd"); err != nil {
		t.Fatalf("the real listing: %v", err)
	}
}

// TestLiveBoundsHold: the rlimits are in force inside and cannot be raised, core dumps
// are off, each private tmpfs is bounded, and /dev itself is not a place to fill memory.
func TestLiveBoundsHold(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		request := Request{Limits: []string{"tmpfs=2M", "nofile=256", "nproc=512", "fsize=1G", "as=16G"}}
		lines := outputLines(mustRun(t, sandboxRun{bwrap: bwrap, request: request}, "bounds"))
		want := map[string]string{"core": "0/0", "nofile": "256/256", "nproc": "512/512", "fsize": fmt.Sprintf("%d/%d", 1<<30, 1<<30), "as": fmt.Sprintf("%d/%d", 16<<30, 16<<30)}
		for name, value := range want {
			if lines[name] != value {
				t.Errorf("%s inside: %q, want %s", name, lines[name], value)
			}
			if lines["raise-"+name] != "operation not permitted" {
				t.Errorf("raising %s inside: %q, want operation not permitted", name, lines["raise-"+name])
			}
		}
		for _, dir := range []string{"/tmp", "/var/tmp", "/run", "/dev/shm"} {
			if got := lines["fill-"+dir]; got != "no space left on device" {
				t.Errorf("writing 3 MiB to %s with tmpfs=2M: %q", dir, got)
			}
		}
		if got := lines["write-/dev"]; got != "read-only file system" {
			t.Errorf("writing a file in /dev: %q", got)
		}
	})
}

// TestLiveForkBombIsBoundedForUsers: as a user, nproc bounds a fork loop; for root the
// kernel exempts uid 0 from RLIMIT_NPROC (measured, and documented). Either way every
// process dies with the sandbox.
func TestLiveForkBombIsBoundedForUsers(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		request := Request{Limits: []string{"nproc=32"}}
		lines := outputLines(mustRun(t, sandboxRun{bwrap: bwrap, request: request}, "forks", "200"))
		forked := lines["forked"]
		if os.Geteuid() != 0 && (forked == "200" || lines["last"] != "resource temporarily unavailable") {
			t.Errorf("nproc=32 did not stop a fork loop: forked %s, last %q", forked, lines["last"])
		}
		t.Logf("uid %d: forked %s children under nproc=32 (last: %s)", os.Geteuid(), forked, lines["last"])
	})
	// The children held on; the pid namespace ended them with the sandbox.
	if leftovers := processesRunning(t, "hold"); len(leftovers) > 0 {
		t.Errorf("processes of the sandbox outlived it: %v", leftovers)
	}
}

// processesRunning lists pids whose command line is this test binary with arg.
func processesRunning(t *testing.T, arg string) []string {
	t.Helper()
	exe := testExecutable(t)
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err != nil {
			continue
		}
		fields := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(fields) == 2 && fields[0] == exe && fields[1] == arg {
			pids = append(pids, entry.Name())
		}
	}
	return pids
}

// TestNewPolicyRefusesBadLimits: --limit with an unknown name, a bad number or unit is a
// PolicyError naming the accepted names.
func TestNewPolicyRefusesBadLimits(t *testing.T) {
	for _, spec := range []string{"cpu=1", "nproc=many", "as=4X", "nproc", "core=1", "=1", "tmpfs=-1M"} {
		_, err := NewPolicy(Request{Workdir: t.TempDir(), Limits: []string{spec}}, nil)
		var policyErr *PolicyError
		if !errors.As(err, &policyErr) || policyErr.Field != "limit" || !strings.Contains(err.Error(), "nproc") {
			t.Errorf("--limit %s: %v", spec, err)
		}
	}
}

// TestLiveSandboxNeverOutlivesRun: the command shares pid 1's uid and can rewrite bwrap's
// init through /proc/1/mem (testdata/attacks/pid1-takeover.c, amd64: clear its
// parent-death signal, tell the monitor "exit 0", keep reaping). Run must still leave no
// process of the sandbox behind: its heartbeat stops when Run returns.
func TestLiveSandboxNeverOutlivesRun(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the takeover code is amd64 machine code")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		livetest.Skip(t, "no gcc (apt-get install gcc libc6-dev)")
	}
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := livetest.TempDir(t)
		takeover := filepath.Join(workdir, "takeover")
		if out, err := exec.Command(gcc, "-static", "-O1", "-o", takeover, filepath.Join(livetest.RepoRoot(), "testdata", "attacks", "pid1-takeover.c")).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		// Direct: the attack binary runs from the workdir as bound live, the mode whose
		// descriptors and mounts the takeover was written against.
		policy, err := NewPolicy(Request{Workdir: workdir, WorkdirMode: "direct"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		result, err := Run(ctx, policy, []string{takeover, "20"}, Options{Bwrap: bwrap, Stderr: &stderr, Timeout: 5 * time.Second})
		// The attack's precondition: it found bwrap's eventfd and made bwrap report an
		// exit, so bwrap returned before the timeout with the sandbox still alive. A run
		// that only timed out proves nothing about the kill after bwrap exits.
		if !strings.Contains(stderr.String(), "eventfd ") || err != nil || result.TimedOut {
			t.Fatalf("the takeover did not make bwrap exit early (result %+v, err %v): the test proves nothing\n%s", result, err, stderr.String())
		}
		heartbeat := filepath.Join(workdir, "heartbeat")
		first, _ := os.ReadFile(heartbeat)
		time.Sleep(1500 * time.Millisecond)
		later, _ := os.ReadFile(heartbeat)
		if len(later) > len(first) {
			t.Errorf("the sandbox kept running after Run returned (heartbeat grew from %d to %d bytes)\n%s", len(first), len(later), stderr.String())
		}
	})
}

// TestLiveGitdirsInsideTheWorkdirStayOut: a gitfile naming a gitdir inside the workdir
// (git init --separate-git-dir), and a submodule that was never initialised (its empty
// directory), are what a host git enters next: the command must not be able to set a
// core.fsmonitor there or make a repository in the empty submodule.
func TestLiveGitdirsInsideTheWorkdirStayOut(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		livetest.Skip(t, "no git on PATH (apt-get install git)")
	}
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := livetest.TempDir(t)
		git := func(args ...string) {
			cmd := exec.Command(gitPath, append([]string{"-C", workdir}, args...)...)
			cmd.Env = []string{"HOME=" + workdir, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		git("init", "-q", "--separate-git-dir", filepath.Join(workdir, ".realgit"))
		git("update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,lib")
		os.Mkdir(filepath.Join(workdir, "lib"), 0o755)
		marker := filepath.Join(livetest.TempDir(t), "fsmonitor-ran")
		config := filepath.Join(workdir, ".realgit", "config")
		before, _ := os.ReadFile(config)
		armed := string(before) + "[core]\n\tfsmonitor = touch " + marker + "\n"
		requireFsmonitorRuns(t, gitPath, armed, marker)
		out := mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}},
			"write", config, filepath.Join(workdir, "lib", ".git"))
		lines := outputLines(out)
		if lines[config] != "read-only file system" || lines[filepath.Join(workdir, "lib", ".git")] != "read-only file system" {
			t.Errorf("writes into the gitdirs a host git enters: %v", lines)
		}
		// The attack itself: the config a host git reads next, armed with a fsmonitor.
		out = mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir}}, "rewrite", config, armed)
		if lines := outputLines(out); lines["rewrite "+config] != "read-only file system" || lines["replace "+config] != "read-only file system" {
			t.Errorf("arming the separate gitdir's config: %v", lines)
		}
		if after, _ := os.ReadFile(config); string(after) != string(before) {
			t.Errorf("the separate gitdir's config changed: %q", after)
		}
		if _, err := os.Lstat(filepath.Join(workdir, "lib", ".git")); err == nil {
			t.Errorf("a .git was made in the uninitialised submodule")
		}
		git("status", "--porcelain")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("a host git status ran a planted fsmonitor")
		}
	})
}

// TestLiveReadOnlyInsideTheWorkdirIsPinned: an --ro path inside the workdir cannot be
// moved away with its parent and replaced by the command's own files.
func TestLiveReadOnlyInsideTheWorkdirIsPinned(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := livetest.TempDir(t)
		tools := filepath.Join(workdir, "vendor", "tools")
		os.MkdirAll(tools, 0o755)
		script := filepath.Join(tools, "build.sh")
		livetest.WriteProgram(script, []byte("#!/bin/sh\n"), 0o755)
		before := devIno(t, tools)
		out := mustRun(t, sandboxRun{bwrap: bwrap, request: Request{Workdir: workdir, ReadOnly: []string{tools}}}, "hostile-protect", "vendor/tools")
		if got := devIno(t, tools); got != before {
			t.Errorf("vendor/tools is another directory on the host after the run\n%s", out)
		}
		if data, _ := os.ReadFile(script); string(data) != "#!/bin/sh\n" {
			t.Errorf("build.sh changed: %q", data)
		}
	})
}

// requireFsmonitorRuns is the precondition of a fsmonitor attack test: this host's git,
// given config, does run the fsmonitor (it touches marker). Otherwise "the marker is
// absent" would prove nothing. The marker is removed again.
func requireFsmonitorRuns(t *testing.T, gitPath, config, marker string) {
	t.Helper()
	repo := t.TempDir()
	cmd := exec.Command(gitPath, "-C", repo, "init", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git", "config"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	status := exec.Command(gitPath, "-C", repo, "status", "--porcelain")
	status.Env = []string{"HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
	status.CombinedOutput()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("precondition: a host git status with this config runs its fsmonitor (touching %s), or the attack's absence proves nothing: %v", marker, err)
	}
	os.Remove(marker)
}
