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
	// Objects first: the history checks read the host's objects and only those of the
	// run's that passed, through a directory of their own (the layer's objects directory
	// would also lend them its info/alternates, commit-graph and multi-pack-index, which
	// never land and could make git see other trees than the objects hold).
	var passed []string
	for i := range entries {
		entry := &entries[i]
		rest := strings.Split(strings.TrimPrefix(entry.Path, ".git/"), "/")
		if entry.Kind != land.KindFile || !strings.HasPrefix(entry.Path, ".git/") || rest[0] != "objects" {
			continue
		}
		file := filepath.Join(upper, filepath.FromSlash(entry.Path))
		switch {
		case len(rest) == 3 && len(rest[1]) == 2 && rest[1] != "pa":
			entry.GitOK = looseObjectOK(file, rest[1]+rest[2])
		case len(rest) == 3 && rest[1] == "pack":
			entry.GitOK = packOK(file)
		}
		if entry.GitOK {
			passed = append(passed, strings.Join(rest[1:], "/"))
		}
	}
	objects, err := objectsOf(filepath.Join(upper, ".git", "objects"), passed, filepath.Dir(upper))
	if err != nil {
		return // nothing under .git but objects is verified: it is all refused
	}
	defer os.RemoveAll(objects)
	history := history{gitDir: gitDir, env: []string{"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objects, "GIT_NO_REPLACE_OBJECTS=1"}, refuses: refuses}
	// A detached HEAD is a checkout's, not a stopped rebase's or merge's: one of those
	// would leave the host detached with a conflicted index and no operation to go on with.
	stopped := slices.ContainsFunc(entries, func(e land.Entry) bool {
		name, _, _ := strings.Cut(strings.TrimPrefix(e.Path, ".git/"), "/")
		return strings.HasPrefix(e.Path, ".git/") && slices.Contains([]string{"REBASE_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply", "sequencer"}, name)
	})
	for i := range entries {
		entry := &entries[i]
		if entry.Kind != land.KindFile || !strings.HasPrefix(entry.Path, ".git/") {
			continue
		}
		rest := strings.Split(strings.TrimPrefix(entry.Path, ".git/"), "/")
		file := filepath.Join(upper, filepath.FromSlash(entry.Path))
		switch {
		case len(rest) == 1 && rest[0] == "HEAD":
			// A branch, or a detached HEAD (a CI checkout) at a commit that passes as a tip.
			entry.GitOK = headOK(file) || !stopped && history.refOK(file)
		case len(rest) == 1 && rest[0] == "index":
			entry.GitOK = indexOK(gitDir, file, refuses)
		case len(rest) > 2 && rest[0] == "refs" && rest[1] == "heads", len(rest) == 1 && rest[0] == "ORIG_HEAD":
			entry.GitOK = history.refOK(file)
		case rest[0] == "logs":
			// What `git reset --hard HEAD@{1}` or `git checkout -` brings back.
			entry.GitOK = history.reflogOK(file, filepath.Join(workdir, filepath.FromSlash(entry.Path)))
		}
	}
}

// objectsOf is a new directory in parent (the run's layer directory, bwrapkit's own, which
// the sandbox is gone from) holding, by symlink, the named files (relative to dir, an
// objects directory) and nothing else. Not in $TMPDIR: a /tmp that is not 1777 (or a
// TMPDIR that is gone) refused every commit of a commit-mode run.
func objectsOf(dir string, names []string, parent string) (string, error) {
	objects, err := os.MkdirTemp(parent, "objects-")
	if err != nil {
		return "", err
	}
	for _, name := range names {
		link := filepath.Join(objects, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			os.RemoveAll(objects)
			return "", err
		}
		if err := os.Symlink(filepath.Join(dir, filepath.FromSlash(name)), link); err != nil {
			os.RemoveAll(objects)
			return "", err
		}
	}
	return objects, nil
}

// history checks what a written ref or reflog names, against the host's repository and
// the run's verified objects (env).
type history struct {
	gitDir  string
	env     []string
	refuses func(string) bool
}

// refOK: a ref file (a branch, ORIG_HEAD, a detached HEAD) holding one commit id whose
// new history passes (commitsOK).
func (h history) refOK(file string) bool {
	data, err := safefile.ReadFile(file, 4096)
	if err != nil {
		return false
	}
	id := strings.TrimSpace(string(data))
	return isObjectID(id) && h.commitsOK([]string{id})
}

// reflogOK: a reflog whose lines, those the host's copy (hostFile) does not already end
// with, each start with two object ids, and every id in them (the message's too: `git
// checkout -` takes the one after "moving from") is a commit whose new history passes.
func (h history) reflogOK(file, hostFile string) bool {
	data, err := safefile.ReadFile(file, maxReflog)
	if err != nil {
		return false
	}
	if host, err := safefile.ReadFile(hostFile, maxReflog); err == nil && bytes.HasPrefix(data, host) {
		data = data[len(host):]
	}
	seen := map[string]bool{}
	var ids []string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || !isObjectID(fields[0]) || !isObjectID(fields[1]) {
			return false
		}
		for _, word := range fields {
			if isObjectID(word) && strings.Trim(word, "0") != "" && !seen[word] {
				seen[word] = true
				ids = append(ids, word)
			}
		}
	}
	return h.commitsOK(ids)
}

// commitsOK: every id names a commit, and every commit they reach that the host's refs
// and reflogs do not changes no refused path against each of its parents (-m; --root for
// a first commit). A refused file carried in an earlier commit comes back at the user's
// reset, revert or checkout as surely as one in the tip.
func (h history) commitsOK(ids []string) bool {
	if len(ids) == 0 {
		return true
	}
	input := strings.Join(ids, "\n") + "\n"
	types, ok := runHostGitInput(h.gitDir, h.env, input, "cat-file", "--batch-check=%(objecttype)")
	if !ok || strings.Count(types, "commit\n") != len(ids) {
		return false // a tree, a blob, a tag or a missing object: not a commit
	}
	out, ok := runHostGitInput(h.gitDir, h.env, input, "log", "-z", "-m", "--root", "--no-renames", "--name-only", "--format=%x00", "--not", "--all", "--reflog", "--stdin")
	// Names come NUL-ended after a header and a newline. Split at newlines too: a name
	// holding one can only add names to check, never hide one.
	return ok && !anyRefused(strings.FieldsFunc(out, func(r rune) bool { return r == 0 || r == '\n' }), h.refuses)
}

// isObjectID says whether s is a full SHA-1 or SHA-256 object id in hex.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// maxReflog bounds a reflog read whole.
const maxReflog = 16 << 20

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
	return runHostGitInput(gitDir, extra, "", args...)
}

// runHostGitInput is runHostGit with input on git's standard input.
func runHostGitInput(gitDir string, extra []string, input string, args ...string) (string, bool) {
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
	if input != "" {
		cmd.Stdin = strings.NewReader(input)
	}
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

// PackedRefs says which refs the packed-refs file names (its "<id> <ref>" lines); nil
// when there is no such file.
func PackedRefs(file string) func(ref string) bool {
	data, err := safefile.ReadFile(file, maxReflog)
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if id, ref, ok := strings.Cut(line, " "); ok && isObjectID(id) {
			names[ref] = true
		}
	}
	return func(ref string) bool { return names[ref] }
}

// HeadCommit is the commit HEAD is at in the repository at gitDir, as the host's git
// says with a clean environment; false for an unborn HEAD or no repository.
func HeadCommit(gitDir string) (string, bool) {
	out, ok := runHostGit(gitDir, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	return strings.TrimSpace(out), ok
}
