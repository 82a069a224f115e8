package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Prefix begins the name of every run's cgroup. The keeper acts only on directories so
// named: the lifeline is bwrapkit's, but a slip must not kill someone else's cgroup.
const Prefix = "bwrapkit-run-"

// Unlimited is the bound meaning none (limits.Unlimited).
const Unlimited = ^uint64(0)

// Detect reads where this host's runs get their cgroups, as the calling process sees it.
func Detect() Host {
	self, _ := os.ReadFile("/proc/self/cgroup")
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	var uname unix.Utsname
	_ = unix.Uname(&uname)
	return decide(facts{
		euid: os.Geteuid(), pid: os.Getpid(), release: unix.ByteSliceToString(uname.Release[:]),
		selfGroup: string(self), mountinfo: string(mountinfo),
		read: func(p string) (string, error) {
			b, err := os.ReadFile(p)
			return string(b), err
		},
		exists:   func(p string) bool { _, err := os.Stat(p); return err == nil },
		writable: func(dir string) bool { return unix.Access(dir, unix.W_OK) == nil },
		owner: func(p string) (int, error) {
			var st unix.Stat_t
			if err := unix.Stat(p, &st); err != nil {
				return -1, err
			}
			return int(st.Uid), nil
		},
	})
}

// Bounds are what a run's cgroup holds it to; Unlimited for none.
type Bounds struct {
	Memory uint64 // bytes: user memory, page cache, tmpfs and memfd pages, kernel memory
	Pids   uint64 // tasks, threads included
}

// Group is one run's cgroup (V2), or cgroups (V1: v2 for cgroup.kill, v1 memory and pids).
type Group struct {
	Mode    Mode
	unified string   // the run's v2 directory
	v1      []string // the run's v1 directories (V1)
	dir     *os.File // unified, opened for CLONE_INTO_CGROUP
	memory  string   // the directory whose memory controller bounds the run
	bounds  Bounds
	ended   bool
	endErr  error
}

// Create makes the run's cgroup(s) named Prefix+token and sets their bounds. Nothing is
// left behind when it fails.
func (h Host) Create(token string, b Bounds) (group *Group, err error) {
	if h.Mode != V2 && h.Mode != V1 {
		return nil, fmt.Errorf("no cgroup on this host: %s", h.Why)
	}
	if token == "" || strings.ContainsAny(token, "/\n ") {
		return nil, fmt.Errorf("cgroup: bad run token %q", token)
	}
	if h.leaf != "" {
		if err := h.enterLeaf(); err != nil {
			return nil, err
		}
	}
	g := h.plan(token)
	g.bounds, g.memory = b, g.unified
	memory, pids := "", ""
	if h.Mode == V1 {
		memory, pids = g.v1[0], g.v1[1]
		g.memory = memory
		g.v1 = nil // each is added once made, so a failure removes only what exists
	}
	defer func() {
		if err != nil {
			g.remove()
			group = nil
		}
	}()
	if h.Mode == V2 {
		if err := enable(h.Unified); err != nil {
			return nil, err
		}
	}
	if err := mkdir(g.unified); err != nil {
		return nil, err
	}
	if h.Mode == V2 {
		if err := writeBounds(g.unified, []setting{
			{"memory.max", limit(b.Memory, "max")},
			// Swap would let memory past the bound; a run gets none.
			{"memory.swap.max", "0"},
			{"pids.max", limit(b.Pids, "max")},
		}); err != nil {
			return nil, err
		}
	} else {
		for _, dir := range []string{memory, pids} {
			if err := mkdir(dir); err != nil {
				return nil, err
			}
			g.v1 = append(g.v1, dir)
		}
		// memsw (memory plus swap) is set after the memory bound: the kernel refuses a
		// memsw bound below it. v1 charges kernel memory (inodes, dentries) to the same
		// counter since Linux 5.x's kmem accounting, so one bound covers both.
		memoryBounds := []setting{{"memory.limit_in_bytes", limit(b.Memory, "-1")}, {"memory.memsw.limit_in_bytes", limit(b.Memory, "-1")}}
		if err := writeBounds(memory, memoryBounds); err != nil {
			return nil, err
		}
		if err := writeBounds(pids, []setting{{"pids.max", limit(b.Pids, "max")}}); err != nil {
			return nil, err
		}
	}
	dir, err := os.OpenFile(g.unified, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup: opening %s: %w", g.unified, err)
	}
	g.dir = dir
	return g, nil
}

// Paths are the directories Create(token, ...) makes, the v2 one first: the keeper is
// told them before they exist, so that a bwrapkit killed while making them leaves none.
func (h Host) Paths(token string) []string { return h.plan(token).Paths() }

func (h Host) plan(token string) *Group {
	name := Prefix + token
	g := &Group{Mode: h.Mode, unified: path.Join(h.Unified, name)}
	if h.Mode == V1 {
		g.v1 = []string{path.Join(h.Memory, name), path.Join(h.Pids, name)}
	}
	return g
}

// enterLeaf moves bwrapkit into a cgroup of its own below its delegated one, so that the
// delegated one may give controllers to the runs' cgroups (see decideV2).
func (h Host) enterLeaf() error {
	if err := mkdir(h.leaf); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := writeFile(path.Join(h.leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
		return err
	}
	return nil
}

// enable gives the memory and pids controllers to dir's children, if not yet given.
func enable(dir string) error {
	current, err := os.ReadFile(path.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	if has(string(current), "memory", "pids") {
		return nil
	}
	return writeFile(path.Join(dir, "cgroup.subtree_control"), "+memory +pids")
}

type setting struct{ file, value string }

func writeBounds(dir string, settings []setting) error {
	for _, s := range settings {
		file := path.Join(dir, s.file)
		if s.file == "memory.swap.max" || s.file == "memory.memsw.limit_in_bytes" {
			if _, err := os.Stat(file); err != nil {
				continue // no swap accounting in this kernel: there is no swap to bound
			}
		}
		if err := writeFile(file, s.value); err != nil {
			return err
		}
	}
	return nil
}

func limit(v uint64, none string) string {
	if v == Unlimited {
		return none
	}
	return strconv.FormatUint(v, 10)
}

func mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	return nil
}

func writeFile(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(value); err != nil {
		return fmt.Errorf("cgroup: writing %q to %s: %w", value, file, err)
	}
	return nil
}

// Attach makes the process attr starts be cloned into the run's v2 cgroup
// (CLONE_INTO_CGROUP): it is there from its first instruction, with no window.
func (g *Group) Attach(attr *syscall.SysProcAttr) {
	attr.UseCgroupFD = true
	attr.CgroupFD = int(g.dir.Fd())
}

// EnterThread puts the calling OS thread (locked by the caller) into the run's v1
// cgroups, so that a child it forks starts in them: v1 is thread-granular, and a child
// inherits the cgroups of the thread that forked it, so there is no window between
// bwrap's start and its joining them. The returned leave puts the thread back; it must be
// called as soon as the child is started (until then the thread counts against the
// run's pids bound and keeps its cgroups from being removed). V2 needs nothing here.
func (g *Group) EnterThread() (leave func() error, err error) {
	if g == nil {
		return func() error { return nil }, nil
	}
	// "0", not the thread's id: the kernel then moves the writing thread itself and
	// skips the global write lock on every thread group (cgroup_threadgroup_rwsem),
	// whose first taking waits for an RCU grace period. Measured on this machine kind
	// (Linux 6.18, v1 memory): 6-13 ms with the tid, 80-140 µs with "0".
	const self = "0"
	var entered []string
	leave = func() error {
		var first error
		for _, dir := range entered {
			if err := writeFile(path.Join(path.Dir(dir), "tasks"), self); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, dir := range g.v1 {
		if err := writeFile(path.Join(dir, "tasks"), self); err != nil {
			_ = leave()
			return nil, err
		}
		entered = append(entered, dir)
	}
	return leave, nil
}

// Paths are the run's cgroup directories, the v2 one first: what the keeper ends if
// bwrapkit cannot.
func (g *Group) Paths() []string { return append([]string{g.unified}, g.v1...) }

// MemoryKills is how many of the run's processes the kernel's OOM killer ended because the
// run reached its memory bound (memory.events' oom_kill on v2, memory.oom_control's on v1,
// Linux 4.13 and later), and that bound; 0 when none or unreadable. Read it before End,
// which removes the counters.
func (g *Group) MemoryKills() (kills, bound uint64) {
	if g == nil || g.memory == "" {
		return 0, 0
	}
	file := "memory.events"
	if g.Mode == V1 {
		file = "memory.oom_control"
	}
	data, err := os.ReadFile(path.Join(g.memory, file))
	if err != nil {
		return 0, g.bounds.Memory
	}
	return oomKills(string(data)), g.bounds.Memory
}

// CPUMicros is the CPU time the run's processes used, in microseconds, as the kernel
// counted it in the run's v2 cgroup (cpu.stat's usage_usec, there with or without the cpu
// controller, on a hybrid host's unified hierarchy too): every process that was in it,
// bwrap's included. It is the kernel's word that the run was in its cgroup at all, where
// Mode is bwrapkit's intention. 0 when none or unreadable. Read it before End.
func (g *Group) CPUMicros() uint64 {
	if g == nil {
		return 0
	}
	data, err := os.ReadFile(path.Join(g.unified, "cpu.stat"))
	if err != nil {
		return 0
	}
	return usageMicros(string(data))
}

// oomKills is the "oom_kill N" line of memory.events or memory.oom_control (pure).
func oomKills(counters string) uint64 { return flatKey(counters, "oom_kill") }

// usageMicros is cpu.stat's "usage_usec N" line (pure).
func usageMicros(stat string) uint64 { return flatKey(stat, "usage_usec") }

// flatKey is the number on a flat-keyed cgroup file's "KEY N" line; 0 without one.
func flatKey(counters, key string) uint64 {
	for line := range strings.Lines(counters) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), key+" "); ok {
			n, _ := strconv.ParseUint(rest, 10, 64)
			return n
		}
	}
	return 0
}

// End kills every process in the run's cgroup (cgroup.kill), waits until none is left,
// at most bound, and removes the cgroups. A nil Group has nothing to end; a second End
// returns the first one's answer.
func (g *Group) End(bound time.Duration) error {
	if g == nil {
		return nil
	}
	if g.ended {
		return g.endErr
	}
	g.ended = true
	if g.dir != nil {
		g.dir.Close()
		g.dir = nil
	}
	g.endErr = End(g.Paths(), bound)
	return g.endErr
}

func (g *Group) remove() {
	if g.dir != nil {
		g.dir.Close()
	}
	for _, dir := range append(g.v1, g.unified) {
		_ = os.Remove(dir)
	}
}

// End ends the cgroups at paths (as Group.Paths lists them): cgroup.kill on the v2 one,
// a wait for its cgroup.events to say "populated 0" (every process of the run has
// exited; v1 membership is a subset, as every process of the run descends from bwrap,
// which was cloned into both), then rmdir of each. Only directories named Prefix... are
// touched.
func End(paths []string, bound time.Duration) error {
	if len(paths) == 0 {
		return nil
	}
	for _, dir := range paths {
		if !strings.HasPrefix(path.Base(dir), Prefix) {
			return fmt.Errorf("cgroup: %s is not a run's cgroup", dir)
		}
	}
	deadline := time.Now().Add(bound)
	unified := paths[0]
	// A v2 directory not (or no longer) there holds no process; the v1 ones may still
	// exist (bwrapkit died while making them, or before removing them).
	if err := writeFile(path.Join(unified, "cgroup.kill"), "1"); err == nil {
		if err := awaitEmpty(unified, deadline); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var failed error
	for _, dir := range paths {
		if err := rmdir(dir, deadline); err != nil && failed == nil {
			failed = err
		}
	}
	return failed
}

// awaitEmpty waits for "populated 0" in dir's cgroup.events, which the kernel signals
// with POLLPRI on every change: no polling interval.
func awaitEmpty(dir string, deadline time.Time) error {
	events, err := os.Open(path.Join(dir, "cgroup.events"))
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	defer events.Close()
	buf := make([]byte, 256)
	for {
		n, err := events.ReadAt(buf, 0)
		if err != nil && n == 0 {
			return fmt.Errorf("cgroup: reading %s: %w", events.Name(), err)
		}
		if populated(string(buf[:n])) == 0 {
			return nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("cgroup: %s still holds processes after cgroup.kill (a process in uninterruptible sleep?)", dir)
		}
		fds := []unix.PollFd{{Fd: int32(events.Fd()), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(wait.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("cgroup: waiting on %s: %w", events.Name(), err)
		}
	}
}

// populated reads cgroup.events' "populated N"; -1 when absent.
func populated(events string) int {
	for line := range strings.SplitSeq(events, "\n") {
		if value, ok := strings.CutPrefix(line, "populated "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// rmdir removes an emptied cgroup. A v1 cgroup can refuse (EBUSY) for a moment after
// its last task exited, until the kernel has released it; that is retried until
// deadline, with a growing pause, and happens only at a run's end.
func rmdir(dir string, deadline time.Time) error {
	pause := 100 * time.Microsecond
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case !errors.Is(err, unix.EBUSY) || time.Now().After(deadline):
			return fmt.Errorf("cgroup: removing %s: %w", dir, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// abandonedAge is how long a run's cgroup must have existed, empty, before a later run
// removes it: a live run's cgroup is empty only between its mkdir and bwrap's clone, and
// between bwrap's exit and its removal, moments of milliseconds.
const abandonedAge = time.Minute

// sweep removes the runs' cgroups under parent that a process which died without a
// keeper (a program embedding the runner with Options.Keeper empty, exiting mid-run) left
// behind: empty, and older than abandonedAge.
func sweep(parent string, now time.Time) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, entry := range entries {
		if !entry.IsDir() || !strings.HasPrefix(entry.Name(), Prefix) {
			continue
		}
		dir := path.Join(parent, entry.Name())
		var st unix.Stat_t
		if unix.Stat(dir, &st) != nil || now.Sub(time.Unix(st.Mtim.Unix())) < abandonedAge {
			continue
		}
		if procs, err := os.ReadFile(path.Join(dir, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(procs))) == 0 {
			_ = unix.Rmdir(dir) // EBUSY if a process joined meanwhile: then it is not abandoned
		}
	}
}

// Sweep removes the abandoned run cgroups below this host's parents (see sweep).
func (h Host) Sweep() {
	now := time.Now()
	for _, parent := range []string{h.Unified, h.Memory, h.Pids} {
		if parent != "" {
			sweep(parent, now)
		}
	}
}
