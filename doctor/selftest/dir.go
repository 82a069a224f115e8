package selftest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/trust"
)

// Where the self-tests make their directory. Not under /tmp first: the sandbox mounts private
// tmpfs on /tmp, /var/tmp and /run, so a workdir below them has writable (if private)
// parents inside, and outside-write could then only prove that the host is unchanged, not
// that the write was refused. Each candidate is tried for real (the per-run directory and
// its files, so a read-only, full or foreign base is passed over), and a home is never made.

// Candidate is a place to try: Base is made (with its missing parents) only below Anchor,
// which must already exist as a directory.
type Candidate struct {
	Anchor string
	Base   string
}

// Candidates lists the places to try, best first, from the caller's environment:
// $XDG_CACHE_HOME/bwrapkit/selftest or ~/.cache/bwrapkit/selftest, then $TMPDIR, /var/tmp
// and /tmp themselves. Relative values are ignored, as the XDG specification says.
func Candidates(getenv func(string) string) []Candidate {
	var candidates []Candidate
	add := func(anchor, base string) {
		if !filepath.IsAbs(anchor) {
			return
		}
		anchor, base = filepath.Clean(anchor), filepath.Clean(base)
		for _, c := range candidates {
			if c.Base == base {
				return
			}
		}
		candidates = append(candidates, Candidate{Anchor: anchor, Base: base})
	}
	if cache := getenv("XDG_CACHE_HOME"); filepath.IsAbs(cache) {
		// The cache directory may be made, but only inside a parent that exists.
		add(filepath.Dir(filepath.Clean(cache)), filepath.Join(cache, "bwrapkit", "selftest"))
	} else if home := getenv("HOME"); filepath.IsAbs(home) {
		add(home, filepath.Join(home, ".cache", "bwrapkit", "selftest"))
	}
	if tmp := getenv("TMPDIR"); tmp != "" {
		add(tmp, tmp)
	}
	add("/var/tmp", "/var/tmp")
	add("/tmp", "/tmp")
	return candidates
}

// SceneBound is how long a doctor's self-test directory lives at most (the checks' bounds
// are under a minute); an older one of the caller's is a killed doctor's, and is swept.
const SceneBound = 15 * time.Minute

const scenePrefix = "bwrapkit-doctor-"

// MakeScene makes the scene in the first candidate where it can be made whole, sweeping
// the caller's own stale leftovers from each base it looks at. The error names every place
// tried and why it failed.
func MakeScene(candidates []Candidate, now time.Time) (*Scene, error) {
	var failures []string
	for _, candidate := range candidates {
		scene, err := tryCandidate(candidate, now)
		if err == nil {
			scene.passedOver = failures
			return scene, nil
		}
		failures = append(failures, fmt.Sprintf("%s: %v", candidate.Base, err))
	}
	if len(failures) == 0 {
		return nil, errors.New("no place to try")
	}
	return nil, errors.New(strings.Join(failures, "; "))
}

func tryCandidate(candidate Candidate, now time.Time) (*Scene, error) {
	anchor, err := os.Stat(candidate.Anchor)
	if err != nil {
		return nil, err // a missing home stays missing
	}
	if !anchor.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", candidate.Anchor)
	}
	if candidate.Base != candidate.Anchor {
		if err := os.MkdirAll(candidate.Base, 0o700); err != nil {
			return nil, err
		}
	}
	if err := safeBase(candidate.Base); err != nil {
		return nil, err
	}
	Sweep(candidate.Base, scenePrefix, now)
	return NewScene(candidate.Base)
}

// safeBase refuses a base another user could rename our directory out of (package trust's
// rule: the caller's own or root's, and not writable by others unless sticky, as /tmp).
func safeBase(base string) error {
	info, err := os.Stat(base)
	if err != nil {
		return err
	}
	if findings := trust.Replaceable([]trust.Entry{trust.EntryOf(base, info)}, trust.Current()); len(findings) > 0 {
		return errors.New(strings.Join(findings, "; "))
	}
	return nil
}

// Sweep removes the caller's own entries named prefix* in dir that are older than
// SceneBound: what a doctor killed before its cleanup left. Another user's entries, links and
// anything younger (a doctor running now) are left alone.
func Sweep(dir, prefix string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, entry := range entries {
		if !strings.HasPrefix(entry.Name(), prefix) {
			continue
		}
		path := filepath.Join(dir, entry.Name())
		info, err := os.Lstat(path)
		if err != nil || info.Mode()&fs.ModeSymlink != 0 || now.Sub(info.ModTime()) < SceneBound {
			continue
		}
		if stat, ok := info.Sys().(*syscall.Stat_t); !ok || int(stat.Uid) != os.Geteuid() {
			continue
		}
		os.RemoveAll(path)
	}
}
