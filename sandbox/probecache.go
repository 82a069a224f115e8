package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/bwrapkit/bwrapkit/internal/atomicfile"
)

// The probe costs two bwrap executions, as much as a fifth of a whole sandboxed run,
// so its result is kept on disk, one small file per binary. The key is the file's
// identity and every timestamp its owner cannot forge: a replaced or modified binary
// (new inode, size, mtime or ctime) gets a new key and is probed again. The format is
// three lines (version, build, options) because it is read on every `bwrapkit run`.

// ProbeCacheDir is where probe results are kept; empty disables the disk cache.
var ProbeCacheDir = defaultProbeCacheDir()

func defaultProbeCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "bwrapkit", "probe-v2")
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

func probeCachePath(identity string) string {
	if identity == "" || ProbeCacheDir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(identity))
	return filepath.Join(ProbeCacheDir, hex.EncodeToString(sum[:12]))
}

// cachedFeatures reads a stored result; a missing or damaged entry is only a miss.
func cachedFeatures(identity string) (Features, bool) {
	path := probeCachePath(identity)
	if path == "" {
		return Features{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Features{}, false
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) != 5 || lines[0] != identity || lines[4] != "" {
		return Features{}, false
	}
	features := Features{Version: lines[1], Build: lines[2], Options: map[string]bool{}}
	for _, name := range strings.Fields(lines[3]) {
		features.Options[name] = true
	}
	return features, len(features.Options) > 0
}

// storeFeatures keeps one result; failing to write the cache is not an error.
func storeFeatures(identity string, features Features) {
	path := probeCachePath(identity)
	if path == "" || strings.ContainsAny(features.Build, "\n") || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	options := make([]string, 0, len(features.Options))
	for name := range features.Options {
		options = append(options, name)
	}
	sort.Strings(options)
	text := strings.Join([]string{identity, features.Version, features.Build, strings.Join(options, " "), ""}, "\n")
	_ = atomicfile.Write(path, []byte(text), 0o600)
}
