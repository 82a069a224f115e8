package gitmeta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/pathtree"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// A host `git status` in the workdir enters the top .git and every submodule's gitdir,
// and runs what their config names (core.fsmonitor, hooks). So every entry a host git
// would follow from the workdir is protected: the top .git and, for each gitlink the
// index records, the submodule's own .git (a gitfile or an old-style embedded directory).
// Their targets under .git/modules are inside the protected .git already.

// maxIndexSize bounds the index read: a larger one is not parsed (its submodules are
// then not found, and the run is refused rather than left unprotected).
const maxIndexSize = 256 << 20

// Entries lists the paths under workdir to protect for git, each as the lexical path
// (no symlink resolved). A .git that is a symlink is refused: the link itself lives in
// the writable workdir and could be retargeted during the run.
func Entries(workdir string, indexes *Indexes) ([]string, error) {
	top := filepath.Join(workdir, ".git")
	info, err := os.Lstat(top)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("cannot inspect its .git: %v", err)
	case info.Mode()&os.ModeSymlink != 0:
		return nil, errors.New(".git is a symlink; a command could retarget it and a later host git would follow; replace the link with the directory it points to")
	}
	entries := []string{top}
	gitdir := top
	if !info.IsDir() {
		// A gitfile (git init --separate-git-dir, a worktree, a submodule): the gitdir it
		// names is what a host git enters. Inside the workdir it is protected too; its
		// index names the submodules either way.
		target, err := gitfileTarget(top)
		if err != nil {
			return nil, err
		}
		if target == "" {
			return entries, nil
		}
		if pathtree.Within(workdir, target) {
			real, err := filepath.EvalSymlinks(target)
			switch {
			case errors.Is(err, os.ErrNotExist):
				return nil, fmt.Errorf(".git names %s, which does not exist: a command could create it, and a later host git would use it; fix or remove the gitfile", target)
			case err != nil || real != target:
				return nil, fmt.Errorf(".git names %s, which is reached through a symlink; bwrapkit cannot keep it from being redirected", target)
			}
			entries = append(entries, target)
		}
		gitdir = target
	}
	return Submodules(workdir, workdir, gitdir, entries, indexes)
}

// maxRepositories bounds how many repositories (the top one and its submodules at every
// depth) Submodules walks; a project with more is refused, not left unprotected.
const maxRepositories = 10000

// Submodules adds to entries what a host git enters from the repository whose work tree
// is top and whose gitdir is gitdir, at every depth: for each gitlink its index records
// under workdir, the submodule's .git (or its empty directory), and then that
// submodule's own index, and so on down (a host `git status --recurse-submodules`, or a
// submodule's own status, enters each); and for every gitdir on the way, what it
// really is and what its config and hooks lead to inside workdir (LinkedInto). top is
// the workdir itself, or the top of the repository the workdir lies in.
func Submodules(workdir, top, gitdir string, entries []string, indexes *Indexes) ([]string, error) {
	entries, _, err := walkSubmodules(workdir, top, gitdir, entries, indexes)
	return entries, err
}

// repository is one repository of the walk: its work tree's top and its gitdir.
type repository struct{ top, gitdir string }

// walkSubmodules is Submodules, and also every submodule repository it walked.
func walkSubmodules(workdir, top, gitdir string, entries []string, indexes *Indexes) ([]string, []repository, error) {
	pending := []repository{{top, gitdir}}
	var walkedRepos []repository
	for walked := 0; len(pending) > 0; walked++ {
		if walked >= maxRepositories {
			return nil, nil, fmt.Errorf("it holds more than %d nested repositories; bwrapkit does not protect so many", maxRepositories)
		}
		repo := pending[0]
		pending = pending[1:]
		linked, err := LinkedInto(workdir, repo.gitdir, entries)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, linked...)
		gitlinks, err := indexes.links(filepath.Join(repo.gitdir, "index"))
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read %s to find submodules: %v", filepath.Join(repo.gitdir, "index"), err)
		}
		for _, rel := range gitlinks {
			dir := filepath.Join(repo.top, filepath.FromSlash(rel))
			if !pathtree.Within(workdir, dir) || dir == workdir || !pathtree.Within(repo.top, dir) || dir == repo.top {
				continue
			}
			name, _ := filepath.Rel(workdir, dir)
			entry, err := submoduleEntry(workdir, name, dir)
			if err != nil {
				return nil, nil, err
			}
			if entry == "" {
				continue
			}
			entries = append(entries, entry)
			sub, err := submoduleGitdir(entry)
			if err != nil {
				return nil, nil, fmt.Errorf("submodule %s: %v", name, err)
			}
			if sub != "" {
				pending = append(pending, repository{dir, sub})
				walkedRepos = append(walkedRepos, repository{dir, sub})
			}
		}
	}
	return entries, walkedRepos, nil
}

// submoduleGitdir is the gitdir a submodule's entry leads a host git to: the entry itself
// when it is an embedded .git directory, the one its gitfile names, or "" for an
// uninitialised submodule's empty directory.
func submoduleGitdir(entry string) (string, error) {
	if entry == "" || filepath.Base(entry) != ".git" {
		return "", nil
	}
	info, err := os.Lstat(entry)
	switch {
	case err != nil:
		return "", err
	case info.IsDir():
		return entry, nil
	}
	return gitfileTarget(entry)
}

// submoduleEntry is what to protect for the submodule at dir: its .git (a gitfile or
// an old-style directory) when checked out, else the empty directory itself, so the
// command cannot make one (`git init` there, a planted gitfile) that a host `git status`
// at the top would then enter. A missing directory is left alone: the command could
// create it, but git then sees a populated submodule only after a checkout the user
// runs (and clone makes the empty directory, so a missing one was removed on purpose).
func submoduleEntry(workdir, rel, dir string) (string, error) {
	sub := filepath.Join(dir, ".git")
	subInfo, err := os.Lstat(sub)
	switch {
	case errors.Is(err, os.ErrNotExist):
		dirInfo, err := os.Lstat(dir)
		if err != nil || !dirInfo.IsDir() {
			return "", nil
		}
		sub = dir
	case err != nil:
		return "", fmt.Errorf("cannot inspect submodule %s: %v", rel, err)
	case subInfo.Mode()&os.ModeSymlink != 0:
		return "", fmt.Errorf("submodule %s has a .git symlink; replace it with a gitfile or directory", rel)
	}
	if real, err := filepath.EvalSymlinks(sub); err != nil || real != sub {
		return "", fmt.Errorf("submodule %s is reached through a symlink; bwrapkit cannot keep its gitdir from being redirected", rel)
	}
	return sub, nil
}

// gitfileTarget reads a gitfile ("gitdir: PATH", relative to the file's directory) and
// returns the clean absolute gitdir it names, or "" when the file names none.
func gitfileTarget(gitfile string) (string, error) {
	data, err := safefile.ReadFile(gitfile, maxGitFile)
	if err != nil {
		return "", fmt.Errorf("cannot read the gitfile %s: %v", gitfile, err)
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	target = strings.TrimSpace(target)
	if !ok || target == "" {
		return "", nil
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(gitfile), target)
	}
	return filepath.Clean(target), nil
}

// walkIndexEnd calls visit (when not nil) with each entry's path and mode of a git index,
// versions 2 to 4 (see git's Documentation/gitformat-index.txt), and returns the offset
// where the entries end and the extensions begin. name is valid only during the call:
// no entry costs an allocation, and a large repository's index has 100,000 of them.
//
// Each entry is read as git's create_from_disk reads it, or refused: a command in commit
// mode writes the index, and every way its bytes could show git another entry than this
// walk (a name shorter than the length its flags record, extended flags in a version 2
// index, which git honours in any version) hid a planted submodule from the audit.
func walkIndexEnd(data []byte, hashSize int, visit func(name []byte, mode uint32)) (int, error) {
	if len(data) < 12 || !bytes.Equal(data[:4], []byte("DIRC")) {
		return 0, errors.New("not a git index")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return 0, fmt.Errorf("unsupported index version %d", version)
	}
	count := binary.BigEndian.Uint32(data[8:12])
	offset := 12
	var name []byte // version 4: the previous path, which the next one shares a prefix of
	for i := uint32(0); i < count; i++ {
		// ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each), oid, flags (2)
		fixed := 40 + hashSize + 2
		if offset+fixed > len(data) {
			return 0, errors.New("index truncated")
		}
		entry := data[offset:]
		mode := binary.BigEndian.Uint32(entry[24:28])
		flags := binary.BigEndian.Uint16(entry[40+hashSize : fixed])
		header := fixed
		if flags&0x4000 != 0 {
			// Extended flags, in any version as git reads them; only the bits git knows
			// (intent-to-add, skip-worktree): git refuses an index with others.
			if offset+fixed+2 > len(data) {
				return 0, errors.New("index truncated")
			}
			if extended := binary.BigEndian.Uint16(entry[fixed : fixed+2]); extended&^0x6000 != 0 {
				return 0, fmt.Errorf("unknown index entry format 0x%04x", extended)
			}
			header += 2
		}
		if mode&0o170000 == 0o040000 {
			return 0, errors.New("the index is a sparse index (index.sparse), whose directory entries bwrapkit does not expand; " +
				"turn it off: git config index.sparse false && git sparse-checkout reapply")
		}
		// The name's length as its flags record it; 0xfff means as long as up to its NUL.
		length := int(flags & 0x0fff)
		rest := data[offset+header:]
		var consumed int
		if version == 4 {
			strip, n, ok := gitVarint(rest)
			if !ok || strip > uint64(len(name)) {
				return 0, errors.New("index path prefix corrupt")
			}
			end := bytes.IndexByte(rest[n:], 0)
			if end < 0 {
				return 0, errors.New("index path unterminated")
			}
			kept := len(name) - int(strip)
			if length != 0x0fff && kept+end != length {
				return 0, errors.New("an index path is not as long as its entry says")
			}
			name = append(name[:kept], rest[n:n+end]...)
			consumed = header + n + end + 1
		} else {
			end := bytes.IndexByte(rest, 0)
			if end < 0 {
				return 0, errors.New("index path unterminated")
			}
			if length != 0x0fff && end != length {
				return 0, errors.New("an index path is not as long as its entry says")
			}
			name = rest[:end]
			// Entries are padded with 1 to 8 NULs to a multiple of eight bytes.
			consumed = (header + end + 8) &^ 7
		}
		offset += consumed
		if visit != nil {
			visit(name, mode)
		}
	}
	return offset, nil
}

// gitVarint decodes a number as git's varint.c writes it (not as encoding/binary does:
// the two agree only below 128): seven bits a byte, most significant group first, each
// continuation adding one. n is how many bytes it took; where the value overflows, git
// takes 0 and consumes nothing, and so does this. ok is false for a number cut short.
func gitVarint(buf []byte) (value uint64, n int, ok bool) {
	if len(buf) == 0 {
		return 0, 0, false
	}
	c := buf[0]
	value, n = uint64(c&127), 1
	for c&128 != 0 {
		value++
		if value == 0 || value>>57 != 0 {
			return 0, 0, true
		}
		if n >= len(buf) {
			return 0, 0, false
		}
		c = buf[n]
		n++
		value = value<<7 + uint64(c&127)
	}
	return value, n, true
}

// indexExtensions are the signatures of a whole index's extensions ("TREE", "link" for
// a split index, ...), in order.
func indexExtensions(data []byte, hashSize int) ([]string, error) {
	offset, err := walkIndexEnd(data, hashSize, nil)
	if err != nil {
		return nil, err
	}
	var signatures []string
	err = eachExtension(data, offset, hashSize, func(_ int, signature string, _ []byte) error {
		signatures = append(signatures, signature)
		return nil
	})
	return signatures, err
}

// eachExtension calls visit with each extension of the index data, whose entries end at
// offset: where it starts, its signature and its payload. It stops at visit's first
// error, or at an extension that runs past the trailer.
func eachExtension(data []byte, offset, hashSize int, visit func(at int, signature string, payload []byte) error) error {
	for trailer := len(data) - hashSize; offset+8 <= trailer; {
		size := int(binary.BigEndian.Uint32(data[offset+4 : offset+8]))
		if size < 0 || offset+8+size > trailer {
			return errors.New("index extension truncated")
		}
		if err := visit(offset, string(data[offset:offset+4]), data[offset+8:offset+8+size]); err != nil {
			return err
		}
		offset += 8 + size
	}
	return nil
}

// objectHashSize is the size of the object ids of the repository whose gitdir is given:
// 32 where its config sets extensions.objectFormat to sha256, else SHA-1's 20. A linked
// worktree's gitdir takes it from its common directory's config.
func objectHashSize(gitdir string) int {
	config := filepath.Join(gitdir, "config")
	if common, err := commonDir(gitdir); err == nil && common != "" {
		config = filepath.Join(common, "config")
	}
	data, err := safefile.ReadFile(config, maxGitFile*256)
	if err != nil {
		return 20
	}
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.ToLower(strings.Join(strings.Fields(line), ""))
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if section == "[extensions]" && (line == "objectformat=sha256" || line == `objectformat="sha256"`) {
			return 32
		}
	}
	return 20
}
