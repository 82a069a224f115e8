package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/doctor/selftest"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// treeScript forks what outlives a shell: a setsid, a double fork, a nohup, a daemon that
// ignores the signals a terminal sends, and (where it was built) the pid 1 takeover.
// Every long-lived process names the workdir in its command line and beats into it.
const treeScript = `if [ "$2" = beat ]; then
	trap '' HUP INT TERM
	while :; do echo "$3" >> "$1/hb"; sleep 0.05; done
fi
setsid sh "$0" "$1" beat setsid &
( sh "$0" "$1" beat double & ) &
nohup sh "$0" "$1" beat nohup >/dev/null 2>&1 &
sh "$0" "$1" beat daemon &
if [ -x "$1/takeover" ]; then cd "$1" && "$1/takeover" 30 & fi
wait
`

// TestLiveKilledRunLeavesNothing: SIGKILL of `bwrapkit run`, or of its process group, at
// a random moment (before bwrap, between bwrap's clone and its uid map, during the gate,
// while the command runs) must leave nothing of the run alive within a second: the
// keeper, in its own session, kills the sandbox. The command forks trees and rewrites
// bwrap's pid 1.
func TestLiveKilledRunLeavesNothing(t *testing.T) {
	bwraps := livetest.Bwraps(t)
	takeover := buildTakeover(t)
	const kills = 300
	survived := killTrials(t, bwraps, kills, 8, func(trial int) time.Duration {
		if trial%3 == 0 {
			// A third within the first 30 ms, where bwrap clones and maps its child.
			return time.Duration(rand.Int64N(int64(30 * time.Millisecond)))
		}
		return time.Duration(rand.Int64N(int64(400 * time.Millisecond)))
	}, func(bwrap string, delay time.Duration, group bool) string {
		return killRunAt(t, bwrap, takeover, delay, group)
	})
	t.Logf("%d SIGKILLs at random moments, %d left something of the run alive", kills, survived)
}

// TestLiveKilledDoctorLeavesNothing: SIGKILL of `bwrapkit doctor`, or of its process
// group, at a random moment of its self-tests must leave no sandbox alive: the doctor's
// runs are kept as `bwrapkit run`'s are. Unkept, a doctor killed between a bwrap's clone
// and its uid map left that bwrap's child blocked on bwrap's eventfd, forever.
func TestLiveKilledDoctorLeavesNothing(t *testing.T) {
	bwraps := livetest.Bwraps(t)
	// How long one doctor takes here: the kills fall anywhere within it.
	environ, _ := attackEnv(t, bwraps[0].Path)
	timing := exec.Command(builtBinary, "doctor", "--output", os.DevNull)
	timing.Env = environ
	began := time.Now()
	_ = timing.Run() // its verdict is the doctor tests' business; its duration is this one's
	span := max(time.Since(began), 20*time.Millisecond)
	const kills = 60
	survived := killTrials(t, bwraps, kills, 4, func(int) time.Duration {
		return time.Duration(rand.Int64N(int64(span)))
	}, func(bwrap string, delay time.Duration, group bool) string {
		return killDoctorAt(t, bwrap, delay, group)
	})
	t.Logf("%d SIGKILLs of a doctor at random moments within %v, %d left a sandbox alive", kills, span, survived)
}

// killTrials runs kills trials, concurrent at a time, each with the next of bwraps, a
// delay and, every other one, the whole process group as the target; trial says what of
// its run is left alive after the kill ("" for nothing), and each such one fails the test.
// So do run cgroups left behind: the keeper removes them (as root here) whenever its
// bwrapkit died. It returns how many trials left something alive.
func killTrials(t *testing.T, bwraps []livetest.Bwrap, kills, concurrent int, delay func(trial int) time.Duration, trial func(bwrap string, delay time.Duration, group bool) string) int {
	cgroupsBefore := runCgroupDirs()
	var mu sync.Mutex
	survived := 0
	var wg sync.WaitGroup
	for worker := range concurrent {
		wg.Go(func() {
			for n := worker; n < kills; n += concurrent {
				bwrap, after, group := bwraps[n%len(bwraps)], delay(n), n%2 == 1
				if left := trial(bwrap.Path, after, group); left != "" {
					mu.Lock()
					survived++
					mu.Unlock()
					t.Errorf("%s, SIGKILL of bwrapkit%s after %v: %s", bwrap.Name, map[bool]string{true: "'s process group"}[group], after, left)
				}
			}
		})
	}
	wg.Wait()
	if leaked := leakedCgroups(cgroupsBefore); len(leaked) > 0 {
		t.Errorf("%d run cgroups left behind by the killed runs: %v", len(leaked), leaked)
	}
	return survived
}

// killDoctorAt runs a doctor over a cache of its own, SIGKILLs it (or its group) after
// delay, and says what of its sandboxes is alive a second later ("" for nothing): their
// bwrap command lines name the self-tests' directory in that cache.
func killDoctorAt(t *testing.T, bwrap string, delay time.Duration, group bool) string {
	environ, cache := attackEnv(t, bwrap)
	cmd := exec.Command(builtBinary, "doctor", "--output", os.DevNull)
	cmd.Env = environ
	killAt(t, cmd, delay, group)
	t.Cleanup(func() { killNaming(cache) })
	removePlantedSecrets(t, cache)
	if left := aliveNaming(cache); left != "" {
		return "the doctor's cache: " + left
	}
	return ""
}

// killAt starts cmd in a process group of its own, SIGKILLs it (or its group) after delay,
// and reaps it.
func killAt(t *testing.T, cmd *exec.Cmd, delay time.Duration, group bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	if group {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	} else {
		_ = cmd.Process.Kill()
	}
	_ = cmd.Wait()
}

// aliveNaming waits up to a second for no process to name dir in its command line, and
// says what still does ("" for nothing).
func aliveNaming(dir string) string {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && len(naming(dir)) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if left := naming(dir); len(left) > 0 {
		return fmt.Sprintf("processes still name it after 1s: %s; keepers alive: %v", describe(left), keepersOf(left))
	}
	return ""
}

// removePlantedSecrets removes what secrets-hidden of a doctor killed mid-run left in
// /root, where a root doctor plants too (the test's HOME is its own): the file named by
// that doctor's token, which its fd canary in cache carries, and no other doctor's.
func removePlantedSecrets(t *testing.T, cache string) {
	if os.Geteuid() != 0 {
		return
	}
	canaries, _ := filepath.Glob(filepath.Join(cache, "bwrapkit", "selftest", "*", "fd-canary-*"))
	for _, canary := range canaries {
		token := strings.TrimPrefix(filepath.Base(canary), "fd-canary-")
		if err := os.Remove(filepath.Join("/root", selftest.SecretPrefix+token)); err != nil && !os.IsNotExist(err) {
			t.Errorf("removing the killed doctor's planted secret: %v", err)
		}
	}
}

// buildTakeover compiles testdata/attacks/pid1-takeover.c where it can run (amd64 with
// gcc), else the trees go without it.
func buildTakeover(t *testing.T) string {
	gcc, err := exec.LookPath("gcc")
	if runtime.GOARCH != "amd64" || err != nil {
		t.Log("no pid 1 takeover in the trees (needs gcc on amd64)")
		return ""
	}
	out := filepath.Join(livetest.TempDir(t), "takeover")
	if msg, err := exec.Command(gcc, "-static", "-O1", "-o", out, filepath.Join(livetest.RepoRoot(), "testdata", "attacks", "pid1-takeover.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, msg)
	}
	os.Chmod(out, 0o755)
	return out
}

// killRunAt runs the tree under bwrapkit, SIGKILLs bwrapkit (or its group) after delay,
// and says what of the run is alive a second later ("" for nothing).
func killRunAt(t *testing.T, bwrap, takeover string, delay time.Duration, group bool) string {
	workdir := livetest.TempDir(t)
	script := filepath.Join(workdir, "tree.sh")
	if err := livetest.WriteProgram(script, []byte(treeScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if takeover != "" {
		data, err := os.ReadFile(takeover)
		if err != nil || livetest.WriteProgram(filepath.Join(workdir, "takeover"), data, 0o755) != nil {
			t.Fatalf("copying the takeover: %v", err)
		}
	}
	environ, _ := attackEnv(t, bwrap)
	cmd := exec.Command(builtBinary, "run", "--workdir", workdir, "--", "sh", script, workdir)
	cmd.Env = environ
	// A survivor holds the stderr pipe: Wait must not wait for it (the check below says).
	cmd.Stderr = new(bytes.Buffer)
	killAt(t, cmd, delay, group)
	t.Cleanup(func() { killNaming(workdir) })
	if left := aliveNaming(workdir); left != "" {
		return "the workdir: " + left
	}
	// Nothing names the workdir; no heartbeat may still grow either (a process that did
	// not keep the workdir in its command line, the takeover's own children).
	heartbeat := filepath.Join(workdir, "hb")
	before := fileSize(heartbeat)
	time.Sleep(300 * time.Millisecond)
	if after := fileSize(heartbeat); after > before {
		return fmt.Sprintf("the heartbeat still grows (%d to %d bytes)", before, after)
	}
	if data, _ := os.ReadFile(filepath.Join(workdir, "heartbeat")); len(data) > 0 {
		before := len(data)
		time.Sleep(600 * time.Millisecond)
		if data, _ := os.ReadFile(filepath.Join(workdir, "heartbeat")); len(data) > before {
			return "the pid 1 takeover's heartbeat still grows"
		}
	}
	return ""
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// pfExiting is the kernel's PF_EXITING task flag (the ninth field of /proc/PID/stat): set
// once a task has begun do_exit, from which it never returns to user space.
const pfExiting = 0x4

// dying: SIGKILL is pending for pid, it is already in its exit path (the signal taken,
// PF_EXITING set, not yet a zombie), or it is a zombie, so it runs no more instruction of
// its own (on a loaded host it may take a while to be scheduled and exit).
func dying(pid int) bool {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return true // gone
	}
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		// After the command name, which may hold anything but ends at the last ')'.
		if end := bytes.LastIndexByte(stat, ')'); end >= 0 {
			// fields[0] is the state, fields[6] the flags.
			fields := strings.Fields(string(stat[end+1:]))
			if len(fields) > 6 {
				if flags, err := strconv.ParseUint(fields[6], 10, 64); err == nil && flags&pfExiting != 0 {
					return true
				}
			}
		}
	}
	for line := range strings.Lines(string(status)) {
		// A zombie has exited and runs nothing: it waits only for its parent (the host's
		// init, once bwrapkit is gone) to reap it, which a loaded host may do late.
		if state, found := strings.CutPrefix(line, "State:"); found && (strings.HasPrefix(strings.TrimSpace(state), "Z") || strings.HasPrefix(strings.TrimSpace(state), "X")) {
			return true
		}
		for _, key := range []string{"SigPnd:", "ShdPnd:"} {
			if mask, found := strings.CutPrefix(line, key); found {
				if pending, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && pending&(1<<(syscall.SIGKILL-1)) != 0 {
					return true
				}
			}
		}
	}
	return false
}

// naming lists the live processes whose command line contains dir: bwrap, its children
// before the command (they share its argv), and the tree's shells; not those already
// killed.
func naming(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + entry.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(dir)) && !dying(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killNaming ends what a failed trial left, each through a pidfd taken before a second
// look at its command line: only this test's processes are signalled.
func killNaming(dir string) {
	for range 10 {
		pids := naming(dir)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && bytes.Contains(cmdline, []byte(dir)) {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// describe says what each process is, for a failure's message.
func describe(pids []int) string {
	var out []string
	for _, pid := range pids {
		status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		wchan, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		var fields []string
		for line := range strings.Lines(string(status)) {
			for _, key := range []string{"Name:", "State:", "PPid:", "NSpid:", "SigCgt:", "SigPnd:", "ShdPnd:"} {
				if strings.HasPrefix(line, key) {
					fields = append(fields, strings.Join(strings.Fields(line), " "))
				}
			}
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		fields = append(fields, fmt.Sprintf("environ %q %v", environ, err))
		out = append(out, fmt.Sprintf("%d (%s; wchan %s; argv0 %s)", pid, strings.Join(fields, ", "), wchan, argv0))
	}
	return strings.Join(out, "; ")
}

// keepersOf lists the keeper processes of the runs whose processes are left (their token
// is the keeper's argument), for a failure's message.
func keepersOf(left []int) []int {
	var keepers []int
	for _, pid := range left {
		environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		for entry := range strings.SplitSeq(string(environ), "\x00") {
			if token, found := strings.CutPrefix(entry, "BWRAPKIT_RUN="); found {
				keepers = append(keepers, naming(token)...)
			}
		}
	}
	return keepers
}
