package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/layerdir"
)

// LayersSuffix names the directory beside a HOME (in the homes' root, out of every
// sandbox's reach) that holds the project's layers over the caller's caches.
const LayersSuffix = ".layers" // sandbox.CacheLayersSuffix; the two are compared by a test

// Cache is one tool cache: where the caller keeps it and where the same tool looks for it
// under a HOME (relative), both found from the tool's own settings.
type Cache struct {
	Name   string
	Host   string // absolute, on the host
	Inside string // relative to the HOME; "" for SamePath
	// SamePath: the cache is shown at its host path and the tool pointed there (by EnvName):
	// Go's build cache keys a dependency's compiled packages by the module cache's path,
	// so a module cache elsewhere inside would make every cached build of a dependency miss.
	SamePath bool
	EnvName  string
}

// HostCaches are the caller's Go, npm and pip caches as each tool finds them (pure):
// its variable first, then its default under the caller's home. Inside, the variables are
// not set (the environment is cleared), so each tool uses its default under the project
// HOME: that is where the layer goes.
func HostCaches(getenv func(string) string, callerHome string) []Cache {
	firstAbs := func(paths ...string) string {
		for _, path := range paths {
			if filepath.IsAbs(path) {
				return filepath.Clean(path)
			}
		}
		return ""
	}
	xdgCache := firstAbs(getenv("XDG_CACHE_HOME"), joinIf(callerHome, ".cache"))
	gopath := firstAbs(filepath.SplitList(getenv("GOPATH"))...)
	if gopath == "" {
		gopath = joinIf(callerHome, "go")
	}
	candidates := []Cache{
		{Name: "go-mod", Host: firstAbs(getenv("GOMODCACHE"), joinIf(gopath, "pkg", "mod")), SamePath: true, EnvName: "GOMODCACHE"},
		{Name: "go-build", Host: firstAbs(getenv("GOCACHE"), joinIf(xdgCache, "go-build")), Inside: ".cache/go-build"},
		{Name: "npm", Host: firstAbs(getenv("npm_config_cache"), joinIf(callerHome, ".npm")), Inside: ".npm"},
		{Name: "pip", Host: firstAbs(getenv("PIP_CACHE_DIR"), joinIf(xdgCache, "pip")), Inside: ".cache/pip"},
	}
	var caches []Cache
	for _, cache := range candidates {
		if cache.Host != "" {
			caches = append(caches, cache)
		}
	}
	return caches
}

func joinIf(base string, parts ...string) string {
	if base == "" {
		return ""
	}
	return filepath.Join(append([]string{base}, parts...)...)
}

// Usable: the cache exists as a real directory of the caller's (not a link, not someone
// else's: another user's cache is no warm start of ours, and a link could be retargeted).
func Usable(path string) bool {
	return ownDir(path)
}

// LayerUse is one run's use of the project's layer over one cache (TakeLayer).
type LayerUse struct {
	Upper, Work string // where the run's overlay writes
	// Apart: another run of the project holds the project's layer, so this run writes a
	// layer of its own, which Release removes.
	Apart bool
	lock  *os.File // the project's layer's directory, or this run's own, locked
	own   string   // this run's own directory under the layer; "" when it holds the project's
}

// runLayerPrefix names a run's own directory under a cache's layer (TakeLayer).
const runLayerPrefix = "run-"

// abandonedRunLayer is how old a run's own layer directory must be, unlocked, before the
// project's holder removes it as left by a bwrapkit that died: its run locks it
// microseconds after making it.
const abandonedRunLayer = time.Minute

// TakeLayer gives one run its writable layer over the cache name of the project HOME
// home. overlayfs gives an upper and work directory to one mount at a time: two mounts
// sharing them are undefined behaviour (the kernel says so as it mounts the second), and
// at 32 runs of one project at once about 1 mount in 80 failed outright. So the first run
// takes the project's layer, <home>.layers/<name>/upper and work, under an exclusive lock
// it holds until Release. A run that starts while another holds it gets an upper and work
// of its own (<name>/run-*) over the caller's cache alone: the project's layer is being
// written by the holder's mount, and a layer that changes under a mount reading it is
// undefined too (the kernel warns of that as well). Such a run starts warm from the
// caller's cache, and what it adds is dropped at its end. Every directory is made 0700,
// and must be the caller's own.
func TakeLayer(home, name string) (*LayerUse, error) {
	base := filepath.Join(home+LayersSuffix, name)
	upper, work := filepath.Join(base, "upper"), filepath.Join(base, "work")
	if err := makeOwnDirs(home+LayersSuffix, base, upper, work); err != nil {
		return nil, err
	}
	lock, err := layerdir.TryLock(base)
	if err == nil {
		sweepRunLayers(base)
		return &LayerUse{Upper: upper, Work: work, lock: lock}, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return nil, err
	}
	own, err := os.MkdirTemp(base, runLayerPrefix)
	if err != nil {
		return nil, err
	}
	ownUpper, ownWork := filepath.Join(own, "upper"), filepath.Join(own, "work")
	if lock, err = layerdir.TryLock(own); err == nil {
		if err = makeOwnDirs(ownUpper, ownWork); err == nil {
			return &LayerUse{Upper: ownUpper, Work: ownWork, Apart: true, lock: lock, own: own}, nil
		}
		lock.Close()
	}
	_ = layerdir.Remove(own)
	return nil, err
}

// Release ends the run's use of the layer: its own layer is removed, the project's is
// left for the next run. Call it once the run's sandbox is gone; more than once is a
// no-op.
func (u *LayerUse) Release() {
	if u == nil || u.lock == nil {
		return
	}
	if u.own != "" {
		_ = layerdir.Remove(u.own)
	}
	u.lock.Close()
	u.lock = nil
}

// makeOwnDirs makes each directory (0700) where it is missing, and refuses one that is
// not a directory of the caller's (a link, someone else's).
func makeOwnDirs(dirs ...string) error {
	for _, dir := range dirs {
		if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
			return err
		}
		if !ownDir(dir) {
			return &os.PathError{Op: "layer", Path: dir, Err: unix.EPERM}
		}
	}
	return nil
}

// sweepRunLayers removes the run layers under base that no run holds any more (their
// bwrapkit died before removing them), once they are old enough that no run can be
// between making and locking one.
func sweepRunLayers(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, entry := range entries {
		if !entry.IsDir() || !strings.HasPrefix(entry.Name(), runLayerPrefix) {
			continue
		}
		dir := filepath.Join(base, entry.Name())
		if info, err := entry.Info(); err != nil || time.Since(info.ModTime()) < abandonedRunLayer {
			continue
		}
		if lock, err := layerdir.TryLock(dir); err == nil {
			_ = layerdir.Remove(dir)
			lock.Close()
		}
	}
}
