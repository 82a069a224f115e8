package gitmeta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bwrapkit/bwrapkit/internal/pathtree"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"golang.org/x/sys/unix"
)

// --git commit lets the command write what a commit writes (objects, refs, the index,
// logs, HEAD and their lock files, all directly under .git) while everything a host git
// would run stays read-only: hooks/, config, info/ and modules/ (every submodule's
// gitdir, hooks and config included), and each submodule's own .git entry. Missing
// hooks/ and info/ are created empty on the host first (what `git init` makes anyway),
// because a read-only bind needs something to bind: otherwise the command could create
// them. .git itself is pinned as a mount point (sandbox's binds), so it cannot be renamed and
// replaced by a .git of the command's making.
//
// What a writable .git still allows is audited after the run (Audit): a new
// commondir or config.worktree (which redirect where a host git reads its config), or a
// gitlink added to the index whose directory has a .git, would make the next host
// `git status` read a config the command wrote. Each such entry is moved aside
// (renamed to NAME.bwrapkit-quarantine) before bwrapkit returns.

// gitCommitProtected are the names under a top .git directory kept read-only in commit
// mode; dirs are made when missing.
func gitCommitProtected() (files, dirs []string) {
	return []string{"config"}, []string{"hooks", "info", "modules"}
}

// worktreeRedirects are the files of a linked worktree's own gitdir (.git/worktrees/NAME)
// that say where git finds the rest: kept read-only in commit mode (one pointed at a
// repository of the command's had the host's git status in that worktree run its
// fsmonitor), while the worktree's index, HEAD and logs stay writable for its commits.
func worktreeRedirects() []string { return []string{"commondir", "gitdir", "config.worktree"} }

// MakeCommitDirs creates the missing hooks/, info/ and modules/ of a commit-mode
// workdir's .git (0755, as git does): a read-only bind needs something to bind, or the
// command could create them.
func MakeCommitDirs(workdir string) error {
	top := filepath.Join(workdir, ".git")
	if info, err := os.Lstat(top); err != nil || !info.IsDir() {
		return nil
	}
	_, dirs := gitCommitProtected()
	for _, name := range dirs {
		path := filepath.Join(top, name)
		if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("cannot create %s to keep it read-only: %v", path, err)
		}
		if entry, err := os.Lstat(path); err != nil || !entry.IsDir() {
			return fmt.Errorf("%s is not a directory; the command could retarget it", path)
		}
	}
	return nil
}

// gitRedirects are the files under .git a host git follows to read config elsewhere.
func gitRedirects() []string { return []string{"commondir", "config.worktree"} }

// CommitEntries replaces the top .git in protect with its read-only parts. Missing
// hooks/, info/ and modules/ are listed all the same: MakeCommitDirs makes them once
// every check has passed (a refused or previewed policy changes nothing on the host).
func CommitEntries(workdir string, protect []string) ([]string, error) {
	top := filepath.Join(workdir, ".git")
	info, err := os.Lstat(top)
	if err != nil || !info.IsDir() || !slices.Contains(protect, top) {
		return protect, nil // no .git directory: a gitfile stays protected whole
	}
	kept := slices.DeleteFunc(slices.Clone(protect), func(path string) bool { return path == top })
	files, dirs := gitCommitProtected()
	for _, name := range append(files, dirs...) {
		path := filepath.Join(top, name)
		entry, err := os.Lstat(path)
		switch {
		case errors.Is(err, os.ErrNotExist) && slices.Contains(dirs, name):
			kept = append(kept, path) // made by MakeCommitDirs
			continue
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("%s is missing; this is not a whole git directory", path)
		case err != nil:
			return nil, err
		case entry.Mode()&os.ModeSymlink != 0:
			return nil, fmt.Errorf("%s is a symlink; the command could retarget it", path)
		}
		kept = append(kept, path)
	}
	for _, name := range gitRedirects() {
		if path := filepath.Join(top, name); exists(path) {
			kept = append(kept, path) // an existing one stays as it is
		}
	}
	worktrees, _ := os.ReadDir(filepath.Join(top, "worktrees"))
	for _, worktree := range worktrees {
		for _, name := range worktreeRedirects() {
			path := filepath.Join(top, "worktrees", worktree.Name(), name)
			if entry, err := os.Lstat(path); err == nil && entry.Mode().IsRegular() {
				kept = append(kept, path)
			}
		}
	}
	return kept, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Audit moves aside what a commit-mode run left in workdir that a host git would follow
// into a config the command wrote, and lists what it moved (old and new names); protect
// are the entries that were read-only during the run (an existing one stays). Only commit
// mode needs it: in readonly mode .git is not writable.
//
// before is the .git entries below the top when the run began (Repositories). Besides
// the index's gitlinks, every .git below the top that is neither protected nor there then
// unchanged (device, inode, change time) is moved aside, whatever the index says: a command can
// commit a submodule on a branch and leave the index clean, and the host enters it once
// the user merges the branch (the usual end of a commit-mode run) or resets the index.
// The repositories that were there are protected too, where the policy could
// (NestedRepositories): else the command could arm one's config and commit it as a
// submodule on a branch. A repository cloned into the project during a commit-mode run
// loses its .git (renamed, and said).
func Audit(workdir string, protect []string, before Repositories) ([]string, error) {
	top := filepath.Join(workdir, ".git")
	if info, err := os.Lstat(top); err != nil || !info.IsDir() {
		return nil, nil
	}
	// An entry that was not there before goes without a look at what it leads to: 2,000
	// symlinked .git entries made by the command, all leading to one directory of 100,000
	// files, once kept the audit digesting for minutes, past the bound of a killed run's
	// keeper. What was there is looked at once per git directory (memo).
	memo := digests{}
	changed := func(path string) bool {
		was, had := before[path]
		if !had {
			return true
		}
		now, ok := stateOf(path, memo)
		return !ok || now != was
	}
	var planted []string
	for _, name := range gitRedirects() {
		path := filepath.Join(top, name)
		if exists(path) && !slices.Contains(protect, path) {
			planted = append(planted, path)
		}
	}
	// Anything else made or changed directly in the top .git but what commits write: a
	// config's include.path may name a file there that did not exist, and git reads it.
	// A top .git read-only whole (a gitfile's, a test's) had nothing made in it.
	if !slices.Contains(protect, top) {
		for _, path := range topEntries(top) {
			if slices.Contains(protect, path) || slices.Contains(planted, path) {
				continue
			}
			if changed(path) {
				planted = append(planted, path)
			}
		}
	}
	// A directory the command left unreadable could hide one: it is opened to its owner
	// for the look (and closed again after), and one that stays unreadable is said.
	found, hidden, bare, relock := gitEntriesBelow(workdir, true)
	defer relock()
	var subs []string
	for _, path := range found {
		if changed(path) {
			subs = append(subs, path)
		}
	}
	gitlinks, indexErr := indexGitlinks(filepath.Join(top, "index")) // the command's index: read afresh
	if indexErr != nil {
		// An index bwrapkit cannot read (damaged, or crafted to show git another view
		// than bwrapkit's) may hide a gitlink to one that was there: every .git below
		// the top that was not read-only during the run goes too.
		subs = append(subs, found...)
	}
	for _, rel := range gitlinks {
		subs = append(subs, filepath.Join(workdir, filepath.FromSlash(rel), ".git"))
	}
	slices.Sort(subs)
	subs = slices.Compact(subs)
	for _, sub := range subs {
		if pathtree.Within(workdir, sub) && exists(sub) && !slices.Contains(protect, sub) {
			planted = append(planted, sub)
		}
	}
	// A directory git would take for a bare repository (HEAD beside objects/ and refs/,
	// or a commondir) that was not there before, or was and changed, loses its HEAD: git
	// enters it when a .git it meant is broken (a HEAD the command spoilt makes the work
	// tree itself the repository git finds) or when run in it.
	for _, dir := range bare {
		if changed(dir) {
			planted = append(planted, filepath.Join(dir, "HEAD"))
		}
	}
	// Each is moved aside, or said: one that cannot be must not keep the rest in place
	// (a symlinked first one once left a later planted .git for the host's git status).
	var moved []string
	var problems []error
	for _, path := range planted {
		// The parent is opened from the workdir down, never through a symlink, and the
		// rename goes through that descriptor: a command (or a concurrent run) may swap
		// a directory on the way for a symlink, and the rename must not act elsewhere.
		parent, err := parentBeneath(workdir, path)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			problems = append(problems, fmt.Errorf("%s is reached through a symlink now; not touched, but a host git would follow it: remove it by hand", Shown(path)))
			continue
		}
		var aside string
		if err == nil {
			aside, err = moveAside(parent, path)
			unix.Close(parent)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("cannot move %s aside: %w; remove it before running git here", Shown(path), err))
			continue
		}
		moved = append(moved, Shown(path)+" -> "+Shown(aside))
	}
	if indexErr != nil {
		problems = append(problems, fmt.Errorf("after the run, .git/index cannot be read to check for added submodules (%v); every .git below the top that was not read-only during the run was moved aside", indexErr))
	}
	if head, err := safefile.ReadFile(filepath.Join(top, "HEAD"), maxGitFile); err != nil || !validHead(string(head)) {
		problems = append(problems, fmt.Errorf("%s/HEAD is no longer one git accepts, so git does not take %s for the repository (and looks for one elsewhere); restore it (e.g. ref: refs/heads/main) before running git here", top, top))
	}
	for _, dir := range hidden {
		problems = append(problems, fmt.Errorf("%s cannot be read, and may hold a repository the command planted; look inside before running git here", Shown(dir)))
	}
	return moved, errors.Join(problems...)
}

// Shown is path as bwrapkit prints it: as it is, or quoted (Go syntax) when it holds a
// control character or bytes that are not UTF-8. A command names the entries an audit
// reports, and a name with a newline in it once printed lines of the command's making
// as bwrapkit's own.
func Shown(path string) string {
	if !utf8.ValidString(path) || strings.ContainsFunc(path, unicode.IsControl) {
		return strconv.Quote(path)
	}
	return path
}

// parentBeneath opens the directory holding path, which lies below workdir, one part at
// a time from the workdir down and never through a symlink: an O_PATH descriptor, or an
// error (ELOOP or ENOTDIR where a part is a symlink now).
func parentBeneath(workdir, path string) (int, error) {
	rel, err := filepath.Rel(workdir, filepath.Dir(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return -1, fmt.Errorf("%s is not below the workdir", Shown(path))
	}
	real, err := filepath.EvalSymlinks(workdir)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || rel == "." {
		return fd, err
	}
	for part := range strings.SplitSeq(rel, "/") {
		next, err := unix.Openat(fd, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// moveAside renames path, in the directory parent (parentBeneath's), to
// NAME.bwrapkit-quarantine, or -2, -3 and so on where an earlier audit's quarantine is
// still there (the user's to restore: it was once removed to make room, repository and
// all), never over anything. A parent the command left unwritable is opened to its owner
// for the move, through the descriptor, and closed again (a chmod 555 once kept a plant
// in place).
func moveAside(parent int, path string) (string, error) {
	name := filepath.Base(path)
	aside, err := renameAside(parent, name)
	if errors.Is(err, unix.EACCES) {
		if was, widenErr := widen(parent, 0o300); widenErr == nil {
			aside, err = renameAside(parent, name)
			_ = chmodFD(parent, was)
		}
	}
	return filepath.Join(filepath.Dir(path), aside), err
}

// renameAside is moveAside's rename: the first quarantine name nothing holds.
func renameAside(parent int, name string) (string, error) {
	for n := 1; n <= 100; n++ {
		aside := name + ".bwrapkit-quarantine"
		if n > 1 {
			aside += "-" + strconv.Itoa(n)
		}
		err := unix.Renameat2(parent, name, parent, aside, unix.RENAME_NOREPLACE)
		switch {
		case err == nil:
			return aside, nil
		case errors.Is(err, unix.EEXIST):
			continue
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
			// A file system without RENAME_NOREPLACE: a name nothing holds, by a look.
			if unix.Fstatat(parent, aside, new(unix.Stat_t), unix.AT_SYMLINK_NOFOLLOW) == nil {
				continue
			}
			return aside, unix.Renameat(parent, name, parent, aside)
		default:
			return "", err
		}
	}
	return "", errors.New("100 earlier quarantines of it are still there")
}

// Repositories are the entries named .git below a workdir's top, each with its state
// (stateOf): a command that removes a gitfile or a symlink and makes another may get the
// same inode back from the file system, never the same change time; one that edits in
// place a file a host git runs a program by (the config, a hook) changes that file's.
type Repositories map[string]repositoryState

// repositoryState is a .git entry's device, inode and change time, and a digest of the
// same for what a host git entering it would run a program by (runsByDigest).
type repositoryState struct {
	entry [4]uint64
	runs  uint64
}

// RepositoriesBelow is every entry named .git below workdir but the top one, every
// directory git would take for a bare repository, and the top .git's own entries but
// what commits write (topEntries).
func RepositoriesBelow(workdir string) Repositories {
	found := Repositories{}
	memo := digests{}
	for _, path := range topEntries(filepath.Join(workdir, ".git")) {
		if state, ok := stateOf(path, memo); ok {
			found[path] = state
		}
	}
	paths, _, bare, _ := gitEntriesBelow(workdir, false)
	for _, path := range append(paths, bare...) {
		if state, ok := stateOf(path, memo); ok {
			found[path] = state
		}
	}
	return found
}

// stateOf is path's repositoryState, not following a symlink for the entry's own part.
func stateOf(path string, memo digests) (repositoryState, bool) {
	id, ok := identity(path)
	if !ok {
		return repositoryState{}, false
	}
	return repositoryState{entry: id, runs: runsByDigest(path, memo)}, true
}

// digests are the git directories one inventory or audit has digested (digestGitDir),
// by device and inode: many .git entries may lead to one directory.
type digests map[[2]uint64]uint64

// identity is path's device, inode and change time, not following a symlink; a
// directory's without the change time, which every commit in it moves (a new index, a
// ref): what a host git would run by is runsByDigest's, and a directory made anew has
// another inode.
func identity(path string) ([4]uint64, bool) {
	var stat unix.Stat_t
	if unix.Lstat(path, &stat) != nil {
		return [4]uint64{}, false
	}
	if stat.Mode&unix.S_IFMT == unix.S_IFDIR {
		return [4]uint64{uint64(stat.Dev), stat.Ino}, true
	}
	return [4]uint64{uint64(stat.Dev), stat.Ino, uint64(stat.Ctim.Sec), uint64(stat.Ctim.Nsec)}, true
}

// runsByDigest digests, for the git directory a .git entry leads to (itself, the gitdir
// a gitfile names, or where a symlink leads), and for its common directory, everything in
// it a host git could be led to run a program by: every entry but what commits, fetches
// and gc write there (commitWrites), each as it is and as it resolves (device, inode,
// change time, size and mode, or that it is missing), and each file in hooks/ and info/
// (samples too: a config may name one, and renaming one makes it run). The config, a hook
// and any file the config includes from there are thus seen edited in place or made; the
// index, objects and refs a commit writes are not, so a commit is no change. HEAD is
// digested only as valid or not: a command that breaks it makes git take the repository's
// work tree for a bare repository it could have planted there. A repository the run
// could not bind read-only (NestedRepositories: a symlinked .git, those past maxNested, a
// gitdir outside the project) was armed in place without changing its .git entry.
func runsByDigest(entry string, memo digests) uint64 {
	digest := fnv.New64a()
	dir := gitDirOf(digest, entry)
	fmt.Fprintf(digest, "%s\x00", dir)
	if dir == "" {
		return digest.Sum64()
	}
	fmt.Fprintf(digest, "%x\x00", memo.of(dir))
	if common, err := commonDir(dir); err == nil && common != "" && common != dir {
		fmt.Fprintf(digest, "common %s %x\x00", common, memo.of(common))
	}
	return digest.Sum64()
}

// of is dir's digestGitDir, taken once per directory.
func (memo digests) of(dir string) uint64 {
	var st unix.Stat_t
	key, known := [2]uint64{}, false
	if unix.Stat(dir, &st) == nil {
		key, known = [2]uint64{st.Dev, st.Ino}, true
		if sum, ok := memo[key]; ok {
			return sum
		}
	}
	digest := fnv.New64a()
	digestGitDir(digest, dir)
	sum := digest.Sum64()
	if known {
		memo[key] = sum
	}
	return sum
}

// topEntries are the entries directly in the top .git directory that a commit-mode run
// does not write: neither what commitWrites, nor worktrees/ (whose redirects are
// kept read-only, and a worktree added during the run brings a .git of its own, which the
// walk finds), nor lfs/ (git-lfs's object store).
func topEntries(top string) []string {
	entries, err := os.ReadDir(top)
	if err != nil {
		return nil
	}
	var paths []string
	for _, entry := range entries {
		name := entry.Name()
		if commitWrites(name) || name == "worktrees" || name == "lfs" {
			continue
		}
		paths = append(paths, filepath.Join(top, name))
	}
	return paths
}

// commitWrites: name is an entry of a git directory that commits, merges, checkouts,
// fetches and gc write (commitWritten, or a lock): what the command may do in commit mode.
func commitWrites(name string) bool { return commitWritten[name] || strings.HasSuffix(name, ".lock") }

// commitWritten are the entries of a git directory that commits, merges, checkouts,
// fetches and gc write, locks aside.
var commitWritten = map[string]bool{
	"index": true, "HEAD": true, "ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true,
	"CHERRY_PICK_HEAD": true, "REVERT_HEAD": true, "AUTO_MERGE": true, "REBASE_HEAD": true,
	"COMMIT_EDITMSG": true, "MERGE_MSG": true, "MERGE_MODE": true, "MERGE_RR": true,
	"SQUASH_MSG": true, "TAG_EDITMSG": true, "packed-refs": true, "shallow": true,
	"gc.pid": true, "gc.log": true, "objects": true, "refs": true, "logs": true,
	"rr-cache": true, "rebase-merge": true, "rebase-apply": true, "sequencer": true,
	"BISECT_LOG": true, "BISECT_START": true, "BISECT_TERMS": true, "BISECT_NAMES": true,
	"BISECT_EXPECTED_REV": true, "BISECT_ANCESTORS_OK": true, "BISECT_RUN": true,
}

// gitDirOf is the git directory a .git entry leads a host git to, resolved, or "". A
// gitfile it passes through is digested too (its identity and content): a symlinked .git
// that leads to a gitfile the command rewrote changes nothing of the entry's own.
func gitDirOf(digest hash.Hash64, entry string) string {
	real, err := filepath.EvalSymlinks(entry)
	if err != nil {
		return ""
	}
	info, err := os.Lstat(real)
	switch {
	case err != nil:
		return ""
	case info.IsDir():
		return real
	case info.Mode().IsRegular():
		digestFile(digest, real)
		target := gitfileGitdir(real)
		fmt.Fprintf(digest, "gitdir %q\x00", target)
		if target == "" {
			return ""
		}
		if !filepath.IsAbs(target) {
			// Relative to the entry's directory, as git reads a gitfile by the name it
			// found, and resolved on disk part by part as git does: filepath.Join would
			// take "x/.." away by its text, where x may be a symlink.
			target = filepath.Dir(entry) + "/" + target
		}
		if resolved, err := filepath.EvalSymlinks(target); err == nil {
			return resolved
		}
		return target
	}
	return ""
}

// gitfileGitdir is the gitdir a gitfile names, read as git's read_gitfile_gently reads
// it: "gitdir: " exactly, and only the line ends taken off the end (a trailing blank is
// part of the path); "" for anything else.
func gitfileGitdir(gitfile string) string {
	data, err := safefile.ReadFile(gitfile, maxGitFile)
	if err != nil {
		return ""
	}
	target, ok := strings.CutPrefix(strings.TrimRight(string(data), "\r\n"), "gitdir: ")
	if !ok || strings.ContainsRune(target, 0) {
		return ""
	}
	return target
}

// digestGitDir adds what dir holds that a host git could run a program by (runsByDigest).
func digestGitDir(digest hash.Hash64, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, entry := range entries {
		name := entry.Name()
		if commitWrites(name) {
			continue
		}
		digestFile(digest, filepath.Join(dir, name))
	}
	for _, always := range []string{"config", "hooks"} {
		digestFile(digest, filepath.Join(dir, always)) // missing ones too
	}
	for _, sub := range []string{"hooks", "info"} {
		files, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, file := range files {
			digestFile(digest, filepath.Join(dir, sub, file.Name()))
		}
	}
	head, err := safefile.ReadFile(filepath.Join(dir, "HEAD"), maxGitFile)
	fmt.Fprintf(digest, "HEAD valid %v\x00", err == nil && validHead(string(head)))
}

// validHead: HEAD's content is one git accepts (validate_headref): a symbolic ref into
// refs/, or an object name.
func validHead(head string) bool {
	head = strings.TrimRight(head, "\n")
	if ref, ok := strings.CutPrefix(head, "ref:"); ok {
		return strings.HasPrefix(strings.TrimLeft(ref, " \t"), "refs/")
	}
	return isObjectID(head)
}

// digestFile adds path's device, inode, change time, size and mode, as it is and as it
// resolves (a hook that is a symlink runs what it leads to), or that it is missing.
func digestFile(digest hash.Hash64, path string) {
	var buf [8]byte
	fmt.Fprintf(digest, "%s\x00", path)
	for _, stat := range []func(string, *unix.Stat_t) error{unix.Lstat, unix.Stat} {
		var st unix.Stat_t
		if stat(path, &st) != nil {
			digest.Write([]byte{0})
			continue
		}
		for _, v := range []uint64{uint64(st.Dev), st.Ino, uint64(st.Ctim.Sec), uint64(st.Ctim.Nsec), uint64(st.Size), uint64(st.Mode)} {
			binary.LittleEndian.PutUint64(buf[:], v)
			digest.Write(buf[:])
		}
	}
}

// bareShaped: a directory listing git would take for a repository's own (is_git_directory):
// HEAD beside objects/ and refs/, or beside a commondir that supplies them.
func bareShaped(entries []fs.DirEntry) bool {
	var head, objects, refs, common bool
	for _, entry := range entries {
		switch entry.Name() {
		case "HEAD":
			head = entry.Type().IsRegular() || entry.Type()&fs.ModeSymlink != 0
		case "objects":
			objects = entry.IsDir()
		case "refs":
			refs = entry.IsDir()
		case "commondir":
			common = entry.Type().IsRegular()
		}
	}
	return head && (objects && refs || common)
}

// maxNested bounds how many nested repositories a commit-mode run protects: each is a
// bind, and bwrap takes at most 9,000 arguments (2,700 nested repositories exceeded them).
const maxNested = 256

// NestedRepositories is the repositories below workdir's top that a commit-mode run binds
// read-only: every .git there that is a directory or a file (a gitfile, with the gitdir
// it names where that is a directory inside the project), or none when
// there are more than maxNested (a vendor tree, a GOPATH inside the project), where the
// audit's inventory alone answers. A .git that is a symlink is left to the inventory too
// (binding it would bind what it leads to). A directory that cannot be read is passed
// over: the command, which runs as the caller, cannot read it either.
func NestedRepositories(workdir string) []string {
	top := filepath.Join(workdir, ".git")
	paths, _, _, _ := gitEntriesBelow(workdir, false)
	var nested []string
	for _, path := range paths {
		info, err := os.Lstat(path)
		switch {
		case err != nil:
		case info.IsDir():
			nested = append(nested, path)
		case info.Mode().IsRegular():
			nested = append(nested, path)
			// A gitfile's gitdir inside the project is the repository itself: writable,
			// the command armed its config and committed the gitfile's directory as a
			// submodule on a branch. One reached through a symlink is left to the
			// inventory, as a symlinked .git is; one inside the top .git (a linked
			// worktree's, a submodule's) is CommitEntries'.
			if gitdir, err := gitfileTarget(path); err == nil && gitdir != "" && pathtree.Within(workdir, gitdir) && gitdir != workdir && !pathtree.Within(top, gitdir) {
				if real, err := filepath.EvalSymlinks(gitdir); err == nil && real == gitdir {
					nested = append(nested, gitdir)
				}
			}
		}
	}
	if len(nested) > maxNested {
		return nil
	}
	return nested
}

// gitEntriesBelow is every entry named .git below workdir but the top one, not looking
// inside any (nor following a symlink), the directories it could not read, and those,
// workdir included, that git would take for a bare repository (bareShaped). With
// unlock it first opens such a directory to its owner (read and search) and lists it
// only if it stays unreadable; relock puts back the modes it changed.
//
// The walk goes by descriptor, each directory opened below its parent's without
// following a symlink, and the modes are changed and put back through the descriptor of
// the directory that was looked at: by path, a directory another run swapped for a
// symlink between the look and the chmod had the chmod land on whatever the link named,
// outside every sandbox.
func gitEntriesBelow(workdir string, unlock bool) (found, unreadable, bare []string, relock func()) {
	top := filepath.Join(workdir, ".git")
	type opened struct {
		fd   int
		mode uint32
	}
	var unlocked []opened
	// open opens name below the directory parent for reading, never through a symlink;
	// one it cannot read is opened to its owner first (with unlock), through an O_PATH
	// descriptor of that very directory, which is kept for relock.
	open := func(parent int, name string) (int, error) {
		const flags = unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		fd, err := unix.Openat(parent, name, unix.O_RDONLY|flags, 0)
		if err == nil || !unlock || !errors.Is(err, unix.EACCES) {
			return fd, err
		}
		pathFD, pathErr := unix.Openat(parent, name, unix.O_PATH|flags, 0)
		if pathErr != nil {
			return -1, err
		}
		was, widenErr := widen(pathFD, 0o500)
		if widenErr != nil {
			unix.Close(pathFD)
			return -1, err
		}
		unlocked = append(unlocked, opened{pathFD, was})
		return unix.Openat(pathFD, ".", unix.O_RDONLY|flags, 0)
	}
	var walk func(fd int, dir string)
	walk = func(fd int, dir string) {
		f := os.NewFile(uintptr(fd), dir)
		defer f.Close()
		entries, err := f.ReadDir(-1)
		if err != nil {
			unreadable = append(unreadable, dir)
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }) // as os.ReadDir
		if bareShaped(entries) {
			bare = append(bare, dir)
		}
		for _, entry := range entries {
			path := filepath.Join(dir, entry.Name())
			switch {
			case entry.Name() == ".git":
				if path != top {
					found = append(found, path)
				}
			case entry.IsDir() && len(path) >= unix.PathMax:
				// Past PATH_MAX, as the walk by path it replaced stopped (and git's own
				// paths do): said, not walked, so a tree thousands deep costs neither a
				// descriptor per level nor its paths' squares in memory.
				unreadable = append(unreadable, path)
			case entry.IsDir():
				child, err := open(fd, entry.Name())
				if err != nil {
					unreadable = append(unreadable, path) // unreadable, replaced meanwhile, or out of descriptors
					continue
				}
				walk(child, path)
			}
		}
	}
	// The top by its real path (the workdir a policy names is resolved already; a record's
	// too), below it nothing through a symlink.
	real, err := filepath.EvalSymlinks(workdir)
	fd := -1
	if err == nil {
		fd, err = open(unix.AT_FDCWD, real)
	}
	if err == nil {
		walk(fd, workdir)
	} else {
		unreadable = append(unreadable, workdir)
	}
	return found, unreadable, bare, func() {
		for i := len(unlocked) - 1; i >= 0; i-- {
			_ = chmodFD(unlocked[i].fd, unlocked[i].mode)
			unix.Close(unlocked[i].fd)
		}
		unlocked = nil
	}
}

// widen opens the directory fd names (an O_PATH descriptor) to its owner by bits, and
// returns the whole mode it had (setgid and sticky bits included), which chmodFD puts back.
func widen(fd int, bits uint32) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	was := st.Mode & 0o7777
	return was, chmodFD(fd, was|bits)
}

// chmodFD changes the mode of the file fd names, an O_PATH descriptor (which fchmod
// refuses), through its /proc/self/fd entry: the kernel resolves that to the open file
// itself, never by a path that could have changed.
func chmodFD(fd int, mode uint32) error {
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
}
