package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/environ"
)

// The command's HOME is a directory of its own per project, outside the project: tools
// keep their caches and configuration there (Go's build and module caches, npm's,
// pip's), so a run leaves the repository clean, the second run finds its caches warm,
// and one project's runs never see another's tool state. It lives beside the probe
// cache, in the caller's cache directory:
//
//	${XDG_CACHE_HOME:-~/.cache}/bwrapkit/home/<workdir's name>-<sha256 of the resolved workdir>
//
// (~/.cache only when the home exists: a home is never created). It is made 0700 on
// first use (the one host change a default run makes). Unlike the probe cache it has no
// $XDG_RUNTIME_DIR or $TMPDIR fallback: those are small memory file systems or shared
// temporary space that other programs expect to stay clean (the doctor's contract), and
// a Go build cache is hundreds of megabytes. Without a cache directory (a service account
// with HOME=/nonexistent and no XDG_CACHE_HOME) HOME is an empty directory in the
// sandbox's private /tmp instead: tools work, nothing of theirs reaches the host or the
// project, and caches start cold each run (set XDG_CACHE_HOME, or --home-dir, to keep
// them).
//
// The homes' root (.../bwrapkit/home) is trusted state: no workdir or --rw may enclose
// it or lie inside it, so no sandbox can reach another project's home, and it never
// encloses nor lies inside the probe cache (probe-v3 is its sibling; RefuseWritable
// checks it all the same).

// EphemeralHome is the command's HOME when no cache directory can hold a project's.
const EphemeralHome = "/tmp/home"

// homesDirName is the directory under bwrapkit's cache that holds the project homes.
const homesDirName = "home"

// homeRoots are the directories project homes may live in, in order of preference.
func homeRoots(env []string) []string {
	getenv := environ.Getenv(env)
	var roots []string
	if cache := getenv("XDG_CACHE_HOME"); filepath.IsAbs(cache) {
		roots = append(roots, filepath.Join(cache, "bwrapkit", homesDirName))
	} else if home := getenv("HOME"); filepath.IsAbs(home) && isDir(home) {
		roots = append(roots, filepath.Join(home, ".cache", "bwrapkit", homesDirName))
	}
	return roots
}

// projectHomeName is the per-project directory name: readable, and unique per workdir.
func projectHomeName(workdir string) string {
	sum := sha256.Sum256([]byte(workdir))
	base := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, filepath.Base(workdir))
	if len(base) > 40 {
		base = base[:40]
	}
	return strings.TrimLeft(base, ".") + "-" + hex.EncodeToString(sum[:8])
}

// HomeError is a per-project HOME that could not be made or trusted.
type HomeError struct {
	Tried []string // each root tried and why it was passed over
	// Unmade: no root could hold it (none, or none could be created), as opposed to
	// one that exists and is not the caller's private directory.
	Unmade bool
}

func (e *HomeError) Error() string {
	return "no per-project HOME could be made (" + strings.Join(e.Tried, "; ") + "); choose one with --home-dir DIR"
}

// projectHome makes (or finds) the workdir's HOME in the first usable root and proves it
// is a private directory of the caller's: a real directory (never a symlink someone
// planted at the name), owned by the caller, writable by no one else, as is its parent.
func projectHome(env []string, workdir string, guard Guard) (string, error) {
	name := projectHomeName(workdir)
	homeErr := &HomeError{Unmade: true}
	for _, root := range homeRoots(env) {
		if within(resolveExisting(filepath.Dir(root)), workdir) {
			// A workdir in bwrapkit's own cache (the doctor's self-tests, each in a fresh
			// directory there) is not a project: it gets the ephemeral HOME.
			homeErr.Tried = append(homeErr.Tried, fmt.Sprintf("%s: the workdir is inside bwrapkit's own cache", root))
			return "", homeErr
		}
		home := filepath.Join(root, name)
		if err := makeDirs(root, home); err != nil {
			homeErr.Tried = append(homeErr.Tried, fmt.Sprintf("%s: %v", root, err))
			continue // cannot be made here (read-only, no permission): the next place
		}
		if err := provePrivate(home); err != nil {
			// It exists but is not the caller's private directory: planted, or opened up.
			// Never fall back quietly: that is a fact the caller must see.
			return "", &HomeError{Tried: []string{fmt.Sprintf("%s: %v; remove it (bwrapkit makes it again) or choose --home-dir", home, err)}}
		}
		if err := checkHome("HOME", home, home, workdir, guard); err != nil {
			return "", err
		}
		return home, nil
	}
	return "", homeErr
}

// makeDirs creates root and home in it, each 0700. Of root's ancestors only its base
// (the cache directory bwrapkit/ lives in: ~/.cache or $XDG_CACHE_HOME) may be made,
// and only inside a directory that exists: an XDG_CACHE_HOME naming a missing place
// must not make it appear.
func makeDirs(root, home string) error {
	base := filepath.Dir(filepath.Dir(root))
	if !isDir(filepath.Dir(base)) {
		return fmt.Errorf("%s does not exist", filepath.Dir(base))
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(home, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// provePrivate checks home and its parent are real directories of the caller's that no
// one else can write, reached without a symlink.
func provePrivate(home string) error {
	if err := trustedDir(home); err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(home); err != nil || real != home {
		return fmt.Errorf("%s is reached through a symlink", home)
	}
	return nil
}

// checkHome refuses a HOME the command must not have read-write: the rules of the
// workdir, and never inside the workdir or enclosing it (the project would carry the
// tools' state, or the HOME the project's protected .git).
func checkHome(field, given, home, workdir string, guard Guard) error {
	if err := RefuseWritable(field, given, home, guard); err != nil {
		return err
	}
	if within(workdir, home) || within(home, workdir) {
		return &PolicyError{field, describe(given, home), fmt.Sprintf("encloses or lies inside the workdir %s; a HOME must be apart from the project", workdir)}
	}
	return nil
}

// callerName is the caller's user name for USER and LOGNAME: the user database's entry
// for this uid, else $USER, else the uid itself.
func callerName(env []string) string {
	if account, err := lookupUser(os.Geteuid()); err == nil && account != "" {
		return account
	}
	if name := environ.Getenv(env)("USER"); name != "" && !strings.ContainsAny(name, "\x00") {
		return name
	}
	return strconv.Itoa(os.Geteuid())
}
