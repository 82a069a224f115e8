package home

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/internal/pathtree"
	"github.com/bwrapkit/bwrapkit/internal/trust"
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
// encloses nor lies inside the probe cache (probe-v3 is its sibling; sandbox's
// refuseWritable checks it all the same).

// homesDirName is the directory under bwrapkit's cache that holds the project homes.
const homesDirName = "home"

// Roots are the directories the project HOMEs may live in, in order of preference: where
// a run's HOME is made, what `bwrapkit home ls` lists and `home prune` may remove from.
func Roots(env []string) []string {
	getenv := environ.Getenv(env)
	var roots []string
	if cache := getenv("XDG_CACHE_HOME"); filepath.IsAbs(cache) {
		roots = append(roots, filepath.Join(cache, "bwrapkit", homesDirName))
	} else if home := getenv("HOME"); filepath.IsAbs(home) && isDir(home) {
		roots = append(roots, filepath.Join(home, ".cache", "bwrapkit", homesDirName))
	}
	return roots
}

// ProjectName is the per-project directory name: readable, and unique per workdir.
func ProjectName(workdir string) string {
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

// Error is a per-project HOME that could not be made or trusted.
type Error struct {
	Tried []string // each root tried and why it was passed over
	// Unmade: no root could hold it (none, or none could be created), as opposed to
	// one that exists and is not the caller's private directory.
	Unmade bool
}

func (e *Error) Error() string {
	return "no per-project HOME could be made (" + strings.Join(e.Tried, "; ") + "); choose one with --home-dir DIR"
}

// MakeDirs creates root and home in it, each 0700. Of root's ancestors only its base
// (the cache directory bwrapkit/ lives in: ~/.cache or $XDG_CACHE_HOME) may be made,
// and only inside a directory that exists: an XDG_CACHE_HOME naming a missing place
// must not make it appear.
func MakeDirs(root, home string) error {
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

// ProvePrivate checks home and its parent are real directories of the caller's that no
// one else can write, reached without a symlink.
func ProvePrivate(home string) error {
	if err := trust.PrivateDir(home); err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(home); err != nil || real != home {
		return fmt.Errorf("%s is reached through a symlink", home)
	}
	return nil
}

// privilegeSuffix keys a HOME by the run's privileges as well as its project: a run
// with the network, caller's variables or paths outside the project gets a HOME of its
// own, so it never starts from tool state (a ~/.gitconfig, an npm hook) that a run
// without them planted. A run with none of them keeps the plain name.
func privilegeSuffix(privilege string) string {
	if privilege == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(privilege))
	return "-p" + hex.EncodeToString(sum[:6])
}

// Planned is where Make will look first, without making anything: what the checks that
// must keep apart from the HOME compare against. "" without a root.
func Planned(env []string, workdir, privilege string) string {
	roots := Roots(env)
	if len(roots) == 0 {
		return ""
	}
	return filepath.Join(pathtree.ResolveExisting(roots[0]), ProjectName(workdir)+privilegeSuffix(privilege))
}

// Make makes (or finds) the workdir's HOME in the first usable root and proves it is a
// private directory of the caller's: a real directory (never a symlink someone planted
// at the name), owned by the caller, writable by no one else, as is its parent. privilege
// keys it by what the run is granted beyond the project (see the name's suffix). What
// the HOME must keep apart from (the workdir, trusted state) is the policy's to check.
func Make(env []string, workdir, privilege string) (string, error) {
	name := ProjectName(workdir) + privilegeSuffix(privilege)
	homeErr := &Error{Unmade: true}
	for _, root := range Roots(env) {
		if pathtree.Within(pathtree.ResolveExisting(filepath.Dir(root)), workdir) {
			// A workdir in bwrapkit's own cache (the doctor's self-tests, each in a fresh
			// directory there) is not a project: it gets the ephemeral HOME.
			homeErr.Tried = append(homeErr.Tried, fmt.Sprintf("%s: the workdir is inside bwrapkit's own cache", root))
			return "", homeErr
		}
		home := filepath.Join(root, name)
		if err := MakeDirs(root, home); err != nil {
			homeErr.Tried = append(homeErr.Tried, fmt.Sprintf("%s: %v", root, err))
			continue // cannot be made here (read-only, no permission): the next place
		}
		if err := ProvePrivate(home); err != nil {
			// It exists but is not the caller's private directory: planted, or opened up.
			// Never fall back quietly: that is a fact the caller must see.
			return "", &Error{Tried: []string{fmt.Sprintf("%s: %v; remove it (bwrapkit makes it again) or choose --home-dir", home, err)}}
		}
		return home, nil
	}
	return "", homeErr
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
