package gitmeta

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/sandbox/land"
)

// Verify checks, for a --git commit run, the content of what the command wrote under
// workdir's .git (upper is the run's upper layer) (land.Entry.GitOK): a loose object must inflate to content that
// hashes to its own name; a pack must pass the host's `git verify-pack`; the index must
// be one the host's git reads (clean environment, hooks and fsmonitor off), not split or
// shared, with the gitlinks of HEAD exactly (a new gitlink is where a planted repository
// would make the host's `git status` run its fsmonitor); HEAD must be a symbolic ref to
// refs/heads/*. Everything else under .git is refused by land's rules without a look.
//
// refuses says whether a change at a path (relative, slash-separated) would be refused in
// the work tree by its path alone (land.Rules.RefusesPath: the guarded hooks directory and
// its parents, a package manager's settings, a bare fixture's config): a branch tip or an
// index the command wrote must change no such path against the host's HEAD (or its
// index). A commit that did would bring the refused file back at the user's next
// checkout, stash or restore.
func Verify(workdir, upper string, entries []land.Entry, refuses func(string) bool) {
	gitDir := filepath.Join(workdir, ".git")
	objects := []string{"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(upper, ".git", "objects")}
	for i := range entries {
		entry := &entries[i]
		if entry.Kind != land.KindFile || !strings.HasPrefix(entry.Path, ".git/") {
			continue
		}
		rest := strings.Split(strings.TrimPrefix(entry.Path, ".git/"), "/")
		file := filepath.Join(upper, filepath.FromSlash(entry.Path))
		switch {
		case len(rest) == 3 && rest[0] == "objects" && len(rest[1]) == 2 && rest[1] != "pa":
			entry.GitOK = looseObjectOK(file, rest[1]+rest[2])
		case len(rest) == 3 && rest[0] == "objects" && rest[1] == "pack":
			entry.GitOK = packOK(file)
		case len(rest) == 1 && rest[0] == "HEAD":
			// A branch, or a detached HEAD (a CI checkout) at a commit that passes as a tip.
			entry.GitOK = headOK(file) || historyOK(gitDir, file, objects, refuses)
		case len(rest) == 1 && rest[0] == "index":
			entry.GitOK = indexOK(gitDir, file, refuses)
		case len(rest) > 2 && rest[0] == "refs" && rest[1] == "heads", rest[0] == "logs", len(rest) == 1 && rest[0] == "ORIG_HEAD":
			// A branch, and what `git reset --hard ORIG_HEAD` or `HEAD@{1}` brings back.
			entry.GitOK = historyOK(gitDir, file, objects, refuses)
		}
	}
}

// historyOK: every commit the file (a ref, ORIG_HEAD, a detached HEAD, a reflog) names is
// one the host has, or a new one (found among the run's new objects) whose every commit
// not yet the host's changes no refused path against each of its parents: a refused
// file carried in an earlier commit comes back at the user's `git reset --hard HEAD~1`,
// revert or checkout as surely as one in the tip. A name that is not a commit fails.
func historyOK(gitDir, file string, objects []string, refuses func(string) bool) bool {
	data, err := safefile.ReadFile(file, maxReflog)
	if err != nil {
		return false
	}
	tips := namedCommits(string(data))
	if len(tips) == 0 {
		return false
	}
	env := append(slices.Clone(objects), "GIT_NO_REPLACE_OBJECTS=1")
	// Each new commit, with the paths it changes against each parent (-m; --root for a
	// first commit), as NUL-separated names after a NUL-led header.
	// Not new: what the host's refs or its own reflogs reach.
	args := append([]string{"log", "-z", "-m", "--root", "--no-renames", "--name-only", "--format=%x00"}, tips...)
	out, ok := runHostGit(gitDir, env, append(args, "--not", "--all", "--reflog", "--")...)
	return ok && !anyRefused(strings.FieldsFunc(out, func(r rune) bool { return r == 0 || r == '\n' }), refuses)
}

// maxReflog bounds a ref or reflog file read whole.
const maxReflog = 16 << 20

// namedCommits are the object ids a ref file (one id), a detached HEAD or a reflog (old
// and new id at the start of each line) names, without the all-zero id of a creation;
// nil when one is not an id (a symbolic ref: "ref: ...").
func namedCommits(data string) []string {
	var ids []string
	for _, line := range strings.Split(strings.TrimRight(data, "\n"), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return nil
		}
		if len(fields) > 1 {
			fields = fields[:2] // a reflog line: old new ident time zone, message
		}
		for _, id := range fields {
			if _, err := hex.DecodeString(id); err != nil || len(id) != 40 && len(id) != 64 {
				return nil
			}
			if strings.Trim(id, "0") != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// indexKeeps: the command's index (staged: its `ls-files --stage -z`) changes no refused
// path against the host's own index (none: every staged path is new).
func indexKeeps(gitDir, after string, refuses func(string) bool) bool {
	before, _ := runHostGit(gitDir, nil, "ls-files", "--stage", "-z")
	old, changed := stagedEntries(before), stagedEntries(after)
	var paths []string
	for path, entry := range changed {
		if old[path] != entry {
			paths = append(paths, path)
		}
	}
	for path := range old {
		if _, kept := changed[path]; !kept {
			paths = append(paths, path)
		}
	}
	return !anyRefused(paths, refuses)
}

func anyRefused(paths []string, refuses func(string) bool) bool {
	for _, path := range paths {
		if path != "" && refuses(path) {
			return true
		}
	}
	return false
}

// stagedEntries reads `ls-files --stage -z` output into path -> "mode object stage"
// (pure).
func stagedEntries(out string) map[string]string {
	entries := map[string]string{}
	for _, record := range strings.Split(out, "\x00") {
		if meta, path, ok := strings.Cut(record, "\t"); ok {
			entries[path] = meta
		}
	}
	return entries
}

func looseObjectOK(path, name string) bool {
	var sum hash.Hash
	switch len(name) {
	case 40:
		sum = sha1.New()
	case 64:
		sum = sha256.New()
	default:
		return false
	}
	if _, err := hex.DecodeString(name); err != nil {
		return false
	}
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	inflated, err := zlib.NewReader(io.LimitReader(file, 1<<31))
	if err != nil {
		return false
	}
	if _, err := io.Copy(sum, io.LimitReader(inflated, 1<<32)); err != nil {
		return false
	}
	return hex.EncodeToString(sum.Sum(nil)) == name
}

// packOK: a pack and its index are checked together by the host's git; either name may
// be the one asked about. A .rev or .keep beside them is refused (not needed to commit).
func packOK(path string) bool {
	base, ok := strings.CutSuffix(path, ".pack")
	if !ok {
		if base, ok = strings.CutSuffix(path, ".idx"); !ok {
			return false
		}
	}
	if _, err := os.Lstat(base + ".pack"); err != nil {
		return false
	}
	if _, err := os.Lstat(base + ".idx"); err != nil {
		return false
	}
	_, ok = runHostGit("", nil, "verify-pack", base+".idx")
	return ok
}

func headOK(path string) bool {
	data, err := safefile.ReadFile(path, 4096)
	if err != nil {
		return false
	}
	ref, ok := strings.CutPrefix(string(data), "ref: refs/heads/")
	ref = strings.TrimSuffix(ref, "\n")
	return ok && ref != "" && !strings.ContainsAny(ref, "\x00\n\r \\~^:?*[") && !strings.Contains(ref, "..") && !strings.HasSuffix(ref, ".lock")
}

// indexOK reads the command's index with the host's git against the host's repository.
func indexOK(gitDir, index string, refuses func(string) bool) bool {
	data, err := safefile.ReadFile(index, maxIndexSize)
	if err != nil {
		return false
	}
	extensions, err := indexExtensions(data, objectHashSize(gitDir))
	if err != nil || slices.Contains(extensions, "link") {
		return false // unreadable to bwrapkit, or split: its entries live in a shared index elsewhere
	}
	staged, ok := runHostGit(gitDir, []string{"GIT_INDEX_FILE=" + index}, "ls-files", "--stage", "-z")
	if !ok {
		return false
	}
	if !indexKeeps(gitDir, staged, refuses) {
		return false
	}
	tree, ok := runHostGit(gitDir, nil, "ls-tree", "-r", "-z", "HEAD")
	if !ok {
		tree = "" // no HEAD yet: no gitlinks either
	}
	if !slices.Equal(gitlinksOf(staged, true), gitlinksOf(tree, false)) {
		return false
	}
	// An index that newly marks a path assume-unchanged or skip-worktree hides the
	// command's change to that file from the host's `git status` and `git diff`.
	marked, ok := runHostGit(gitDir, []string{"GIT_INDEX_FILE=" + index}, "ls-files", "-v", "-z")
	if !ok {
		return false
	}
	before, _ := runHostGit(gitDir, nil, "ls-files", "-v", "-z") // the host's own index, if any
	return len(newlyHidden(hiddenPaths(before), hiddenPaths(marked))) == 0
}

// hiddenPaths are the paths `ls-files -v -z` tags assume-unchanged (a lower-case tag) or
// skip-worktree (S).
func hiddenPaths(out string) map[string]bool {
	hidden := map[string]bool{}
	for _, record := range strings.Split(out, "\x00") {
		if len(record) < 3 || record[1] != ' ' {
			continue
		}
		if tag := record[0]; tag == 'S' || ('a' <= tag && tag <= 'z') {
			hidden[record[2:]] = true
		}
	}
	return hidden
}

// newlyHidden are the paths hidden after that were not hidden before, sorted.
func newlyHidden(before, after map[string]bool) []string {
	var added []string
	for path := range after {
		if !before[path] {
			added = append(added, path)
		}
	}
	slices.Sort(added)
	return added
}

// gitlinksOf lists "path oid" of the 160000 entries of `ls-files --stage -z` (staged)
// or `ls-tree -r -z` output.
func gitlinksOf(out string, staged bool) []string {
	var links []string
	for _, record := range strings.Split(out, "\x00") {
		meta, path, found := strings.Cut(record, "\t")
		fields := strings.Fields(meta)
		if !found || len(fields) < 3 || fields[0] != "160000" {
			continue
		}
		oid := fields[2]
		if staged {
			oid = fields[1]
		}
		links = append(links, path+" "+oid)
	}
	slices.Sort(links)
	return links
}

// runHostGit runs the host's git with a clean environment (plus extra), hooks and
// fsmonitor off, on gitDir when given; its output and whether it succeeded.
func runHostGit(gitDir string, extra []string, args ...string) (string, bool) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*"}
	if gitDir != "" {
		full = append(full, "--git-dir="+gitDir)
	}
	cmd := exec.CommandContext(ctx, git, append(full, args...)...)
	cmd.Env = append(hostEnv(), extra...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err = cmd.Run()
	return out.String(), err == nil
}

// CommittedFile is the content of rel (slash-separated) as committed in rev (HEAD, or a
// commit id) of the repository at gitDir, read by the host's git with a clean environment
// and replace refs off (a planted refs/replace cannot swap the blob), and whether there is
// such a committed file.
func CommittedFile(gitDir, rev, rel string) (string, bool) {
	return runHostGit(gitDir, []string{"GIT_NO_REPLACE_OBJECTS=1"}, "show", rev+":"+rel)
}

// CurrentBranch is the branch the repository at workdir has checked out, as its .git/HEAD
// names it ("refs/heads/main"), read without git; "" for a detached HEAD or no .git.
func CurrentBranch(workdir string) string {
	data, err := safefile.ReadFile(filepath.Join(workdir, ".git", "HEAD"), 4096)
	if err != nil {
		return ""
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref: ")
	if !ok || !strings.HasPrefix(ref, "refs/heads/") {
		return ""
	}
	return ref
}

// HeadCommit is the commit HEAD is at in the repository at gitDir, as the host's git
// says with a clean environment; false for an unborn HEAD or no repository.
func HeadCommit(gitDir string) (string, bool) {
	out, ok := runHostGit(gitDir, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	return strings.TrimSpace(out), ok
}
