package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A meter measures the CPU one command costs the machine. wait4's rusage (the old way)
// counts only the processes the command itself waited for: a sandbox's processes are
// reaped by bwrap's pid 1 inside its own pid namespace, and bwrapkit's keeper or a
// daemonised child are not waited for at all, so rusage showed 1.6 ms for raw bwrap's
// 4.6. A cgroup counts every task that ran in it, however it ended.
type meter interface {
	// run starts cmds at once and waits for them all (wall is that long), then for every
	// process they left in the cgroup, and returns the CPU they all used.
	run(cmds []*exec.Cmd) (wall, cpu time.Duration, err error)
	name() string
	close()
}

// newMeter picks the most complete meter this process may use. On a hybrid host the v1
// cpuacct hierarchy is preferred: bwrapkit may move a sandbox to cgroups of its own in
// the v2 tree (cgroup.kill) but never touches cpuacct, so nothing can leave the measured
// group there. Then a v2 group (cpu.stat is there with or without the cpu controller),
// and last rusage, said as such.
func newMeter(choice string) (meter, error) {
	mounts, err := cgroupMounts()
	if err != nil && choice != "rusage" {
		return nil, err
	}
	tryV1 := func() (meter, error) {
		if mounts.cpuacct == "" {
			return nil, errors.New("no cgroup v1 cpuacct hierarchy is mounted")
		}
		return newV1Meter(mounts.cpuacct)
	}
	tryV2 := func() (meter, error) {
		if mounts.unified == "" {
			return nil, errors.New("no cgroup v2 hierarchy is mounted")
		}
		return newV2Meter(mounts.unified)
	}
	switch choice {
	case "v1":
		return tryV1()
	case "v2":
		return tryV2()
	case "rusage":
		return rusageMeter{}, nil
	case "auto":
		if m, err := tryV1(); err == nil {
			return m, nil
		}
		if m, err := tryV2(); err == nil {
			return m, nil
		}
		fmt.Fprintln(os.Stderr, "benchcmp: no cgroup this process may create (root, or a delegated subtree, is needed): CPU is wait4's rusage, which misses a sandbox's own processes")
		return rusageMeter{}, nil
	}
	return nil, fmt.Errorf("-cpu %q: want auto, v1, v2 or rusage", choice)
}

type mounts struct{ cpuacct, unified string }

// cgroupMounts finds the cpuacct (v1) and the unified (v2) hierarchies in mountinfo.
func cgroupMounts() (mounts, error) {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return mounts{}, err
	}
	defer file.Close()
	var found mounts
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		dash := -1
		for i, field := range fields {
			if field == "-" {
				dash = i
				break
			}
		}
		if dash < 0 || len(fields) < dash+4 {
			continue
		}
		mountPoint, fsType, options := fields[4], fields[dash+1], fields[dash+3]
		switch {
		case fsType == "cgroup2" && found.unified == "":
			found.unified = mountPoint
		case fsType == "cgroup" && found.cpuacct == "" && hasOption(options, "cpuacct"):
			found.cpuacct = mountPoint
		}
	}
	return found, scanner.Err()
}

func hasOption(options, want string) bool {
	for _, option := range strings.Split(options, ",") {
		if option == want {
			return true
		}
	}
	return false
}

// ownCgroup is this process's path in the hierarchy whose /proc/self/cgroup line
// matches: the v2 line ("0::/x"), or a v1 line naming controller.
func ownCgroup(controller string) (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		if controller != "" && hasOption(parts[1], controller) {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("/proc/self/cgroup has no line for %q", controller)
}

// v2Meter starts each command straight into a fresh child group (clone3's
// CLONE_INTO_CGROUP), so not one instruction escapes the count.
type v2Meter struct {
	parent string
	runs   int
}

func newV2Meter(mount string) (*v2Meter, error) {
	own, err := ownCgroup("")
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mount, own, "benchcmp-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(parent, 0o755); err != nil {
		return nil, err
	}
	return &v2Meter{parent: parent}, nil
}

func (m *v2Meter) name() string { return "cgroup v2 cpu.stat" }

func (m *v2Meter) run(cmds []*exec.Cmd) (time.Duration, time.Duration, error) {
	m.runs++
	group := filepath.Join(m.parent, "run-"+strconv.Itoa(m.runs))
	if err := os.Mkdir(group, 0o755); err != nil {
		return 0, 0, err
	}
	defer removeGroup(group)
	dir, err := os.Open(group)
	if err != nil {
		return 0, 0, err
	}
	defer dir.Close()
	for _, cmd := range cmds {
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	}
	start := time.Now()
	if err := runAll(cmds, nil); err != nil {
		return 0, 0, err
	}
	wall := time.Since(start)
	if err := awaitEmpty(group); err != nil {
		return 0, 0, err
	}
	usec, err := statField(filepath.Join(group, "cpu.stat"), "usage_usec")
	return wall, time.Duration(usec) * time.Microsecond, err
}

func (m *v2Meter) close() { removeGroup(m.parent) }

// v1Meter: v1 has no clone-into-cgroup, so this process joins the group just long
// enough to fork the command (which inherits it) and leaves again; the fork and exec
// are counted, the same for every command compared.
type v1Meter struct {
	group, home string
}

func newV1Meter(mount string) (*v1Meter, error) {
	own, err := ownCgroup("cpuacct")
	if err != nil {
		return nil, err
	}
	home := filepath.Join(mount, own)
	group := filepath.Join(home, "benchcmp-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(group, 0o755); err != nil {
		return nil, err
	}
	return &v1Meter{group: group, home: home}, nil
}

func (m *v1Meter) name() string { return "cgroup v1 cpuacct.usage" }

func (m *v1Meter) run(cmds []*exec.Cmd) (time.Duration, time.Duration, error) {
	if err := os.WriteFile(filepath.Join(m.group, "cpuacct.usage"), []byte("0"), 0); err != nil {
		return 0, 0, fmt.Errorf("resetting cpuacct.usage: %w", err)
	}
	if err := os.WriteFile(filepath.Join(m.group, "cgroup.procs"), []byte("0"), 0); err != nil {
		return 0, 0, fmt.Errorf("joining %s: %w", m.group, err)
	}
	start := time.Now()
	err := runAll(cmds, func() error {
		if err := os.WriteFile(filepath.Join(m.home, "cgroup.procs"), []byte("0"), 0); err != nil {
			return fmt.Errorf("leaving %s: %w", m.group, err)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	wall := time.Since(start)
	if err := awaitEmpty(m.group); err != nil {
		return 0, 0, err
	}
	data, err := os.ReadFile(filepath.Join(m.group, "cpuacct.usage"))
	if err != nil {
		return 0, 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return wall, time.Duration(ns), err
}

func (m *v1Meter) close() { removeGroup(m.group) }

// rusageMeter is wait4's account: the command and the children it waited for.
type rusageMeter struct{}

func (rusageMeter) name() string { return "wait4 rusage (misses the sandbox's processes)" }

func (rusageMeter) run(cmds []*exec.Cmd) (time.Duration, time.Duration, error) {
	start := time.Now()
	if err := runAll(cmds, nil); err != nil {
		return 0, 0, err
	}
	wall := time.Since(start)
	var used time.Duration
	for _, cmd := range cmds {
		used += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return wall, used, nil
}

// runAll starts every command, calls started (if any) once all are, and waits for them
// all; the first error wins, but every started command is waited for.
func runAll(cmds []*exec.Cmd, started func() error) error {
	var first error
	begun := 0
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			first = err
			break
		}
		begun++
	}
	if started != nil {
		if err := started(); err != nil && first == nil {
			first = err
		}
	}
	for _, cmd := range cmds[:begun] {
		if err := cmd.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (rusageMeter) close() {}

// awaitEmpty waits (bounded) until no task is left in group: a sandbox's last processes
// may still be exiting when the command's own process has been reaped.
func awaitEmpty(group string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(group, "cgroup.procs"))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(data)) == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still has processes 5s after the command exited: %s", group, strings.Fields(string(data)))
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func statField(path, key string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if value, ok := strings.CutPrefix(line, key+" "); ok {
			return strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", path, key)
}

// removeGroup removes a group this program made; an rmdir of a cgroup fails while a
// task is in it, which is reported rather than left silently.
func removeGroup(group string) {
	if err := os.Remove(group); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "benchcmp: could not remove the cgroup it made, %s: %v\n", group, err)
	}
}
