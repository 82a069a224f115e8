package limits

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperEnv marks the test binary re-executed inside the sandbox as the probe, so no
// shell or interpreter is assumed there (the standard library's helper-process pattern).
const helperEnv = "BWRAPKIT_LIMITS_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// resources are the rlimits the helper reports, by name.
var resources = []struct {
	name     string
	resource int
}{
	{"as", unix.RLIMIT_AS}, {"core", unix.RLIMIT_CORE}, {"fsize", unix.RLIMIT_FSIZE},
	{"nofile", unix.RLIMIT_NOFILE}, {"nproc", unix.RLIMIT_NPROC},
}

// helperMain runs one probe inside the sandbox and prints key=value lines.
func helperMain(args []string) int {
	switch args[0] {
	case "rlimits":
		// The command's own limits, then bwrap's pid 1 (which Apply bounded directly and
		// which forked this command after the block fd released it).
		for _, r := range resources {
			var got unix.Rlimit
			err := unix.Getrlimit(r.resource, &got)
			fmt.Printf("self.%s=%d/%d %s\n", r.name, got.Cur, got.Max, errName(err))
		}
		if data, err := os.ReadFile("/proc/1/limits"); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				fields := strings.Fields(line)
				if len(fields) > 3 && (strings.HasPrefix(line, "Max processes") || strings.HasPrefix(line, "Max open files")) {
					fmt.Printf("init.%s=%s/%s\n", fields[1], fields[len(fields)-3], fields[len(fields)-2])
				}
			}
		}
		// A hostile command tries to undo its bounds.
		for _, r := range resources {
			var got unix.Rlimit
			unix.Getrlimit(r.resource, &got)
			if got.Max == Unlimited {
				continue
			}
			hard := unix.Rlimit{Cur: got.Max + 1, Max: got.Max + 1}
			soft := unix.Rlimit{Cur: got.Max + 1, Max: got.Max}
			fmt.Printf("raise-hard.%s=%s\n", r.name, errName(unix.Setrlimit(r.resource, &hard)))
			fmt.Printf("raise-soft.%s=%s\n", r.name, errName(unix.Setrlimit(r.resource, &soft)))
			fmt.Printf("raise-prlimit.%s=%s\n", r.name, errName(unix.Prlimit(0, r.resource, &hard, nil)))
		}
	case "fork": // fork MAX: children that only wait, until the kernel refuses or MAX
		limit, _ := strconv.Atoi(args[1])
		forkProbe(limit)
	case "fork-nested": // fork-nested MAX: the same from a child in a new user namespace
		limit, _ := strconv.Atoi(args[1])
		forkNestedProbe(limit)
	case "nofile":
		opened, highest := 0, -1
		var err error
		for opened < 1<<21 {
			var fd int
			fd, err = syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				break
			}
			opened++
			highest = max(highest, fd)
		}
		fmt.Printf("opened=%d\nhighest=%d\nstop=%s\n", opened, highest, errName(err))
	case "fsize": // fsize PATH MAX: write up to MAX bytes; SIGXFSZ ignored to see EFBIG
		if len(args) > 3 && args[3] == "ignore" {
			signal.Ignore(syscall.SIGXFSZ)
		}
		limit, _ := strconv.ParseInt(args[2], 10, 64)
		written, err := fill(args[1], limit)
		fmt.Printf("written=%d\nstop=%s\n", written, errName(err))
	case "fill": // fill PATH: write until the filesystem refuses
		written, err := fill(args[1], 1<<40)
		fmt.Printf("written=%d\nstop=%s\n", written, errName(err))
	case "mmap": // mmap SIZE...: reserve address space, touching nothing
		for _, arg := range args[1:] {
			size, _ := strconv.ParseInt(arg, 10, 64)
			mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
			if err == nil {
				unix.Munmap(mem)
			}
			fmt.Printf("mmap.%s=%s\n", arg, errName(err))
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown helper action %q\n", args[0])
		return 2
	}
	return 0
}

// fill writes zeros to path in 64 KiB steps until limit bytes or an error, then
// removes the file (it lives in the sandbox's own tmpfs, but leave nothing anyway).
func fill(path string, limit int64) (int64, error) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer syscall.Close(fd)
	chunk := make([]byte, 64<<10)
	var written int64
	for written < limit {
		n, err := syscall.Write(fd, chunk[:min(int64(len(chunk)), limit-written)])
		if n > 0 {
			written += int64(n)
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// forkProbe forks children that block forever until fork fails or limit are made,
// counts every task in the sandbox's pid namespace at that moment, then kills and
// reaps them all. The pid namespace dies with bwrap too, so nothing can outlive the run.
func forkProbe(limit int) {
	// No new OS threads once forking starts: at the limit the runtime could not start
	// one (newosproc is fatal), so it gets idle ones now to hand its scheduler to while
	// this goroutine is in a system call; and this goroutine must not move while
	// children exist.
	spareThreads(8)
	runtime.LockOSThread()
	baseline := countTasks()
	var children []int
	var stop syscall.Errno
	for len(children) < limit {
		pid, errno := forkBlocked()
		if errno != 0 {
			stop = errno
			break
		}
		children = append(children, pid)
	}
	tasks := countTasks()
	for _, pid := range children {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range children {
		var status syscall.WaitStatus
		syscall.Wait4(pid, &status, 0, nil)
	}
	fmt.Printf("baseline=%d\nforked=%d\nstop=%s\ntasks=%d\nafter=%d\n", baseline, len(children), errName(stopErr(stop)), tasks, countTasks())
}

// spareThreads leaves n idle OS threads in the Go runtime: n goroutines each hold a
// thread of their own at once, then let go of it and end. The runtime keeps idle
// threads and reuses them (startm takes an idle M before it creates one), so later,
// at the sandbox's task limit, it never has to create one: CI saw "failed to create
// new OS thread (have 5 already; errno=11)" when the system monitor handed the
// scheduler off during countTasks' getdents at the limit. The goroutines must have
// ended, not only unlocked: one still runnable is work that wants a thread of its own.
func spareThreads(n int) {
	var held, ended sync.WaitGroup
	release := make(chan struct{})
	held.Add(n)
	ended.Add(n)
	for range n {
		go func() {
			defer ended.Done()
			runtime.LockOSThread()
			held.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	held.Wait()
	close(release)
	ended.Wait()
	// Their threads park once they find nothing to run; and no collection starts
	// later, whose workers would be more work to find a thread for.
	time.Sleep(20 * time.Millisecond)
	debug.SetGCPercent(-1)
}

func stopErr(errno syscall.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

// forkBlocked is a raw fork whose child only waits in ppoll(NULL, 0, NULL, NULL) until
// killed. It runs no Go code in the child (the runtime is not fork-safe), as the
// standard library's forkAndExecInChild, hence nosplit and norace.
//
//go:nosplit
//go:norace
func forkBlocked() (int, syscall.Errno) {
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	if pid == 0 {
		for {
			syscall.RawSyscall6(unix.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
		}
	}
	return int(pid), 0
}

// countTasks counts every thread of every process in this pid namespace.
func countTasks() int {
	total := 0
	procs, _ := os.ReadDir("/proc")
	for _, proc := range procs {
		if _, err := strconv.Atoi(proc.Name()); err != nil {
			continue
		}
		tasks, _ := os.ReadDir(filepath.Join("/proc", proc.Name(), "task"))
		total += len(tasks)
	}
	return total
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// forkNestedProbe makes one child in a fresh user namespace, which forks waiting
// children there until fork fails or limit are made and writes how many down a pipe:
// the escape a command would try if nproc were counted per namespace with no parent.
// It then kills every task in the pid namespace but pid 1 and itself.
func forkNestedProbe(limit int) {
	spareThreads(8) // as forkProbe
	runtime.LockOSThread()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		fmt.Printf("nested=%s\n", errName(err))
		return
	}
	pid, errno := forkNested(fds[1], uint64(limit))
	syscall.Close(fds[1])
	if errno != 0 {
		fmt.Printf("nested=%s\n", errName(errno))
		return
	}
	var made [8]byte
	n, _ := syscall.Read(fds[0], made[:])
	tasks := countTasks()
	killAllButInit()
	var status syscall.WaitStatus
	syscall.Wait4(pid, &status, 0, nil)
	forked := *(*uint64)(unsafe.Pointer(&made))
	if n != 8 {
		forked = 0
	}
	fmt.Printf("nested=ok\nforked=%d\ntasks=%d\n", forked, tasks)
}

// forkNested is forkBlocked's child in a new user namespace, forking in turn; like it,
// the child runs raw system calls only.
//
//go:nosplit
//go:norace
func forkNested(report int, limit uint64) (int, syscall.Errno) {
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.CLONE_NEWUSER|syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	if pid != 0 {
		return int(pid), 0
	}
	var made uint64
	for made < limit {
		child, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
		if errno != 0 {
			break
		}
		if child == 0 {
			for {
				syscall.RawSyscall6(unix.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
			}
		}
		made++
	}
	syscall.RawSyscall(syscall.SYS_WRITE, uintptr(report), uintptr(unsafe.Pointer(&made)), 8)
	for {
		syscall.RawSyscall6(unix.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
	}
}

// killAllButInit ends every process in this pid namespace except bwrap's pid 1 and
// this one (the pid namespace dies with bwrap anyway).
func killAllButInit() {
	procs, _ := os.ReadDir("/proc")
	for _, proc := range procs {
		pid, err := strconv.Atoi(proc.Name())
		if err == nil && pid != 1 && pid != os.Getpid() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
