package home

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
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

// Layer makes (or finds) the project's layer for one cache: <home>.layers/<name>/upper and
// work, each 0700. It returns their paths.
func Layer(home, name string) (upper, work string, err error) {
	base := filepath.Join(home+LayersSuffix, name)
	upper, work = filepath.Join(base, "upper"), filepath.Join(base, "work")
	for _, dir := range []string{home + LayersSuffix, base, upper, work} {
		if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
			return "", "", err
		}
		if !ownDir(dir) {
			return "", "", &os.PathError{Op: "layer", Path: dir, Err: unix.EPERM}
		}
	}
	return upper, work, nil
}
