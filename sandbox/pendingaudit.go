package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/sandbox/gitmeta"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
)

// A --git commit run's audit (auditGit) is bwrapkit's work after the sandbox is gone. A
// bwrapkit killed before it (SIGKILL on an agent's tool timeout) would leave the
// command's plants, a nested repository's armed config say, for the user's next git
// there. So the audit is written down before bwrap starts, in bwrapkit's private state
// for the project (beside the policy base), and the keeper, which outlives bwrapkit and
// ends the sandbox, starts Options.Auditor on it once nothing of the run is left.

// pendingAuditPrefix begins each record's name: one per run, so concurrent runs in one
// project keep their own.
const pendingAuditPrefix = "audit-pending-"

// AuditLogName is the file beside the records where an audit done for a killed run says
// what it moved aside (bwrapkit itself, killed, cannot).
const AuditLogName = lifetime.AuditLogName

// writePendingAudit records a commit-mode run's audit (gitmeta.Pending) and returns the
// record's path; "" outside commit mode.
func writePendingAudit(policy Policy, before gitmeta.Repositories) (string, error) {
	if policy.Git != GitCommit {
		return "", nil
	}
	dir := filepath.Dir(policy.PolicyBase) // set in commit mode (recordPolicyBase refuses otherwise)
	if err := home.ProvePrivate(dir); err != nil {
		return "", fmt.Errorf("--git commit records its audit in %s: %w", dir, err)
	}
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	record := filepath.Join(dir, pendingAuditPrefix+hex.EncodeToString(raw[:]))
	pending := gitmeta.Pending{Workdir: policy.Workdir, Protect: policy.Protect, Before: before}
	if err := gitmeta.WritePending(record, pending); err != nil {
		return "", fmt.Errorf("recording the audit of a --git commit run: %w", err)
	}
	return record, nil
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
// logs it beside the record; 0 once the record is gone (the audit done, whatever it
// found), 1 while it stays.
func auditPending(record string) int {
	if !filepath.IsAbs(record) || !strings.HasPrefix(filepath.Base(record), pendingAuditPrefix) {
		fmt.Fprintf(os.Stderr, "bwrapkit: %q is not a pending audit's record\n", record)
		return 2
	}
	moved, err := gitmeta.AuditPending(record)
	line := time.Now().UTC().Format(time.RFC3339) + " the --git commit run whose bwrapkit died before its audit"
	if len(moved) == 0 {
		line += ": nothing to move aside"
	} else {
		line += "; moved aside: " + strings.Join(moved, ", ")
	}
	if err != nil {
		line += "; " + err.Error()
	}
	if logFile, openErr := os.OpenFile(filepath.Join(filepath.Dir(record), AuditLogName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); openErr == nil {
		fmt.Fprintln(logFile, line)
		logFile.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bwrapkit: "+line)
	}
	if _, statErr := os.Lstat(record); statErr == nil {
		return 1 // not audited (unreadable): the keeper says so in the log
	}
	return 0
}

// takeAuditLog returns the lines of the project's AuditLogName and removes it, so that
// each is said once (Result.EarlierAudits); nil where there is none. The log is renamed
// first: of two runs starting at once, one takes it.
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
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}
