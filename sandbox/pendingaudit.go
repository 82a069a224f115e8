package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/sandbox/gitmeta"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
	"golang.org/x/sys/unix"
)

// A --git commit run's audit (auditGit) is bwrapkit's work after the sandbox is gone. A
// bwrapkit killed before it (SIGKILL on an agent's tool timeout) would leave the
// command's plants, a nested repository's armed config say, for the user's next git
// there. So the audit is written down before bwrap starts, in bwrapkit's private state
// for the project (beside the policy base), and the keeper, which outlives bwrapkit and
// ends the sandbox, starts Options.Auditor on it once nothing of the run is left. A
// record whose run, keeper and auditor are all gone (killed together) is done by the
// next run on the project, before anything else: each holds a shared lock on it while
// alive, and only a record nobody holds is taken.

// pendingAuditPrefix begins each record's name: one per run, so concurrent runs in one
// project keep their own.
const pendingAuditPrefix = "audit-pending-"

// AuditLogName is the file beside the records where an audit done for a killed run says
// what it moved aside (bwrapkit itself, killed, cannot).
const AuditLogName = lifetime.AuditLogName

// auditorWait is how long the auditor waits for a record's other holders (a keeper that
// has not yet let go) before it leaves the record to the next run.
const auditorWait = 10 * time.Second

// writePendingAudit records a commit-mode run's audit (gitmeta.Pending) and returns the
// record's path and the record open with its shared lock, which the caller holds until
// its own audit is done; "" and nil outside commit mode.
func writePendingAudit(policy Policy, before gitmeta.Repositories) (string, *os.File, error) {
	if policy.Git != GitCommit {
		return "", nil, nil
	}
	dir := filepath.Dir(policy.PolicyBase) // set in commit mode (recordPolicyBase refuses otherwise)
	if err := home.ProvePrivate(dir); err != nil {
		return "", nil, fmt.Errorf("--git commit records its audit in %s: %w", dir, err)
	}
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, err
	}
	record := filepath.Join(dir, pendingAuditPrefix+hex.EncodeToString(raw[:]))
	pending := gitmeta.Pending{Workdir: policy.Workdir, Protect: policy.Protect, Before: before}
	lock, err := gitmeta.WritePending(record, pending)
	if err != nil {
		return "", nil, fmt.Errorf("recording the audit of a --git commit run: %w", err)
	}
	return record, lock, nil
}

// AuditMain makes a program named in Options.Auditor the auditor: call it first in main.
// When the keeper started the program for a pending audit it does the audit, says what
// it moved aside in AuditLogName beside the record, and exits; otherwise it returns.
func AuditMain() {
	if len(os.Args) != 3 || os.Args[1] != lifetime.AuditCommand {
		return
	}
	os.Exit(auditPending(os.Args[2]))
}

// auditPending does the audit recorded at record (a name writePendingAudit gives), and
// logs it beside the record: 0 when the audit was done or was not needed (its run did
// it), 1 when the record stays.
func auditPending(record string) int {
	if !filepath.IsAbs(record) || !isRecordName(filepath.Base(record)) {
		fmt.Fprintf(os.Stderr, "bwrapkit: %q is not a pending audit's record\n", record)
		return 2
	}
	moved, done, err := gitmeta.AuditPending(record, auditorWait)
	if !done && err == nil {
		return 0 // its run did the audit itself
	}
	what := auditLine("its keeper", moved, done, err, record)
	lifetime.LogAudit(record, what)
	if !done {
		fmt.Fprintln(os.Stderr, "bwrapkit: "+what)
		return 1
	}
	return 0
}

// isRecordName: name is a record's (writePendingAudit), not a temporary file of one.
func isRecordName(name string) bool {
	rest, ok := strings.CutPrefix(name, pendingAuditPrefix)
	return ok && rest != "" && !strings.Contains(rest, ".")
}

// auditLine is what the log says of one pending audit, done by who (pure; LogAudit
// dates it and says whose audit it was).
func auditLine(who string, moved []string, done bool, err error, record string) string {
	if !done {
		return "its audit was not done by " + who + " (" + oneLine(err.Error()) + "); the record stays, " + record + ", for the next run on the project; until then, run no git in the project"
	}
	line := "audited by " + who
	const shown = 20
	switch {
	case len(moved) == 0:
		line += ", nothing to move aside"
	case len(moved) > shown:
		line += fmt.Sprintf("; moved aside %d entries, each to NAME.bwrapkit-quarantine, among them: %s", len(moved), strings.Join(moved[:shown], ", "))
	default:
		line += "; moved aside: " + strings.Join(moved, ", ")
	}
	if err != nil {
		line += "; " + oneLine(err.Error())
	}
	return line
}

// oneLine is an error's words on one line: the audit joins its problems with newlines,
// and each paths it names is Shown already.
func oneLine(words string) string { return strings.ReplaceAll(words, "\n", "; ") }

// maxLogLines and maxLogLine bound what a run says of the log (takeAuditLog): its lines
// are bwrapkit's, but a project can gather many killed runs.
const (
	maxLogLines = 20
	maxLogLine  = 4096
)

// pickUpAudits does the pending audits of the project that nobody holds: runs killed
// together with their keeper (pkill -9 -f bwrapkit, a killed scope), whose plants would
// otherwise be taken for the project's own by this run's inventory. Each is logged like
// the keeper's; what they moved aside is returned. A record that cannot be read is an
// error: a commit-mode run is refused on it (its inventory would take in what the killed
// run left).
func pickUpAudits(policy Policy) (moved []string, live int, err error) {
	if policy.PolicyBase == "" {
		return nil, 0, nil
	}
	dir := filepath.Dir(policy.PolicyBase)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, nil // no state for the project yet
	}
	var all []string
	var problems []error
	for _, entry := range entries {
		name := entry.Name()
		path := filepath.Join(dir, name)
		switch {
		case !strings.HasPrefix(name, pendingAuditPrefix):
		case !isRecordName(name):
			removeUnheld(path) // a record's temporary file: its run died before bwrap started
		default:
			moved, done, err := gitmeta.AuditPending(path, 0)
			if errors.Is(err, gitmeta.ErrPendingLive) {
				live++
				continue
			}
			if !done && err == nil {
				continue
			}
			lifetime.LogAudit(path, auditLine("the next run on the project", moved, done, err, path))
			all = append(all, moved...)
			if !done {
				problems = append(problems, fmt.Errorf("%s: %w", path, err))
			}
		}
	}
	return all, live, errors.Join(problems...)
}

// commitLocks are the locks a --git commit run holds from before its inventory to the
// end of its audit (lockCommitRuns); Close lets them go.
type commitLocks []*os.File

func (l commitLocks) Close() {
	for _, f := range l {
		f.Close()
	}
}

// lockCommitRuns keeps --git commit runs whose workdirs are one or nest from overlapping:
// two at once could each undo what the other's audit did (a second run's command renamed
// the first's quarantine back, and its own inventory, taken while the plant was there,
// kept it). A run holds an exclusive lock for its workdir and a shared one for each
// directory above it, all in the caller's layers directory (projects nest: a run in P
// and one in P/sub write into one tree, as landings found); a run that cannot take them
// is refused. Runs of projects side by side take shared locks on their common parents
// alone, and go on together.
func lockCommitRuns(policy Policy) (commitLocks, error) {
	if policy.Git != GitCommit {
		return nil, nil
	}
	project := filepath.Dir(policy.PolicyBase) // set in commit mode (recordPolicyBase refuses otherwise)
	layers := filepath.Dir(project)
	// The project's directory and the layers directory above it, as for the records.
	if err := home.ProvePrivate(project); err != nil {
		return nil, fmt.Errorf("--git commit keeps its locks in %s: %w", layers, err)
	}
	var held commitLocks
	for dir, how := policy.Workdir, unix.LOCK_EX; ; dir, how = filepath.Dir(dir), unix.LOCK_SH {
		sum := sha256.Sum256([]byte(dir))
		lock, err := os.OpenFile(filepath.Join(layers, "commit-"+hex.EncodeToString(sum[:12])+".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
		if err == nil {
			err = unix.Flock(int(lock.Fd()), how|unix.LOCK_NB)
			held = append(held, lock)
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			held.Close()
			return nil, fmt.Errorf("another --git commit run is under way on this project, or on one it lies in or that lies in it (%s): run this one once it has ended (two at once could each undo what the other's audit did)", gitmeta.Shown(dir))
		}
		if err != nil {
			held.Close()
			return nil, fmt.Errorf("--git commit's lock on the project: %w", err)
		}
		if dir == "/" || dir == "." {
			return held, nil
		}
	}
}

// pickedUpError is a run refused because the audits pickUpAudits did moved entries of the
// project aside after its policy was resolved (the binds of nested repositories among
// them): the run goes again, on the project as it is now.
func pickedUpError(moved []string) error {
	const shown = 3
	list := strings.Join(moved[:min(shown, len(moved))], ", ")
	if len(moved) > shown {
		list += fmt.Sprintf(" and %d more", len(moved)-shown)
	}
	return fmt.Errorf("an earlier --git commit run on this project was killed together with its keeper before its audit; the audit was done now and moved aside %s, after this run's policy was resolved: run it again", list)
}

// removeUnheld removes a record's temporary file that nobody holds and that is older
// than a minute (a younger one may be a starting run's, between its making and its lock).
func removeUnheld(path string) {
	f, err := safefile.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || time.Since(info.ModTime()) < time.Minute {
		return
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		os.Remove(path)
	}
}

// takeAuditLog returns the lines of the project's AuditLogName and removes it, so that
// each is said once (Result.EarlierAudits); nil where there is none. The log is renamed
// first: of two runs ending at once, one takes it. Taken at the end of a run, so a run
// killed in turn leaves the lines to the next.
func takeAuditLog(policy Policy) []string {
	if policy.PolicyBase == "" {
		return nil
	}
	log := filepath.Join(filepath.Dir(policy.PolicyBase), AuditLogName)
	taken := log + ".taken-" + strconv.Itoa(os.Getpid())
	if os.Rename(log, taken) != nil {
		return nil
	}
	defer os.Remove(taken)
	data, err := os.ReadFile(taken)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > maxLogLines {
		lines = append([]string{fmt.Sprintf("(%d earlier lines not shown)", len(lines)-maxLogLines)}, lines[len(lines)-maxLogLines:]...)
	}
	for i, line := range lines {
		if len(line) > maxLogLine {
			lines[i] = line[:maxLogLine] + " ..."
		}
	}
	return lines
}
