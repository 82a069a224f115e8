package limits

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"golang.org/x/sys/unix"
)

// sandboxed is what one helper run inside bwrap reported.
type sandboxed struct {
	report map[string]string
	exit   int
	stderr string
}

func (s sandboxed) get(t *testing.T, key string) string {
	t.Helper()
	v, ok := s.report[key]
	if !ok {
		t.Fatalf("helper reported no %q (report %v, exit %d, stderr %q)", key, s.report, s.exit, s.stderr)
	}
	return v
}

func (s sandboxed) num(t *testing.T, key string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s.get(t, key), 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, s.report[key], err)
	}
	return n
}

// runBounded starts the helper (or the host program action[0] when that is a path) in a real bwrap that waits on --block-fd, reads the
// sandboxed child's pid from --json-status-fd, calls Apply on it (unless apply is
// false, the control that shows the test can fail), then lets the child go on. mounts
// come before the helper's own bind, so a tmpfs over /tmp cannot hide the binary.
func runBounded(t *testing.T, bwrap string, l Limits, apply bool, mounts []string, action ...string) sandboxed {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"--unshare-all", "--unshare-user", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"}
	args = append(args, mounts...)
	args = append(args, "--ro-bind", exe, exe, "--block-fd", "3", "--json-status-fd", "4", "--")
	if !strings.HasPrefix(action[0], "/") { // else a host program is the command
		args = append(args, exe)
	}
	args = append(args, action...)

	blockRead, blockWrite, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer blockWrite.Close()
	statusRead, statusWrite, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer statusRead.Close()
	cmd := exec.CommandContext(ctx, bwrap, args...)
	// Its own process group, so a failure kills bwrap's child too (it has no
	// --die-with-parent before the block fd releases it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), helperEnv+"=1", "GOMAXPROCS=1", raceNoExitSleep)
	cmd.ExtraFiles = []*os.File{blockRead, statusWrite} // fds 3 and 4
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	blockRead.Close()
	statusWrite.Close()

	pid, err := childPid(ctx, statusRead)
	if err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		t.Fatalf("%s: no child-pid on the status fd: %v (stderr %q)", bwrap, err, stderr.String())
	}
	if apply {
		if err := Apply(pid, l); err != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			t.Fatalf("Apply(%d): %v", pid, err)
		}
	}
	if _, err := blockWrite.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	blockWrite.Close()
	waitErr := cmd.Wait()
	var exitErr *exec.ExitError
	out := sandboxed{report: map[string]string{}, stderr: stderr.String()}
	switch {
	case errors.As(waitErr, &exitErr):
		out.exit = exitErr.ExitCode()
	case waitErr != nil:
		t.Fatalf("bwrap: %v", waitErr)
	}
	if ctx.Err() != nil {
		t.Fatalf("bwrap did not finish in time: %v", ctx.Err())
	}
	for _, line := range strings.Split(stdout.String(), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if ok {
			out.report[key] = value
		}
	}
	return out
}

// childPid reads bwrap's first status line, {"child-pid": N, ...}, within ctx.
func childPid(ctx context.Context, status *os.File) (int, error) {
	type result struct {
		pid int
		err error
	}
	done := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(status).ReadBytes('\n')
		if err != nil {
			done <- result{err: fmt.Errorf("status fd: %w (read %q)", err, line)}
			return
		}
		var msg struct {
			ChildPid int `json:"child-pid"`
		}
		if err := json.Unmarshal(line, &msg); err != nil || msg.ChildPid <= 0 {
			done <- result{err: fmt.Errorf("status line %q: %v", line, err)}
			return
		}
		done <- result{pid: msg.ChildPid}
	}()
	select {
	case r := <-done:
		return r.pid, r.err
	case <-ctx.Done():
		status.Close() // ends the read above
		return 0, ctx.Err()
	}
}

func mustParse(t *testing.T, specs ...string) Limits {
	t.Helper()
	l, err := Parse(specs, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// asRoot: a root caller's command is exempt from RLIMIT_NPROC (copy_process skips the
// check when the task's real user is INIT_USER, which host uid 0 mapped into a user
// namespace still is).
func asRoot() bool { return os.Getuid() == 0 }

func TestLiveCommandSeesBounds(t *testing.T) {
	l := mustParse(t, "nproc=64", "nofile=256", "fsize=1M", "as=64G")
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			got := runBounded(t, bw.Path, l, true, nil, "rlimits")
			for key, want := range map[string]string{
				"self.as": "68719476736/68719476736 ok", "self.core": "0/0 ok", "self.fsize": "1048576/1048576 ok",
				"self.nofile": "256/256 ok", "self.nproc": "64/64 ok",
				"init.processes": "64/64", "init.open": "256/256",
			} {
				if v := got.get(t, key); v != want {
					t.Errorf("%s = %q, want %q", key, v, want)
				}
			}
			// The command cannot undo its bounds: no capability in the initial user
			// namespace, so a hard limit never rises, and a soft one never passes it.
			for _, name := range []string{"as", "core", "fsize", "nofile", "nproc"} {
				for key, want := range map[string]string{"raise-hard.": "EPERM", "raise-soft.": "EINVAL", "raise-prlimit.": "EPERM"} {
					if v := got.get(t, key+name); v != want {
						t.Errorf("%s%s = %s, want %s", key, name, v, want)
					}
				}
			}
			// The control: without Apply the command has the host's limits, so the
			// assertions above can fail.
			control := runBounded(t, bw.Path, l, false, nil, "rlimits")
			if v := control.get(t, "self.nofile"); v == "256/256 ok" {
				t.Fatalf("without Apply the command still saw nofile %s: the test proves nothing", v)
			}
		})
	}
}

func TestLiveNproc(t *testing.T) {
	const nproc = 64
	l := mustParse(t, "nproc="+strconv.Itoa(nproc))
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			outside := hostTasks(t, os.Getuid())
			got := runBounded(t, bw.Path, l, true, nil, "fork", strconv.Itoa(nproc+50))
			forked, tasks, stop := got.num(t, "forked"), got.num(t, "tasks"), got.get(t, "stop")
			t.Logf("uid %d (%d tasks on the host before): baseline %d tasks, forked %d, %d tasks at the stop, stop=%s",
				os.Getuid(), outside, got.num(t, "baseline"), forked, tasks, stop)
			if asRoot() {
				// Documented in docs/run.md and sandbox/limits/README.md: nproc does not bind a root caller.
				if stop != "ok" || forked != nproc+50 {
					t.Fatalf("as root: forked %d, stop %s; the kernel now enforces RLIMIT_NPROC for root: update docs/run.md and sandbox/limits/README.md", forked, stop)
				}
				return
			}
			if stop != "EAGAIN" || tasks > nproc {
				t.Fatalf("as uid %d: forked %d, stop %s, %d tasks in the sandbox; want EAGAIN at %d tasks", os.Getuid(), forked, stop, tasks, nproc)
			}
			// Counted per user namespace: the sandbox's own tasks reach the limit, the
			// caller's tasks outside do not use it up.
			if tasks != nproc {
				t.Errorf("the sandbox stopped at %d tasks, not %d: the count includes tasks outside", tasks, nproc)
			}
			if after := got.num(t, "after"); after != got.num(t, "baseline") {
				t.Errorf("%d tasks left after the children were killed, want %d", after, got.num(t, "baseline"))
			}
		})
	}
}

func TestLiveNprocNestedUserns(t *testing.T) {
	// A command that makes its own user namespace gets no fresh budget: the kernel
	// charges every task to each ancestor namespace too and checks each level against
	// the limit its creator had (is_rlimit_overlimit), so the sandbox's 64 still hold.
	const nproc = 64
	l := mustParse(t, "nproc="+strconv.Itoa(nproc))
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			got := runBounded(t, bw.Path, l, true, nil, "fork-nested", strconv.Itoa(nproc+50))
			if nested := got.get(t, "nested"); nested != "ok" {
				t.Logf("no nested user namespace (%s): nothing to escape with", nested)
				return
			}
			forked, tasks := got.num(t, "forked"), got.num(t, "tasks")
			t.Logf("uid %d: forked %d in a nested user namespace, %d tasks in the sandbox", os.Getuid(), forked, tasks)
			if asRoot() {
				if forked != nproc+50 {
					t.Fatalf("as root: forked %d; the kernel now enforces RLIMIT_NPROC for root: update docs/run.md and sandbox/limits/README.md", forked)
				}
				return
			}
			if tasks > nproc || forked >= nproc {
				t.Fatalf("as uid %d: %d tasks (%d forked in the nested namespace) passed nproc=%d", os.Getuid(), tasks, forked, nproc)
			}
		})
	}
}

func TestLiveDefaults(t *testing.T) {
	// The defaults never fail on a host whose hard limits are lower: Apply lowers them
	// to the caller's (here 20000 open files as root and as nobody alike).
	inherited, err := Inherited()
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults().Within(inherited)
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			got := runBounded(t, bw.Path, Defaults(), true, nil, "rlimits")
			for _, r := range want.Rlimits() {
				name := string(resourceName(r.Resource))
				if v, w := got.get(t, "self."+name), fmt.Sprintf("%d/%d ok", r.Cur, r.Max); v != w {
					t.Errorf("default %s: the command saw %s, want %s", name, v, w)
				}
			}
		})
	}
}

func TestLiveExplicitAboveHardLimit(t *testing.T) {
	// A value the user set above the caller's hard limit is refused, never quietly
	// lowered, unless the caller holds CAP_SYS_RESOURCE (this machine's root does not).
	inherited, err := Inherited()
	if err != nil {
		t.Fatal(err)
	}
	var hard uint64
	for _, r := range inherited {
		if r.Resource == unix.RLIMIT_NOFILE {
			hard = r.Max
		}
	}
	l := mustParse(t, "nofile="+strconv.FormatUint(hard+1, 10))
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			ran, err := releaseAfterApply(t, bw.Path, l)
			var aerr *ApplyError
			switch {
			case hasCapSysResource(t):
				if err != nil || !ran {
					t.Fatalf("with CAP_SYS_RESOURCE, nofile=%d: %v (command ran: %v)", hard+1, err, ran)
				}
			case !errors.As(err, &aerr):
				t.Fatalf("as uid %d, nofile=%d above the hard limit %d: Apply = %v, want *ApplyError", os.Getuid(), hard+1, hard, err)
			case !strings.Contains(err.Error(), "hard limit is "+strconv.FormatUint(hard, 10)):
				t.Errorf("the message does not name the hard limit: %v", err)
			case ran:
				t.Fatal("Apply failed, yet the command ran once the block fd closed: Apply must kill the child")
			default:
				t.Logf("refused, and the command never ran: %v", err)
			}
		})
	}
}

// releaseAfterApply starts the helper behind --block-fd, calls Apply, then does what a
// careless caller would whatever Apply said: closes the block fd (end-of-file releases
// bwrap's child) and waits. It reports whether the command ran and Apply's error.
func releaseAfterApply(t *testing.T, bwrap string, l Limits) (bool, error) {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	blockRead, blockWrite, _ := os.Pipe()
	statusRead, statusWrite, _ := os.Pipe()
	defer statusRead.Close()
	defer blockWrite.Close()
	cmd := exec.CommandContext(ctx, bwrap, "--unshare-all", "--unshare-user", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--block-fd", "3", "--json-status-fd", "4", "--", exe, "rlimits")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), helperEnv+"=1", raceNoExitSleep)
	cmd.ExtraFiles = []*os.File{blockRead, statusWrite}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	blockRead.Close()
	statusWrite.Close()
	pid, err := childPid(ctx, statusRead)
	if err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		t.Fatal(err)
	}
	applyErr := Apply(pid, l)
	blockWrite.Close()
	cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("bwrap did not finish: %v (the child was left waiting)", ctx.Err())
	}
	return strings.Contains(stdout.String(), "self.nofile="), applyErr
}

func TestLiveBlockFdEOFReleases(t *testing.T) {
	// Why Apply kills on failure: bwrap's child takes end-of-file on the block fd as the
	// go-ahead, so without the kill a caller that closes it runs the command unbounded.
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			exe, _ := os.Executable()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			blockRead, blockWrite, _ := os.Pipe()
			cmd := exec.CommandContext(ctx, bw.Path, "--unshare-all", "--unshare-user", "--die-with-parent",
				"--ro-bind", "/", "/", "--proc", "/proc", "--block-fd", "3", "--", exe, "rlimits")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.Env = append(os.Environ(), helperEnv+"=1", raceNoExitSleep)
			cmd.ExtraFiles = []*os.File{blockRead}
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			blockRead.Close()
			blockWrite.Close() // no byte written
			if err := cmd.Wait(); err != nil || !strings.Contains(stdout.String(), "self.nofile=") {
				t.Fatalf("bwrap %v, output %q: end-of-file on the block fd no longer releases the child; Apply's kill is still right, update the comment", err, stdout.String())
			}
		})
	}
}

// hostTasks counts the threads on the host whose real uid is uid.
func hostTasks(t *testing.T, uid int) int {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, proc := range procs {
		if _, err := strconv.Atoi(proc.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + proc.Name() + "/status")
		if err != nil {
			continue // exited meanwhile
		}
		var real, threads int
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				real, _ = strconv.Atoi(f[1])
			} else if len(f) > 1 && f[0] == "Threads:" {
				threads, _ = strconv.Atoi(f[1])
			}
		}
		if real == uid {
			total += threads
		}
	}
	return total
}

// hasCapSysResource reports whether this process may raise hard limits.
func hasCapSysResource(t *testing.T) bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}

func TestLiveNofile(t *testing.T) {
	l := mustParse(t, "nofile=256")
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			got := runBounded(t, bw.Path, l, true, nil, "nofile")
			if got.get(t, "stop") != "EMFILE" || got.num(t, "highest") != 255 {
				t.Fatalf("opened %s, highest fd %s, stop %s; want EMFILE after fd 255",
					got.get(t, "opened"), got.get(t, "highest"), got.get(t, "stop"))
			}
		})
	}
}

func TestLiveFsize(t *testing.T) {
	l := mustParse(t, "fsize=1M")
	tmp := []string{"--tmpfs", "/tmp"}
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			got := runBounded(t, bw.Path, l, true, tmp, "fsize", "/tmp/big", "2097152", "ignore")
			if got.get(t, "stop") != "EFBIG" || got.num(t, "written") != 1<<20 {
				t.Fatalf("wrote %s bytes, stop %s; want EFBIG at 1048576", got.get(t, "written"), got.get(t, "stop"))
			}
			// The Go runtime ignores SIGXFSZ, so the helper sees EFBIG; a C program gets
			// the signal's default action and dies, and bwrap exits 128+25.
			dd, err := exec.LookPath("dd")
			if err != nil {
				t.Skip("no dd (coreutils) to show SIGXFSZ's default action")
			}
			killed := runBounded(t, bw.Path, l, true, tmp, dd, "if=/dev/zero", "of=/tmp/big", "bs=64K", "count=32")
			if killed.exit != 128+25 {
				t.Fatalf("dd past fsize: exit %d (stderr %q); want death by SIGXFSZ (153)", killed.exit, killed.stderr)
			}
		})
	}
}

func TestLiveAddressSpace(t *testing.T) {
	l := mustParse(t, "as=2G")
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			got := runBounded(t, bw.Path, l, true, nil, "mmap", "67108864", "4294967296")
			if got.get(t, "mmap.67108864") != "ok" || got.get(t, "mmap.4294967296") != "ENOMEM" {
				t.Fatalf("mmap 64M: %s, 4G: %s; want ok, ENOMEM", got.report["mmap.67108864"], got.report["mmap.4294967296"])
			}
			control := runBounded(t, bw.Path, l, false, nil, "mmap", "4294967296")
			if control.get(t, "mmap.4294967296") != "ok" {
				t.Fatalf("without Apply, mmap 4G: %s; the test proves nothing", control.report["mmap.4294967296"])
			}
		})
	}
}

func TestLiveTmpfsSize(t *testing.T) {
	l := mustParse(t, "tmpfs=8M")
	size := strconv.FormatUint(l.TmpfsSize(), 10)
	for _, bw := range livetest.Bwraps(t) {
		t.Run(bw.Name, func(t *testing.T) {
			for _, dir := range []string{"/tmp", "/dev/shm"} {
				got := runBounded(t, bw.Path, l, true, []string{"--size", size, "--tmpfs", dir}, "fill", dir+"/fill")
				written := got.num(t, "written")
				t.Logf("uid %d: %s with --size %s: wrote %d bytes, stop %s", os.Getuid(), dir, size, written, got.get(t, "stop"))
				if got.get(t, "stop") != "ENOSPC" || written > 8<<20 || written < 7<<20 {
					t.Fatalf("%s: wrote %d bytes, stop %s; want ENOSPC near 8 MiB", dir, written, got.get(t, "stop"))
				}
			}
			// The control: without --size the same write of 16 MiB succeeds, in /tmp and
			// in the /dev/shm that bwrap's --dev makes (a directory of the unsized /dev
			// tmpfs, which needs its own --size --tmpfs /dev/shm to be bounded).
			for _, mounts := range [][]string{{"--tmpfs", "/tmp"}, nil} {
				dir := "/tmp"
				if mounts == nil {
					dir = "/dev/shm"
				}
				got := runBounded(t, bw.Path, l, true, mounts, "fsize", dir+"/fill", "16777216")
				if got.get(t, "stop") != "ok" || got.num(t, "written") != 16<<20 {
					t.Fatalf("%s without --size: wrote %s, stop %s", dir, got.get(t, "written"), got.get(t, "stop"))
				}
			}
		})
	}
}

// raceNoExitSleep spares each helper the race runtime's one-second sleep at exit
// (atexit_sleep_ms defaults to 1000 under -race).
const raceNoExitSleep = "GORACE=atexit_sleep_ms=0"
