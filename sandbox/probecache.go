package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/bwrapkit/bwrapkit/internal/atomicfile"
)

// The probe costs two bwrap executions, as much as a fifth of a whole sandboxed run,
// so its result is kept on disk per binary. The key is the file's identity and every
// timestamp the owner cannot forge: a replaced or modified binary (new inode, size,
// mtime or ctime) is probed again.

// ProbeCacheFile is where probe results are kept; empty disables the disk cache.
var ProbeCacheFile = defaultProbeCacheFile()

func defaultProbeCacheFile() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "bwrapkit", "probe-v1.json")
}

var probeCacheMu sync.Mutex

// fileIdentity is the cache key: the same string only for the same unchanged file.
func fileIdentity(path string, info os.FileInfo) string {
	stat, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s|%d|%d|%d|%d.%d|%d.%d", path, stat.Dev, stat.Ino, stat.Size,
		stat.Mtim.Sec, stat.Mtim.Nsec, stat.Ctim.Sec, stat.Ctim.Nsec)
}

func loadProbeCache() map[string]Features {
	cache := map[string]Features{}
	if ProbeCacheFile == "" {
		return cache
	}
	data, err := os.ReadFile(ProbeCacheFile)
	if err == nil {
		// A damaged cache is only a slower run: it is ignored and rewritten.
		_ = json.Unmarshal(data, &cache)
	}
	return cache
}

func cachedFeatures(identity string) (Features, bool) {
	if identity == "" {
		return Features{}, false
	}
	probeCacheMu.Lock()
	defer probeCacheMu.Unlock()
	features, ok := loadProbeCache()[identity]
	return features, ok && features.Options != nil
}

// storeFeatures adds one result; failing to write the cache is not an error.
func storeFeatures(identity string, features Features) {
	if identity == "" || ProbeCacheFile == "" {
		return
	}
	probeCacheMu.Lock()
	defer probeCacheMu.Unlock()
	cache := loadProbeCache()
	const maxEntries = 64 // binaries come and go; never let the file grow without bound
	if len(cache) >= maxEntries {
		cache = map[string]Features{}
	}
	cache[identity] = features
	data, err := json.Marshal(cache)
	if err != nil || os.MkdirAll(filepath.Dir(ProbeCacheFile), 0o700) != nil {
		return
	}
	_ = atomicfile.Write(ProbeCacheFile, data, 0o600)
}
