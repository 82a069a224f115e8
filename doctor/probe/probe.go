package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// holdBound is how long the timeout-kill probe's processes wait to be killed. If the sandbox
// fails to kill them they exit on their own, but only after the doctor has looked for them.
const holdBound = 60 * time.Second

// CommandName is the argument that makes bwrapkit, or bwrapkit-helper, the probe.
const CommandName = "__selftest-probe"

// BuildID is a program's build as the probe's handshake names it: version (what make
// and the release stamp) and, where the toolchain recorded them, the module version (go
// install of a tag) and the commit built with whether the tree had changes, so that two
// unstamped builds ("dev") of different releases or commits do not pass for one.
func BuildID(version string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if module := info.Main.Version; module != "" && module != "(devel)" && module != version {
		version += "@" + module // go install of a tagged module: its version, stamped or not
	}
	var revision, modified string
	for _, setting := range info.Settings {
		switch setting.Key {
		case "vcs.revision":
			revision = setting.Value
		case "vcs.modified":
			modified = setting.Value
		}
	}
	if revision == "" {
		return version
	}
	if modified == "true" {
		revision += "-modified"
	}
	return version + "+" + revision
}

// Main is the probe's entry in bwrapkit and bwrapkit-helper: args are those after
// CommandName, build the program's own BuildID. The doctor passes "build=" and its
// version first, and a probe of another build refuses (exit 2) rather than report
// observations the doctor may read otherwise: a bwrapkit-helper left from another release
// beside an upgraded bwrapkit.
func Main(args []string, build string, stdout, stderr io.Writer) int {
	if len(args) > 0 && strings.HasPrefix(args[0], "build=") {
		if want := strings.TrimPrefix(args[0], "build="); want != build {
			fmt.Fprintf(stderr, "probe: %s is of bwrapkit %s, the doctor of bwrapkit %s: install bwrapkit and bwrapkit-helper from one build (or remove bwrapkit-helper; bwrapkit is then its own)\n", os.Args[0], build, want)
			return 2
		}
		args = args[1:]
	}
	return Run(args, stdout, stderr)
}

// Run is the self-test probe: the program the doctor runs inside the sandbox (bwrapkit's
// hidden __selftest-probe subcommand, or a test binary). args are the probe's name and
// arguments; it prints one JSON observation on stdout and returns the exit status. It
// needs no shell or other program inside the sandbox: it re-executes itself when it needs a
// child, with the argv prefix it was started with.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "probe: no probe name")
		return 2
	}
	name, rest := args[0], args[1:]
	var observation any
	switch name {
	case "noop":
		return 0
	case "launch":
		var request Request
		if len(rest) == 1 {
			if err := json.Unmarshal([]byte(rest[0]), &request); err != nil {
				fmt.Fprintln(stderr, "probe: launch request:", err)
				return 2
			}
		}
		observation = observeLaunch(request)
	case "fs":
		observation = observeFS(rest)
	case "env":
		observation = EnvObservation{Environ: os.Environ()}
	case "fds":
		observation = observeFDs()
	case "dial":
		observation = observeDial(rest)
	case "net-allow":
		observation = observeNetAllow(rest)
	case "procs":
		observation = observeProcs()
	case "caps":
		observation = observeCaps()
	case "userns":
		observation = observeUserns()
	case "spawn":
		return spawn(rest, stdout, stderr)
	case "hold":
		return hold(rest, stderr)
	default:
		fmt.Fprintf(stderr, "probe: unknown probe %q\n", name)
		return 2
	}
	if err := json.NewEncoder(stdout).Encode(observation); err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return 1
	}
	return 0
}

// selfPrefix is the argv that started this probe, without the probe's own arguments.
func selfPrefix(args []string) []string {
	all := os.Args
	if len(args) <= len(all) {
		return all[:len(all)-len(args)]
	}
	return all[:1]
}

// NamespaceKinds are the /proc/self/ns links that tell a sandbox's namespaces from the host's.
func NamespaceKinds() []string {
	return []string{"user", "pid", "mnt", "net", "ipc", "uts", "cgroup"}
}

// observeLaunch is who the probe is and where, and then every part the request asks for,
// in an order that keeps them apart: the descriptor listing first (before anything else
// could open one), the user namespace's child and the network last.
func observeLaunch(request Request) LaunchObservation {
	var started unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &started)
	observation := LaunchObservation{PID: os.Getpid(), UID: os.Getuid(), Namespaces: map[string]string{}, Started: started.Nano()}
	if request.FDs {
		fds := observeFDs()
		observation.FDs = &fds
	}
	for _, kind := range NamespaceKinds() {
		if link, err := os.Readlink("/proc/self/ns/" + kind); err == nil {
			observation.Namespaces[kind] = link
		}
	}
	if request.Env {
		observation.Env = &EnvObservation{Environ: os.Environ()}
	}
	if request.Caps {
		caps := observeCaps()
		observation.Caps = &caps
	}
	if request.Procs {
		procs := observeProcs()
		observation.Procs = &procs
	}
	if len(request.FS) > 0 {
		observation.FS = map[string][]FileOp{}
		groups := make([]string, 0, len(request.FS))
		for group := range request.FS {
			groups = append(groups, group)
		}
		slices.Sort(groups)
		for _, group := range groups {
			observation.FS[group] = observeFS(request.FS[group]).Ops
		}
	}
	if request.Proc != nil {
		observation.Proc = observeProcSurface(*request.Proc)
	}
	if request.Setuid != "" {
		observation.Setuid = observeSetuid(request.Setuid)
	}
	if len(request.Seccomp) > 0 {
		observation.Seccomp = observeSeccomp(request.Seccomp)
	}
	if request.Keyring != "" {
		observation.Keyring = observeKeyring(request.Keyring)
	}
	if request.Limits != nil {
		observation.Limits = observeLimits(*request.Limits)
	}
	if request.Userns {
		userns := observeUserns()
		observation.Userns = &userns
	}
	if request.Dial != "" {
		dial := observeDial([]string{request.Dial})
		observation.Dial = &dial
	}
	return observation
}

// observeFS runs OP:PATH operations in order.
func observeFS(specs []string) FSObservation {
	var observation FSObservation
	for _, spec := range specs {
		op, path, _ := strings.Cut(spec, ":")
		switch op {
		case "read":
			content, err := readStart(path)
			observation.Ops = append(observation.Ops, FileOp{Op: op, Path: path, Content: content, Error: errorText(err)})
		case "list":
			entries, err := list(path)
			observation.Ops = append(observation.Ops, FileOp{Op: op, Path: path, Entries: entries, Error: errorText(err)})
		default:
			observation.Ops = append(observation.Ops, FileOp{Op: op, Path: path, Error: errorText(fileOperation(op, path))})
		}
	}
	return observation
}

func fileOperation(op, path string) error {
	switch op {
	case "create":
		file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = file.WriteString(Content)
		return errors.Join(err, file.Close())
	case "append":
		file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = file.WriteString(Content)
		return errors.Join(err, file.Close())
	case "remove":
		return os.Remove(path)
	case "mkdir":
		return os.Mkdir(path, 0o755)
	case "symlink-out": // a link a host tool would follow out of the project
		return os.Symlink("/etc", path)
	case "chmod-open": // a directory any local user could then plant files in
		return os.Chmod(path, 0o777)
	}
	return fmt.Errorf("unknown operation %q", op)
}

// readStart reads the start of a file (an empty file is read all the same).
func readStart(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	buf := make([]byte, MaxContent)
	n, err := io.ReadFull(file, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return string(buf[:n]), err
}

// list names a directory's entries.
func list(path string) ([]string, error) {
	dir, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(MaxEntries)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}

// observeFDs lists the probe's descriptors with bare system calls: os.ReadDir would start
// the runtime's poller, whose epoll and eventfd descriptors would then be listed too. The
// descriptor of the listing itself is left out.
func observeFDs() FDObservation {
	dir, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return FDObservation{Error: err.Error()}
	}
	defer syscall.Close(dir)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := syscall.ReadDirent(dir, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return FDObservation{Error: err.Error()}
		}
		if n <= 0 {
			break
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
	var observation FDObservation
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd == dir {
			continue
		}
		target, err := os.Readlink("/proc/self/fd/" + name)
		if err != nil {
			target = "(unreadable: " + err.Error() + ")"
		}
		observation.FDs = append(observation.FDs, FDEntry{FD: fd, Target: target})
	}
	return observation
}

func observeDial(args []string) DialObservation {
	if len(args) != 1 {
		return DialObservation{Error: "usage: dial HOST:PORT"}
	}
	conn, err := dialTCP(args[0], 2*time.Second)
	if err == nil {
		conn.Close()
	}
	return DialObservation{Address: args[0], Error: errorText(err)}
}

func observeProcs() ProcObservation {
	observation := ProcObservation{Self: os.Getpid()}
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		process := ProcEntry{PID: pid}
		if stat, err := os.ReadFile("/proc/" + entry.Name() + "/stat"); err == nil {
			process.Comm, process.PPID = parseStat(string(stat))
		}
		observation.Processes = append(observation.Processes, process)
	}
	return observation
}

// parseStat takes comm and ppid from /proc/PID/stat: "PID (COMM) STATE PPID ...", where
// COMM may itself hold spaces and parentheses, so the last ')' ends it.
func parseStat(stat string) (comm string, ppid int) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", 0
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) >= 2 {
		ppid, _ = strconv.Atoi(fields[1])
	}
	return stat[open+1 : end], ppid
}

func observeCaps() CapsObservation {
	observation := CapsObservation{Caps: map[string]string{}}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		key, value, found := strings.Cut(line, ":")
		if found && strings.HasPrefix(key, "Cap") {
			observation.Caps[key] = strings.TrimSpace(value)
		}
	}
	return observation
}

func observeUserns() UsernsObservation {
	errno := UserNamespaceErrno()
	if errno == 0 {
		return UsernsObservation{}
	}
	return UsernsObservation{Errno: int(errno), Error: unix.ErrnoName(errno) + ": " + errno.Error()}
}

// spawn starts a grandchild in its own session (so a process-group kill would miss it)
// that carries TOKEN in its command line, reports once MARKER exists, and then waits to be
// killed. The grandchild is the system's sleep where the sandbox has one (a quarter of a
// bwrapkit start; argv[0] is the token), and this probe's own "hold" otherwise.
func spawn(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "probe: usage: spawn TOKEN MARKER")
		return 2
	}
	token, marker := args[0], args[1]
	observation := SpawnObservation{}
	if err := startSleeper(token, marker, stderr); err != nil {
		prefix := selfPrefix(append([]string{"spawn"}, args...))
		child := exec.Command(prefix[0], append(append([]string{}, prefix[1:]...), "hold", token, marker)...)
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		child.Stderr = stderr
		if err := child.Start(); err != nil {
			observation.Error = err.Error()
		}
	}
	if observation.Error == "" {
		observation.Ready = waitForFile(marker, 10*time.Second)
	}
	_ = json.NewEncoder(stdout).Encode(observation)
	time.Sleep(holdBound)
	return 3
}

// startSleeper starts sleep with the token as its argv[0] in a session of its own, and
// writes the marker once /proc shows it running with that command line (Start returns
// after the exec, so the command line is the new one): the marker then says what the
// grandchild's own write would.
func startSleeper(token, marker string, stderr io.Writer) error {
	for _, path := range []string{"/usr/bin/sleep", "/bin/sleep"} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		child := &exec.Cmd{Path: path, Args: []string{token, strconv.Itoa(int(holdBound / time.Second))}, Stderr: stderr,
			SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
		if err := child.Start(); err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(child.Process.Pid) + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmdline), token+"\x00") {
			child.Process.Kill()
			continue
		}
		file, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			child.Process.Kill()
			return err
		}
		fmt.Fprintf(file, "%d\n", child.Process.Pid)
		return file.Close()
	}
	return errors.New("no sleep in the sandbox")
}

// hold is the grandchild: its argv carries the token, so the host can look for it in
// /proc/*/cmdline after the sandbox is gone.
func hold(args []string, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "probe: usage: hold TOKEN MARKER")
		return 2
	}
	marker, err := os.OpenFile(args[1], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return 1
	}
	fmt.Fprintf(marker, "%d\n", os.Getpid())
	time.Sleep(holdBound)
	marker.Close()
	return 3
}

func waitForFile(path string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// inheritance orders, within one process, the doctor's sandbox launches and its own
// openings without close-on-exec (the uid_map and gid_map files Go's os/exec opens for
// UserNamespaceErrno's child), so that a launch whose inherited descriptors are judged
// (fd-isolation's) proves what its own sandbox.Run did:
//   - sandbox.Run marks every descriptor close-on-exec just before it starts bwrap, and Go
//     lets forks run at the same time, so a map file opened in between reached another
//     sandbox (several doctors in one test binary or embedding service) and was reported
//     as a leak;
//   - another launch's sandbox.Run, between the judged canary's arming and the judged
//     bwrap's start, would mark the canary close-on-exec itself and hide a sandbox.Run that
//     failed to.
//
// A judged launch holds it exclusively, an opening or any other launch shared; a launch
// only until its bwrap is running, when nothing opened any more can reach it.
var inheritance sync.RWMutex

// Launching runs launch, one sandbox launch of the doctor's, holding inheritance
// (exclusively when judged) until launch calls started, which it passes to sandbox.Run
// as Options.BwrapStarted, or returns. A judged launch arms its canary, making it
// inheritable, inside launch: no other launch of this process can then mark it.
func Launching(judged bool, launch func(started func())) {
	lock, unlock := inheritance.RLock, inheritance.RUnlock
	if judged {
		lock, unlock = inheritance.Lock, inheritance.Unlock
	}
	lock()
	release := sync.OnceFunc(unlock)
	defer release()
	launch(release)
}

// noProgram is a path no file can have (a descriptor number is never negative), so the
// child of UserNamespaceErrno ends at its exec, right after the clone: no program starts.
const noProgram = "/proc/self/fd/-1"

// UserNamespaceErrno asks the kernel for a new user namespace the way bwrap does, with
// clone(CLONE_NEWUSER) of a child that maps our own ids, and returns its errno (0: the
// namespace was made). A fresh process, so the Go runtime's threads do not matter
// (unshare would refuse a threaded caller with EINVAL). The child then execs noProgram
// and fails with ENOENT, which is how the namespace is known to have been made: starting
// a real program there would cost a whole process start for nothing.
func UserNamespaceErrno() syscall.Errno {
	cmd := exec.Command(noProgram)
	cmd.Env = []string{}
	cmd.WaitDelay = time.Second
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	var errno syscall.Errno
	inheritance.RLock()
	err := cmd.Start()
	inheritance.RUnlock()
	if err != nil {
		if errors.As(err, &errno) && errno != syscall.ENOENT {
			return errno
		}
		return 0
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return 0
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
