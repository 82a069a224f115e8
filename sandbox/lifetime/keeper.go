package lifetime

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/sandbox/cgroup"
	"golang.org/x/sys/unix"
)

// KeeperCommand is the hidden first argument that makes a program the keeper: a main
// that embeds the runner calls Main with the rest of its arguments when it sees it (see
// KeeperMain), and names its own executable in sandbox.Options.Keeper.
const KeeperCommand = "__bwrapkit-keeper"

// lifelineFD is where the keeper reads bwrapkit's messages (the first of ExtraFiles), and
// confirmFD where it answers each "init" (the second).
const (
	lifelineFD = 3
	confirmFD  = 4
)

// confirmed is the keeper's answer once it holds the sandbox's pid 1; recordNotHeld its
// answer when it could not hold the run's pending audit (as long, so one read takes it).
const (
	confirmed     = "held\n"
	recordNotHeld = "noau\n"
)

// endBound is how long the keeper goes on finding and killing the run's processes, and
// quietBound how long it looks on after a look found nothing.
const (
	// cgroupEndBound: the cgroup is killed at once; this bounds waiting for it to empty
	// and removing it, which only a process in uninterruptible sleep makes long.
	cgroupEndBound = 10 * time.Second
	endBound       = time.Second
	quietBound     = 250 * time.Millisecond
)

// Keeper is bwrapkit's side of one run's keeper: the write end of the lifeline, which
// closes by itself when bwrapkit dies, however it dies.
type Keeper struct {
	lifeline   *os.File
	confirm    *os.File // the keeper's answers (Confirm)
	process    *os.Process
	token      string
	executable string // what was started, for the words of a refusal
}

// Start starts executable as the keeper of one run, in a session of its own (a signal to
// bwrapkit's process group or its terminal does not reach it). It must be started before
// bwrap, so that no moment of the run is unkept.
func Start(executable string) (*Keeper, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(raw[:])
	read, write, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer read.Close()
	answers, answer, err := os.Pipe()
	if err != nil {
		write.Close()
		return nil, err
	}
	defer answer.Close()
	cmd := exec.Command(executable, KeeperCommand, token)
	cmd.ExtraFiles = []*os.File{read, answer}
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		write.Close()
		answers.Close()
		return nil, fmt.Errorf("starting the run's keeper (%s): %w", executable, err)
	}
	return &Keeper{lifeline: write, confirm: answers, process: cmd.Process, token: token, executable: executable}, nil
}

// Confirm waits until the keeper says it holds the sandbox's pid 1 (after Watch("init")),
// for at most bound. The command may start only then: a keeper that died early (killed,
// out of memory) or does not speak this protocol (a bwrapkit-helper of another release)
// would otherwise leave the run unkept without a word.
func (k *Keeper) Confirm(bound time.Duration) error {
	if err := k.confirm.SetReadDeadline(time.Now().Add(bound)); err != nil {
		return err
	}
	answer := make([]byte, len(confirmed))
	if _, err := io.ReadFull(k.confirm, answer); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("the run's keeper (%s) did not confirm within %v that it holds the sandbox%s", k.executable, bound.Round(time.Millisecond), k.remedy())
		}
		return fmt.Errorf("the run's keeper (%s) did not confirm that it holds the sandbox (%v): it exited, or is not a keeper of this bwrapkit's build%s", k.executable, err, k.remedy())
	}
	if string(answer) == recordNotHeld {
		return errors.New("the run's keeper could not hold the --git commit run's pending audit (a lock on its record, in bwrapkit's state for the project), so the audit would not survive bwrapkit's death; is that directory on a file system without flock?")
	}
	if string(answer) != confirmed {
		return fmt.Errorf("the run's keeper (%s) answered %q, not %q%s", k.executable, answer, confirmed, k.remedy())
	}
	return nil
}

// remedy is what to do about a keeper that does not speak this protocol: a
// bwrapkit-helper of another build (or no helper at all) beside bwrapkit.
func (k *Keeper) remedy() string {
	if self, err := os.Executable(); err == nil && self == k.executable {
		return "" // bwrapkit itself, or the program embedding it: the same build
	}
	return fmt.Sprintf("; if %s is not from the same build as this bwrapkit, replace it with that build's, or remove it (bwrapkit is then its own keeper)", k.executable)
}

// Exited is closed when the keeper process exits, so that a run notices a keeper that died
// while it went on (the OOM killer, a `pkill -f` of the helper's path): nothing
// would then end the sandbox if bwrapkit died. nil where the kernel has no pidfd to watch
// it by; a keeper that exits after Release is the run's normal end.
func (k *Keeper) Exited() <-chan struct{} {
	fd, err := unix.PidfdOpen(k.process.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	exited := make(chan struct{})
	go func() {
		if parkOnPidfd(fd) {
			close(exited)
		}
	}()
	return exited
}

// ProcessName is the keeper's process name (its comm), which no pattern naming bwrapkit
// matches.
const ProcessName = "sandbox-keeper"

// Pid is the keeper process's pid.
func (k *Keeper) Pid() int { return k.process.Pid }

// Env is the variable that marks the run's processes for the keeper: bwrap's environment.
func (k *Keeper) Env() string { return TokenVar + "=" + k.token }

// Watch tells the keeper about bwrap ("bwrap") or the sandbox's pid 1 ("init"). Each
// message is one write of a few bytes, so it reaches the keeper whole or not at all.
func (k *Keeper) Watch(kind string, pid int) error {
	_, err := k.lifeline.Write([]byte(kind + " " + strconv.Itoa(pid) + "\n"))
	return err
}

// WatchCgroup tells the keeper the run's cgroup directories (the v2 one first), before
// they are made: if bwrapkit goes, the keeper ends and removes whichever exist. One write
// of at most PIPE_BUF bytes, so the keeper gets all of them or none.
func (k *Keeper) WatchCgroup(paths []string) error {
	var lines strings.Builder
	for _, dir := range paths {
		if strings.ContainsAny(dir, "\n") {
			return fmt.Errorf("keeper: cgroup path %q has a newline", dir)
		}
		lines.WriteString("cgroup " + dir + "\n")
	}
	if lines.Len() > 4096 {
		return fmt.Errorf("keeper: the run's cgroup paths take %d bytes, more than one atomic pipe write", lines.Len())
	}
	_, err := k.lifeline.Write([]byte(lines.String()))
	return err
}

// AuditCommand is the hidden first argument with which the keeper starts the auditor
// (AuditAfter): `AUDITOR __bwrapkit-git-audit RECORD`. A program named as the auditor
// does the audit the record holds when it sees it, and exits (sandbox.AuditMain).
const AuditCommand = "__bwrapkit-git-audit"

// auditBound bounds the auditor's run: an audit is a walk of the project's .git entries,
// and a host so loaded that it takes longer must still see its keeper exit.
const auditBound = 2 * time.Minute

// AuditAfter tells the keeper that, should bwrapkit go without saying "done", it is to
// start auditor with AuditCommand and record once every process of the run is gone: a
// --git commit run's audit, which a killed bwrapkit never did. Both are absolute paths.
// Said before bwrap starts; bwrapkit removes the record itself once it did the audit.
func (k *Keeper) AuditAfter(auditor, record string) error {
	for _, p := range []string{auditor, record} {
		if !cleanAbs(p) || strings.ContainsAny(p, "\n") {
			return fmt.Errorf("keeper: %q is not an absolute, clean path on one line", p)
		}
	}
	// One write of at most PIPE_BUF bytes: the keeper has both or neither.
	lines := "auditor " + auditor + "\naudit " + record + "\n"
	if len(lines) > 4096 {
		return fmt.Errorf("keeper: the auditor's paths take %d bytes, more than one atomic pipe write", len(lines))
	}
	_, err := k.lifeline.Write([]byte(lines))
	return err
}

// Release says the run is over (every process of it is gone) and reaps the keeper.
func (k *Keeper) Release() {
	if k == nil || k.lifeline == nil {
		return
	}
	_, _ = k.lifeline.Write([]byte("done\n"))
	k.lifeline.Close()
	k.lifeline = nil
	k.confirm.Close()
	// A keeper exits as soon as it reads "done"; one that does not (not a keeper of this
	// build, or stopped) must not hold bwrapkit past the run it kept.
	waited := make(chan struct{})
	go func() {
		ParkUntilExited(k.process.Pid)
		_, _ = k.process.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(releaseBound):
		_ = k.process.Kill()
		<-waited
	}
}

// releaseBound is how long Release waits for the keeper to exit before killing it.
const releaseBound = 2 * time.Second

// Main is the keeper process: it follows the lifeline and, when bwrapkit goes without
// saying "done", kills every process of the run. args are what follows KeeperCommand.
func Main(args []string) int {
	if len(args) != 1 || args[0] == "" {
		fmt.Fprintln(os.Stderr, "bwrapkit: the keeper is started by bwrapkit itself, with its token and lifeline")
		return 2
	}
	token := args[0]
	// A name `pkill -9 bwrapkit` (a common end for a hung run) does not match, so that the
	// keeper outlives it and ends the sandbox, as it is there to (bwrapkit-helper would).
	_ = os.WriteFile("/proc/self/comm", []byte(ProcessName), 0)
	// Only bwrapkit's going (the lifeline's end) or its "done" ends the keeper.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	// Non-blocking, so the runtime's poller waits on it: a read blocked in the kernel
	// holds a P, and keeps the runtime's monitor thread waking every 20 µs to see whether
	// to take it back, for the whole run (a third of this process's CPU).
	_ = unix.SetNonblock(lifelineFD, true)
	lifeline := os.NewFile(lifelineFD, "lifeline")
	answers := os.NewFile(confirmFD, "confirmations")
	held := map[string]int{} // pidfds of what bwrapkit named, opened as soon as named
	var record *os.File      // a pending audit's record, with a shared lock: see holdRecord
	recordUnheld := false
	state := follow(lifeline, func(msg message) {
		// A cgroup line names no process: its path is in the state follow returns.
		if msg.pid > 0 {
			if fd, err := unix.PidfdOpen(msg.pid, 0); err == nil {
				held[msg.kind] = fd
			}
		}
		if msg.kind == "audit" {
			record = holdRecord(msg.path)
			recordUnheld = record == nil
		}
		if msg.kind == "init" {
			// Held by pidfd where the kernel has them, else by the token (end finds it).
			// Not with a pending audit the keeper could not hold: bwrapkit then refuses
			// the run before its command exists.
			answer := confirmed
			if recordUnheld {
				answer = recordNotHeld
			}
			_, _ = answers.WriteString(answer)
		}
	})
	if state.done {
		return 0
	}
	// The cgroup first: cgroup.kill ends every process of the run at once, whatever it
	// did to pid 1 or its session, and the keeper removes the cgroups bwrapkit cannot.
	if err := cgroup.End(state.cgroups, cgroupEndBound); err != nil {
		fmt.Fprintln(os.Stderr, "bwrapkit keeper:", err)
	}
	gone := end(held, token)
	if state.auditor != "" && state.audit != "" {
		if gone {
			// Let go just before the auditor takes the record for itself. Should a run
			// starting meanwhile take it first, that run does the audit instead.
			record.Close()
			audit(state.auditor, state.audit)
		} else {
			LogAudit(state.audit, fmt.Sprintf("the run's processes did not end within %v, so its keeper did no audit (it would race them); the record stays (%s) for the next run on the project, which does the audit first: until then, run no git in the project", exitBound, state.audit))
		}
	}
	return 0
}

// exitBound is how long the keeper waits for what it killed to be gone.
const exitBound = 5 * time.Second

// holdRecord opens a pending audit's record and takes a shared lock on it, which the
// keeper holds until it has the audit done (or bwrapkit says "done"): while it does, no
// later run takes the record for one whose run, keeper and auditor all died. nil if the
// record cannot be held.
func holdRecord(path string) *os.File {
	f, err := safefile.Open(path)
	if err != nil {
		return nil
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil {
		f.Close()
		return nil
	}
	return f
}

// audit starts the auditor on the record, once nothing of the run is left to race it,
// and waits for it, within auditBound. The auditor says what it did in AuditLogName
// beside the record; an auditor that did not start or did not finish is said there too.
func audit(auditor, record string) {
	cmd := exec.Command(auditor, AuditCommand, record)
	cmd.Env = []string{}
	err := cmd.Start()
	if err == nil {
		timer := time.AfterFunc(auditBound, func() { _ = cmd.Process.Kill() })
		err = cmd.Wait()
		timer.Stop()
	}
	if err == nil {
		return
	}
	LogAudit(record, fmt.Sprintf("the audit its keeper started (%s) did not finish (%v, bound %v); the record stays (%s) for the next run on the project, which does the audit first: until then, run no git in the project", auditor, err, auditBound, record))
}

// LogAudit says in AuditLogName beside record what became of a killed run's audit:
// the keeper's words, and the auditor's (sandbox.AuditMain) and a later run's.
func LogAudit(record, what string) {
	line := time.Now().UTC().Format(time.RFC3339) + " a --git commit run whose bwrapkit died before its audit: " + what + "\n"
	if log, err := os.OpenFile(path.Join(path.Dir(record), AuditLogName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		_, _ = log.WriteString(line)
		log.Close()
	}
}

// AuditLogName is the file beside a pending audit's record where what was done for a
// killed run is said (the next run on the project says it again, once).
const AuditLogName = "audit-after-kill.log"

// end kills the run: pid 1 first (the kernel then kills every process of its pid
// namespace, setsid, double forks and all), then bwrap, then whatever still carries the
// run's token (a bwrap child before its uid map, when bwrapkit died before naming it),
// until a look finds nothing or the bound passes; then it waits for what it killed to be
// gone (pid 1 exits only once every process of its namespace has), and says whether it is.
func end(held map[string]int, token string) bool {
	var killed []int
	for _, kind := range []string{"init", "bwrap"} {
		if fd, ok := held[kind]; ok {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			killed = append(killed, fd)
		}
	}
	// The look goes on for a while after it first finds nothing: bwrapkit may have died
	// while starting bwrap (the forked child executes it, and takes the token, a moment
	// after its parent is gone), or bwrap while cloning its child.
	deadline := time.Now().Add(endBound)
	quiet := time.Now().Add(quietBound)
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		found := killMarked(token)
		killed = append(killed, found...)
		switch {
		case len(found) > 0:
			quiet = now.Add(quietBound)
		case now.After(quiet):
			deadline = now
		default:
			time.Sleep(5 * time.Millisecond)
		}
	}
	return awaitExit(killed, time.Now().Add(exitBound))
}

// killMarked kills every process whose environment carries the token, each through a
// pidfd opened before the second look at its environment (a pid reused in between is
// another process, and is not signalled).
func killMarked(token string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var killed []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, err := os.ReadFile("/proc/" + entry.Name() + "/environ")
		if err != nil || !marked(environ, token) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if environ, err := os.ReadFile("/proc/" + entry.Name() + "/environ"); err != nil || !marked(environ, token) {
			unix.Close(fd)
			continue
		}
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		killed = append(killed, fd)
	}
	return killed
}

// awaitExit waits until every pidfd reports its process gone (readable), or deadline,
// and says whether all did.
func awaitExit(pidfds []int, deadline time.Time) bool {
	all := true
	for _, fd := range pidfds {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		exited := false
		for !exited && time.Now().Before(deadline) {
			n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds())+1)
			exited = n > 0 || (err != nil && !errors.Is(err, unix.EINTR))
		}
		all = all && exited
	}
	return all
}

// KeeperMain makes a program that embeds the runner its own keeper: call it first in
// main, and name os.Executable() in sandbox.Options.Keeper. When the program was started
// as a keeper it runs the keeper and exits; otherwise it returns at once.
func KeeperMain() {
	if len(os.Args) > 1 && os.Args[1] == KeeperCommand {
		os.Exit(Main(os.Args[2:]))
	}
}
