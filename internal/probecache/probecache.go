// Package probecache keeps what a bwrap binary answered to the probe on disk, one small
// file per binary, keyed by the file's identity, in directories of the caller's that no
// one else can write. What the answer means (and which claims are believed) is sandbox's.
// It sits apart from package home: it keys answers by binary, not by project, and no
// library caller needs it (sandbox.Prober.CacheDirs names where it looks).
package probecache

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
	"syscall"

	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/internal/trust"
)

// The probe costs two bwrap executions, as much as a fifth of a whole sandboxed run,
// so its result is kept on disk, one small file per binary. The key is the file's
// identity and every timestamp its owner cannot forge: a replaced or modified binary
// (new inode, size, mtime or ctime) gets a new key and is probed again. The format is
// five lines (identity, version, build, options, empty) because it is read on every run.
//
// The cache decides what the argv leaves out, so it is trusted state: it is read only
// from a directory the caller owns and no one else can write, never through a symlink
// or from a FIFO, and a workdir may never enclose it (see sandbox's refuseWritable).
// sandbox does not believe a cached entry that claims a security option is missing:
// such a claim is proven by a live probe, so a forged entry can never weaken an argv.

const (
	// Version names the cache's directory; a new format gets a new name.
	Version  = "probe-v3"
	maxEntry = 64 << 10
)

// Entry is one binary's stored answer.
type Entry struct {
	Version string
	Build   string
	Options []string
}

// Dirs are where the caller's cache lives, in order: under the caller's cache directory
// ($XDG_CACHE_HOME, else ~/.cache when the home exists; a home is never created), then
// $XDG_RUNTIME_DIR, then a private /tmp/bwrapkit-<uid> that must be the caller's own
// 0700 directory. Service accounts (HOME=/nonexistent) thus keep a warm cache too.
func Dirs(env []string) []string {
	getenv := environ.Getenv(env)
	var dirs []string
	// Nothing above a cache directory is ever created: XDG_CACHE_HOME itself may be made
	// (as the XDG spec has it), but only inside a directory that exists, and HOME and
	// TMPDIR must exist (HOME=/nonexistent, a service account's, stays nonexistent).
	if cache := getenv("XDG_CACHE_HOME"); filepath.IsAbs(cache) && isDir(filepath.Dir(cache)) {
		dirs = append(dirs, filepath.Join(cache, "bwrapkit", Version))
	} else if home := getenv("HOME"); filepath.IsAbs(home) && isDir(home) {
		dirs = append(dirs, filepath.Join(home, ".cache", "bwrapkit", Version))
	}
	if runtime := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(runtime) && isDir(runtime) {
		dirs = append(dirs, filepath.Join(runtime, "bwrapkit", Version))
	}
	if temp := os.TempDir(); filepath.IsAbs(temp) && isDir(temp) {
		dirs = append(dirs, filepath.Join(temp, "bwrapkit-"+strconv.Itoa(os.Geteuid()), Version))
	}
	return dirs
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// Key is the cache key: the same string only for the same unchanged file.
func Key(path string, info os.FileInfo) string {
	stat, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s|%d|%d|%d|%d.%d|%d.%d", path, stat.Dev, stat.Ino, stat.Size,
		stat.Mtim.Sec, stat.Mtim.Nsec, stat.Ctim.Sec, stat.Ctim.Nsec)
}

// Name is the file an entry is kept in, in each directory.
func Name(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:12])
}

// Load reads a stored entry; a missing, foreign or damaged entry is only a miss.
func Load(dirs []string, key string) (Entry, bool) {
	if key == "" {
		return Entry{}, false
	}
	for _, dir := range dirs {
		if trust.PrivateDir(dir) != nil {
			continue
		}
		data, err := readPrivateFile(filepath.Join(dir, Name(key)), maxEntry)
		if err != nil {
			continue
		}
		if entry, ok := Parse(key, data); ok {
			return entry, true
		}
	}
	return Entry{}, false
}

// Parse is the pure half of Load.
func Parse(key string, data []byte) (Entry, bool) {
	lines := strings.Split(string(data), "\n")
	if len(lines) != 5 || lines[0] != key || lines[4] != "" {
		return Entry{}, false
	}
	return Entry{Version: lines[1], Build: lines[2], Options: strings.Fields(lines[3])}, true
}

// Store keeps one entry in the first directory that can be made and trusted; failing to
// write the cache is not an error.
func Store(dirs []string, key string, entry Entry) {
	if key == "" || strings.ContainsAny(entry.Build, "\n") {
		return
	}
	options := append([]string(nil), entry.Options...)
	sort.Strings(options)
	text := strings.Join([]string{key, entry.Version, entry.Build, strings.Join(options, " "), ""}, "\n")
	for _, dir := range dirs {
		// A link planted where the cache's own directory goes (another user's
		// /tmp/bwrapkit-<uid> -> elsewhere) is never followed to make directories.
		if info, err := os.Lstat(filepath.Dir(dir)); err == nil && !info.IsDir() {
			continue
		}
		if os.MkdirAll(dir, 0o700) != nil || trust.PrivateDir(dir) != nil {
			continue
		}
		if safefile.WriteFile(filepath.Join(dir, Name(key)), []byte(text), 0o600) == nil {
			return
		}
	}
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
