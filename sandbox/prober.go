package sandbox

import (
	"sort"
	"sync"

	"github.com/bwrapkit/bwrapkit/internal/probecache"
)

// Prober probes bwrap binaries. CacheDirs are tried in order, for reading and for
// writing; none means nothing is kept on disk (package probecache keeps it). A Prober
// from DefaultProber also remembers what it probed, for as long as the caller keeps it
// (the CLI hands the one it located with to Run in Options.Prober); there is no
// process-wide memory.
type Prober struct {
	CacheDirs []string

	memo *sync.Map // file identity -> Features; nil remembers nothing
}

// CacheDir is where results are first looked for (empty without a disk cache).
func (p Prober) CacheDir() string {
	if len(p.CacheDirs) == 0 {
		return ""
	}
	return p.CacheDirs[0]
}

// DefaultProber caches in the caller's probe cache (probecache.Dirs: the cache directory,
// then $XDG_RUNTIME_DIR, then a private /tmp/bwrapkit-<uid>).
func DefaultProber(env []string) Prober {
	return Prober{CacheDirs: probecache.Dirs(env), memo: &sync.Map{}}
}

// cached reads a stored result; a missing, foreign or damaged entry is only a miss, and
// so is one that claims a security option absent (see believed).
func (p Prober) cached(identity string) (Features, bool) {
	entry, ok := probecache.Load(p.CacheDirs, identity)
	if !ok {
		return Features{}, false
	}
	return believed(entry)
}

// believed turns a cache entry into Features, unless it claims an option the boundary
// needs is missing: a negative claim is proven live, never believed, so a forged entry
// can never weaken an argv.
func believed(entry probecache.Entry) (Features, bool) {
	features := Features{Version: entry.Version, Build: entry.Build, Options: map[string]bool{}}
	for _, name := range entry.Options {
		features.Options[name] = true
	}
	for _, option := range append(Required(), securityOptions()...) {
		if !features.Has(option) {
			return Features{}, false
		}
	}
	return features, true
}

// store keeps one result in the probe cache; failing to write it is not an error.
func (p Prober) store(identity string, features Features) {
	options := make([]string, 0, len(features.Options))
	for name := range features.Options {
		options = append(options, name)
	}
	sort.Strings(options)
	probecache.Store(p.CacheDirs, identity, probecache.Entry{Version: features.Version, Build: features.Build, Options: options})
}

// securityOptions are the options whose absence weakens the argv; a cache entry may not
// claim them absent (see believed).
func securityOptions() []string {
	return []string{"disable-userns", "bind-fd", "ro-bind-fd", "size"}
}
