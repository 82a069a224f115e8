package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
)

// The run's cgroup, tried with the built binary and a command that takes what a cgroup
// must bound (testdata/attacks/hog.c), as root (a cgroup here) and as a user (none here:
// the run says so, and a bound it cannot hold is refused).

// cgroupHost skips where the test's user gets no cgroup: the host's state, which
// TestLiveNoCgroupIsSaid covers.
func cgroupHost(t *testing.T) cgroup.Host {
	t.Helper()
	host := cgroup.Detect()
	switch {
	case host.Mode == cgroup.None && os.Geteuid() == 0:
		// Root gets a cgroup on every host this project supports (v2, or hybrid with
		// cgroup.kill): none is a failure where live tests are required.
		livetest.Skip(t, "no cgroup for root on this host: "+host.Why)
	case host.Mode == cgroup.None:
		t.Skipf("no cgroup for uid %d on this host (%s): TestLiveNoCgroupIsSaid covers it", os.Geteuid(), host.Why)
	}
	return host
}

// hogIn compiles testdata/attacks/hog.c into workdir, where the sandbox can run it.
func hogIn(t *testing.T, workdir string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		livetest.Skip(t, "no gcc to build testdata/attacks/hog.c (scripts/ci-deps.sh installs it)")
	}
	out := filepath.Join(workdir, "hog")
	if msg, err := exec.Command(gcc, "-static", "-O1", "-o", out, filepath.Join(livetest.RepoRoot(), "testdata", "attacks", "hog.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, msg)
	}
	return out
}

// hogReached is what hog said it held ("memfd 200" → 200), or -1 when it was killed
// before it could say.
func hogReached(t *testing.T, stdout, mode string) int {
	for line := range strings.Lines(stdout) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), mode+" "); ok {
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("hog said %q", line)
			}
			return n
		}
	}
	return -1
}

// TestLiveCgroupBoundsMemory: memory held through memfds (outside any address space,
// so RLIMIT_AS does not see it) and 200,000 inodes in a 1 MiB /tmp (tmpfs --size bounds
// pages, not inodes: 145 MiB of kernel memory without a cgroup) stay under --limit
// memory, on each bwrap: the kernel refuses or kills the command.
func TestLiveCgroupBoundsMemory(t *testing.T) {
	cgroupHost(t)
	workdir := livetest.TempDir(t)
	hog := hogIn(t, workdir)
	for _, bwrap := range livetest.Bwraps(t) {
		environ, _ := attackEnv(t, bwrap.Path)
		got := binaryRun(t, environ, "run", "--workdir", workdir, "--limit", "memory=64M", "--", hog, "memfd", "200")
		if n := hogReached(t, got.stdout, "memfd"); n >= 64 || (n < 0 && got.status != 137) {
			t.Errorf("%s: 200 MiB of memfds under --limit memory=64M: held %d MiB, status %d: %s", bwrap.Name, n, got.status, got.stderr)
		}
		// A command the kernel killed at the bound is said to be so, not left a bare 137.
		if got.status == 137 && !strings.Contains(got.stderr, "OOM killer ended a process of the run: it reached its memory bound of 64M") {
			t.Errorf("%s: killed at --limit memory=64M (137) without saying so: %s", bwrap.Name, got.stderr)
		}
		got = binaryRun(t, environ, "run", "--workdir", workdir, "--limit", "memory=32M", "--limit", "tmpfs=1M", "--", hog, "inodes", "200000", "/tmp")
		if n := hogReached(t, got.stdout, "inodes"); n == 200000 || (n < 0 && got.status != 137) {
			t.Errorf("%s: 200,000 inodes in a 1 MiB /tmp under --limit memory=32M: made %d, status %d: %s", bwrap.Name, n, got.status, got.stderr)
		}
	}
}

// TestLiveCgroupBoundsPids: --limit pids bounds the run's tasks, for root too (whose
// RLIMIT_NPROC binds nothing: the sandbox's uid is host uid 0).
func TestLiveCgroupBoundsPids(t *testing.T) {
	cgroupHost(t)
	workdir := livetest.TempDir(t)
	hog := hogIn(t, workdir)
	for _, bwrap := range livetest.Bwraps(t) {
		environ, _ := attackEnv(t, bwrap.Path)
		got := binaryRun(t, environ, "run", "--workdir", workdir, "--limit", "pids=64", "--", hog, "fork", "300")
		if n := hogReached(t, got.stdout, "fork"); n < 0 || n >= 64 {
			t.Errorf("%s: 300 forks under --limit pids=64: forked %d, status %d: %s", bwrap.Name, n, got.status, got.stderr)
		}
	}
}

// TestLiveCgroupRemovedAfterEveryRun: the run's cgroups are gone when bwrapkit returns
// (an exit, a timeout with a tree that left its session), and within two seconds of a
// SIGKILL of bwrapkit or of its process group (the keeper removes them, within its bound).
func TestLiveCgroupRemovedAfterEveryRun(t *testing.T) {
	cgroupHost(t)
	bwraps := livetest.Bwraps(t)
	for i, end := range []string{"exit", "timeout", "kill", "kill-group"} {
		bwrap := bwraps[i%len(bwraps)]
		t.Run(end, func(t *testing.T) {
			workdir := livetest.TempDir(t)
			environ, _ := attackEnv(t, bwrap.Path)
			// "started" on stdout: a file in the workdir would land only at the end (the
			// transactional mode).
			script := "setsid sleep 60 >/dev/null & echo started; "
			if end == "exit" {
				script += "exit 3"
			} else {
				script += "exec sleep 60"
			}
			args := []string{"run", "--workdir", workdir}
			if end == "timeout" {
				args = append(args, "--timeout", "2s")
			}
			cmd := exec.Command(builtBinary, append(args, "--", "sh", "-c", script)...)
			cmd.Env = environ
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.WaitDelay = time.Second
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			started := make(chan string, 1)
			go func() {
				line, _ := bufio.NewReader(stdout).ReadString('\n')
				started <- line
				_, _ = io.Copy(io.Discard, stdout)
			}()
			t.Cleanup(func() { killNaming(workdir) })
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var names []string
			deadline := time.Now().Add(30 * time.Second)
			for len(names) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("no run cgroup found for bwrapkit %d: %s", cmd.Process.Pid, stderr.String())
				}
				names = runCgroupsOf(cmd.Process.Pid)
				time.Sleep(5 * time.Millisecond)
			}
			// What this run left, removed even when the test fails (the deepest first).
			t.Cleanup(func() {
				left := leftCgroups(names)
				for _, dir := range left {
					_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
				}
				for wait := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(wait); left = leftCgroups(names) {
					slices.Reverse(left)
					for _, dir := range left {
						_ = os.Remove(dir)
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
			select {
			case line := <-started:
				if line != "started\n" {
					t.Fatalf("the command said %q: %s", line, stderr.String())
				}
			case <-time.After(time.Until(deadline)):
				t.Fatalf("the command never started: %s", stderr.String())
			}
			switch end {
			case "kill":
				_ = cmd.Process.Kill()
			case "kill-group":
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("bwrapkit did not return: %s", stderr.String())
			}
			if strings.HasPrefix(end, "kill") {
				// The keeper ends the run's cgroup: within its bound (10 s for a cgroup to
				// empty and go; a loaded host's keeper may be scheduled late), not at once.
				for wait := time.Now().Add(12 * time.Second); time.Now().Before(wait) && len(leftCgroups(names)) > 0; {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if left := leftCgroups(names); len(left) > 0 {
				t.Errorf("after %s the run's cgroups are left: %v\n%s", end, left, stderr.String())
			}
		})
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// runCgroupsOf finds the run cgroup a child of pid (bwrap) is in, as names (each run's
// cgroups share one name across hierarchies).
func runCgroupsOf(pid int) []string {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		children, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, child := range strings.Fields(string(children)) {
			groups, _ := os.ReadFile("/proc/" + child + "/cgroup")
			for line := range strings.Lines(string(groups)) {
				if base := filepath.Base(strings.TrimSpace(line)); strings.HasPrefix(base, cgroup.Prefix) {
					return []string{base}
				}
			}
		}
	}
	return nil
}

// leftCgroups lists the directories named names under /sys/fs/cgroup that still exist.
func leftCgroups(names []string) []string {
	var left []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, entry fs.DirEntry, err error) error {
		if err != nil || !entry.IsDir() {
			return nil
		}
		if strings.Count(path, "/") > 8 {
			return fs.SkipDir
		}
		for _, name := range names {
			if entry.Name() == name {
				left = append(left, path)
			}
		}
		return nil
	})
	return left
}

// TestLiveNoCgroupIsSaid: where the host gives a run no cgroup (here: a user on a hybrid
// host), the run says so once on stderr and in its report, and a --limit memory or pids
// it cannot hold is refused before the command runs; where it gives one, the report
// names the mode and nothing is said.
func TestLiveNoCgroupIsSaid(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	host := cgroup.Detect()
	workdir := livetest.TempDir(t)
	environ, _ := attackEnv(t, bwrap)
	report := filepath.Join(workdir, "report.json")
	got := binaryRun(t, environ, "run", "--workdir", workdir, "--report", report, "--", "true")
	if got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	var doc struct {
		Cgroup *struct {
			Mode   string `json:"mode"`
			Why    string `json:"why"`
			Remedy string `json:"remedy"`
		} `json:"cgroup"`
	}
	data, err := os.ReadFile(report)
	if err != nil || json.Unmarshal(data, &doc) != nil || doc.Cgroup == nil {
		t.Fatalf("the report has no cgroup: %v\n%s", err, data)
	}
	if doc.Cgroup.Mode != string(host.Mode) {
		t.Errorf("the report says cgroup mode %q, the host gives %q", doc.Cgroup.Mode, host.Mode)
	}
	said := strings.Count(got.stderr, "no cgroup of its own")
	marker := filepath.Join(workdir, "ran")
	refused := binaryRun(t, environ, "run", "--workdir", workdir, "--limit", "memory=64M", "--", "touch", marker)
	if host.Mode != cgroup.None {
		if said != 0 || doc.Cgroup.Why != "" {
			t.Errorf("a run in a cgroup said it had none: %q, %q", got.stderr, doc.Cgroup.Why)
		}
		if refused.status != 0 {
			t.Errorf("--limit memory=64M with a cgroup: status %d: %s", refused.status, refused.stderr)
		}
		return
	}
	if said != 1 || doc.Cgroup.Why != host.Why || doc.Cgroup.Remedy != host.Remedy {
		t.Errorf("a run without a cgroup said so %d times on stderr (want 1), report why %q:\n%s", said, doc.Cgroup.Why, got.stderr)
	}
	if refused.status != 125 || !strings.Contains(refused.stderr, "--limit memory=64M needs a cgroup") || exists(marker) {
		t.Errorf("--limit memory=64M without a cgroup: status %d (want 125, the command not run: ran %v): %s", refused.status, exists(marker), refused.stderr)
	}
	// Both bounds chosen unlimited: nothing a cgroup must hold was asked, so nothing said.
	chosen := binaryRun(t, environ, "run", "--workdir", workdir, "--limit", "memory=unlimited", "--limit", "pids=unlimited", "--", "true")
	if chosen.status != 0 || strings.Contains(chosen.stderr, "no cgroup of its own") {
		t.Errorf("memory=unlimited, pids=unlimited without a cgroup: status %d: %s", chosen.status, chosen.stderr)
	}
}

// runCgroupDirs lists every run cgroup directory under /sys/fs/cgroup.
func runCgroupDirs() map[string]bool {
	dirs := map[string]bool{}
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, entry fs.DirEntry, err error) error {
		switch {
		case err != nil || !entry.IsDir():
			return nil
		case strings.HasPrefix(entry.Name(), cgroup.Prefix):
			dirs[path] = true
			return fs.SkipDir
		case strings.Count(path, "/") > 8:
			return fs.SkipDir
		}
		return nil
	})
	return dirs
}

// leakedCgroups are the run cgroups made since before (a snapshot of runCgroupDirs) that
// are still there, empty, a while later: a live run's cgroup is empty only for the moment
// between its mkdir and bwrap's clone, and at its end, so one that stays empty was left
// behind. Runs of other tests meanwhile hold processes and are not counted. The leaked
// ones are removed.
func leakedCgroups(before map[string]bool) []string {
	empty := func(dir string) bool {
		procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		return err == nil && len(strings.TrimSpace(string(procs))) == 0
	}
	// Each keeper has 10 s to empty and remove its run's cgroups; a loaded host may
	// schedule it late. So an empty new one counts only if it is still there after 12 s.
	var leaked []string
	for deadline := time.Now().Add(12 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		leaked = leaked[:0]
		for dir := range runCgroupDirs() {
			if !before[dir] && empty(dir) {
				leaked = append(leaked, dir)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, dir := range leaked {
		_ = os.Remove(dir)
	}
	return leaked
}

// TestLiveMemoryKillIsNamed: a command the OOM killer ends at the run's memory bound exits
// 137, and the run says why on stderr and in the report's cgroup; a run that stays under
// its bound says nothing of it.
func TestLiveMemoryKillIsNamed(t *testing.T) {
	cgroupHost(t)
	workdir := livetest.TempDir(t)
	hog := hogIn(t, workdir)
	for _, bwrap := range livetest.Bwraps(t) {
		environ, _ := attackEnv(t, bwrap.Path)
		report := filepath.Join(livetest.TempDir(t), "report.json")
		got := binaryRun(t, environ, "run", "--workdir", workdir, "--limit", "memory=48M", "--report", report, "--", hog, "memfd", "200")
		var written struct {
			Cgroup struct {
				OOMKills    uint64 `json:"oom_kills"`
				MemoryBound uint64 `json:"memory_bound"`
			} `json:"cgroup"`
		}
		data, err := os.ReadFile(report)
		if err == nil {
			err = json.Unmarshal(data, &written)
		}
		switch {
		case err != nil:
			t.Errorf("%s: the report: %v", bwrap.Name, err)
		case got.status != 137 || !strings.Contains(got.stderr, "OOM killer ended a process of the run: it reached its memory bound of 48M (raise it with --limit memory=SIZE)"):
			t.Errorf("%s: 200 MiB of memfds under 48M: status %d (want 137, named): %s", bwrap.Name, got.status, got.stderr)
		case written.Cgroup.OOMKills == 0 || written.Cgroup.MemoryBound != 48<<20:
			t.Errorf("%s: the report's cgroup does not name the kill: %s", bwrap.Name, data)
		}
		under := binaryRun(t, environ, "run", "--workdir", workdir, "--limit", "memory=48M", "--", hog, "memfd", "8")
		if under.status != 0 || strings.Contains(under.stderr, "OOM") {
			t.Errorf("%s: 8 MiB under 48M: status %d: %s", bwrap.Name, under.status, under.stderr)
		}
	}
}
