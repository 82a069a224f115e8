package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// The probe costs two bwrap executions, as much as a fifth of a whole sandboxed run,
// so its result is kept on disk, one small file per binary. The key is the file's
// identity and every timestamp its owner cannot forge: a replaced or modified binary
// (new inode, size, mtime or ctime) gets a new key and is probed again. The format is
// five lines (identity, version, build, options, empty) because it is read on every run.
//
// The cache decides what the argv leaves out, so it is trusted state: it is read only
// from a directory the caller owns and no one else can write, never through a symlink
// or from a FIFO, and a workdir may never enclose it (see RefuseWritable). A cached
// entry that claims a security option is missing is not believed: such a claim is
// proven by a live probe, so a forged entry can never weaken an argv.

// Prober probes bwrap binaries. CacheDirs are tried in order, for reading and for
// writing; none means the results are kept for this process only.
type Prober struct {
	CacheDirs []string
}

// CacheDir is where results are first looked for (empty without a disk cache).
func (p Prober) CacheDir() string {
	if len(p.CacheDirs) == 0 {
		return ""
	}
	return p.CacheDirs[0]
}

const (
	probeCacheVersion = "probe-v3"
	maxCacheEntry     = 64 << 10
)

// DefaultProber caches under the caller's cache directory ($XDG_CACHE_HOME, else
// ~/.cache when the home exists; a home is never created), then $XDG_RUNTIME_DIR, then a
// private /tmp/bwrapkit-<uid> that must be the caller's own 0700 directory. Service
// accounts (HOME=/nonexistent) thus keep a warm cache too.
func DefaultProber(env []string) Prober {
	getenv := environ.Getenv(env)
	var dirs []string
	// Nothing above a cache directory is ever created: XDG_CACHE_HOME itself may be made
	// (as the XDG spec has it), but only inside a directory that exists, and HOME and
	// TMPDIR must exist (HOME=/nonexistent, a service account's, stays nonexistent).
	if cache := getenv("XDG_CACHE_HOME"); filepath.IsAbs(cache) && isDir(filepath.Dir(cache)) {
		dirs = append(dirs, filepath.Join(cache, "bwrapkit", probeCacheVersion))
	} else if home := getenv("HOME"); filepath.IsAbs(home) && isDir(home) {
		dirs = append(dirs, filepath.Join(home, ".cache", "bwrapkit", probeCacheVersion))
	}
	if runtime := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(runtime) && isDir(runtime) {
		dirs = append(dirs, filepath.Join(runtime, "bwrapkit", probeCacheVersion))
	}
	if temp := os.TempDir(); filepath.IsAbs(temp) && isDir(temp) {
		dirs = append(dirs, filepath.Join(temp, "bwrapkit-"+strconv.Itoa(os.Geteuid()), probeCacheVersion))
	}
	return Prober{CacheDirs: dirs}
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// defaultProber is the process's prober, from its own environment, made once.
var processProber = sync.OnceValue(func() Prober { return DefaultProber(os.Environ()) })

func defaultProber(environ []string) Prober {
	if environ == nil {
		return processProber()
	}
	return DefaultProber(environ)
}

// fileIdentity is the cache key: the same string only for the same unchanged file.
func fileIdentity(path string, info os.FileInfo) string {
	stat, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s|%d|%d|%d|%d.%d|%d.%d", path, stat.Dev, stat.Ino, stat.Size,
		stat.Mtim.Sec, stat.Mtim.Nsec, stat.Ctim.Sec, stat.Ctim.Nsec)
}

func cacheName(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:12])
}

// cached reads a stored result; a missing, foreign or damaged entry is only a miss.
func (p Prober) cached(identity string) (Features, bool) {
	if identity == "" {
		return Features{}, false
	}
	for _, dir := range p.CacheDirs {
		if trustedDir(dir) != nil {
			continue
		}
		data, err := readPrivateFile(filepath.Join(dir, cacheName(identity)), maxCacheEntry)
		if err != nil {
			continue
		}
		if features, ok := parseCacheEntry(identity, data); ok {
			return features, true
		}
	}
	return Features{}, false
}

// parseCacheEntry is the pure half of cached.
func parseCacheEntry(identity string, data []byte) (Features, bool) {
	lines := strings.Split(string(data), "\n")
	if len(lines) != 5 || lines[0] != identity || lines[4] != "" {
		return Features{}, false
	}
	features := Features{Version: lines[1], Build: lines[2], Options: map[string]bool{}}
	for _, name := range strings.Fields(lines[3]) {
		features.Options[name] = true
	}
	for _, option := range append(Required(), securityOptions()...) {
		if !features.Has(option) {
			return Features{}, false // a negative claim is proven live, never believed
		}
	}
	return features, true
}

// store keeps one result in the first cache directory that can be made and trusted;
// failing to write the cache is not an error.
func (p Prober) store(identity string, features Features) {
	if identity == "" || strings.ContainsAny(features.Build, "\n") {
		return
	}
	options := make([]string, 0, len(features.Options))
	for name := range features.Options {
		options = append(options, name)
	}
	sort.Strings(options)
	text := strings.Join([]string{identity, features.Version, features.Build, strings.Join(options, " "), ""}, "\n")
	for _, dir := range p.CacheDirs {
		// A link planted where the cache's own directory goes (another user's
		// /tmp/bwrapkit-<uid> -> elsewhere) is never followed to make directories.
		if info, err := os.Lstat(filepath.Dir(dir)); err == nil && !info.IsDir() {
			continue
		}
		if os.MkdirAll(dir, 0o700) != nil || trustedDir(dir) != nil {
			continue
		}
		if writePrivateFile(dir, cacheName(identity), []byte(text)) == nil {
			return
		}
	}
}

// trustedDir accepts a cache directory only when it is a real directory owned by this
// user that no one else can write, and so is its parent: otherwise another user (or a
// sandbox, through a workdir) could have planted entries.
func trustedDir(dir string) error {
	for _, path := range []string{dir, filepath.Dir(dir)} {
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		stat, ok := info.Sys().(*syscall.Stat_t)
		switch {
		case !info.IsDir():
			return fmt.Errorf("%s is not a directory", path)
		case !ok || int(stat.Uid) != os.Geteuid():
			return fmt.Errorf("%s is not owned by uid %d", path, os.Geteuid())
		case info.Mode().Perm()&0o022 != 0:
			return fmt.Errorf("%s is writable by others", path)
		}
	}
	return nil
}

// readPrivateFile reads a regular file of this user's, never following a symlink or
// blocking on a FIFO, and at most max bytes.
func readPrivateFile(path string, max int64) ([]byte, error) {
	file, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if stat, ok := info.Sys().(*syscall.Stat_t); !ok || int(stat.Uid) != os.Geteuid() || info.Size() > max {
		return nil, errors.New("not a private file of this user's")
	}
	return io.ReadAll(io.LimitReader(file, max))
}

// writePrivateFile places data at dir/name, mode 0600: an O_EXCL temp file and a
// rename, so a planted link or FIFO at the name is replaced, never followed.
func writePrivateFile(dir, name string, data []byte) error {
	return safefile.WriteFile(filepath.Join(dir, name), data, 0o600)
}

// securityOptions are the options whose absence weakens the argv; a cache entry may not
// claim them absent (see parseCacheEntry).
func securityOptions() []string {
	return []string{"disable-userns", "bind-fd", "ro-bind-fd", "size"}
}
