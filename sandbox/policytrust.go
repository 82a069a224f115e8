package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/sandbox/gitmeta"
)

// TrustPolicyFile refuses a policy file that a sandbox could have written: one inside
// the policy's HOME or a --rw path, or inside the workdir unless it is byte for byte
// the version committed in HEAD (read by the host's git with a clean environment). A
// run could otherwise rewrite the policy that widens the next run (network, secrets,
// writes elsewhere). data is the file as it was read.
//
// HEAD alone is no anchor once a --git commit run has run: that run may have committed
// the widened policy itself. So each --git commit run first records, outside the
// workdir, the commit HEAD was at (recordPolicyBase), and while that record is kept an
// in-project policy must also be byte for byte its version in the recorded commit: a
// policy a sandboxed commit changed, added or rolled back is refused until the user,
// outside the sandbox, has looked and removed the record.
func TrustPolicyFile(policy Policy, path string, data []byte) error {
	real := resolveExisting(absolute(path))
	for _, dir := range append([]string{policy.Home}, policy.ReadWrite...) {
		if dir != "" && within(dir, real) {
			return &PolicyError{"policy", path, fmt.Sprintf("lies inside %s, which sandboxed commands can write; keep the policy outside it", dir)}
		}
	}
	if !within(policy.Workdir, real) {
		return nil
	}
	rel, err := filepath.Rel(policy.Workdir, real)
	if err != nil {
		return &PolicyError{"policy", path, err.Error()}
	}
	rel = filepath.ToSlash(rel)
	gitDir := filepath.Join(policy.Workdir, ".git")
	committed, ok := committedBlob(gitDir, "HEAD", rel)
	if !ok {
		return &PolicyError{"policy", path, "lies inside the workdir, where a command can rewrite it, and is not committed in HEAD; commit it (it is then read as committed) or keep it outside the workdir"}
	}
	if !bytes.Equal(committed, data) {
		return &PolicyError{"policy", path, "lies inside the workdir and differs from its version committed in HEAD (a run may have rewritten it); review and commit it, or keep the policy outside the workdir"}
	}
	base, err := readPolicyBase(policy.PolicyBase)
	if err != nil {
		return &PolicyError{"policy", path, err.Error()}
	}
	if why := baseDisagrees(base, gitDir, rel, data); why != "" {
		return &PolicyError{"policy", path, fmt.Sprintf("lies inside the workdir and %s. Review it outside the sandbox (git -C %s %s); if you accept it, confirm by removing %s (the next --git commit run records HEAD afresh), or keep the policy outside the workdir", why, policy.Workdir, reviewCommand(base, rel), policy.PolicyBase)}
	}
	return nil
}

// policyBaseName is the record, in the project's private layer directory, of the commit
// HEAD was at before the first --git commit run since the user last confirmed.
const policyBaseName = "policy-base"

const (
	// baseNone: HEAD named no commit when a --git commit run began; every commit since
	// may be the sandbox's.
	baseNone = "none"
	// baseDirect: a --git commit run bound .git live (direct mode), where nothing it wrote
	// to the object store was vetted: no commit after it proves anything.
	baseDirect = "direct"
)

// baseDisagrees says why the recorded base does not vouch for data at rel ("" when it
// does, or no record is kept).
func baseDisagrees(base, gitDir, rel string, data []byte) string {
	switch base {
	case "":
		return ""
	case baseNone:
		return "a sandboxed --git commit run has run since HEAD named no commit, so any commit holding it may be the sandbox's"
	case baseDirect:
		return "a sandboxed --git commit run has run in direct mode, where what it wrote to .git was not vetted, so no commit since proves who made it"
	}
	atBase, ok := committedBlob(gitDir, base, rel)
	if !ok {
		return fmt.Sprintf("is not in %s, the commit HEAD was at before a sandboxed --git commit run (a sandboxed commit may have added it)", short(base))
	}
	if !bytes.Equal(atBase, data) {
		return fmt.Sprintf("differs from its version in %s, the commit HEAD was at before a sandboxed --git commit run (a sandboxed commit may have changed it)", short(base))
	}
	return ""
}

func reviewCommand(base, rel string) string {
	if base == baseNone || base == baseDirect {
		return "log -p -- " + rel
	}
	return "diff " + short(base) + " HEAD -- " + rel
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// committedBlob is rel as committed in rev, read by the host's git (clean environment,
// replace refs ignored: one a sandbox wrote must not stand in for a commit's content).
func committedBlob(gitDir, rev, rel string) ([]byte, bool) {
	out, ok := gitmeta.CommittedFile(gitDir, rev, rel)
	return []byte(out), ok
}

// readPolicyBase is the recorded base: a commit id, baseNone, baseDirect, or "" when no
// record is kept. A record that cannot be read refuses (it may hold a base).
func readPolicyBase(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the record of the HEAD before a sandboxed --git commit run cannot be read: %w", err)
	}
	base := strings.TrimSpace(string(data))
	if base != baseNone && base != baseDirect && !isCommitID(base) {
		return "", fmt.Errorf("%s is not a record bwrapkit wrote (%q); remove it once you have reviewed the project's policy files", path, base)
	}
	return base, nil
}

// isCommitID: a full SHA-1 or SHA-256 object name, never a revision git would resolve
// (HEAD, a branch) to whatever it names now.
func isCommitID(name string) bool {
	if len(name) != 40 && len(name) != 64 {
		return false
	}
	return strings.Trim(name, "0123456789abcdef") == ""
}

// recordPolicyBase records, before a --git commit run, where HEAD is (see
// TrustPolicyFile); an earlier record is kept, as the commits since it are unconfirmed.
// It fails when no record can be kept: the run could then make its own policy trusted.
func recordPolicyBase(policy Policy, mode WorkdirMode) error {
	if policy.Git != GitCommit {
		return nil
	}
	if policy.PolicyBase == "" {
		return errors.New("--git commit needs bwrapkit's private cache directory to record the HEAD it starts from, and there is none (set XDG_CACHE_HOME or HOME)")
	}
	kept, err := readPolicyBase(policy.PolicyBase)
	if err != nil {
		return err
	}
	// A direct run can rewrite the object store a recorded commit is read from, so it
	// replaces any record but its own kind; otherwise the earliest record stands.
	if kept == baseDirect || kept != "" && mode != WorkdirDirect {
		return nil
	}
	base := baseDirect
	if mode != WorkdirDirect {
		base = baseNone
		if commit, ok := gitmeta.HeadCommit(filepath.Join(policy.Workdir, ".git")); ok && isCommitID(commit) {
			base = commit
		}
	}
	dir := filepath.Dir(policy.PolicyBase)
	if err := home.ProvePrivate(dir); err != nil {
		return fmt.Errorf("--git commit records the HEAD it starts from in %s: %w", dir, err)
	}
	temp, err := os.CreateTemp(dir, policyBaseName+".*")
	if err != nil {
		return fmt.Errorf("recording the HEAD a --git commit run starts from: %w", err)
	}
	defer os.Remove(temp.Name())
	_, err = temp.WriteString(base + "\n")
	if err == nil {
		err = temp.Sync()
	}
	if closeErr := temp.Close(); err == nil {
		err = closeErr
	}
	switch {
	case err != nil:
	case kept != "":
		err = os.Rename(temp.Name(), policy.PolicyBase) // direct over a recorded commit
	default:
		// Never over a record a concurrent run made first: the older base stands.
		err = unix.Renameat2(unix.AT_FDCWD, temp.Name(), unix.AT_FDCWD, policy.PolicyBase, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) && mode == WorkdirDirect {
			err = os.Rename(temp.Name(), policy.PolicyBase)
		} else if errors.Is(err, unix.EEXIST) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("recording the HEAD a --git commit run starts from in %s: %w", policy.PolicyBase, err)
	}
	return nil
}
